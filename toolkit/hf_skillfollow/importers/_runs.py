"""Imported pairs → normal run folders, written through the run store the runner uses.

Each repeat (the k-th pair of every task, `_pairing`) is one run folder: `manifest.json`,
`records.jsonl` (one `PairRecord` per task, appended by `store.RunStore`) and the parquet
tables rebuilt from the records. The run id is derived from the cell id and the repeat, so
importing the same folders again finds its run folders, keeps the pairs already recorded and
appends only the missing ones: no duplicate rows, and an interrupted import resumes.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_skillfollow._arm_integrity import VIOLATION, is_violation
from hf_skillfollow._text import safe_text
from hf_skillfollow.importers._activation import (
    NO_TRANSCRIPT,
    Integrity,
    Reading,
    arm_integrity,
    detect_trial,
)
from hf_skillfollow.importers._base import (
    CANCELLED,
    Collected,
    Graded,
    ImportInputError,
    ImportOptions,
    Judging,
    Trial,
    is_cancelled,
)
from hf_skillfollow.importers._pairing import (
    ISO_START,
    Pair,
    Pairing,
    pair_trials,
    start_key,
)

if TYPE_CHECKING:
    from hf_skillfollow.record import PairRecord
    from hf_skillfollow.store import RunStore
    from hf_skillfollow.transcripts._base import Detection

#: Placeholders of the chat loop's settings that an imported run does not have (docs/import.md).
_NO_SEARCH = {"retriever": "none", "top_k": 1, "retrieval_policy": "auto", "condition": "normal"}
MAX_CALLS = 1_000_000  # the harness sets no budget of skill calls
_MAX_QUERIES = 50
_MAX_QUERY_CHARS = 300
_MAX_INTENDED = 200
#: `detector` of an `inject` cell's rows: the skills came in the instruction (docs/import.md)
INJECTED = "inject"


@dataclass
class ImportResult:
    """What an import did, for the command's summary and the Harbor runner."""

    run_dirs: list[Path] = field(default_factory=list)
    n_pairs: int = 0
    n_written: int = 0
    n_already: int = 0
    n_replaced: int = 0
    """Recorded pairs of a cancelled trial that now hold its rerun (`_reruns`), in n_written."""
    dropped: dict[str, tuple[str, int]] = field(default_factory=dict)
    n_checksum_differs: int = 0
    violations: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def n_dropped(self) -> int:
        return sum(n for _, n in self.dropped.values())


@dataclass(frozen=True)
class _Decided:
    pair: Pair
    se_read: Reading
    sd_read: Reading
    integrity: Integrity
    intended: list[str] | None
    offered: tuple[str, ...] = ()

    @property
    def se(self) -> Detection | None:
        return self.se_read.detection

    @property
    def sd(self) -> Detection | None:
        return self.sd_read.detection


def write_runs(
    fmt: str,
    collected: Collected,
    options: ImportOptions,
    output_dir: Path,
    on_pair: Callable[[bool], None] | None = None,
    on_total: Callable[[int], None] | None = None,
    provenance: str | None = None,
    judging: Judging | None = None,
    set_aside: bool = False,
) -> ImportResult:
    """Pair the collected trials, decide activation, and write (or complete) the run folders.
    `provenance` is the rows' `provenance` (default `imported:<fmt>`); `judging`: the
    verdicts are the blinded judge's (`Judging`); `set_aside`: bad lines of the run folders'
    records go to records.rejected and their pairs are written again (`_recover`)."""
    from dataclasses import replace

    options = replace(options, baseline=collected.baseline or options.baseline)
    if judging is not None and judging.task_ids:
        names = judging.task_ids
        trials = [replace(t, task=names.get(t.task, t.task)) for t in collected.trials]
        collected = replace(collected, trials=trials)
    pairing = pair_trials(collected.trials)
    result = ImportResult(
        n_pairs=len(pairing.pairs), dropped=dict(pairing.dropped), notes=list(collected.notes)
    )
    if not pairing.pairs:
        raise ImportInputError(
            f"no task has trials in both arms ({len(collected.trials)} trial(s) read"
            + (f", {pairing.n_dropped} left unpaired" if pairing.n_dropped else "")
            + "); nothing to import"
            + "".join(
                f"; {n}"
                for n in collected.notes
                if "trial (result.json) found" in n or "without a result.json" in n
            )
        )
    pool_names, pool_name, pool_hash = _pool(options)
    intended = _intended(options, {p.task for p in pairing.pairs})
    if on_total:
        # without a pool every transcript is read first, then every pair written: a step each
        on_total(len(pairing.pairs) * (2 if pool_names is None else 1))

    skipped: list[str] = []

    def decide(pair: Pair) -> _Decided:
        names = pool_names if pool_names is not None else (intended.get(pair.task) or ())
        se, sd = detect_trial(pair.se, names), detect_trial(pair.sd, names)
        listed = se.detection.listed if se.detection is not None else ()
        if not names and listed and any(e.skill not in listed for e in se.detection.events):
            # the skills offered are those the trial listed: one it never offered is no activation
            se = detect_trial(pair.se, listed)
        skipped.extend(f"{t.source.name}/{why}" for t, r in ((pair.se, se), (pair.sd, sd))
                       for why in r.skipped)  # fmt: skip
        # without a named pool, the skills offered are what the with-skills trial listed
        offered = names or (se.detection.listed if se.detection is not None else ())
        integrity = (
            Integrity("unchecked: the baseline runs the previous version of the skill")
            if options.baseline == "old_skill"
            else arm_integrity(sd.detection, offered)
        )
        return _Decided(pair, se, sd, integrity, intended.get(pair.task), tuple(offered))

    decided: dict[tuple[Path, Path], _Decided] = {}  # by its trials: a rerun may re-pair them
    if pool_names is None:
        # the skills offered are the names the with-skills transcripts list: all are read first
        for p in pairing.pairs:
            decided[(p.se.source, p.sd.source)] = decide(p)
            if on_pair:  # a pair's error is counted when it is written
                on_pair(False)
        listed = sorted({s for d in decided.values() if d.se for s in d.se.listed})
        from hf_skillfollow.config import stable_hash

        pool_name, pool_hash = "listed", "names-" + stable_hash(listed)
    identity = _identity(fmt, collected.harness or fmt, pairing, options, pool_name, pool_hash,
                         provenance or f"imported:{fmt}", judging, intended)  # fmt: skip
    twice = in_other_cells(identity, pairing.pairs, output_dir)
    if twice:
        result.notes.insert(0, twice)  # first: the command prints the first notes
    result.n_checksum_differs = sum(p.checksum_differs for p in pairing.pairs)
    by_repeat = _by_repeat(pairing.pairs)
    for k in sorted(by_repeat):  # records.jsonl made safe to read and append to, first
        result.notes.extend(_recover(identity, k, output_dir, set_aside))
    trials, takeovers = _reruns(identity, sorted(by_repeat), collected.trials, output_dir)
    if trials is not collected.trials:  # a rerun pairs in the place of a recorded cancelled trial
        pairing = pair_trials(trials)
        by_repeat = _by_repeat(pairing.pairs)
        result.n_pairs, result.dropped = len(pairing.pairs), dict(pairing.dropped)
    other, n_recorded, taken_over = _recorded_otherwise(identity, by_repeat, output_dir, takeovers)
    if other:
        taken_over = {}  # recorded pairs of other trials: nothing of this cell is rewritten
    if taken_over:
        first = next(iter(taken_over.items()))
        result.notes.append(
            f"{len(taken_over)} recorded pair(s) held a trial Harbor cancelled ({CANCELLED}) "
            "that the job has since run again (harbor job resume): each now holds the rerun, "
            f"its old record moved to records.rejected in its run folder, e.g. task "
            f"{first[0][0]!r} repeat {first[0][1]}: {first[1].said}"
        )
    if other:
        unwritten = len(pairing.pairs) - n_recorded
        result.notes.append(
            f"{len(other)} recorded pair(s) are of other trials than this import's ({other[0]}"
            f"{', ...' if len(other) > 1 else ''}): kept as recorded; nothing new of this cell "
            f"written ({unwritten} pair(s)): its pairs would take a trial twice; import these "
            "trials into another output folder (-o) to record them"
        )
    for k in sorted(by_repeat):
        # a pair already recorded (re-import, resume) is not read again (with a pool)
        _write_repeat(identity, k, by_repeat[k], options, output_dir, result, on_pair,
                      lambda p: _decided(decided, p) or decide(p),
                      judging, new=not other,
                      takeovers={t: v for (t, r), v in taken_over.items() if r == k})  # fmt: skip
    if skipped:
        result.notes.append(
            f"{len(skipped)} transcript file(s) passed over as not a transcript (the next one, "
            f"else activation unknown), e.g. {skipped[0]}"
        )
    # printed by `import` and by the Harbor runner: a lone surrogate (a JSON `\ud800` in a
    # transcript's evidence, a folder name that is not UTF-8) as its escape
    result.notes = [safe_text(n) for n in result.notes]
    result.violations = [safe_text(v) for v in result.violations]
    return result


def _decided(decided: dict[tuple[Path, Path], _Decided], pair: Pair) -> _Decided | None:
    """The transcripts of `pair`'s trials as read already, with the pair as it is now (a
    rerun that stands in for a cancelled trial carries that in its trial, `_reruns`)."""
    from dataclasses import replace

    found = decided.get((pair.se.source, pair.sd.source))
    return None if found is None else replace(found, pair=pair)


def _pool(options: ImportOptions) -> tuple[list[str] | None, str, str]:
    """(skill names, pool name, pool hash) of --skills; (None, ...) without it."""
    if options.skills is None:
        return None, "", ""
    from hf_skillfollow.skills import load_pool

    try:
        pool = load_pool(options.skills)
    except (ValueError, OSError) as exc:
        raise ImportInputError(f"--skills {options.skills}: {str(exc).splitlines()[0]}") from None
    return list(pool.names), pool.name, pool.content_hash


def _intended(options: ImportOptions, tasks: Collection[str]) -> dict[str, list[str]]:
    """task -> the skill folders its `environment/skills/` ships (--tasks), by name only."""
    if options.tasks is None:
        return {}
    root = options.tasks
    if not root.is_dir():
        raise ImportInputError(f"--tasks {root}: not a folder")
    out: dict[str, list[str]] = {}
    for task in tasks:
        folder = root / task / "environment" / "skills"
        try:
            inside = folder.resolve().is_relative_to(root.resolve())
        except (OSError, RuntimeError):
            inside = False
        if not inside or not folder.is_dir():
            continue
        with os.scandir(folder) as entries:
            names = sorted(
                e.name for _, e in zip(range(_MAX_INTENDED), entries, strict=False)
                if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")
            )  # fmt: skip
        if names:
            out[task] = names
    return out


def _one(values: set[str], what: str, flag_hint: str) -> str:
    if len(values) != 1:
        raise ImportInputError(
            f"the trials hold {len(values)} {what}s ({', '.join(sorted(values)[:4])}); {flag_hint}"
        )
    return next(iter(values))


def _identity(
    fmt: str, harness: str, pairing: Pairing, options: ImportOptions, pool_name: str,
    pool_hash: str, provenance: str, judging: Judging | None = None,
    intended: dict[str, list[str]] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Everything the run folders of this import share, its cell id included. `intended`
    (--tasks: each task's intended skills) is part of the task set: without --skills they are
    the skills offered, and they are the rows' `intended_skills` (trigger precision)."""
    from hf_skillfollow.config import cell_id, stable_hash

    arms: dict[str, list[Trial]] = {"se": [], "sd": []}
    for p in pairing.pairs:
        arms["se"].append(p.se)
        arms["sd"].append(p.sd)
    hint = "import one agent and model at a time"
    agents = {a: _one({f"{t.agent}@{t.agent_version}" for t in ts}, "agent", hint)
              for a, ts in arms.items()}  # fmt: skip
    models = {a: _one({t.model for t in ts}, "model", hint) for a, ts in arms.items()}
    if agents["se"] != agents["sd"] or models["se"] != models["sd"]:
        raise ImportInputError(
            f"the arms were run by different agents or models (with skills: {agents['se']}, "
            f"{models['se']}; without: {agents['sd']}, {models['sd']}): the arms must differ "
            "only in the skills"
        )
    tasks = sorted({(p.task, p.se.checksum, p.sd.checksum) for p in pairing.pairs})
    named = intended or {}
    # a task's intended skills join its entry only where --tasks names some (older cells stay)
    task_set = stable_hash([[*t, *([named[t[0]]] if named.get(t[0]) else [])] for t in tasks])
    datasets = {t.dataset for ts in arms.values() for t in ts}
    # the registry dataset the trials name (all the same one), else the format
    benchmark = options.benchmark or (
        datasets.pop() if len(datasets) == 1 and "" not in datasets else fmt
    )
    protocol = {
        "provenance": provenance, "harness": harness, "agent": agents["se"],
        "model": models["se"], "benchmark": benchmark, "access": options.loading,
        "pass_threshold": options.pass_threshold,
        "pass_rate_threshold": options.pass_rate_threshold, "trigger": options.trigger,
        "baseline": options.baseline,
    }  # fmt: skip
    if judging is not None:  # the judge defines the cell where it grades, as in `run`
        protocol["judge"] = judging.identity
    prompts = "imported-" + stable_hash({"harness": harness, "loading": options.loading})
    cid = cell_id(protocol, skill_pool_hash=pool_hash, prompts_hash=prompts,
                  benchmark_version=task_set)  # fmt: skip
    from hf_skillfollow._version import __version__
    from hf_skillfollow.schema import SCHEMA_VERSION

    return {
        "cell_id": cid,
        **({"judge": judging.identity} if judging is not None else {}),
        "schema_version": SCHEMA_VERSION,
        "provenance": provenance,
        "harness": harness,
        "agent": agents["se"],
        "config": {
            "model": models["se"],
            "backend": "harness",
            "tool_mode": "harness",
            "benchmark": benchmark,
            "partition_seed": 0,
            "partition_size": len(tasks),
            "access": options.loading,
            "max_calls": MAX_CALLS,
            "temperature": 1.0,
            "max_tokens": 1,
            "seed": 0,
            **_NO_SEARCH,
        },  # fmt: skip
        "task_ids": sorted({p.task for p in pairing.pairs}),
        "benchmark_version": task_set,
        "skill_pool": pool_name,
        "skill_pool_hash": pool_hash,
        "prompts_hash": prompts,
        "versions": {"hf-skillfollow": __version__},
        "import": {
            "format": fmt,
            "pass_threshold": options.pass_threshold,
            "pass_rate_threshold": options.pass_rate_threshold,
            "trigger": options.trigger,
            "loading": options.loading,
            "baseline": options.baseline,
            "tasks": [{"task": t, "se_checksum": a, "sd_checksum": b} for t, a, b in tasks],
            "dropped": {t: {"arm": arm, "trials": n} for t, (arm, n) in pairing.dropped.items()},
        },
    }


def _write_repeat(
    identity: dict[str, Any], k: int, pairs: list[Pair], options: ImportOptions,
    output_dir: Path, result: ImportResult, on_pair: Callable[[bool], None] | None,
    decide: Callable[[Pair], _Decided], judging: Judging | None = None, new: bool = True,
    takeovers: dict[str, _Takeover] | None = None,
) -> None:  # fmt: skip
    """Write (or complete) repeat `k`'s run folder; `new`: pairs not recorded yet are written
    (else left out: a recorded pair of this cell is of other trials, `_recorded_otherwise`);
    `takeovers`: task -> its recorded pair of a cancelled trial that this pair replaces."""
    from hf_skillfollow.store import RunDirError, RunStore

    run_id = _run_id(identity, k)
    store = RunStore(output_dir / run_id)
    if not new and not store.manifest_path.is_file():
        return  # nothing recorded, nothing to write: no empty run folder
    # the earliest ISO start as an instant (a zone or a fraction of a second never reorders
    # them as text would)
    started = [key for p in pairs if (key := start_key(p.se.started_at))[0] == ISO_START]
    manifest = {
        **identity,
        "run_id": run_id,
        "repeat_index": k,
        "created_at": min(started)[2]
        if started
        else _dt.datetime.now(_dt.UTC).isoformat("T", "seconds"),
    }
    try:
        store.root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # -o names a file, or a folder that cannot be made
        raise ImportInputError(
            f"output folder (-o) {output_dir}: cannot make {run_id} there ({exc.strerror})"
        ) from None
    with _only_writer(store.root):
        if store.manifest_path.is_file():
            recorded = store.read_manifest()
            if recorded.get("cell_id") != identity["cell_id"]:
                raise RunDirError(f"{store.root}: a run folder of another cell; not overwritten")
            manifest = recorded  # its created_at stays (its records recovered: `_recover`)
        else:
            store.write_manifest(manifest)
        done = {r["task_id"]: r["transition"] for r in store.read_records()}
        from hf_skillfollow.columns import identity_values

        columns = identity_values(manifest)
        for pair in pairs:
            if takeovers and pair.task in takeovers:
                d = decide(pair)
                record = _record(manifest, columns, d, options, judging)
                _take_over(store, record, takeovers[pair.task])
                result.n_written += 1
                result.n_replaced += 1
                status = d.integrity.status
            elif pair.task in done:
                result.n_already += 1
                status = str(done[pair.task].get("arm_integrity") or "")
            elif not new:
                status = ""
            else:
                d = decide(pair)
                store.append_record(_record(manifest, columns, d, options, judging))
                result.n_written += 1
                status = d.integrity.status
            if is_violation(status):
                where = f"{pair.task} (repeat {k}, {pair.sd.source.name})"
                result.violations.append(f"{where}: {status.removeprefix(VIOLATION)}")
            if on_pair:
                on_pair(bool(pair.se.error or pair.sd.error))
        store.write_tables()
        result.run_dirs.append(store.root)


def _recover(identity: dict[str, Any], k: int, output_dir: Path, set_aside: bool) -> list[str]:
    """Make repeat `k`'s recorded `records.jsonl` safe to read and append to, as `run --resume`
    does (`RunStore.recover`): a torn last line is set aside; a bad complete line is an error
    naming file:line and the way out of an import, unless `set_aside`."""
    from hf_skillfollow.store import RunDirError, RunStore

    run_id = _run_id(identity, k)
    store = RunStore(output_dir / run_id)
    if not store.manifest_path.is_file():
        return []
    if store.read_manifest().get("cell_id") != identity["cell_id"]:
        return []  # refused with one line where it would be written (`_write_repeat`)
    with _only_writer(store.root):
        try:
            return store.recover(set_aside=set_aside, run_id=run_id)
        except RunDirError as exc:
            # the store names `run --resume`'s flag; `import` has its own of the same name
            where = str(exc).partition("; to move the bad line(s)")[0]
            raise RunDirError(
                f"{where}; to move the bad line(s) to records.rejected and write their pairs "
                "again, import again with --set-aside-bad-records"
            ) from None


@contextmanager
def _only_writer(root: Path) -> Iterator[None]:
    """The run folder held for one import at a time: a second one at once would find no pair
    recorded yet and append every one again. Another import holding it is one error line."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): not held
        yield
        return
    fd = os.open(root, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ImportInputError(
                f"{root}: another import is writing this run folder; import again once it has "
                "finished"
            ) from None
        yield
    finally:
        os.close(fd)  # releases the lock


def _run_id(identity: dict[str, Any], k: int) -> str:
    """`imported-…` for an import, `run-harbor-…` for the harness's own runs (provenance
    run:harbor), then the cell id and the repeat."""
    provenance = str(identity["provenance"])
    prefix = "imported" if provenance.startswith("imported:") else provenance.replace(":", "-")
    return f"{prefix}-{identity['cell_id']}-r{k}"


def _recorded(identity: dict[str, Any], k: int, output_dir: Path) -> dict[str, dict[str, Any]]:
    """Repeat `k`'s recorded pairs by task ({} when its run folder is not there yet)."""
    from hf_skillfollow.store import RunStore

    store = RunStore(output_dir / _run_id(identity, k))
    if not store.manifest_path.is_file():
        return {}
    return {r["task_id"]: r for r in store.read_records()}


def _recorded_otherwise(
    identity: dict[str, Any], by_repeat: dict[int, list[Pair]], output_dir: Path,
    takeovers: dict[tuple[str, int], _Takeover] | None = None,
) -> tuple[list[str], int, dict[tuple[str, int], _Takeover]]:  # fmt: skip
    """The recorded pairs of this cell that are of other trials than this import's pairs of
    the same task and repeat, each said in a few words, how many of this import's pairs are
    recorded, and the `takeovers` (`_reruns`) this import's pairs carry out (the pair is the
    recorded one with each cancelled trial's rerun in its place); checked in every repeat
    before any is written. A recorded pair is kept (a trial Harbor redid after a kill is no
    new pair), but then a new pair of this import could take a trial that a kept one holds."""
    other: list[str] = []
    n_recorded = 0
    done: dict[tuple[str, int], _Takeover] = {}
    for k, pairs in sorted(by_repeat.items()):
        records = _recorded(identity, k, output_dir)
        n_recorded += sum(p.task in records for p in pairs)
        for p in pairs:
            if p.task not in records:
                continue
            takeover = (takeovers or {}).get((p.task, k))
            if takeover is not None and takeover.fits(p):
                done[(p.task, k)] = takeover
            elif why := _other_trials(k, p, records[p.task]):
                other.append(why)
    return other, n_recorded, done


def _by_repeat(pairs: list[Pair]) -> dict[int, list[Pair]]:
    by_repeat: dict[int, list[Pair]] = {}
    for pair in pairs:
        by_repeat.setdefault(pair.repeat_index, []).append(pair)
    return by_repeat


@dataclass(frozen=True)
class _Takeover:
    """A recorded pair holding a trial Harbor cancelled, which this import's pair replaces
    with the trial's rerun (`_reruns`)."""

    old: dict[str, dict[str, str]]
    """The recorded pair's trials (`recorded_trials`): its record is the one set aside."""
    reruns: dict[str, Path]
    """arm -> the folder of the rerun that takes the cancelled trial's place."""
    said: str
    """'a__1 replaced by a__3' for the note."""

    def fits(self, pair: Pair) -> bool:
        """Whether `pair` is the recorded one with the reruns in the cancelled trials' places
        (the arm not cancelled unchanged: a finished recorded trial is never replaced)."""
        for trial in (pair.se, pair.sd):
            if trial.arm in self.reruns:
                if trial.source != self.reruns[trial.arm]:
                    return False
                continue
            recorded = self.old.get(trial.arm)
            if recorded is None or _trial_key(trial, "trial_id" in recorded) != tuple(
                recorded.values()
            ):
                return False
        return True


#: Longest recorded name or start of a cancelled trial read back from a record (a run folder
#: may be edited by hand).
_MAX_STAND_IN = 200


def _reruns(
    identity: dict[str, Any], repeats: list[int], trials: list[Trial], output_dir: Path
) -> tuple[list[Trial], dict[tuple[str, int], _Takeover]]:
    """The trials to pair, and the recorded pairs (task, repeat) that take a rerun in place
    of a trial Harbor cancelled. A recorded trial whose row is `CancelledError` and that is
    not among this import's trials (`harbor job resume` deleted its folder before rerunning
    it, or `_harbor` set it aside for its rerun in the same job) is taken over by its task and
    arm's earliest finished trial (not cancelled) that started after it and that no record of
    this cell holds. That rerun pairs in its place, by its start (`Trial.stands_in_for`), and
    so does a trial that took one over at an earlier import (its trace's `stands_in_for`):
    a third import pairs as the second recorded. `trials` is returned itself when no trial
    stands in for another."""
    from dataclasses import replace

    records = {k: _recorded(identity, k, output_dir) for k in repeats}
    if not any(records.values()):
        return trials, {}
    mine: dict[tuple[str, ...], Trial] = {}  # (task, arm, *its key, with and without id)
    for trial in trials:
        for with_id in (True, False):
            mine[(safe_text(trial.task), trial.arm, *_trial_key(trial, with_id))] = trial
    held: set[tuple[str, ...]] = set()  # every recorded trial, as (task, arm, *key)
    standing: dict[Path, tuple[str, str]] = {}  # a trial -> (name, start) it stands in for
    slots: dict[tuple[str, str], list[tuple[tuple[int, int, str], int, dict[str, str]]]] = {}
    for k, by_task in records.items():
        for task, record in by_task.items():
            recorded = recorded_trials(record)
            for arm, rec in recorded.items():
                key = (task, arm, *rec.values())
                held.add(key)
                if (now := mine.get(key)) is not None:
                    if stood := _stood_in_for(record, arm):
                        standing[now.source] = stood
                elif is_cancelled(record["transition"].get(f"{arm}_error")) and len(recorded) == 2:
                    slots.setdefault((task, arm), []).append((start_key(rec["started_at"]), k, rec))
    free: dict[tuple[str, str], list[Trial]] = {}  # finished trials no record holds, by start
    for trial in trials:
        task_arm = (safe_text(trial.task), trial.arm)
        if task_arm not in slots or is_cancelled(trial.error) or trial.source in standing:
            continue
        if not {(*task_arm, *_trial_key(trial, w)) for w in (True, False)} & held:
            free.setdefault(task_arm, []).append(trial)
    plan: dict[tuple[str, int], _Takeover] = {}
    # with-skills first (the note names it first); the earliest cancelled trial takes the
    # earliest rerun that started after it
    for (task, arm), cancelled in sorted(slots.items(), key=lambda s: (s[0][0], s[0][1] != "se")):
        reruns = sorted(free.get((task, arm), ()),
                        key=lambda t: (start_key(t.started_at), str(t.source)))  # fmt: skip
        i = 0
        for start, k, rec in sorted(cancelled, key=lambda c: c[:2]):
            while i < len(reruns) and start_key(reruns[i].started_at) <= start:
                i += 1  # started before the cancelled one: an attempt beside it
            if i == len(reruns):
                break  # no rerun finished yet: the recorded row stays until one has
            rerun, i = reruns[i], i + 1
            name = rec.get("trial_id") or rec["trial"]
            standing[rerun.source] = (name, rec["started_at"])
            said = f"{name} replaced by {safe_text(rerun.trial_id or rerun.source.name)}"
            before = plan.get((task, k))
            plan[(task, k)] = _Takeover(
                recorded_trials(records[k][task]),
                {**(before.reruns if before else {}), arm: rerun.source},
                f"{before.said}, {said}" if before else said,
            )
    if not standing:
        return trials, plan

    def stand_in(trial: Trial) -> Trial:
        name, start = standing[trial.source]
        note = (f"pairs in the place of the cancelled trial {name} ({CANCELLED}, started "
                f"{start}), whose recorded pair it took over (the old record is in "
                "records.rejected)")  # fmt: skip
        return replace(trial, stands_in_for=(name, start), notes=(*trial.notes, note))

    return [stand_in(t) if t.source in standing else t for t in trials], plan


def _stood_in_for(record: dict[str, Any], arm: str) -> tuple[str, str] | None:
    """(name, start) of the cancelled trial a recorded trial took over (its trace's
    `stands_in_for`), else None; a value that is no short name and start is ignored."""
    for trace in record.get("traces") or ():
        if not isinstance(trace, dict) or trace.get("arm") != arm:
            continue
        try:
            details = json.loads(trace.get("scorer_details") or "{}")
        except (TypeError, ValueError, RecursionError):
            return None
        stood = details.get("stands_in_for") if isinstance(details, dict) else None
        if not isinstance(stood, dict):
            return None
        name, start = stood.get("trial"), stood.get("started_at")
        if all(isinstance(v, str) and 0 < len(v) <= _MAX_STAND_IN for v in (name, start)):
            return safe_text(name), safe_text(start)
        return None
    return None


def _take_over(store: RunStore, record: PairRecord, takeover: _Takeover) -> None:
    """Append the pair holding the rerun, then move the recorded pair of the cancelled trial
    to records.rejected (kept). In this order a crash between the two leaves both lines, the
    old one read first: the next import plans the same takeover, finds the new line already
    there and only sets the old one aside."""
    new = recorded_trials(record.as_dict())
    task = record.task_id
    if not any(recorded_trials(r) == new for r in _lines_of(store, task)):
        store.append_record(record)
    store.set_aside_where(
        lambda r: r.get("task_id") == task and recorded_trials(r) == takeover.old,
        f"a pair of the cancelled trial: {takeover.said}",
    )


def _lines_of(store: RunStore, task: str) -> list[dict[str, Any]]:
    """Every record line of `task` in the run folder's records.jsonl (not only the first)."""
    try:
        data = store.records_path.read_bytes()
    except OSError:
        return []
    out = []
    for raw in data.splitlines():
        try:
            record = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if isinstance(record, dict) and record.get("task_id") == task:
            out.append(record)
    return out


def _other_trials(k: int, pair: Pair, record: dict[str, Any]) -> str | None:
    """What differs when a recorded pair was recorded from other trials than this pair's, else
    None (a resume, a re-import). The recorded pair is kept (a trial Harbor redid after a kill
    is no new pair), but it is said: another run of the same cell (the same agent, model,
    tasks, checksums and skills, so the same run folder) is not silently "already there"."""
    recorded = recorded_trials(record)
    # a record written before traces named the trial's id is compared without it
    now = {t.arm: _trial_key(t, "trial_id" in recorded.get(t.arm, {})) for t in (pair.se, pair.sd)}
    if set(recorded) != {"se", "sd"} or {a: tuple(r.values()) for a, r in recorded.items()} == now:
        return None  # a record without its trials' names is not second-guessed
    said = {a: r.get("trial_id") or r["trial"] for a, r in recorded.items()}
    here = {t.arm: safe_text(t.trial_id or t.source.name) for t in (pair.se, pair.sd)}
    return (f"task {pair.task!r} repeat {k}: recorded {said['se']} and {said['sd']}, here "
            f"{here['se']} and {here['sd']}")  # fmt: skip


def recorded_trials(record: dict[str, Any]) -> dict[str, dict[str, str]]:
    """arm -> the recorded trial's `trial` (folder name), `started_at` and, where the trace
    names it, `trial_id`, from a record's traces (an arm whose trace names none is left out)."""
    recorded: dict[str, dict[str, str]] = {}
    for trace in record.get("traces") or ():
        if not isinstance(trace, dict):  # another cell's folder may hold anything
            continue
        try:
            details = json.loads(trace.get("scorer_details") or "{}")
        except (TypeError, ValueError, RecursionError):  # nested past the parser: no trial named
            continue
        if isinstance(details, dict) and isinstance(details.get("trial"), str):
            # the details' JSON keeps a folder name's lone surrogate (`\udcff`) as it is
            found = {"trial": safe_text(details["trial"]),
                     "started_at": safe_text(str(details.get("started_at")))}  # fmt: skip
            if isinstance(details.get("trial_id"), str):
                found["trial_id"] = safe_text(details["trial_id"])
            recorded[str(trace.get("arm"))] = found
    return recorded


def _trial_key(trial: Trial, with_id: bool) -> tuple[str, ...]:
    """A trial as `recorded_trials` gives a recorded one: folder name, start and (`with_id`) id."""
    key = (safe_text(trial.source.name), safe_text(trial.started_at))
    return (*key, safe_text(trial.trial_id)) if with_id else key


def in_other_cells(identity: dict[str, Any], pairs: list[Pair], output_dir: Path) -> str | None:
    """A note when a run folder of another cell in `output_dir` (of the same provenance)
    records a trial of this import's pairs, else None: the same (trial, task) then counts in
    two cells, in `report output_dir` and on the board. An earlier import of other tasks (a
    partial one: trials that finished since, other trial folders) or with other options made
    that cell; the note names its folder, the tasks and what differs, and the way to one cell."""
    found = _other_cells(identity, {p.task for p in pairs}, _trial_keys(pairs), output_dir)
    if not found:
        return None
    folder, manifest, tasks = found[0]
    shown = ", ".join(repr(t) for t in tasks[:5]) + (", ..." if len(tasks) > 5 else "")
    others = f" (and {len(found) - 1} more run folder(s))" if len(found) > 1 else ""
    cell = str(manifest.get("cell_id"))[:40]
    return (
        f"the same trials of {len(tasks)} task(s) ({shown}) are also recorded in {folder}"
        f"{others}, a run folder of another cell ({cell}: {_how_differs(identity, manifest)}): "
        "report and push count them in both cells; to keep them in this import's cell only, "
        f"remove that cell's run folders ({folder.name.rpartition('-r')[0]}-r*), or import into "
        "another output folder (-o)"
    )


def _trial_keys(pairs: list[Pair]) -> set[tuple[str, ...]]:
    """This import's trials as `_recorded_keys` gives recorded ones: (task, id), and (task,
    folder name, start) for a trial with an ISO start (a record written before traces held
    the id; a start from a run number names no one trial)."""
    keys: set[tuple[str, ...]] = set()
    for pair in pairs:
        for trial in (pair.se, pair.sd):
            if trial.trial_id:
                keys.add((pair.task, "id", safe_text(trial.trial_id)))
            if start_key(trial.started_at)[0] == ISO_START:
                keys.add((pair.task, "at", *_trial_key(trial, with_id=False)))
    return keys


def _recorded_keys(record: dict[str, Any]) -> set[tuple[str, ...]]:
    task = str(record.get("task_id"))
    keys: set[tuple[str, ...]] = set()
    for trial in recorded_trials(record).values():
        if "trial_id" in trial:
            keys.add((task, "id", trial["trial_id"]))
        elif start_key(trial["started_at"])[0] == ISO_START:
            keys.add((task, "at", trial["trial"], trial["started_at"]))
    return keys


#: Entries of an output folder looked at for other cells' run folders.
_MAX_RUN_FOLDERS = 100_000


def _other_cells(
    identity: dict[str, Any], tasks: set[str], mine: set[tuple[str, ...]], output_dir: Path
) -> list[tuple[Path, dict[str, Any], list[str]]]:
    """(run folder, its manifest, the tasks it records from one of `mine`) of each run folder
    of another cell in `output_dir`; one that cannot be read is passed over (its own import
    names what is wrong with it)."""
    from hf_skillfollow.store import RunDirError, RunStore

    own = _run_id(identity, 0).rpartition("-r")[0]
    prefix = own.removesuffix(str(identity["cell_id"]))  # `imported-`, `run-harbor-`
    try:
        entries = os.scandir(output_dir)
    except OSError:
        return []  # no output folder yet
    found = []
    with entries:
        for _, entry in zip(range(_MAX_RUN_FOLDERS), entries, strict=False):
            if not entry.name.startswith(prefix) or entry.name.startswith(own + "-r"):
                continue
            if not entry.is_dir(follow_symlinks=False):
                continue
            store = RunStore(Path(entry.path))
            try:
                manifest = store.read_manifest()
                if not isinstance(manifest, dict) or manifest.get("cell_id") == identity["cell_id"]:
                    continue
                if not tasks & set(map(str, manifest.get("task_ids") or ())):
                    continue
                records = store.read_records()
                same = sorted({r["task_id"] for r in records if _recorded_keys(r) & mine})
            except (RunDirError, OSError, ValueError, TypeError, RecursionError):
                continue  # RecursionError: JSON nested past the parser (a hand-made file)
            if same:
                found.append((store.root, manifest, same))
    return sorted(found, key=lambda f: str(f[0]))


def _how_differs(ours: dict[str, Any], other: dict[str, Any]) -> str:
    """What sets the other cell's manifest (untrusted: any JSON object) apart from this
    import's, in the flags' words."""

    def part(manifest: dict[str, Any], key: str) -> dict[str, Any]:
        value = manifest.get(key)
        return value if isinstance(value, dict) else {}

    said = []
    tasks, theirs = ours["task_ids"], other.get("task_ids")
    if tasks != theirs:
        n = len(theirs) if isinstance(theirs, list) else "other"
        said.append(f"the tasks: {n} there, {len(tasks)} here")
    elif ours.get("benchmark_version") != other.get("benchmark_version"):
        said.append("the task set's checksums or intended skills (--tasks)")
    if ours.get("skill_pool_hash") != other.get("skill_pool_hash"):
        said.append("the skills (--skills)")
    flags = (("loading", "--loading"), ("trigger", "--trigger"),
             ("pass_threshold", "--pass-threshold"),
             ("pass_rate_threshold", "--pass-rate-threshold"), ("baseline", "--baseline"))  # fmt: skip
    said += [
        flag
        for key, flag in flags
        if part(ours, "import").get(key) != part(other, "import").get(key)
    ]
    if part(ours, "config").get("benchmark") != part(other, "config").get("benchmark"):
        said.append("--benchmark")
    if ours.get("judge") != other.get("judge"):
        said.append("the judge")
    if not said:
        return "no flag differs: made by another version of hf-skillfollow"
    return "it differs in " + ", ".join(said)


def _activated(det: Detection | None, trigger: str) -> list[str]:
    """Activated skills in order of their first successful event (S_call: at least one)."""
    if det is None:
        return []
    allowed = set(det.activated("instructions" if trigger == "instructions" else "any"))
    order: dict[str, None] = {}
    for e in det.events:
        if e.succeeded and e.skill in allowed:
            order.setdefault(e.skill, None)
    return list(order)


def _record(
    manifest: dict[str, Any], columns: dict[str, Any], d: _Decided, options: ImportOptions,
    judging: Judging | None = None,
) -> Any:  # fmt: skip
    from hf_skillfollow.record import PairRecord

    graded = {arm: _graded(judging, trial) for arm, trial in (("se", d.pair.se), ("sd", d.pair.sd))}
    se = d.se
    skills = _activated(se, options.trigger)
    returned = bool(se is not None and se.called(options.trigger))
    kinds = set((se.kinds() if se else {}).get(s) for s in skills)
    # a harness's count of unnamed invocations (BenchFlow) tells no kind
    kind = "instructions" if "instructions" in kinds else "resource" if skills else "record"
    detector = se.detector if se is not None else NO_TRANSCRIPT
    if options.loading == "inject":
        # the bodies were in the instruction: every with-skills trial received every offered
        # skill whatever its transcript shows, so every task is in S_call and RAE = OAE
        skills, returned, kind, detector = list(d.offered), True, "instructions", INJECTED
    queries = [e.evidence[:_MAX_QUERY_CHARS] for e in (se.events if se else ())][:_MAX_QUERIES]
    transition = {
        **columns,
        "task_id": d.pair.task,
        "se_correct": _passed(d.pair.se, graded["se"], judging),
        "sd_correct": _passed(d.pair.sd, graded["sd"], judging),
        "invoked": bool(se and se.invoked) or options.loading == "inject",
        "returned": returned,
        "n_calls": len(se.events) if se else 0,
        "queries": queries,
        "skills_returned": skills,
        "se_error": d.pair.se.error,
        "sd_error": d.pair.sd.error,
        "adherence": None,
        "detector": detector,
        "trigger_kind": kind if returned else None,
        "arm_integrity": d.integrity.status,
        "intended_skills": d.intended,
    }  # fmt: skip
    traces = [
        _trace(manifest, d.pair, d.pair.se, d.se_read, len(se.events) if se else 0),
        _trace(manifest, d.pair, d.pair.sd, d.sd_read, 0),
    ]
    if judging is not None:
        for trace, trial in zip(traces, (d.pair.se, d.pair.sd), strict=True):
            trace.update(_judged_columns(trial, graded[trial.arm], trace["scorer_details"]))
            trace["correct"] = _passed(trial, graded[trial.arm], judging)
    return PairRecord(d.pair.task, transition, traces)


def _graded(judging: Judging | None, trial: Trial) -> Graded | None:
    return None if judging is None else judging.verdicts.get(trial.source.resolve())


def _passed(trial: Trial, graded: Graded | None, judging: Judging | None) -> bool:
    """The verifier's verdict, or in a judged import the judge's (a trial it did not judge,
    one that ended in an error, is incorrect, its error kept)."""
    if judging is None:
        return trial.passed
    return graded is not None and graded.passed and trial.error is None


def _judged_columns(trial: Trial, graded: Graded | None, details: str) -> dict[str, Any]:
    """A judged trial's trace: the judge's verdict and record in the columns a judged
    chat-loop run fills (`grader`, `judge`, `judge_verdicts`, `addresses_grader`), and the
    answer the judge read as the final answer; the verifier's reward stays in the details."""
    from hf_skillfollow.judge import addresses_grader

    scorer = json.loads(details)
    if graded is None:
        scorer["reason"] = f"not judged: {trial.error or 'no verdict'}"
        return {"grader": "expectations", "judge": None, "judge_verdicts": None,
                "addresses_grader": False, "scorer_details": json.dumps(scorer, default=str)}  # fmt: skip
    scorer["reason"] = graded.reason
    return {
        "grader": "expectations",
        "judge": graded.record.get("judge"),
        "judge_verdicts": json.dumps(graded.record, sort_keys=True),
        "addresses_grader": addresses_grader(graded.answer),
        "final_answer": graded.answer,
        "extracted": graded.answer,
        "scorer_details": json.dumps(scorer, default=str),
    }


def _trace(
    manifest: dict[str, Any], pair: Pair, trial: Trial, read: Reading, n_calls: int
) -> dict[str, Any]:
    det = read.detection
    details = {
        "reason": "imported verifier result",
        "scorer_version": manifest["provenance"],
        "reward": trial.reward,
        "pass_threshold": manifest["import"]["pass_threshold"],
        "trial": trial.source.name,
        # the harness's name for it (Harbor's trial_name; skill-creator: the run's path from
        # the workspace's folder, since `run-1` is in every iteration): a trial's identity
        **({"trial_id": trial.trial_id} if trial.trial_id else {}),
        # a rerun in a cancelled trial's place: the next import pairs it there (`_reruns`)
        **(
            {"stands_in_for": dict(zip(("trial", "started_at"), trial.stands_in_for, strict=True))}
            if trial.stands_in_for
            else {}
        ),  # fmt: skip
        "transcript": None if read.transcript is None else read.transcript.name,
        "started_at": trial.started_at,
        "task_checksum": trial.checksum,
        "checksum_differs_between_arms": pair.checksum_differs,
        "detector": det.detector if det else NO_TRANSCRIPT,
        "events": [
            {
                "skill": e.skill,
                "kind": e.kind,
                "event": e.event_index,
                "succeeded": e.succeeded,
                "evidence": e.evidence[:_MAX_QUERY_CHARS],
            }
            for e in (det.events if det else ())[:_MAX_QUERIES]
        ],  # fmt: skip
        "listed": list(det.listed[:_MAX_QUERIES]) if det else [],
        "notes": list((det.notes if det else ())[:10])
        + list(read.skipped[:5])
        + list(trial.notes[:10]),
    }
    return {
        "schema_version": manifest["schema_version"],
        "run_id": manifest["run_id"],
        "cell_id": manifest["cell_id"],
        "task_id": pair.task,
        "arm": trial.arm,
        "messages": [],
        "final_answer": "",
        "extracted": "",
        "correct": trial.passed,
        "scorer_details": json.dumps(details, default=str),
        "error": trial.error,
        "n_calls": n_calls,
        "latency_s": trial.seconds,
        "prompt_tokens": trial.tokens[0],
        "completion_tokens": trial.tokens[1],
    }

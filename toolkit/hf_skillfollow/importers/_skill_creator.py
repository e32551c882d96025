"""Anthropic skill-creator workspaces (`skills/skill-creator/references/schemas.md`).

Layout: `<skill>-workspace/iteration-N/eval-<id>[-<name>]/{with_skill,without_skill,old_skill}/`,
each configuration folder either one run or `run-K/` folders, each run with `grading.json`
(`expectations[]` of `{text, passed, evidence}`, `summary.pass_rate`), `timing.json`
(`executor_start`) and `outputs/`. The arms are the format's own folders: `with_skill` is
the with-skills arm; the baseline is `without_skill` (a new skill) or `old_skill` (the
previous version: `--baseline`). A run passes when every expectation passed, or when its
pass rate reaches `--pass-rate-threshold`. `iteration-N/benchmark.json` (`runs[]` with
`eval_id`/`eval_name`, `configuration`, `run_number`, `result.passed`/`total`) is
cross-checked against the gradings; every disagreement is reported, the gradings count.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from hf_skillfollow.importers._base import (
    Arm,
    Collected,
    ImportInputError,
    ImportOptions,
    ImportRequest,
    Trial,
)
from hf_skillfollow.importers._harbor import seconds_value
from hf_skillfollow.importers._pairing import ISO_START, start_key
from hf_skillfollow.importers._walk import (
    MAX_ENTRIES,
    existing_files,
    field,
    find_file,
    given_path,
    listing,
    read_json,
)

_ARMS = ("with_skill", "without_skill", "old_skill")
_ITERATION = re.compile(r"iteration-(\d{1,6})")
_RUN = re.compile(r"run-(\d{1,6})")
#: Notes kept of benchmark.json's disagreements (the rest counted), and the comparisons spent
#: matching its runs to eval folders by name; characters of its values shown in a note.
_MAX_NOTES = 50
_MAX_NAME_SCANS = 2_000_000
_SHOWN = 80
#: A run's note when its configuration's runs are paired by run number (`_by_run_number`).
_BY_NUMBER = "ordered by run number"
_TRANSCRIPTS = ("transcript.jsonl", "outputs/transcript.jsonl", "transcript.json",
                "outputs/transcript.json")  # fmt: skip


def collect_skill_creator(request: ImportRequest) -> Collected:
    if not request.paths or request.with_paths or request.without_paths:
        raise ImportInputError(
            "give the skill-creator workspace folder(s): import skill-creator WORKSPACE..."
        )
    trials: list[Trial] = []
    notes: list[str] = []
    baselines = set()
    evals: dict[str, Path] = {}
    for workspace in request.paths:
        given_path(workspace, "WORKSPACE")
        if not workspace.is_dir():
            raise ImportInputError(f"WORKSPACE {workspace}: not a folder")
        iteration = _iteration(workspace)
        baseline = _baseline(iteration, request.options.baseline)
        baselines.add(baseline)
        notes.append(f"{iteration}: {baseline} is the without-skills arm")
        found, model = _runs(iteration, baseline, request.options)
        for task in dict.fromkeys(t.task for t in found):
            # eval-0, eval-1, ... in every workspace: the same name is not the same eval
            other = evals.setdefault(task, iteration)
            if other != iteration:
                raise ImportInputError(
                    f"WORKSPACE {workspace}: eval folder {task!r} is also in {other}; import "
                    "the workspaces apart (their evals are not repeats of one task)"
                )
        trials.extend(found)
        reordered = [t for t in found if any(n.startswith(_BY_NUMBER) for n in t.notes)]
        if reordered:
            notes.append(
                f"{iteration}: {len(reordered)} run(s) paired in the order of their run number, "
                "not executor_start: some runs of their configuration have no timing.json, "
                f"e.g. {reordered[0].source}"
            )
        notes.extend(_cross_check(iteration, found, baseline))
        if model:
            trials[:] = [_with_model(t, model) for t in trials]
    if len(baselines) > 1:
        raise ImportInputError(
            "the workspaces have different baselines (without_skill and old_skill); import "
            "them apart or choose one with --baseline"
        )
    return Collected(trials, notes, "skill-creator", baseline=baselines.pop())


def _iteration(workspace: Path) -> Path:
    """The workspace's latest `iteration-N` folder (or the workspace itself, if it is one)."""
    if _ITERATION.fullmatch(workspace.name):
        return workspace
    found = sorted(
        (int(m.group(1)), p) for p in _dirs(workspace) if (m := _ITERATION.fullmatch(p.name))
    )
    if not found:
        raise ImportInputError(f"WORKSPACE {workspace}: no iteration-N folder")
    return found[-1][1]


def _dirs(folder: Path) -> list[Path]:
    """The real folders (no symbolic links) in `folder`, sorted; bounded like a walk."""
    entries = listing(folder, MAX_ENTRIES, folder, hint="")
    return sorted(Path(e.path) for e in entries if e.is_dir(follow_symlinks=False))


def _baseline(iteration: Path, chosen: str | None) -> str:
    present = {
        c for e in _dirs(iteration) for c in ("without_skill", "old_skill") if (e / c).is_dir()
    }
    if chosen is not None:
        if chosen not in ("without_skill", "old_skill"):
            raise ImportInputError(f"--baseline {chosen!r}: choose without_skill or old_skill")
        return chosen
    if len(present) > 1:
        raise ImportInputError(
            f"{iteration}: both without_skill and old_skill runs; choose the baseline with "
            "--baseline without_skill or --baseline old_skill"
        )
    return next(iter(present), "without_skill")


def _runs(iteration: Path, baseline: str, options: ImportOptions) -> tuple[list[Trial], str]:
    trials = []
    above = iteration.resolve().parent.parent  # a run's id starts with the workspace's name
    for eval_dir in _dirs(iteration):
        for config, arm in (("with_skill", "se"), (baseline, "sd")):
            folder = eval_dir / config
            if not folder.is_dir() or folder.is_symlink():
                continue
            runs = [p for p in _dirs(folder) if _RUN.fullmatch(p.name)] or [folder]
            found = [_trial(run, eval_dir.name, arm, options, above) for run in runs]  # type: ignore[arg-type]
            trials.extend(_by_run_number(found))
    model = ""
    bench = find_file(iteration, "benchmark.json")
    if bench is not None:
        model = (
            field(read_json(bench, iteration), bench, "metadata", "executor_model", kind=str) or ""
        )
    return trials, model


def _by_run_number(runs: list[Trial]) -> list[Trial]:
    """The runs of one configuration, each ordered by its run number (`run-000002`) when some
    have an ISO `executor_start` and some none: pairing sorts ISO times before any text, so
    run-2 without timing.json would come after run-3 with it and pair with the other arm's
    run-3. The times left unused are said in each run's notes."""
    timed = [start_key(t.started_at)[0] == ISO_START for t in runs]
    if all(timed) or not any(timed):
        return runs
    out = []
    for trial, had in zip(runs, timed, strict=True):
        m = _RUN.fullmatch(trial.source.name)
        number = f"run-{int(m.group(1)):06d}" if m else ""
        note = (f"{_BY_NUMBER}: executor_start {trial.started_at} not used, since "
                "other runs of this configuration have none") if had else (
                f"{_BY_NUMBER}: no timing.json executor_start")  # fmt: skip
        out.append(replace(trial, started_at=number, notes=(*trial.notes, note)))
    return out


def _trial(run: Path, task: str, arm: Arm, options: ImportOptions, above: Path) -> Trial:
    """One run; `above` is the folder holding its workspace (its id is the path from there)."""
    grading_path = find_file(run, "grading.json")
    timing_path = find_file(run, "timing.json")
    started = ""
    seconds = 0.0
    if timing_path is not None:
        timing = read_json(timing_path, run)
        started = field(timing, timing_path, "executor_start", kind=str, max_chars=200) or ""
        seconds = seconds_value(
            field(timing, timing_path, "executor_duration_seconds", kind=(int, float))
        )
    if not started:
        m = _RUN.fullmatch(run.name)
        started = f"run-{int(m.group(1)):06d}" if m else ""
    passed, error, rate = False, None, None
    if grading_path is None:
        error = "no grading.json"
    else:
        passed, rate, error = _verdict(read_json(grading_path, run), grading_path, options)
    transcripts = existing_files(run, *_TRANSCRIPTS)
    return Trial(
        arm=arm, task=task, checksum="", started_at=started, passed=passed, error=error,
        source=run, transcripts=transcripts, agent="skill-creator", agent_version="unknown",
        reward=rate, seconds=seconds,
        # `run-1` and a start from the run number are in every eval and iteration: the path
        # from above the workspace tells this run from another iteration's or workspace's
        trial_id=run.resolve().relative_to(above).as_posix(),
    )  # fmt: skip


def grading_counts(data: Any, path: Path) -> tuple[int, int]:
    """(passed, total) expectations of a grading.json."""
    items = field(data, path, "expectations", kind=list)
    if items is None:
        raise ImportInputError(f"{path}: field 'expectations' is missing")
    passed = 0
    for i, item in enumerate(items):
        value = item.get("passed") if isinstance(item, dict) else None
        if not isinstance(value, bool):
            raise ImportInputError(f"{path}: field 'expectations[{i}].passed' is not true/false")
        passed += value
    return passed, len(items)


def _verdict(
    data: Any, path: Path, options: ImportOptions
) -> tuple[bool, float | None, str | None]:
    if not isinstance(data, dict):
        raise ImportInputError(f"{path}: not a grading object")
    passed, total = grading_counts(data, path)
    if total == 0:
        return False, None, "grading.json lists no expectation"
    rate = passed / total
    if options.pass_rate_threshold is None:
        return passed == total, rate, None
    return rate >= options.pass_rate_threshold, rate, None


def _cross_check(iteration: Path, trials: list[Trial], baseline: str) -> list[str]:
    """benchmark.json's runs against the gradings: one note per disagreement."""
    bench = find_file(iteration, "benchmark.json")
    if bench is None:
        return [f"{iteration}: no benchmark.json to cross-check"]
    runs = field(read_json(bench, iteration), bench, "runs", kind=list) or []
    graded: dict[tuple[str, str, int], tuple[int, int]] = {}
    for t in trials:
        grading = find_file(t.source, "grading.json")
        if grading is None:
            continue
        m = _RUN.fullmatch(t.source.name)
        config = "with_skill" if t.arm == "se" else baseline
        graded[(t.task, config, int(m.group(1)) if m else 1)] = grading_counts(
            read_json(grading, t.source), grading
        )
    return _disagreements(bench, runs, graded)


def _disagreements(
    bench: Path, runs: list[Any], graded: dict[tuple[str, str, int], tuple[int, int]]
) -> list[str]:
    """One note per run of benchmark.json that disagrees with its grading or has none (the
    first `_MAX_NOTES`, then a count). A run is matched by `eval_id` in one look-up, else by
    `eval_name` (the eval folder's name ends with it) within `_MAX_NAME_SCANS` comparisons in
    all: a benchmark.json of a million runs costs no more."""
    tasks = list(dict.fromkeys(k[0] for k in graded))
    by_id: dict[str, str] = {}
    for task in tasks:
        parts = task.split("-", 2)
        by_id.setdefault(parts[1] if len(parts) > 1 else "", task)
    notes: list[str] = []
    more = unchecked = scans = 0
    for i, run in enumerate(runs):
        if not isinstance(run, dict):
            continue
        name, eval_id = run.get("eval_name"), run.get("eval_id")
        config, number = run.get("configuration"), run.get("run_number", 1)
        result = run.get("result") if isinstance(run.get("result"), dict) else {}
        task = by_id.get(str(eval_id)) if isinstance(eval_id, int | str) else None
        if task is None and isinstance(name, str) and name:
            if scans + len(tasks) > _MAX_NAME_SCANS:
                unchecked += 1
                continue
            scans += len(tasks)
            task = next((t for t in tasks if t.endswith(name)), None)
        shown = f"{config!s:.{_SHOWN}}, run {number!s:.{_SHOWN}}"
        have = None
        if isinstance(config, str) and isinstance(number, int) and not isinstance(number, bool):
            have = graded.get((task, config, number)) if task is not None else None
        if have is None:
            text = f"runs[{i}] ({name or eval_id!s:.{_SHOWN}}, {shown}) has no graded run"
        elif (said := (result.get("passed"), result.get("total"))) != have:
            passed, total = (f"{x!s:.{_SHOWN}}" for x in said)
            text = (f"runs[{i}] ({task}, {shown}) says {passed}/{total} expectations passed, "
                    f"its grading.json {have[0]}/{have[1]}; the grading counts")  # fmt: skip
        else:
            continue
        if len(notes) < _MAX_NOTES:
            notes.append(f"{bench}: {text}")
        else:
            more += 1
    if more:
        notes.append(f"{bench}: {more:,} more run(s) disagree with the gradings or have none")
    if unchecked:
        notes.append(f"{bench}: {unchecked:,} run(s) not cross-checked (matching them by "
                     f"eval_name took over {_MAX_NAME_SCANS:,} comparisons)")  # fmt: skip
    return notes


def _with_model(trial: Trial, model: str) -> Trial:
    return replace(trial, model=model) if trial.model == "unknown" else trial

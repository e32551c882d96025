"""`push_runs`: publish run directories to a Hub dataset repo (or a local folder, dry run).

One commit adds the new run files, the updated per-run counts (`_stats.py`) and the card
regenerated from them; published run files are never rewritten or deleted. A push reads the
card and the counts file, not the published runs, so its cost follows what it adds. Tokens
are resolved by huggingface_hub (argument, HF_TOKEN or the cached login) and scrubbed from
every error this module raises.
"""

from __future__ import annotations

import logging
import os
import random
import re
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_skillfollow.hub._card import render_card
from hf_skillfollow.hub._card_cache import CARD_CELLS_PATH, CardRowCache
from hf_skillfollow.hub._layout import (
    CARD_PATH,
    MANIFEST,
    RUN_ANNOTATIONS,
    RUN_TRACES,
    RUN_TRANSITIONS,
    HubError,
    RunTables,
    read_manifest,
    read_run_dir,
)
from hf_skillfollow.hub._numbers import known_tool_schemas
from hf_skillfollow.hub._plan import (
    PushPlan,
    RepoState,
    all_annotations,
    has_traces,
    plan_push,
    published,
)
from hf_skillfollow.hub._repos import BRANCH, REPO_TYPE, HubRepo, LocalRepoFolder
from hf_skillfollow.hub._secrets import refuse_token_in, scrubbed
from hf_skillfollow.hub._stats import RECENT_PATH, STATS_PATH
from hf_skillfollow.hub._summary import SUMMARY_PATH

log = logging.getLogger("hf_skillfollow.hub")

#: Read-plan-commit rounds before giving up when other pushes keep landing first.
MAX_ATTEMPTS = 8
# The Hub answers a commit whose parent_commit is no longer the branch head with 412
# Precondition Failed (409 while another commit holds the repo's lock): both mean "re-read".
_CONFLICT_STATUS = frozenset({409, 412})
_COUNT_FILES = frozenset({STATS_PATH, RECENT_PATH, SUMMARY_PATH})
_SPACE_LINK = re.compile(r"https://huggingface\.co/spaces/([A-Za-z0-9][\w.-]*/[\w.-]+)\)")


@dataclass
class PushResult:
    """What a push added (or, for a dry run, wrote into the folder)."""

    repo_id: str
    target: str
    dry_run: bool
    added: dict[str, int] = field(default_factory=dict)  # path -> rows
    skipped: list[str] = field(default_factory=list)
    card_updated: bool = False
    stats_updated: bool = False
    commit_url: str | None = None
    stats_paths: list[str] = field(default_factory=list)  # count files written (under stats/)
    attempts: int = 1  # read-plan-commit rounds (more than one after a concurrent push)

    @property
    def changed(self) -> bool:
        return bool(self.added) or self.card_updated or self.stats_updated


@dataclass
class _Prepared:
    """Everything one commit writes: the new run files plus the derived files that changed."""

    plan: PushPlan
    files: dict[str, bytes]
    card_updated: bool
    stats_updated: bool
    #: the API keys the runs' manifests name (what -> value), never to be uploaded
    keys: dict[str, str] = field(default_factory=dict)


def build_repo(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path,
    *,
    repo_id: str | None = None,
    license: str = "cc-by-4.0",
    space: str | None = None,
    token: str | None = None,
) -> PushResult:
    """Write (or extend) a results repo folder from run directories; uploads nothing.

    Concurrent calls on one folder (several processes of a sharded sweep) serialise on a
    lock file inside it, so each reads what the previous one wrote and both land. Like the
    real upload, it refuses to write a file holding the Hub token (`token`, else HF_TOKEN or
    the cached login), so a dry run shows what a push would do.
    """
    folder = LocalRepoFolder(Path(out_dir))
    runs = _read_runs(run_dirs)
    name = repo_id or folder.root.name
    with folder.locked():
        prepared = _prepare(runs, folder, name, license, space, run_dirs)
        refuse_token_in(prepared.files, token, prepared.keys)
        folder.write(prepared.files)
    return _result(name, folder.name, True, prepared)


def push_runs(
    run_dirs: Sequence[str | Path],
    repo_id: str,
    *,
    private: bool = False,
    token: str | None = None,
    dry_run_dir: str | Path | None = None,
    api: Any = None,
    license: str = "cc-by-4.0",
    space: str | None = None,
) -> PushResult:
    """Publish run directories to the dataset repo `repo_id` in one commit (see module doc).

    The commit names the revision its plan was read from (`parent_commit`); when another push
    landed in between, the Hub refuses it and the whole read-plan-commit round is repeated.
    """
    _check_repo_id(repo_id)
    if space is not None:
        _check_repo_id(space, flag="--space", kind="Space")
    if dry_run_dir is not None:
        return build_repo(
            run_dirs, dry_run_dir, repo_id=repo_id, license=license, space=space, token=token
        )
    runs = _read_runs(run_dirs)
    with scrubbed(token):
        api = api if api is not None else _hf_api(token)
        api.create_repo(repo_id, repo_type=REPO_TYPE, private=private, exist_ok=True)
        for attempt in range(1, MAX_ATTEMPTS + 1):
            state = HubRepo(api, repo_id)
            prepared = _prepare(runs, state, repo_id, license, space, run_dirs)
            result = _result(repo_id, state.name, False, prepared)
            result.attempts = attempt
            if not result.changed:
                log.info("%s: nothing new to add", state.name)
                return result
            try:
                result.commit_url = _commit(api, state, prepared, token)
            except Exception as exc:
                if not _is_conflict(exc):
                    raise
                log.info("%s: another push landed first (%s); re-reading", state.name, exc)
                time.sleep(min(8.0, 0.2 * 2**attempt) * random.uniform(0.5, 1.5))
                continue
            log.info("%s: added %d file(s)", state.name, len(prepared.files))
            return result
        raise HubError(
            f"{repo_id}: other pushes landed first {MAX_ATTEMPTS} times in a row; run the same "
            "push again (it adds only what is still missing)"
        )


def _prepare(
    runs: list[RunTables],
    state: RepoState,
    repo_id: str,
    license: str,
    space: str | None,
    paths: Sequence[str | Path] = (),
) -> _Prepared:
    from hf_skillfollow.hub._counts import repo_counts
    from hf_skillfollow.hub._verifications import all_records, plan_records

    plan = plan_push(runs, state)
    plan_records(paths, state, plan)  # verification records given, or kept in the run dirs
    annotations, verifications = all_annotations(plan, state), all_records(plan, state)
    # Those two sections of the card read every run's counts; the rest reads the summary.
    counts = repo_counts(
        plan, state, need_table=annotations is not None or verifications is not None
    )
    old_card = published(CARD_PATH, state)
    old_cells = published(CARD_CELLS_PATH, state)
    cell_cache = CardRowCache(old_cells)
    manifests = _manifests(runs)
    # This toolkit's own schemas win: a manifest names the tool only of prompts it does not know.
    manifest_paths = {run.run_id: run.source / MANIFEST for run in runs}
    schemas = _manifest_tool_schemas(manifests, manifest_paths) | known_tool_schemas()
    card = render_card(
        counts.summary if counts.table is None else counts.table,
        repo_id=repo_id,
        has_traces=has_traces(plan, state),
        license=license,
        tool_schemas=schemas,
        space=space or _linked_space(old_card),
        annotations=annotations,
        verifications=verifications,
        cell_cache=cell_cache,
        summary=counts.summary,
    ).encode()
    files = dict(plan.add) | counts.files
    stats_updated = bool(counts.files)
    card_updated = card != old_card
    if card_updated:
        files[CARD_PATH] = card
    # Never a commit for a cache alone (say, after a toolkit upgrade on a push that adds
    # nothing): it only saves work, and is refreshed by the next push that changes anything.
    if files:
        summary = counts.summary.to_bytes()
        if summary != published(SUMMARY_PATH, state):
            files[SUMMARY_PATH] = summary
        if cell_cache.changed:
            files[CARD_CELLS_PATH] = cell_cache.to_bytes()
    return _Prepared(plan, files, card_updated, stats_updated, _api_keys(manifests))


def _result(repo_id: str, target: str, dry_run: bool, prepared: _Prepared) -> PushResult:
    plan = prepared.plan
    return PushResult(
        repo_id,
        target,
        dry_run,
        dict(plan.rows),
        plan.skipped,
        prepared.card_updated,
        prepared.stats_updated,
        stats_paths=sorted(p for p in prepared.files if p in _COUNT_FILES),
    )


def _commit(api: Any, state: HubRepo, prepared: _Prepared, token: str | None) -> str | None:
    from huggingface_hub import CommitOperationAdd

    refuse_token_in(prepared.files, token, prepared.keys)
    ops = [
        CommitOperationAdd(path_in_repo=p, path_or_fileobj=data)
        for p, data in sorted(prepared.files.items())
    ]
    info = api.create_commit(
        state.repo_id,
        operations=ops,
        commit_message=_message(prepared.plan),
        repo_type=REPO_TYPE,
        revision=BRANCH,
        parent_commit=state.head,
    )
    return getattr(info, "commit_url", None)


def _is_conflict(exc: BaseException | None) -> bool:
    # Some huggingface_hub versions re-raise the HTTP error from inside their own handler.
    while exc is not None:
        if getattr(getattr(exc, "response", None), "status_code", None) in _CONFLICT_STATUS:
            return True
        exc = exc.__context__
    return False


def _linked_space(card: bytes | None) -> str | None:
    """The Space an earlier `push --space` linked, so later pushes keep the link."""
    match = _SPACE_LINK.search(card.decode("utf-8", "replace")) if card else None
    return match.group(1) if match else None


def _read_runs(run_dirs: Sequence[str | Path]) -> list[RunTables]:
    from hf_skillfollow.hub._verifications import is_record_arg

    if not run_dirs:
        raise HubError("no run directories given")
    runs = [p for p in run_dirs if not is_record_arg(p)]  # record files are planned apart
    for root in runs:
        _check_run_folder(Path(root))
    with ThreadPoolExecutor(max_workers=4) as pool:  # parquet reads release the GIL
        read = list(pool.map(read_run_dir, runs))
    for run in read:
        _refuse_doubled_rows(run)
        if run.annotations is not None:
            _check_annotations(run)
    return read


def _check_annotations(run: RunTables) -> None:
    from hf_skillfollow.annotate._labels import check_annotation_rows

    try:
        check_annotation_rows(run.annotations, str(run.source / RUN_ANNOTATIONS))
    except ValueError as exc:
        raise HubError(str(exc)) from None


#: What identifies a row of each run file (one run: one run id).
_ROW_KEYS = {
    RUN_TRANSITIONS: ("task_id", "repeat_index"),
    RUN_TRACES: ("task_id", "arm"),
    RUN_ANNOTATIONS: ("task_id", "repeat_index", "annotator"),
}


def _refuse_doubled_rows(run: RunTables) -> None:
    """A row given twice (a records file appended to twice, a hand-merged table) would be
    counted twice on the card and the board: one HubError naming the file and the row."""
    import pyarrow.compute as pc

    tables = {
        RUN_TRANSITIONS: run.transitions,
        RUN_TRACES: run.traces,
        RUN_ANNOTATIONS: run.annotations,
    }
    for name, table in tables.items():
        if table is None:
            continue
        keys = list(_ROW_KEYS[name])
        counts = table.group_by(keys).aggregate([([], "count_all")])
        doubled = counts.filter(pc.greater(counts["count_all"], 1))
        if doubled.num_rows:
            first = doubled.slice(0, 1).to_pylist()[0]
            row = ", ".join(f"{k} {str(first[k])[:80]!r}" for k in keys)
            raise HubError(
                f"{run.source / name}: {doubled.num_rows} row(s) given more than once, the "
                f"first: {row} ({first['count_all']} times); one row per "
                f"{', '.join(keys)}"
            )


#: The files of a run directory a push reads.
_RUN_FILES = (MANIFEST, RUN_TRANSITIONS, RUN_TRACES, RUN_ANNOTATIONS)


def _check_run_folder(root: Path) -> None:
    """Each file a push reads from `root` is a regular file inside it: a symbolic link out of
    the folder (a run folder handed over by someone else) would publish a file elsewhere on
    this machine under that run's name."""
    from hf_skillfollow._files import inside, regular_file

    for name in _RUN_FILES:
        path = root / name
        if not os.path.lexists(path):
            continue
        try:
            regular_file(inside(path, root))
        except OSError as exc:
            raise HubError(str(exc)) from None


def _manifests(runs: list[RunTables]) -> dict[str, dict[str, Any]]:
    """run id -> its manifest (an empty one when the folder has none); a manifest that is not
    a JSON object is one HubError naming it."""
    out: dict[str, dict[str, Any]] = {}
    for run in runs:
        path = run.source / MANIFEST
        manifest = read_manifest(path)
        if manifest is None:
            out[run.run_id] = {}
            continue
        cells = set(run.transitions.column("cell_id").to_pylist())
        if "cell_id" in manifest and cells != {manifest["cell_id"]}:
            # The rows would land on the board in another cell than the run was made for.
            raise HubError(
                f"{path}: cell_id {str(manifest['cell_id'])[:80]!r} differs from the rows' "
                f"cell_id {sorted(map(str, cells))[:3]}"
            )
        out[run.run_id] = manifest
    return out


def _manifest_tool_schemas(
    manifests: dict[str, dict[str, Any]], paths: dict[str, Path]
) -> dict[str, dict[str, Any]]:
    """prompts_hash -> tool schema recorded in the manifests of the runs being pushed; one the
    card cannot show as a signature (a hand-made manifest) is a HubError naming it."""
    from hf_skillfollow.hub._numbers import tool_signature

    out: dict[str, dict[str, Any]] = {}
    for run_id, manifest in manifests.items():
        schema = manifest.get("tool_schema")
        if isinstance(schema, dict) and isinstance(manifest.get("prompts_hash"), str):
            try:
                tool_signature(schema)
            except (AttributeError, TypeError, RecursionError):
                raise HubError(
                    f"{paths[run_id]}: field 'tool_schema' is not an OpenAI tool schema "
                    "(name, parameters.properties of JSON schemas)"
                ) from None
            out[manifest["prompts_hash"]] = schema
    return out


def _api_keys(manifests: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The API keys the runs were made with, as this machine holds them: the value of each key
    variable a manifest names (`config.api_key_env`, `config.judge_api_key_env`). A model may
    echo its key, an error text may carry it, a hand-edited record may hold it: none of the
    files of a push may contain one (`refuse_token_in`)."""
    keys: dict[str, str] = {}
    for run_id, manifest in manifests.items():
        config = manifest.get("config")
        if not isinstance(config, dict):
            continue
        for field_name in ("api_key_env", "judge_api_key_env"):
            var = config.get(field_name)
            value = os.environ.get(var) if isinstance(var, str) and var else None
            if value:
                keys[f"the value of ${var} (the key variable of run {run_id})"] = value
    return keys


def _message(plan: PushPlan) -> str:
    runs = sorted({Path(p).stem for p in plan.add})
    if not runs:
        return "Regenerate dataset card"
    head = ", ".join(runs[:5]) + (f" and {len(runs) - 5} more" if len(runs) > 5 else "")
    return f"Add skillfollow run(s) {head}"


def _check_repo_id(repo_id: str, *, flag: str = "--repo", kind: str = "dataset") -> None:
    parts = repo_id.split("/")
    if len(parts) != 2 or not all(parts):
        raise HubError(f"{flag} {repo_id!r}: expected ORG/NAME (a Hub {kind} repo id)")


def _hf_api(token: str | None) -> Any:
    from huggingface_hub import HfApi

    return HfApi(token=token)

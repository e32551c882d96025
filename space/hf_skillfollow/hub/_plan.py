"""Decide what a push adds to a results repo: new run files only, never a rewrite.

A repo state is anything that lists its paths and reads a file's bytes (a Hub repo or a
local folder), so the same rules hold for a real push and for `--dry-run`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

import pyarrow as pa

from hf_skillfollow.hub._layout import (
    ANNOTATIONS_DIR,
    TRACES_DIR,
    HubError,
    RunTables,
    annotations_path,
    parquet_bytes,
    read_parquet_bytes,
    sha256,
    traces_path,
    transitions_path,
)


class RepoState(Protocol):
    """What a push needs to know about the repo it appends to."""

    name: str

    def exists(self, path: str) -> bool: ...

    def files_in(self, folder: str) -> list[str]:
        """Paths directly inside `folder`, in name order."""
        ...

    def read(self, path: str) -> bytes: ...


@dataclass
class PushPlan:
    """New files to add (path -> bytes) and published files found identical."""

    add: dict[str, bytes] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    new_transitions: dict[str, pa.Table] = field(default_factory=dict)
    new_annotations: dict[str, pa.Table] = field(default_factory=dict)
    #: a run's traces keyed by its transitions path (the card's cost sums of its new runs)
    new_traces: dict[str, pa.Table] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)


def plan_push(runs: Sequence[RunTables], state: RepoState) -> PushPlan:
    """Files to add for `runs`; raises HubError for a run id published with other content."""
    plan = PushPlan()
    plan.new_traces = {
        transitions_path(run.run_id): run.traces for run in runs if run.traces is not None
    }
    files = [(run, config, path, table) for run in runs for config, path, table in _run_files(run)]
    # Encoding is per-file overhead bound and pyarrow releases the GIL while writing.
    with ThreadPoolExecutor(max_workers=4) as pool:
        encoded = list(pool.map(lambda f: parquet_bytes(f[3], f[1]), files))
    for (run, config, path, table), data in zip(files, encoded, strict=True):
        if state.exists(path):
            _check_same(state.read(path), data, table, config, path, state.name, run)
            plan.skipped.append(path)
        elif path in plan.add:
            _check_same(plan.add[path], data, table, config, path, "this push", run)
        else:
            plan.add[path] = data
            plan.rows[path] = table.num_rows
            if config == "transitions":
                plan.new_transitions[path] = table
            elif config == "annotations":
                plan.new_annotations[path] = table
    return plan


def _run_files(run: RunTables) -> Iterable[tuple[str, str, pa.Table]]:
    yield "transitions", transitions_path(run.run_id), run.transitions
    if run.traces is not None:
        yield "traces", traces_path(run.run_id), run.traces
    if run.annotations is not None:
        import pyarrow.compute as pc

        column = run.annotations.column("annotator")
        for annotator in sorted(set(column.to_pylist())):
            part = run.annotations.filter(pc.equal(column, annotator))
            yield "annotations", annotations_path(run.run_id, annotator), part


def _check_same(
    published: bytes,
    data: bytes,
    table: pa.Table,
    config: str,
    path: str,
    where: str,
    run: RunTables,
) -> None:
    if sha256(published) == sha256(data):
        return
    # Another pyarrow version may encode the same rows differently; compare the rows.
    if read_parquet_bytes(published, config, f"{where}:{path}").equals(table):
        return
    raise HubError(
        f"run id {run.run_id!r} (from {run.source}) is already in {where} at {path} with different "
        f"{config} rows; published runs are never overwritten. If this is a new run, give it a new "
        "run id; if the published one is wrong, delete it from the repo by hand first."
    )


def all_annotations(plan: PushPlan, state: RepoState) -> pa.Table | None:
    """Every annotations row the repo will hold after the push (published + new), or None.
    Annotation files are small (one row per annotated flip), so the card reads them all."""
    published = [p for p in state.files_in(ANNOTATIONS_DIR) if p.endswith(".parquet")]
    tables = [
        read_parquet_bytes(state.read(p), "annotations", f"{state.name}:{p}") for p in published
    ]
    tables += [plan.new_annotations[p] for p in sorted(plan.new_annotations)]
    return pa.concat_tables(tables) if tables else None


def has_traces(plan: PushPlan, state: RepoState) -> bool:
    return any(_is_data(p, TRACES_DIR) for p in plan.add) or any(
        p.endswith(".parquet") for p in state.files_in(TRACES_DIR)
    )


def published(path: str, state: RepoState) -> bytes | None:
    return state.read(path) if state.exists(path) else None


def _is_data(path: str, folder: str) -> bool:
    return path.startswith(folder + "/") and path.endswith(".parquet")

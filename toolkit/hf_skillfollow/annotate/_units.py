"""Which SE executions are annotated, and their blinded views.

Units are the retrieval-invoked SE executions (S_call: a skill was returned); by default only
the discordant ones (helpful flip b, harmful flip c). Each needs the run's SE trace, so a
source must carry traces: a run directory, a folder of them, a results repo folder or a Hub id.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from hf_skillfollow.agent import NOT_EXECUTED
from hf_skillfollow.annotate._labels import CONCORDANT, HARMFUL, HELPFUL
from hf_skillfollow.annotate._request import BlindedView

RUN_TRANSITIONS = "transitions.parquet"
RUN_TRACES = "traces.parquet"
_TRACE_COLUMNS = ["run_id", "task_id", "arm", "messages", "final_answer"]



class UnitError(ValueError):
    """A source cannot provide annotation units (no traces, missing trace for a task)."""


@dataclass(frozen=True)
class Unit:
    """One SE execution to annotate. `flip` is for stratifying and reporting only: it never
    reaches the request, which is built from `view` alone."""

    run_id: str
    task_id: str
    repeat_index: int
    cell_id: str
    flip: str
    view: BlindedView
    run_dir: Path | None  # the local run directory, where its annotations are kept by default


def flip_of(se_correct: bool, sd_correct: bool) -> str:
    if se_correct == sd_correct:
        return CONCORDANT
    return HELPFUL if se_correct else HARMFUL


def load_units(sources: Iterable[str | Path], *, everything: bool = False) -> list[Unit]:
    """Units of all sources in a stable order (run, task); see the module docstring."""
    units: list[Unit] = []
    for source in sources:
        transitions, traces, run_dirs = _read_source(source)
        units.extend(_units(transitions, traces, run_dirs, str(source), everything))
    return sorted(units, key=lambda u: (u.run_id, u.task_id))


def _read_source(source: str | Path) -> tuple[pa.Table, pa.Table, dict[str, Path]]:
    from hf_skillfollow.sources import read_transitions

    transitions = read_transitions(source)
    path = Path(source).expanduser()
    if path.is_file():
        raise UnitError(
            f"{source}: a transitions file has no traces; annotate the run directory or results repo"
        )
    if not path.exists():  # a Hub id (read_transitions accepted it)
        from hf_skillfollow.hub import load_traces

        return transitions, _se_only(load_traces(str(source))), {}
    files = _trace_files(path)
    if not files:
        raise UnitError(
            f"{source}: no traces found ({RUN_TRACES} in run directories or data/traces/*.parquet); "
            "annotation needs the SE traces"
        )
    import pyarrow.parquet as pq

    traces = pa.concat_tables(
        [_se_only(pq.read_table(f, columns=_TRACE_COLUMNS)) for f in files],
        promote_options="permissive",
    )
    run_dirs = {
        str(t.column("run_id")[0]): t_path.parent
        for t_path in sorted(path.rglob(RUN_TRANSITIONS)) if t_path.is_file()
        for t in [pq.read_table(t_path, columns=["run_id"])] if t.num_rows
    }  # fmt: skip
    return transitions, traces, run_dirs


def _trace_files(folder: Path) -> list[Path]:
    found = {p for p in folder.rglob(RUN_TRACES) if p.is_file()}
    found |= {
        p for p in folder.rglob("*.parquet") if p.is_file() and "data/traces/" in p.as_posix()
    }
    return sorted(found)


def _se_only(traces: pa.Table) -> pa.Table:
    import pyarrow.compute as pc

    table = traces.select(_TRACE_COLUMNS)
    return table.filter(pc.equal(table.column("arm"), "se"))


def _units(
    transitions: pa.Table,
    traces: pa.Table,
    run_dirs: dict[str, Path],
    source: str,
    everything: bool,
) -> list[Unit]:
    se_by_key = {(r["run_id"], r["task_id"]): r for r in traces.to_pylist()}
    out = []
    for row in transitions.to_pylist():
        if not row["returned"]:
            continue
        flip = flip_of(row["se_correct"], row["sd_correct"])
        if flip == CONCORDANT and not everything:
            continue
        trace = se_by_key.get((row["run_id"], row["task_id"]))
        if trace is None:
            raise UnitError(
                f"{source}: no SE trace for run {row['run_id']!r}, task {row['task_id']!r}"
            )
        out.append(
            Unit(
                row["run_id"], row["task_id"], int(row["repeat_index"]), row["cell_id"], flip,
                blinded_view(trace, row["queries"], row["skills_returned"]),
                run_dirs.get(row["run_id"]),
            )
        )  # fmt: skip
    return out


def blinded_view(se_trace: dict[str, Any], queries: list[str], skills: list[str]) -> BlindedView:
    """The blinded fields of one SE execution: prompt, queries, skills, tool output, answer."""
    messages = se_trace["messages"] or []
    prompt = next((m["content"] or "" for m in messages if m["role"] == "user"), "")
    results = tuple(
        m["content"] or ""
        for m in messages
        if m["role"] == "tool" and (m["content"] or "") != NOT_EXECUTED
    )
    return BlindedView(prompt, tuple(queries), tuple(skills), results, se_trace["final_answer"])

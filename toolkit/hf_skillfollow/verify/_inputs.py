"""The rows to verify: each transitions row joined with its SE and SD traces.

A source is a run directory, a results repo folder (README.md + data/), a folder holding run
directories, or a Hub dataset id; transitions and traces are read through the same loaders as
`report` and the Space (`hf_skillfollow.hub.load_transitions` / `load_traces`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ARMS = ("se", "sd")
#: How the hub loader says that a run or repo published no traces (anything else is an error).
_NO_TRACES = ("has no 'traces' config", "has no traces.parquet")


class VerifyInputError(ValueError):
    """A source cannot be read or holds nothing to verify; the message names the source."""


@dataclass(frozen=True)
class ArmTrace:
    """What one arm's published trace says."""

    messages: tuple[dict[str, Any], ...]
    error: str | None
    final_answer: str
    correct: bool
    details: dict[str, Any]
    #: an expectations task's recorded judge verdicts (`judge_verdicts`), else None
    judge_record: dict[str, Any] | None = None


@dataclass(frozen=True)
class Row:
    """One transitions row with its recorded bits and (when published) both arms' traces."""

    source: str
    run_id: str
    cell_id: str
    task_id: str
    benchmark: str
    benchmark_version: str
    toolkit_version: str
    recorded: dict[str, bool]  # arm -> se_correct / sd_correct
    traces: dict[str, ArmTrace]  # arm -> trace; empty when the run has no traces
    #: `run`, or `imported:<format>` for trials another harness ran (docs/import.md)
    provenance: str = "run"

    @property
    def has_traces(self) -> bool:
        return all(arm in self.traces for arm in ARMS)


def read_rows(sources: Sequence[str]) -> list[Row]:
    """Every transitions row of every source; a (run_id, task_id) seen twice is an error."""
    if not sources:
        raise VerifyInputError("no source given (run directories, repo folders or Hub ids)")
    rows: list[Row] = []
    seen: dict[tuple[str, str], str] = {}
    run_source: dict[str, str] = {}  # run_id -> the one source that holds it
    for source in sources:
        for path in _expand(source):
            for row in _read_one(path):
                key = (row.run_id, row.task_id)
                if key in seen:
                    raise VerifyInputError(
                        f"duplicate (run_id, task_id) = {key} in {seen[key]} and {row.source}"
                    )
                # A run's record is one file in one folder: rows of one run id from two
                # sources would be recorded together, in whichever source came last.
                first = run_source.setdefault(row.run_id, row.source)
                if first != row.source:
                    raise VerifyInputError(
                        f"run_id {row.run_id!r} is in both {first} and {row.source}; a run is "
                        "published in one place: verify each source on its own"
                    )
                seen[key] = row.source
                rows.append(row)
    return rows


def _expand(source: str) -> list[str]:
    """A folder that is neither a run directory nor a repo folder: the run dirs inside it."""
    from hf_skillfollow._files import OutsideSource, inside
    from hf_skillfollow.hub._layout import is_repo_folder, is_run_dir

    path = Path(source).expanduser()
    if not path.is_dir() or is_run_dir(path) or is_repo_folder(path):
        return [source]
    inner = sorted(str(p) for p in path.iterdir() if is_run_dir(p) or is_repo_folder(p))
    try:  # a run directory linked out of the folder is someone else's (and gets the record)
        inner = [str(inside(p, path)) for p in inner]
    except OutsideSource as exc:
        raise VerifyInputError(str(exc)) from None
    if not inner:
        raise VerifyInputError(
            f"{source}: no run directories (transitions.parquet) or results repo folders inside"
        )
    return inner


def _read_one(source: str) -> list[Row]:
    from hf_skillfollow.hub import HubError, load_traces, load_transitions
    from hf_skillfollow.schema import SchemaError

    try:
        transitions = load_transitions(source)
    except (HubError, SchemaError, OSError) as exc:
        raise VerifyInputError(f"{source}: {exc}") from None
    try:
        traces = load_traces(source)
    except HubError as exc:
        if not any(m in str(exc) for m in _NO_TRACES):
            raise VerifyInputError(f"{source}: {exc}") from None
        traces = None  # a run or repo without traces: its rows are reported as not checked
    except (SchemaError, OSError) as exc:
        raise VerifyInputError(f"{source}: {exc}") from None
    by_key = _traces_by_key(traces, source) if traces is not None else {}
    columns = (
        "run_id", "cell_id", "task_id", "benchmark", "benchmark_version", "toolkit_version",
        "se_correct", "sd_correct", "provenance",
    )  # fmt: skip
    out = []
    for t in _pylist(transitions.select(list(columns)), f"{source}: transitions"):
        arms = {
            arm: by_key[(t["run_id"], t["task_id"], arm)]
            for arm in ARMS
            if (t["run_id"], t["task_id"], arm) in by_key
        }
        out.append(
            Row(
                source=source,
                run_id=t["run_id"],
                cell_id=t["cell_id"],
                task_id=t["task_id"],
                benchmark=t["benchmark"],
                benchmark_version=t["benchmark_version"],
                toolkit_version=t["toolkit_version"],
                recorded={"se": bool(t["se_correct"]), "sd": bool(t["sd_correct"])},
                traces=arms,
                provenance=t["provenance"],
            )
        )
    return out


def _traces_by_key(traces: Any, source: str) -> dict[tuple[str, str, str], ArmTrace]:
    columns = ("run_id", "task_id", "arm", "messages", "error", "final_answer", "correct",
               "scorer_details")  # fmt: skip
    out: dict[tuple[str, str, str], ArmTrace] = {}
    if "judge_verdicts" in traces.column_names:
        columns = (*columns, "judge_verdicts")
    for t in _pylist(traces.select(list(columns)), f"{source}: traces"):
        key = (t["run_id"], t["task_id"], t["arm"])
        if key in out:
            raise VerifyInputError(
                f"{source}: two traces for run {key[0]}, task {key[1]}, arm {key[2]}"
            )
        where = f"{source}: the traces of run {key[0]!r}, task {key[1]!r}, arm {key[2]!r}"
        out[key] = ArmTrace(
            messages=tuple(t["messages"]),
            error=t["error"],
            final_answer=t["final_answer"],
            correct=bool(t["correct"]),
            details=_details(t["scorer_details"], f"{where}: scorer_details"),
            judge_record=(
                _details(t["judge_verdicts"], f"{where}: judge_verdicts")
                if t.get("judge_verdicts")
                else None
            ),
        )
    return out


def _pylist(table: Any, what: str) -> list[dict[str, Any]]:
    """The rows as Python values; a string that is not UTF-8 (parquet stores whatever bytes a
    writer gave) is one error naming the file, not a bare codec message."""
    try:
        return table.to_pylist()
    except UnicodeDecodeError as exc:
        raise VerifyInputError(
            f"{what}: a string column holds bytes that are not UTF-8 ({exc.reason} at byte "
            f"{exc.start} of a value)"
        ) from None


def _details(text: str, where: str) -> dict[str, Any]:
    """A trace's JSON column as an object ({} when it is not one). JSON nested past Python's
    recursion limit (200,000 `[` in 200 KB) is one error naming the field: `json.loads` raised
    RecursionError, a traceback."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise VerifyInputError(f"{where} is JSON nested too deeply to read") from None
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}

"""Row consistency: combinations of values no run can produce, declared once.

Types and nullability are the schema's job; these rules catch rows that type-check but cannot
be true (a skill returned without a search, a negative count, a NaN temperature). They run
inside `schema.validate_table`, which every reader and writer uses (report, push, the Space,
the run store), so a forged or damaged row is refused the same way everywhere, naming the
source, the row and the columns.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc


@dataclass(frozen=True)
class RowRule:
    """A combination of values that no real row has."""

    config: str  # "transitions" or "traces"
    columns: tuple[str, ...]
    says: str  # what is wrong with a matching row
    matches: Callable[[pa.Table], pa.ChunkedArray]  # True on the rows that break the rule


def _negative(column: str) -> Callable[[pa.Table], pa.ChunkedArray]:
    return lambda t: pc.less(t[column], 0)


def _below_one(column: str) -> Callable[[pa.Table], pa.ChunkedArray]:
    return lambda t: pc.less(t[column], 1)


def _without(flag: str, other: str) -> Callable[[pa.Table], pa.ChunkedArray]:
    """`flag` true while `other` is false."""
    return lambda t: pc.and_(t[flag], pc.invert(t[other]))


def _not_finite_or_outside(column: str, low: float, high: float | None = None):  # noqa: ANN202
    def matches(t: pa.Table) -> pa.ChunkedArray:
        x = t[column]
        bad = pc.or_(pc.invert(pc.is_finite(x)), pc.less(x, low))
        return bad if high is None else pc.or_(bad, pc.greater(x, high))

    return matches


RULES: tuple[RowRule, ...] = (
    RowRule("transitions", ("returned", "invoked"), "returned without invoked",
            _without("returned", "invoked")),
    RowRule("transitions", ("n_calls",), "negative count", _negative("n_calls")),
    RowRule("transitions", ("n_calls", "invoked"), "tool calls counted but invoked is false",
            lambda t: pc.and_(pc.greater(t["n_calls"], 0), pc.invert(t["invoked"]))),
    RowRule("transitions", ("n_calls", "max_calls"), "more tool calls than max_calls allows",
            lambda t: pc.greater(t["n_calls"], t["max_calls"])),
    RowRule("transitions", ("queries", "n_calls"), "more queries than tool calls",
            lambda t: pc.greater(pc.list_value_length(t["queries"]), t["n_calls"])),
    RowRule("transitions", ("skills_returned", "returned"), "skills listed but returned is false",
            lambda t: pc.and_(pc.greater(pc.list_value_length(t["skills_returned"]), 0),
                              pc.invert(t["returned"]))),
    RowRule("transitions", ("adherence", "returned"), "adherent to a skill that was never returned",
            _without("adherence", "returned")),
    RowRule("transitions", ("temperature",), "not a finite number in [0, 2]",
            _not_finite_or_outside("temperature", 0.0, 2.0)),
    *(RowRule("transitions", (c,), "must be at least 1", _below_one(c))
      for c in ("top_k", "max_calls", "max_tokens", "partition_size")),
    RowRule("transitions", ("repeat_index",), "negative count", _negative("repeat_index")),
    *(RowRule("traces", (c,), "negative count", _negative(c))
      for c in ("n_calls", "prompt_tokens", "completion_tokens")),
    RowRule("traces", ("latency_s",), "not a finite number >= 0",
            _not_finite_or_outside("latency_s", 0.0)),
    RowRule("traces", ("arm",), "arm must be 'se' or 'sd'",
            lambda t: pc.invert(pc.is_in(t["arm"], pa.array(["se", "sd"])))),
    RowRule("traces", ("arm", "n_calls"), "tool calls in the skill-disabled arm",
            lambda t: pc.and_(pc.equal(t["arm"], "sd"), pc.greater(t["n_calls"], 0))),
)  # fmt: skip

_SHOW = reprlib.Repr()
_SHOW.maxstring = _SHOW.maxother = 60
_SHOW.maxlist = 3


def first_violation(table: pa.Table, config: str, source: str) -> str | None:
    """The first rule `table` breaks, naming source, row and columns; None if it breaks none."""
    for rule in RULES:
        if rule.config != config or table.num_rows == 0:
            continue
        mask = pc.fill_null(rule.matches(table), False)
        n_bad = pc.sum(mask).as_py() or 0
        if not n_bad:
            continue
        row = pc.index(mask, True).as_py()
        values = ", ".join(f"{c}={_SHOW.repr(table[c][row].as_py())}" for c in rule.columns)
        task = (
            f" (task_id {table['task_id'][row].as_py()!r})"
            if "task_id" in table.column_names
            else ""
        )
        more = f"; {n_bad} row(s) in all" if n_bad > 1 else ""
        return (
            f"{source}: row {row}{task}, column(s) {', '.join(rule.columns)}: {rule.says} "
            f"({values}){more}"
        )
    return None

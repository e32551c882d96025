"""Build transitions for metric tests from 2x2 counts chosen by the test."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from hf_skillfollow.schema import transitions_from_rows
from tests._rows import transition_row

# (se_correct, sd_correct) of the four outcome categories
_OUTCOME = {"a": (True, True), "b": (True, False), "c": (False, True), "d": (False, False)}


def rows_for(
    cond: dict[str, int] | None = None,
    skip: dict[str, int] | None = None,
    *,
    invoked_skip: int = 0,
    adherent: int | None = None,
    **identity: Any,
) -> list[dict[str, Any]]:
    """Rows whose S_call counts are `cond` and S_skip counts are `skip` (keys a, b, c, d).

    The first `invoked_skip` skip rows invoked the tool without getting a skill. With
    `adherent`, that many S_call rows (in a, b, c, d order) have adherence true and the
    rest of S_call false; without it adherence is not recorded (null).
    """
    rows = []
    for returned, counts in ((True, cond or {}), (False, skip or {})):
        for name, k in counts.items():
            se, sd = _OUTCOME[name]
            for _ in range(k):
                rows.append(
                    {"se_correct": se, "sd_correct": sd, "returned": returned, "invoked": returned}
                )
    skip_rows = [r for r in rows if not r["returned"]]
    for r in skip_rows[:invoked_skip]:
        r["invoked"] = True
    call_rows = [r for r in rows if r["returned"]]
    if adherent is not None:
        for i, r in enumerate(call_rows):
            r["adherence"] = i < adherent
    prefix = identity.get("run_id", "run-1")
    return [transition_row(task_id=f"{prefix}/t{i}", **identity, **r) for i, r in enumerate(rows)]


def table_for(*row_lists: list[dict[str, Any]]) -> pa.Table:
    return transitions_from_rows([r for rows in row_lists for r in rows])

"""Figures of imported cells (docs/import.md, "Report"): pure computation over transitions rows.

- `imported_view`: the rows the paired metrics use: arm-integrity violations left out unless
  asked for, and with ``trigger="instructions"`` S_call restricted to pairs whose activated
  skill's instructions were loaded (a resource used alone no longer counts).
- `violations` (`violated_rows` on an Arrow table), `arm_integrity_counts`: which rows record an arm-integrity violation; per
  cell, the pairs checked, with a violation and left out (`report`'s JSON and CSV columns).
- `activation_unknown`: per cell, the pairs whose with-skills trial left no transcript; RAE,
  Δskip and coverage of such a cell are undefined (`mark_unknown`), OAE is not.
- `imported_summary`: per imported cell, the share of rows each detector decided, coverage
  split by trigger kind, RAE over the pairs with a transcript, the A/A noise floor (each arm's
  own flip rate between its trials of a task, over tasks with two or more, and the b/c flips
  on tasks where an arm flipped against itself, which that noise could explain), per-skill
  rows and trigger precision (activations of the task's intended skill / all activations of
  tasks that name one).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from typing import TYPE_CHECKING, Any

from hf_skillfollow.columns import agent_ran
from hf_skillfollow.metrics import _frame, _pooling

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

#: `detector` value of a pair whose with-skills trial left no transcript (importers).
NO_TRANSCRIPT = "none"
UNKNOWN_REASON = "activation unknown: {k} of {n} pair(s) have no with-skills transcript"
#: Per-cell arm-integrity counts (`arm_integrity_counts`) that `report` adds to its JSON and CSV.
ARM_COLUMNS = ("n_arm_checked", "n_arm_violations", "n_arm_left_out")


def imported_view(
    frame: pd.DataFrame, *, trigger: str = "any", include_violations: bool = False
) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """(rows the metrics keep, their `returned` under `trigger`, violations per cell_id).

    `frame` holds at least cell_id and returned, and arm_integrity / trigger_kind if present.
    """
    import numpy as np

    if trigger not in ("any", "instructions"):
        raise ValueError(f"trigger {trigger!r}: choose any or instructions")
    keep = np.ones(len(frame), dtype=bool)
    returned = frame["returned"].to_numpy(dtype=bool)
    excluded: dict[str, int] = {}
    if "arm_integrity" in frame.columns:
        violated = violations(frame["arm_integrity"])
        counts = frame.loc[violated, "cell_id"].value_counts()
        excluded = {str(k): int(v) for k, v in counts.items()}
        if not include_violations:
            keep &= ~violated.to_numpy()
    if trigger == "instructions" and "trigger_kind" in frame.columns:
        kind = frame["trigger_kind"]
        # chat-loop rows (null kind) hand the instructions over with every returned skill
        returned = returned & (kind.isna() | (kind == "instructions")).to_numpy()
    return keep, returned, excluded


def violations(arm_integrity: pd.Series) -> pd.Series:
    """Per row, whether its `arm_integrity` value records a violation (null, `ok` and
    `unchecked` do not)."""
    return arm_integrity.fillna("").astype(str).str.startswith("violation")


def violated_rows(table: Any) -> Any:
    """`violations` of a pyarrow Table's whole `arm_integrity` column at once, as a boolean
    ChunkedArray (no pandas copy of the column)."""
    import pyarrow.compute as pc

    return pc.fill_null(pc.starts_with(table["arm_integrity"], "violation"), False)


def arm_integrity_counts(data: Any, keys: Sequence[str], *, left_out: bool) -> pd.DataFrame:
    """Per group of `keys` (the report's cells), over every row read: pairs whose arm integrity
    was checked (not null, not `unchecked`), those with a violation, and those of them the
    metrics left out (all of them when `left_out`, else none). `data` is a pyarrow Table or
    pandas DataFrame; the group identities are taken as `compute_cells` takes them."""
    import numpy as np
    import pandas as pd

    groups = _pooling.make_groups(data, keys)
    status = pd.Series(
        _frame.take(data, "arm_integrity", np.arange(_frame.n_rows(data))), dtype=object
    )
    checked = status.notna() & (status != "unchecked")

    def per_group(mask: pd.Series) -> np.ndarray:
        counts = np.bincount(groups.codes, weights=mask.to_numpy(), minlength=groups.n_groups)
        return counts.astype(np.int64)

    violated = per_group(violations(status))
    counts = (per_group(checked), violated, violated if left_out else np.zeros_like(violated))
    identity = {k: _frame.take(data, k, groups.first_row) for k in keys}
    return pd.DataFrame({**identity, **dict(zip(ARM_COLUMNS, counts, strict=True))})


def activation_unknown(frame: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """cell_id -> (pairs without a with-skills transcript, pairs), for cells with any."""
    if "detector" not in frame.columns:
        return {}
    unknown = frame["detector"].fillna("") == NO_TRANSCRIPT
    out = {}
    for cell, part in frame.groupby("cell_id", sort=False):
        k = int(unknown.loc[part.index].sum())
        if k:
            out[str(cell)] = (k, len(part))
    return out


def mark_unknown(cells: pd.DataFrame, unknown: Mapping[str, tuple[int, int]]) -> pd.DataFrame:
    """`cells` with RAE, Δskip and coverage undefined (NaN, reason) where activation is unknown."""
    if not unknown or "cell_id" not in cells.columns:
        return cells
    cells = cells.copy()
    for i, cell in cells["cell_id"].items():
        if str(cell) not in unknown:
            continue
        k, n = unknown[str(cell)]
        reason = UNKNOWN_REASON.format(k=k, n=n)
        for column in ("rae", "rae_ci_low", "rae_ci_high", "delta_skip", "coverage", "mcnemar_p"):
            cells.loc[i, column] = math.nan
        cells.loc[i, "rae_reason"] = reason
        cells.loc[i, "delta_skip_reason"] = reason
        cells.loc[i, "reportable"] = False
        cells.loc[i, "sign_disagree"] = False
    return cells


def _flip(row: Mapping[str, Any]) -> str:
    se, sd = bool(row["se_correct"]), bool(row["sd_correct"])
    return "a" if se and sd else "b" if se else "c" if sd else "d"


def _pct(k: int, n: int) -> float:
    return 100.0 * k / n if n else math.nan


def imported_summary(
    rows: Iterable[Mapping[str, Any]], excluded: Mapping[str, int]
) -> list[dict[str, Any]]:
    """One summary per cell whose activation a transcript decided: imported (`imported:<format>`)
    and run through a harness (`run:<harness>`); the chat loop's rows (`run`) are passed over."""
    by_cell: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        if agent_ran(r.get("provenance")):
            by_cell[str(r["cell_id"])].append(r)
    return [_cell(cell, rs, excluded.get(cell, 0)) for cell, rs in by_cell.items()]


def _cell(cell: str, rows: list[Mapping[str, Any]], n_excluded: int) -> dict[str, Any]:
    known = [r for r in rows if r.get("detector") != NO_TRANSCRIPT]
    cond = [r for r in known if r["returned"]]
    flips = Counter(_flip(r) for r in cond)
    kinds = Counter(str(r.get("trigger_kind")) for r in cond)
    return {
        "cell_id": cell,
        "provenance": rows[0].get("provenance"),
        "agent": rows[0].get("agent"),
        "model": rows[0].get("model"),
        "access": rows[0].get("access"),
        "n_pairs": len(rows),
        "n_arm_violations": n_excluded,
        "n_no_transcript": len(rows) - len(known),
        "detectors": dict(Counter(str(r.get("detector")) for r in rows).most_common()),
        "n_known": len(known),
        "n_cond_known": len(cond),
        "coverage_known": _pct(len(cond), len(known)),
        "coverage_instructions": _pct(kinds["instructions"], len(known)),
        "coverage_resource": _pct(kinds["resource"], len(known)),
        "coverage_record": _pct(kinds["record"], len(known)),
        "b_cond_known": flips["b"],
        "c_cond_known": flips["c"],
        "rae_known": _pct(flips["b"] - flips["c"], len(cond)),
        **_noise_floor(rows),
        "skills": _per_skill(cond),
        **_precision(cond),
    }


def _noise_floor(rows: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Each arm's flip rate between its own trials of a task (tasks with two or more)."""
    outcomes: dict[str, dict[str, list[bool]]] = defaultdict(lambda: {"se": [], "sd": []})
    for r in rows:
        outcomes[str(r["task_id"])]["se"].append(bool(r["se_correct"]))
        outcomes[str(r["task_id"])]["sd"].append(bool(r["sd_correct"]))
    out: dict[str, Any] = {}
    unstable: set[str] = set()
    for arm in ("se", "sd"):
        pairs = disagreeing = tasks = 0
        for task, arms in outcomes.items():
            if len(arms[arm]) < 2:
                continue
            tasks += 1
            for x, y in combinations(arms[arm], 2):
                pairs += 1
                disagreeing += x != y
            if len(set(arms[arm])) > 1:
                unstable.add(task)
        out[f"aa_tasks_{arm}"] = tasks
        out[f"aa_flip_rate_{arm}"] = _pct(disagreeing, pairs)
    out["aa_explainable_flips"] = sum(
        1 for r in rows if r["returned"] and _flip(r) in "bc" and str(r["task_id"]) in unstable
    )
    return out


def _per_skill(cond: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    per: dict[str, Counter[str]] = defaultdict(Counter)
    for r in cond:
        for skill in r.get("skills_returned") or ():
            per[str(skill)][_flip(r)] += 1
    return [
        {"skill": s, "n": sum(c.values()), "b": c["b"], "c": c["c"],
         "rae": _pct(c["b"] - c["c"], sum(c.values()))}
        for s, c in sorted(per.items())
    ]  # fmt: skip


def _precision(cond: list[Mapping[str, Any]]) -> dict[str, Any]:
    hits = total = 0
    for r in cond:
        intended = r.get("intended_skills")
        if intended is None or len(intended) == 0:
            continue
        for skill in r.get("skills_returned") or ():
            total += 1
            hits += skill in set(intended)
    return {"precision_activations": total, "precision_hits": hits,
            "trigger_precision": _pct(hits, total)}  # fmt: skip

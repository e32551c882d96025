"""Re-scored marks from published rows and published verification records (card and Space).

A record states what re-scoring each answer gave. The mark compares that with the bits
published *now*, so a bit changed after its verification shows as a disagreement. When a row
was verified several times, its latest record counts.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

_RECORD_COLUMNS = ("run_id", "task_id", "cell_id", "se_recorded", "sd_recorded", "se_rescored",
                   "sd_rescored", "se_reason", "sd_reason", "verification_id", "verified_by",
                   "verified_at", "toolkit_version", "scorer_version", "benchmark_release")  # fmt: skip
#: Record columns that the published rows themselves hold (their values now win).
_PUBLISHED = ("cell_id", "se_recorded", "sd_recorded")


def mark(checked: int, agreeing: int, total: int) -> str:
    """The per-cell mark shared with the Space and the card: ✓ 80/80, ✗ 77/80, partial, none."""
    if checked == 0:
        return "not re-scored"
    if agreeing < checked:
        return f"✗ {agreeing}/{total}"
    return (
        f"✓ {agreeing}/{total}" if checked == total else f"◐ {agreeing}/{total} (partly re-scored)"
    )


def latest_records(records: pa.Table) -> pa.Table:
    """One record row per (run_id, task_id): the most recent verification of it."""
    ordered = records.select(list(_RECORD_COLUMNS)).sort_by(
        [("verified_at", "descending"), ("verification_id", "descending")]
    )
    rest = [c for c in _RECORD_COLUMNS if c not in ("run_id", "task_id")]
    grouped = ordered.group_by(["run_id", "task_id"], use_threads=False).aggregate(
        [(c, "first") for c in rest]
    )
    return grouped.rename_columns([c.removesuffix("_first") for c in grouped.column_names])


def row_status(transitions: pa.Table, records: pa.Table | None) -> pa.Table:
    """Every transitions row with `checked` and `agrees` (null when not re-scored) and the
    re-scored verdicts beside the published ones."""
    rows = transitions.select(["run_id", "task_id", "cell_id", "se_correct", "sd_correct"])
    if records is None or records.num_rows == 0:
        n = rows.num_rows
        return rows.append_column("checked", pa.array([False] * n)).append_column(
            "agrees", pa.nulls(n, pa.bool_())
        )
    latest = latest_records(records).drop_columns(list(_PUBLISHED))
    joined = rows.join(latest, ["run_id", "task_id"], join_type="left outer")
    checked = pc.is_valid(joined["se_rescored"])
    agrees = pc.and_(
        pc.equal(joined["se_rescored"], joined["se_correct"]),
        pc.equal(joined["sd_rescored"], joined["sd_correct"]),
    )
    return joined.append_column("checked", checked).append_column("agrees", agrees)


def group_counts(status: pa.Table, keys: Sequence[str]) -> pa.Table:
    """Per group: rows, rows re-scored, rows agreeing, and the display mark."""
    counted = (
        status.select([*keys, "checked", "agrees"])
        .group_by(list(keys))
        .aggregate([("checked", "count"), ("checked", "sum"), ("agrees", "sum")])
    )
    total = counted["checked_count"].to_pylist()
    checked = [int(v or 0) for v in counted["checked_sum"].to_pylist()]
    agreeing = [int(v or 0) for v in counted["agrees_sum"].to_pylist()]
    marks = [mark(c, a, t) for c, a, t in zip(checked, agreeing, total, strict=True)]
    return pa.table(
        {
            **{k: counted[k] for k in keys},
            "rows": pa.array(total, pa.int64()),
            "rescored_rows": pa.array(checked, pa.int64()),
            "agreeing_rows": pa.array(agreeing, pa.int64()),
            "rescored": pa.array(marks, pa.string()),
        }
    )


def disagreeing_rows(status: pa.Table) -> list[dict[str, object]]:
    """Re-scored rows whose published bits differ from the re-scored verdicts, one per arm."""
    if "se_rescored" not in status.column_names:
        return []
    bad = status.filter(pc.and_(status["checked"], pc.invert(pc.fill_null(status["agrees"], True))))
    out = []
    for r in bad.to_pylist():
        for arm in ("se", "sd"):
            if r[f"{arm}_rescored"] != r[f"{arm}_correct"]:
                out.append(
                    {
                        "cell_id": r["cell_id"], "run_id": r["run_id"], "task_id": r["task_id"], "arm": arm,
                        "published": r[f"{arm}_correct"], "rescored": r[f"{arm}_rescored"],
                        "reason": r[f"{arm}_reason"], "verified_by": r["verified_by"],
                        "verified_at": r["verified_at"],
                    }
                )  # fmt: skip
    return sorted(out, key=lambda d: (d["cell_id"], d["run_id"], d["task_id"], d["arm"]))

"""What the dataset card says about re-scoring: per-cell marks, the records, the disagreements.

The card is rendered from per-run counts (hub/_stats.py), never from the rows, so here a
record is compared with the bits it saw when it was made (push never rewrites a published
row); the Space compares with the rows it loads.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hf_skillfollow.verify._status import mark

#: Disagreeing rows listed in the card; the rest are counted.
MAX_CARD_DISAGREEMENTS = 100
_EMPTY = {"marks": {}, "records": [], "disagreements": [], "disagreements_left_out": 0}


def rescoring_context(stats: pa.Table | None, records: pa.Table | None) -> dict[str, Any]:
    from hf_skillfollow.verify._status import latest_records

    if records is None or records.num_rows == 0:
        return dict(_EMPTY)
    if stats is None:
        raise ValueError("re-scoring marks need every run's counts")
    latest = _in_published_cells(latest_records(records), stats)
    se_ok = pc.equal(latest["se_rescored"], latest["se_recorded"])
    sd_ok = pc.equal(latest["sd_rescored"], latest["sd_recorded"])
    latest = latest.append_column("agrees", pc.and_(se_ok, sd_ok))
    checked = latest.group_by("cell_id").aggregate([("agrees", "count"), ("agrees", "sum")])
    totals = _rows_per_cell(stats)
    marks = {
        cell: mark(n, int(ok or 0), totals.get(cell, n))
        for cell, n, ok in zip(
            checked["cell_id"].to_pylist(),
            checked["agrees_count"].to_pylist(),
            checked["agrees_sum"].to_pylist(),
            strict=True,
        )
    }
    disagreements = _disagreements(latest.filter(pc.invert(latest["agrees"])))
    return {
        "marks": marks,
        "records": _records(records),
        "disagreements": disagreements[:MAX_CARD_DISAGREEMENTS],
        "disagreements_left_out": max(0, len(disagreements) - MAX_CARD_DISAGREEMENTS),
    }


def _in_published_cells(latest: pa.Table, stats: pa.Table) -> pa.Table:
    """Each record row under the cell its run is published in, as the Space joins records with
    rows: a record's own `cell_id` is its writer's word, and a record of run R that named
    another cell put that cell's mark on the card although none of its rows was re-scored.
    Rows of a run the repo does not hold are dropped (`push` refuses such records)."""
    cell_of = dict(zip(stats["run_id"].to_pylist(), stats["cell_id"].to_pylist(), strict=True))
    runs = latest["run_id"].to_pylist()
    kept = latest.filter(pa.array([run in cell_of for run in runs], pa.bool_()))
    cells = pa.array([cell_of[run] for run in kept["run_id"].to_pylist()], pa.string())
    return kept.set_column(kept.schema.get_field_index("cell_id"), "cell_id", cells)


def _rows_per_cell(stats: pa.Table) -> dict[str, int]:
    """Published rows per cell: the sum of a run's four paired outcome counts, over its runs."""
    if stats.num_rows == 0:
        return {}
    n = pc.add(pc.add(stats["a_all"], stats["b_all"]), pc.add(stats["c_all"], stats["d_all"]))
    summed = (
        pa.table({"cell_id": stats["cell_id"], "n": n})
        .group_by("cell_id")
        .aggregate([("n", "sum")])
    )
    return dict(zip(summed["cell_id"].to_pylist(), summed["n_sum"].to_pylist(), strict=True))


def _disagreements(bad: pa.Table) -> list[dict[str, Any]]:
    out = []
    for r in bad.to_pylist():
        for arm in ("se", "sd"):
            if r[f"{arm}_rescored"] != r[f"{arm}_recorded"]:
                out.append(
                    {
                        "run_id": r["run_id"], "task_id": r["task_id"], "arm": arm,
                        "published": r[f"{arm}_recorded"], "rescored": r[f"{arm}_rescored"],
                        "reason": r[f"{arm}_reason"],
                    }
                )  # fmt: skip
    return sorted(out, key=lambda d: (d["run_id"], d["task_id"], d["arm"]))


def _records(records: pa.Table) -> list[dict[str, Any]]:
    keys = ["verification_id", "verified_by", "verified_at", "toolkit_version", "scorer_version",
            "benchmark_release"]  # fmt: skip
    grouped = records.group_by(keys, use_threads=False).aggregate([("run_id", "count")])
    rows = [dict(r, rows=r.pop("run_id_count")) for r in grouped.to_pylist()]
    return sorted(rows, key=lambda r: (r["verified_at"], r["verification_id"]))

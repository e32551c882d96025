"""What the dataset card says about re-scoring: per-cell marks, the records, the disagreements."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

#: Disagreeing rows listed in the card; the rest are counted.
MAX_CARD_DISAGREEMENTS = 100


def rescoring_context(transitions: pa.Table, records: pa.Table | None) -> dict[str, Any]:
    from hf_skillfollow.verify._status import disagreeing_rows, group_counts, row_status

    if records is None or records.num_rows == 0:
        return {"marks": {}, "records": [], "disagreements": [], "disagreements_left_out": 0}
    status = row_status(transitions, records)
    counts = group_counts(status, ["cell_id"])
    marks = dict(zip(counts["cell_id"].to_pylist(), counts["rescored"].to_pylist(), strict=True))
    disagreements = disagreeing_rows(status)
    return {
        "marks": marks,
        "records": _records(records),
        "disagreements": disagreements[:MAX_CARD_DISAGREEMENTS],
        "disagreements_left_out": max(0, len(disagreements) - MAX_CARD_DISAGREEMENTS),
    }


def _records(records: pa.Table) -> list[dict[str, Any]]:
    keys = ["verification_id", "verified_by", "verified_at", "toolkit_version", "scorer_version",
            "benchmark_release"]  # fmt: skip
    grouped = records.group_by(keys, use_threads=False).aggregate([("run_id", "count")])
    rows = [dict(r, rows=r.pop("run_id_count")) for r in grouped.to_pylist()]
    return sorted(rows, key=lambda r: (r["verified_at"], r["verification_id"]))

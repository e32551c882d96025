"""Write a verification's records: one parquet file per verified run (see `_record`)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from hf_skillfollow.schema import SCHEMA_VERSION, verifications_from_rows
from hf_skillfollow.verify._core import Verification
from hf_skillfollow.verify._record import record_bytes, record_name


def record_tables(v: Verification) -> dict[str, pa.Table]:
    """run_id -> that run's record table, rows in task order."""
    by_run: dict[str, list[dict[str, object]]] = {}
    for r in sorted(v.checked, key=lambda r: (r.run_id, r.task_id)):
        by_run.setdefault(r.run_id, []).append(
            {
                "schema_version": SCHEMA_VERSION,
                **v.provenance(),
                "benchmark": r.benchmark,
                "benchmark_version": r.benchmark_version,
                "benchmark_release": v.releases.get(r.benchmark_version, r.benchmark_version),
                "run_id": r.run_id,
                "cell_id": r.cell_id,
                "task_id": r.task_id,
                **{f"{arm}_{k}": getattr(c, k) for arm, c in r.arms.items() for k in ("recorded", "rescored", "reason")},
            }
        )  # fmt: skip
    return {
        run: verifications_from_rows(rows, f"verification {v.verification_id}")
        for run, rows in by_run.items()
    }


def write_records(v: Verification, folder_of_run: dict[str, Path]) -> list[Path]:
    """Write each run's record into its folder (never over an existing file); return the paths."""
    written = []
    for run_id, table in record_tables(v).items():
        folder = folder_of_run[run_id]
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / record_name(v.verification_id, run_id)
        with open(path, "xb") as fh:  # a verification id is new: an existing file is a bug
            fh.write(record_bytes(table))
        written.append(path)
    return written

"""The publishable verification record: one parquet file per (verification, run).

Each row is one re-scored transitions row: the bits as published when it was verified, the
re-scored verdicts and reasons, and who verified it with which toolkit, scorer and benchmark
release, and when. `push` uploads record files beside the runs as `data/verifications/` (a
`verifications` config); nothing ever rewrites one, and a later verification adds a new file.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from hf_skillfollow.schema import (
    SCHEMA_VERSION,
    VERIFICATIONS_SCHEMA,
    validate_verifications,
    verifications_from_rows,
)
from hf_skillfollow.verify._core import Verification

RECORD_DIR = "verifications"  # inside a run directory


def record_tables(v: Verification) -> dict[str, pa.Table]:
    """run_id -> that run's record table, rows in task order."""
    by_run: dict[str, list[dict[str, object]]] = {}
    for r in sorted(v.checked, key=lambda r: (r.run_id, r.task_id)):
        by_run.setdefault(r.run_id, []).append(
            {
                "schema_version": SCHEMA_VERSION,
                "verification_id": v.verification_id,
                "verified_at": v.verified_at,
                "verified_by": v.verified_by,
                "machine": v.machine,
                "toolkit_version": v.toolkit_version,
                "scorer_version": v.scorer_version,
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


def record_name(verification_id: str, run_id: str) -> str:
    return f"{verification_id}--{run_id}.parquet"


def record_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table.cast(VERIFICATIONS_SCHEMA), sink, compression="zstd")
    return sink.getvalue()


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


def read_record(data: bytes | Path, source: str) -> pa.Table:
    """A record file validated against the verifications schema."""
    table = pq.read_table(pa.BufferReader(data) if isinstance(data, bytes) else data)
    return validate_verifications(table, source)


def is_record_file(path: Path) -> bool:
    """A parquet file whose schema metadata says it is a verification record."""
    if not (path.is_file() and path.suffix == ".parquet"):
        return False
    try:
        meta = pq.read_schema(path).metadata or {}
    except (pa.ArrowInvalid, OSError):
        return False
    return meta.get(b"config") == b"verifications"


def record_files(paths: Iterable[Path]) -> list[Path]:
    """Record files among `paths`: the files themselves, and those in a run dir's verifications/."""
    out: list[Path] = []
    for p in paths:
        if is_record_file(p):
            out.append(p)
        elif p.is_dir():
            out += sorted(f for f in (p / RECORD_DIR).glob("*.parquet") if is_record_file(f))
            if p.name == RECORD_DIR:
                out += sorted(f for f in p.glob("*.parquet") if is_record_file(f))
    return list(dict.fromkeys(out))

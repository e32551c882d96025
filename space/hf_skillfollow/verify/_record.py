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

from hf_skillfollow.schema import VERIFICATIONS_SCHEMA, validate_verifications

RECORD_DIR = "verifications"  # inside a run directory


def record_name(verification_id: str, run_id: str) -> str:
    return f"{verification_id}--{run_id}.parquet"


def record_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table.cast(VERIFICATIONS_SCHEMA), sink, compression="zstd")
    return sink.getvalue()


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

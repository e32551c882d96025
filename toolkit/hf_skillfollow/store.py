"""Resumable run records: a manifest, append-only per-task records, derived parquet files.

A record is one finished pair (both arms scored). It is appended as a single JSON line and
fsynced, so a crash loses at most the pairs in flight; a torn last line is ignored on read.
Transitions and traces are always rebuilt from the records, never edited in place.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from hf_skillfollow.record import PairRecord

MANIFEST = "manifest.json"
RECORDS = "records.jsonl"
TRANSITIONS = "transitions.parquet"
TRACES = "traces.parquet"
#: Written by `hf-skillfollow annotate` (annotate/_store.py) into the run directory.
ANNOTATION_RECORDS = "annotations.jsonl"
ANNOTATIONS = "annotations.parquet"


class RunDirError(ValueError):
    """A run directory is missing, incomplete or inconsistent."""


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write via a temp file in the same folder and rename, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class RunStore:
    """One run directory."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @property
    def manifest_path(self) -> Path:
        return self.root / MANIFEST

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        atomic_write_bytes(
            self.manifest_path, json.dumps(manifest, indent=2, sort_keys=True).encode()
        )

    def read_manifest(self) -> dict[str, Any]:
        if not self.manifest_path.is_file():
            raise RunDirError(f"{self.root}: not a run directory (no {MANIFEST})")
        try:
            return json.loads(self.manifest_path.read_text())
        except json.JSONDecodeError as exc:
            raise RunDirError(f"{self.manifest_path}: invalid JSON ({exc})") from None

    def append_record(self, record: PairRecord | Mapping[str, Any]) -> None:
        """Validate one finished pair against the schema, then append it as one line."""
        pair = PairRecord.parse(record, source=str(self.root / RECORDS))
        line = json.dumps(pair.as_dict(), ensure_ascii=False, separators=(",", ":")) + "\n"
        path = self.root / RECORDS
        # One write of a whole line plus fsync: the only partial state a crash can leave is a torn
        # last line, which read_records drops.
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def read_records(self) -> list[dict[str, Any]]:
        """Finished records, first occurrence per task id; a torn trailing line is skipped."""
        seen: dict[str, dict[str, Any]] = {}
        for record in self._iter_lines():
            seen.setdefault(record["task_id"], record)
        return list(seen.values())

    def _iter_lines(self) -> Iterator[dict[str, Any]]:
        path = self.root / RECORDS
        if not path.is_file():
            return
        lines = path.read_text(encoding="utf-8").split("\n")
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                if i < len(lines) - 2:  # only the last (unterminated) line may be torn
                    raise RunDirError(f"{path}: line {i + 1} is not valid JSON") from None

    def repair_tail(self) -> None:
        """Drop a torn last line so that later appends start on a clean line."""
        path = self.root / RECORDS
        if not path.is_file():
            return
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            atomic_write_bytes(path, data[: data.rfind(b"\n") + 1])

    def finished_task_ids(self) -> set[str]:
        return {r["task_id"] for r in self.read_records()}

    def write_tables(self) -> tuple[int, int]:
        """Rebuild transitions.parquet and traces.parquet from the records."""
        import pyarrow.parquet as pq

        from hf_skillfollow.schema import traces_from_rows, transitions_from_rows

        records = self.read_records()
        transitions = transitions_from_rows(
            [r["transition"] for r in records], source=str(self.root / RECORDS)
        )
        traces = traces_from_rows(
            [t for r in records for t in r["traces"]], source=str(self.root / RECORDS)
        )
        for table, name in ((transitions, TRANSITIONS), (traces, TRACES)):
            tmp = self.root / f".{name}.tmp"
            pq.write_table(table, tmp, compression="zstd")
            os.replace(tmp, self.root / name)
        return transitions.num_rows, traces.num_rows

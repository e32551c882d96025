"""Resumable run records: a manifest, append-only per-task records, derived parquet files.

A record is one finished pair (both arms scored). It is appended as a single JSON line and
fsynced, so a crash loses at most the pairs in flight: the only damage a crash can leave is a
torn (unterminated) last line, which resume moves aside on its own. Any other bad line
(garbage, `{}`, invalid UTF-8, a row outside the schema) is refused with file:line until the
user asks for it to be set aside (docs/runs.md, "Resuming"). Set-aside bytes are kept in
records.rejected, never deleted. Transitions and traces are always rebuilt from the records,
never edited in place.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_skillfollow._text import safe_data
from hf_skillfollow.record import PairRecord

MANIFEST = "manifest.json"
RECORDS = "records.jsonl"
REJECTED = "records.rejected"
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


@dataclass(frozen=True)
class BadLine:
    """A complete line of records.jsonl that is not a valid record."""

    number: int
    reason: str
    data: bytes


def _parse_record(raw: bytes) -> tuple[dict[str, Any] | None, str]:
    """The record on one line, or None and why not."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg} at column {exc.colno})"
    if not isinstance(record, dict):
        return None, f"a JSON {type(record).__name__}, not a record object"
    task_id = record.get("task_id")
    if not isinstance(task_id, str) or not task_id:
        return None, "no 'task_id' string: not a run record"
    transition = record.get("transition")
    if not isinstance(transition, dict) or transition.get("task_id") != task_id:
        return None, f"field 'transition' is missing or is not task {task_id!r}'s"
    if not isinstance(record.get("traces"), list):
        return None, "field 'traces' is missing or not a list"
    return record, ""


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

    @property
    def records_path(self) -> Path:
        return self.root / RECORDS

    def append_record(self, record: PairRecord | Mapping[str, Any]) -> None:
        """Validate one finished pair against the schema, then append it as one line.

        Strings are made safe for UTF-8 first (``_text.safe_data``): a model's reply or a
        program's output can hold lone surrogates, which would fail the write."""
        data = record.as_dict() if isinstance(record, PairRecord) else dict(record)
        pair = PairRecord.parse(safe_data(data), source=str(self.records_path))
        line = json.dumps(pair.as_dict(), ensure_ascii=False, separators=(",", ":")) + "\n"
        # One write of a whole line plus fsync: the only partial state a crash can leave is a torn
        # last line, which recover() sets aside.
        with open(self.records_path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def read_records(self) -> list[dict[str, Any]]:
        """Finished records, first occurrence per task id; a torn trailing line is skipped.

        Any other bad line is a RunDirError naming the file and line.
        """
        records, bad, _ = self._scan()
        if bad:
            raise RunDirError(self._bad_lines_message(bad))
        seen: dict[str, dict[str, Any]] = {}
        for record in records:
            seen.setdefault(record["task_id"], record)
        return list(seen.values())

    def recover(self, *, set_aside: bool = False, run_id: str | None = None) -> list[str]:
        """Make records.jsonl safe to append to; return what was done, one line each.

        A torn last line is always moved to records.rejected (its pair runs again). Bad
        complete lines, and records of another run than `run_id`, are a RunDirError naming
        file:line, unless `set_aside`, which moves them to records.rejected as well.
        """
        records, bad, torn = self._scan(run_id, schema=True)
        notes = []
        if bad and not set_aside:
            raise RunDirError(self._bad_lines_message(bad, way_out=True))
        if torn:
            notes.append(
                f"{self.records_path}: the last line ({len(torn)} bytes) was cut off by an "
                f"interrupted write; moved it to {REJECTED}, its task runs again"
            )
        if bad:
            where = ", ".join(str(b.number) for b in bad[:10]) + (" ..." if len(bad) > 10 else "")
            notes.append(
                f"{self.records_path}: set aside {len(bad)} bad line(s) (line {where}) in "
                f"{REJECTED}; their tasks run again"
            )
        if torn or bad:
            self._set_aside(bad, torn)
        return notes

    def set_aside_where(self, select: Callable[[dict[str, Any]], bool], reason: str) -> int:
        """Move the records `select` picks to records.rejected (kept, never deleted), so their
        tasks run again; the number moved. For a records file `recover` has made safe."""
        if not self.records_path.is_file():
            return 0
        picked = []
        for number, raw in enumerate(self.records_path.read_bytes().split(b"\n")[:-1], start=1):
            record, _ = _parse_record(raw) if raw.strip() else (None, "")
            if record is not None and select(record):
                picked.append(BadLine(number, reason, raw + b"\n"))
        if picked:
            self._set_aside(picked, b"")
        return len(picked)

    def _set_aside(self, bad: list[BadLine], torn: bytes) -> None:
        # Keep the bytes first (appended, fsynced), then drop them from the records: a crash
        # between the two steps duplicates evidence, never loses a record.
        with open(self.root / REJECTED, "ab") as fh:
            fh.write(b"".join(b.data for b in bad) + (torn + b"\n" if torn else b""))
            fh.flush()
            os.fsync(fh.fileno())
        drop = {b.number for b in bad}
        lines = self.records_path.read_bytes().split(b"\n")[:-1]  # the last item is the torn tail
        kept = [ln + b"\n" for n, ln in enumerate(lines, start=1) if n not in drop and ln.strip()]
        atomic_write_bytes(self.records_path, b"".join(kept))

    def _scan(
        self, run_id: str | None = None, *, schema: bool = False
    ) -> tuple[list[dict[str, Any]], list[BadLine], bytes]:
        """(valid records, bad complete lines, torn unterminated tail).

        With `schema`, records whose rows break the transitions/traces schema are bad too.
        """
        if not self.records_path.is_file():
            return [], [], b""
        data = self.records_path.read_bytes()
        cut = data.rfind(b"\n") + 1
        parsed: list[tuple[int, bytes, dict[str, Any]]] = []
        bad: list[BadLine] = []
        for number, raw in enumerate(data[:cut].split(b"\n")[:-1], start=1):
            if not raw.strip():
                continue
            record, reason = _parse_record(raw)
            if record is not None and run_id is not None:
                other = record["transition"].get("run_id")
                if other != run_id:
                    record, reason = None, f"a record of run {other!r}, not of this run {run_id!r}"
            if record is None:
                bad.append(BadLine(number, reason, raw + b"\n"))
            else:
                parsed.append((number, raw + b"\n", record))
        invalid = self._schema_problems(parsed) if schema else []
        bad = sorted(bad + invalid, key=lambda b: b.number)
        skip = {b.number for b in invalid}
        return [r for n, _, r in parsed if n not in skip], bad, data[cut:]

    def _schema_problems(self, parsed: list[tuple[int, bytes, dict[str, Any]]]) -> list[BadLine]:
        """Lines whose record breaks the schema or the pair's own consistency (PairRecord)."""
        from hf_skillfollow.schema import SchemaError

        bad = []
        for number, raw, record in parsed:
            source = f"{self.records_path}:{number}"
            try:
                PairRecord.parse(record, source=source)
            except SchemaError as exc:
                bad.append(BadLine(number, str(exc).removeprefix(f"{source}: "), raw))
        return bad

    def _bad_lines_message(self, bad: list[BadLine], *, way_out: bool = False) -> str:
        first = bad[0]
        more = f" (and {len(bad) - 1} more bad line(s))" if len(bad) > 1 else ""
        text = f"{self.records_path}:{first.number}: {first.reason}{more}"
        if way_out:
            text += (
                f"; to move the bad line(s) to {REJECTED} and run their tasks again, resume with "
                f"--set-aside-bad-records"
            )
        return text

    def finished_task_ids(self) -> set[str]:
        return {r["task_id"] for r in self.read_records()}

    def write_tables(self) -> tuple[int, int]:
        """Rebuild transitions.parquet and traces.parquet from the records."""
        import pyarrow.parquet as pq

        from hf_skillfollow.schema import SchemaError, traces_from_rows, transitions_from_rows

        records = self.read_records()
        source = str(self.records_path)
        try:
            transitions = transitions_from_rows([r["transition"] for r in records], source=source)
            traces = traces_from_rows([t for r in records for t in r["traces"]], source=source)
        except SchemaError:
            _, bad, _ = self._scan(schema=True)  # say which line
            if bad:
                raise RunDirError(self._bad_lines_message(bad, way_out=True)) from None
            raise
        for table, name in ((transitions, TRANSITIONS), (traces, TRACES)):
            tmp = self.root / f".{name}.tmp"
            pq.write_table(table, tmp, compression="zstd")
            os.replace(tmp, self.root / name)
        return transitions.num_rows, traces.num_rows

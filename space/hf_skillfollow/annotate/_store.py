"""Resumable annotation records: append-only JSON lines, rebuilt into annotations.parquet.

One store is one folder (by default the run directory the annotations are about). A row is
appended and fsynced as soon as its unit is finished, so an interrupted `annotate` loses only
the units in flight; a torn last line is ignored. The last row of a key wins, so
`--retry-failed` can replace a recorded failure without editing the file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hf_skillfollow._text import loads_untrusted, safe_data
from hf_skillfollow.schema import ANNOTATION_KEY
from hf_skillfollow.store import ANNOTATION_RECORDS as RECORDS
from hf_skillfollow.store import ANNOTATIONS as TABLE
from hf_skillfollow.store import atomic_write_bytes


class AnnotationStoreError(ValueError):
    """An annotations file is damaged beyond a torn last line."""


def key_of(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[k] for k in ANNOTATION_KEY)


class AnnotationStore:
    """The annotations of one folder."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.path = self.root / RECORDS

    def rows(self) -> list[dict[str, Any]]:
        """The latest row per key, in first-seen order."""
        latest: dict[tuple[Any, ...], dict[str, Any]] = {}
        if not self.path.is_file():
            return []
        try:
            lines = self.path.read_text(encoding="utf-8").split("\n")
        except UnicodeDecodeError as exc:
            raise AnnotationStoreError(f"{self.path}: not UTF-8 text (byte {exc.start})") from None
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                row = loads_untrusted(line)
            except ValueError:
                if i < len(lines) - 2:  # only the unterminated last line may be torn
                    raise AnnotationStoreError(
                        f"{self.path}: line {i + 1} is not valid JSON"
                    ) from None
                continue
            # A run folder may be someone else's: a line that is no record is named, not a
            # KeyError from the key.
            if not isinstance(row, dict) or not all(k in row for k in ANNOTATION_KEY):
                raise AnnotationStoreError(
                    f"{self.path}: line {i + 1} is not an annotation record (a JSON object "
                    f"with {', '.join(ANNOTATION_KEY)})"
                )
            latest[key_of(row)] = row
        return list(latest.values())

    def finished(self, *, retry_failed: bool) -> set[tuple[Any, ...]]:
        """Keys not to annotate again: every recorded key, or only labelled ones."""
        return {key_of(r) for r in self.rows() if not retry_failed or r["label"] is not None}

    def check(self) -> None:
        """The records file, where there is one, is a regular file inside the folder: a run
        folder may be someone else's, and a link out of it would have `append` write
        annotation lines into a file elsewhere on this machine."""
        from hf_skillfollow._files import inside, regular_file

        if os.path.lexists(self.path):
            try:
                regular_file(inside(self.path, self.root))
            except OSError as exc:
                raise AnnotationStoreError(str(exc)) from None

    def repair_tail(self) -> None:
        self.check()
        if self.path.is_file():
            data = self.path.read_bytes()
            if data and not data.endswith(b"\n"):
                atomic_write_bytes(self.path, data[: data.rfind(b"\n") + 1])

    def append(self, row: dict[str, Any]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        # safe_data: a judge model's text may hold lone surrogates, which UTF-8 cannot encode
        line = json.dumps(safe_data(row), ensure_ascii=False, separators=(",", ":")) + "\n"
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def write_table(self) -> int:
        """Rebuild annotations.parquet from the records; returns its row count."""
        import pyarrow.parquet as pq

        from hf_skillfollow.schema import annotations_from_rows

        table = annotations_from_rows(self.rows(), source=str(self.path))
        table = table.sort_by([(k, "ascending") for k in ANNOTATION_KEY])
        tmp = self.root / f".{TABLE}.tmp"
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, self.root / TABLE)
        return table.num_rows

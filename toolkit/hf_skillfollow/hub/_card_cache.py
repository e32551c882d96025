"""The card's cell rows kept beside the counts, keyed by what they are computed from.

A cell's row on the card (RAE and OAE with bootstrap intervals, McNemar p, ...) is a pure
function of its identity columns, its number of runs and its summed 2x2 counts. Recomputing
the 200 listed cells on every push made a push into a large repo cost their bootstrap, so
`stats/card_cells.json` keeps each listed cell's row under a hash of exactly those inputs and
of the code that computes them: a push recomputes only the cells whose counts changed, and
a row read from the file is byte-identical to a recomputation (tests/test_hub_incremental.py).

Like `stats/runs.parquet` it is a cache, never a source of truth: an unreadable file, a row
of another toolkit version or any missing key just means that cell is computed again.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

CARD_CELLS_PATH = "stats/card_cells.json"
_FORMAT = 1


class CardRowCache:
    """Card rows by key; `used` records the keys of this render (what the file keeps)."""

    def __init__(self, data: bytes | None = None) -> None:
        self.rows: dict[str, dict[str, Any]] = _parse(data)
        self.used: set[str] = set()
        self.computed = 0  # cells computed (not found) in this render

    def get(self, key: str) -> dict[str, Any] | None:
        row = self.rows.get(key)
        if row is not None:
            self.used.add(key)
        return row

    def put(self, key: str, row: dict[str, Any]) -> None:
        self.rows[key] = row
        self.used.add(key)
        self.computed += 1

    @property
    def changed(self) -> bool:
        """Whether `to_bytes` would differ from the rows read: a row computed or dropped."""
        return self.computed > 0 or self.used != self.rows.keys()

    def to_bytes(self) -> bytes:
        """The rows of this render only, so the file stays as small as the card's table."""
        rows = {k: self.rows[k] for k in sorted(self.used)}
        # No indent: with one, json falls back to its pure-Python encoder (30 ms for 200 rows).
        return json.dumps(
            {"format": _FORMAT, "rows": rows}, sort_keys=True, ensure_ascii=False
        ).encode("utf-8")


def cell_key(identity: Mapping[str, Any], n_runs: int, counts: Iterable[int]) -> str:
    """Hash of everything a cell's card row depends on (the computing code included)."""
    # repr of str/int/float/None is exact and stable across runs and platforms (floats print
    # their shortest round-trip form), and ten times cheaper than JSON for 200 cells.
    payload = repr(
        (_code_fingerprint(), sorted(identity.items()), int(n_runs), [int(c) for c in counts])
    )
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


def _parse(data: bytes | None) -> dict[str, dict[str, Any]]:
    if not data:
        return {}
    try:
        parsed = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # unreadable: compute every row
        return {}
    if not isinstance(parsed, dict) or parsed.get("format") != _FORMAT:
        return {}
    rows = parsed.get("rows")
    if not isinstance(rows, dict):
        return {}
    return {k: v for k, v in rows.items() if isinstance(k, str) and isinstance(v, dict)}


@functools.cache
def _code_fingerprint() -> str:
    """Hash of the sources that turn counts into a card row: a changed formula or display
    format invalidates every cached row, even without a version bump."""
    import hf_skillfollow.formatting as formatting
    import hf_skillfollow.hub._numbers as numbers
    import hf_skillfollow.metrics as metrics

    files = sorted(Path(metrics.__file__).parent.glob("*.py"))
    files += [Path(numbers.__file__), Path(formatting.__file__)]
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]

"""`--shard I/N`: a deterministic split of a sweep's cells over N machines.

A cell goes to shard ``hash(key) mod N``: the split depends on nothing but the cell itself,
so it is the same on every machine, and adding, removing or reordering other cells (at the
end of the file or anywhere) never moves a cell to another shard. `by="model"` hashes the
model alias instead, so each machine gets whole models (one local vLLM per machine).
"""

from __future__ import annotations

import hashlib
from typing import Literal

from hf_skillfollow.sweep._matrix import Cell

ShardBy = Literal["cell", "model"]


def parse_shard(text: str) -> tuple[int, int]:
    """'I/N' (1-based) -> (I, N); a clear ValueError otherwise."""
    index, sep, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        i = n = 0
    if not sep or n < 1 or not 1 <= i <= n:
        raise ValueError(f"--shard: expected I/N with 1 <= I <= N, got {text!r}")
    return i, n


def shard_of(cell: Cell, count: int, by: ShardBy = "cell") -> int:
    """The 1-based shard of `cell` among `count`."""
    text = cell.key if by == "cell" else cell.model
    digest = hashlib.sha256(text.encode()).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def select_shard(cells: list[Cell], index: int, count: int, by: ShardBy = "cell") -> list[Cell]:
    return [c for c in cells if shard_of(c, count, by) == index]

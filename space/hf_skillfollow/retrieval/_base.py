"""The retriever interface shared by every backend."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Hit:
    """One retrieved skill: its name (the document id) and its BM25 score."""

    name: str
    score: float


class Retriever(Protocol):
    def search(self, query: str, k: int = 3, types: Sequence[str] | None = None) -> list[Hit]:
        """Top-k skills for `query` (optionally only those of `types`), zero scores dropped,
        ties broken deterministically by name."""
        ...

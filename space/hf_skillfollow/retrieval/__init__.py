"""BM25 retrieval over skill pools; backends chosen by name and imported lazily."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hf_skillfollow.registries import RETRIEVERS
from hf_skillfollow.retrieval._base import Hit, Retriever

if TYPE_CHECKING:
    from hf_skillfollow.skills import SkillPool


def make_retriever(name: str, pool: SkillPool) -> Retriever:
    """Build the retriever `name` over `pool` (imports its backend only now)."""
    return RETRIEVERS.resolve(name)(pool)


__all__ = ["Hit", "Retriever", "RETRIEVERS", "make_retriever"]

"""BM25 retrieval over skill pools; backends chosen by name and imported lazily."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from hf_skillfollow.retrieval._base import Hit, Retriever

if TYPE_CHECKING:
    from hf_skillfollow.skills import SkillPool

#: name -> "module:factory"; a factory takes (pool) and returns a Retriever.
RETRIEVERS: dict[str, str] = {
    "bm25s": "hf_skillfollow.retrieval._bm25s:Bm25sRetriever",
    "pyserini": "hf_skillfollow.retrieval._pyserini:PyseriniRetriever",
}


def make_retriever(name: str, pool: SkillPool) -> Retriever:
    """Build the retriever `name` over `pool` (imports its backend only now)."""
    try:
        target = RETRIEVERS[name]
    except KeyError:
        raise ValueError(
            f"unknown retriever {name!r}; choose one of {sorted(RETRIEVERS)}"
        ) from None
    module, attr = target.split(":")
    return getattr(import_module(module), attr)(pool)


__all__ = ["Hit", "Retriever", "RETRIEVERS", "make_retriever"]

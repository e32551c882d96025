"""BM25 retrieval over skill pools; backends chosen by name and imported lazily."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hf_skillfollow.registries import RETRIEVERS
from hf_skillfollow.retrieval._base import Hit, Retriever

if TYPE_CHECKING:
    from hf_skillfollow.skills import SkillPool


#: (retriever, pool content hash) -> index, most recent last: the cells of a sweep that share a
#: pool share one index instead of rebuilding it per run (an index is read-only once built).
_BUILT: dict[tuple[str, str], Retriever] = {}
_KEEP = 8


def make_retriever(name: str, pool: SkillPool) -> Retriever:
    """The retriever `name` over `pool` (imports its backend only now), built once per pool
    content in this process."""
    key = (RETRIEVERS.check(name), pool.content_hash)
    retriever = _BUILT.pop(key, None) or RETRIEVERS.resolve(name)(pool)
    _BUILT[key] = retriever
    while len(_BUILT) > _KEEP:
        del _BUILT[next(iter(_BUILT))]
    return retriever


__all__ = ["Hit", "Retriever", "RETRIEVERS", "make_retriever"]

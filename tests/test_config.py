"""The cell id: what pools (repeats) and what must not (a different task set or protocol)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from hf_skillfollow.config import RunConfig


def test_repeats_of_a_cell_share_the_protocol() -> None:
    a = RunConfig(backend="openai", model="m", seed=0, concurrency=1, request_timeout=10)
    b = RunConfig(backend="openai", model="m", seed=7, concurrency=8, request_timeout=99)
    assert a.protocol_dict() == b.protocol_dict()


@pytest.mark.parametrize(
    "field,value", [("limit", 5), ("top_k", 1), ("condition", "filler"), ("temperature", 0.0)]
)
def test_task_set_and_protocol_settings_change_the_cell(field: str, value: object) -> None:
    base = RunConfig(backend="openai", model="m")
    assert base.protocol_dict() != base.model_copy(update={field: value}).protocol_dict()


def test_unknown_backend_is_named() -> None:
    with pytest.raises(ValidationError, match="unknown backend 'nope'"):
        RunConfig(backend="nope")


def test_catalog_runs_differing_only_in_search_settings_are_one_cell() -> None:
    """With --access catalog nothing is searched: top_k and retriever cannot split a cell."""
    a = RunConfig(access="catalog", top_k=1, retriever="pyserini")
    b = RunConfig(access="catalog")
    assert (a.top_k, a.retriever) == (3, "bm25s")
    assert a.protocol_dict() == b.protocol_dict()
    searched = RunConfig(access="search", top_k=1)
    assert searched.top_k == 1
    assert searched.protocol_dict() != RunConfig(access="search").protocol_dict()

"""The board's start-up cache (space_app/_cache.py): a hit equals a recomputation from rows,
and any change to the rows, the resamples or the toolkit's code computes everything again.

Uses the hand-counted fixture of test_space_client (cell B: S_call b=2, c=6, n_cond 12, so
RAE = 100·(2−6)/12 = −33.33 pp).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from hf_skillfollow.schema import transitions_from_rows
from hf_skillfollow.space_app import _cache
from hf_skillfollow.space_app._board import load_board
from tests.test_space_client import RUNS, build_sources, run_rows

RESAMPLES = 500


@pytest.fixture()
def sources(tmp_path: Path, monkeypatch) -> list[str]:
    monkeypatch.setenv(_cache.ENV_CACHE, str(tmp_path / "cache"))
    return build_sources(tmp_path / "data")


def _load(sources: list[str], **kw):
    return load_board(sources, resamples=RESAMPLES, discover=False, **kw)


def _cell(board, cell_id: str) -> pd.Series:
    return board.pooled.set_index("cell_id").loc[cell_id]


def test_cached_board_equals_a_fresh_recomputation(sources):
    first = _load(sources)
    cached = _load(sources)
    fresh = _load(sources, use_cache=False)
    assert (first.from_cache, cached.from_cache, fresh.from_cache) == (False, True, False)
    pd.testing.assert_frame_equal(cached.pooled, fresh.pooled)
    pd.testing.assert_frame_equal(cached.cells(True), fresh.cells(True))
    assert cached.warnings == fresh.warnings and len(fresh.warnings) == 3  # the 3 bad sources
    assert cached.sources == fresh.sources
    assert _cell(cached, "cellA")["rae"] == pytest.approx(35.0)
    assert _cell(cached, "cellB")["rae"] == pytest.approx(-100 / 3)


def test_a_cached_start_reads_no_rows_until_a_drill_down_needs_them(sources):
    from hf_skillfollow.space_app._ui import build_app

    _load(sources)
    board = _load(sources)
    build_app(board)  # renders the first view into the page
    assert board.from_cache and board._rows is None
    rows = board.task_rows(_cell(board, "cellA").to_dict() | {"cell_id": "cellA"})
    assert len(rows) == 68 and board._rows is not None  # 12 + 28 + 8 + 20 tasks of runs a1, a2


def test_changed_rows_invalidate_the_cache(sources, monkeypatch):
    assert _cell(_load(sources), "cellB")["rae"] == pytest.approx(-100 / 3)
    assert _load(sources).from_cache
    # Run b1 republished with S_call a,b,c,d = 2,2,4,4: RAE = 100·(2−4)/12 = −16.67 pp.
    monkeypatch.setitem(RUNS, "b1", (*RUNS["b1"][:4], (2, 2, 4, 4), RUNS["b1"][5]))
    b1 = Path(sources[0]) / "b1" / "transitions.parquet"
    pq.write_table(transitions_from_rows(run_rows("b1")), b1)
    after = _load(sources)
    assert not after.from_cache
    assert _cell(after, "cellB")["rae"] == pytest.approx(-200 / 12)
    pd.testing.assert_frame_equal(after.pooled, _load(sources, use_cache=False).pooled)
    assert _load(sources).from_cache  # the new revision is cached in turn


def test_resamples_and_code_are_part_of_the_key(sources, monkeypatch):
    key = _cache.board_key(sources, RESAMPLES)
    assert key is not None and key == _cache.board_key(sources, RESAMPLES)
    assert _cache.board_key(sources, RESAMPLES + 1) != key
    monkeypatch.setattr(_cache, "_CODE", ["another toolkit"])
    assert _cache.board_key(sources, RESAMPLES) != key


def test_a_broken_entry_is_recomputed_not_shown(sources):
    _load(sources)
    key = _cache.board_key(sources, RESAMPLES)
    (_cache.cache_dir() / key / "cells.parquet").write_bytes(b"not parquet")
    board = _load(sources)
    assert not board.from_cache
    assert _cell(board, "cellB")["rae"] == pytest.approx(-100 / 3)


def test_cache_off_writes_nothing(sources, tmp_path, monkeypatch):
    monkeypatch.setenv(_cache.ENV_CACHE, "off")
    assert _cache.cache_dir() is None
    assert not _load(sources).from_cache and not _load(sources).from_cache
    assert not (tmp_path / "cache").exists()


def test_a_hub_source_without_a_known_revision_disables_the_cache(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert _cache.source_revision("some-org/some-results") is None
    assert _cache.board_key(["some-org/some-results"], RESAMPLES) is None

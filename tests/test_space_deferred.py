"""A cold start that defers the bootstrap intervals (`load_board(defer_intervals=True)`) shows
the same page, and ends with the same cells and cache entry, as a full computation.

The fixture has more cells than the first view shows (a 50-row table page, 200 points per plot), so
the first view computes the intervals of only part of them and the rest wait for
`Board.complete`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from hf_skillfollow.space_app import _cache
from hf_skillfollow.space_app import _table as T
from hf_skillfollow.space_app._board import load_board
from hf_skillfollow.space_app._ui import first_view, render_view
from tests._cells import rows_for, table_for

RESAMPLES = 300
N_CELLS = 320


@pytest.fixture()
def source(tmp_path: Path, monkeypatch) -> str:
    """N_CELLS single-run cells whose 2x2 counts come from a seeded generator (n_cond 4-24)."""
    monkeypatch.setenv(_cache.ENV_CACHE, str(tmp_path / "cache"))
    rng = np.random.default_rng(7)
    cells = []
    for i in range(N_CELLS):
        cond = dict(zip("abcd", rng.integers(1, 7, 4).tolist(), strict=True))
        skip = dict(zip("abcd", rng.integers(0, 4, 4).tolist(), strict=True))
        cells.append(
            rows_for(
                cond,
                skip,
                model=f"org/m{i % 40}",
                benchmark=("mbppplus", "humanevalplus")[i % 2],
                condition=("normal", "filler", "random", "corrupted")[i // 80],
                cell_id=f"cell-{i}",
                run_id=f"run-{i}",
            )
        )
    path = tmp_path / "transitions.parquet"
    pq.write_table(table_for(*cells), path)
    return str(path)


def _load(source: str, **kw):
    return load_board([source], resamples=RESAMPLES, discover=False, **kw)


def test_the_deferred_first_view_equals_the_full_one(source):
    full = _load(source, use_cache=False)
    deferred = _load(source, use_cache=False, defer_intervals=True)
    assert deferred._incomplete
    waiting = deferred._pooled["rae_ci_low"].isna() & (deferred._pooled["n_cond"] > 0)
    assert waiting.sum() > 40  # intervals really are left for later
    want, got = first_view(full), first_view(deferred)
    assert deferred._incomplete  # the first view did not compute every interval
    assert (got.summary, got.table, got.plots) == (want.summary, want.table, want.plots)
    assert "95% CI" in got.plots and got.table.count("<tr ") == T.PAGE_ROWS


def test_a_filter_before_completion_sees_every_interval(source):
    full = _load(source, use_cache=False)
    deferred = _load(source, use_cache=False, defer_intervals=True)
    first_view(deferred)
    state = T.ViewState(T.Filters(min_cond=5, show_nonreportable=True, sort="oae:asc"))
    assert render_view(deferred, state) == render_view(full, state)
    assert not deferred._incomplete
    pd.testing.assert_frame_equal(deferred.pooled, full.pooled)
    pd.testing.assert_frame_equal(deferred.cells(True), full.cells(True))


def test_the_cache_is_written_only_with_the_complete_cells(source):
    deferred = _load(source, defer_intervals=True)
    first_view(deferred)
    assert not (Path(_cache.cache_dir()).exists() and any(_cache.cache_dir().iterdir()))
    deferred.complete()
    cached = _load(source)
    assert cached.from_cache
    pd.testing.assert_frame_equal(cached.pooled, _load(source, use_cache=False).pooled)

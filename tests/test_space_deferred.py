"""A cold start that defers the bootstrap intervals (`load_board(defer_intervals=True)`) shows
the same page, and ends with the same cells and cache entry, as a full computation.

The fixture has more cells than the first view shows (a 50-row table page, 200 points per plot), so
the first view computes the intervals of only part of them and the rest wait for
`Board.complete`.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from hf_skillfollow.space_app import _cache
from hf_skillfollow.space_app import _table as T
from hf_skillfollow.space_app._board import load_board
from hf_skillfollow.space_app._ui import ViewCache, first_view, render_view
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


def test_cells_from_rows_left_as_dictionaries_equal_those_from_plain_strings(
    source, tmp_path, monkeypatch
):
    """The cold start keeps the string columns as read, dictionaries (here of several row
    groups, each with its own), and groups by their indices; the cells, the first page and
    the rows the drill-down and per-run views read are those of the plain strings."""
    from functools import partial

    import pyarrow as pa

    from hf_skillfollow.hub._budget import TRANSITIONS
    from hf_skillfollow.schema import TRANSITIONS_SCHEMA
    from hf_skillfollow.sources import read_transitions
    from hf_skillfollow.space_app import _sources

    grouped = tmp_path / "grouped.parquet"
    pq.write_table(pq.read_table(source), grouped, row_group_size=1_000)
    board = _load(str(grouped), use_cache=False, defer_intervals=True)
    plain_reader = partial(read_transitions, budget=TRANSITIONS)
    monkeypatch.setattr(_sources, "_reader", lambda _: plain_reader)
    plain = _load(str(grouped), use_cache=False, defer_intervals=True)
    want, got = first_view(plain), first_view(board)
    assert (got.summary, got.table, got.plots) == (want.summary, want.table, want.plots)
    pd.testing.assert_frame_equal(board.pooled, plain.pooled)
    pd.testing.assert_frame_equal(board.cells(True), plain.cells(True))
    as_read, _ = board.load_rows()  # what the cells were computed from
    assert pa.types.is_dictionary(as_read[str(grouped)]["model"].type)
    rows, plain_rows = board.tables[str(grouped)], plain.tables[str(grouped)]
    assert rows["model"].num_chunks > 1
    assert rows.equals(plain_rows) and not pa.types.is_dictionary(rows["model"].type)
    assert rows.select(TRANSITIONS_SCHEMA.names).schema.equals(TRANSITIONS_SCHEMA)


def test_the_page_events_reuse_a_view_only_while_its_cells_frame_is_the_boards(source):
    """`ViewCache` (the page's filter, sort and page events): the same views as `render_view`,
    a view seen before returned without rendering, and a new frame of cells rendered again."""
    board = _load(source, use_cache=False, defer_intervals=True)
    views = ViewCache(board)
    states = [
        T.ViewState(T.Filters(min_cond=5)),
        T.ViewState(T.Filters(min_cond=20, show_nonreportable=True)),
        T.ViewState(T.Filters(sort="oae:asc"), page=2),
    ]
    seen = [views.render(s) for s in states]  # completes the deferred intervals first
    full = _load(source, use_cache=False)
    assert seen == [render_view(full, s) for s in states]
    assert seen[0].plots != seen[1].plots and seen[2].plots
    assert [views.render(s) for s in states[::-1]] == seen[::-1]
    assert all(views.render(s) is v for s, v in zip(states, seen, strict=True))
    assert views.render(states[0], plots=False) == replace(seen[0], plots="")
    with board._lock:  # what a recomputation does: a new frame, the narrow views dropped
        board._pooled = board._pooled.assign(model=board._pooled["model"].astype(str) + "-new")
        board._views.clear()
    again = views.render(states[0])
    assert again != seen[0] and "org/m1-new" in again.table
    assert again == render_view(board, states[0])

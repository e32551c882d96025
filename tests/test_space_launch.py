"""The app's start loads the board beside gradio's import (`_launch._load_in_background`):
in a forked child on Linux. What the child sends back is the board a load in this process
gives: the same cells and first page, its rows read again when a view needs them, the
deferred intervals and the cache write done here; a child that dies costs a load in the
thread, not the board."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from hf_skillfollow.space_app import _cache, _launch
from hf_skillfollow.space_app._board import load_board
from hf_skillfollow.space_app._ui import first_view
from tests._cells import rows_for, table_for

RESAMPLES = 300

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the forked load is Linux-only")


@pytest.fixture()
def source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(_cache.ENV_CACHE, str(tmp_path / "cache"))
    cells = [
        rows_for({"a": 3, "b": 1 + i % 3, "c": i % 2, "d": 2}, {"a": 2, "d": 1},
                 cell_id=f"cell-{i}", run_id=f"run-{i}", model=f"org/m{i % 4}")
        for i in range(60)
    ]  # fmt: skip
    path = tmp_path / "transitions.parquet"
    pq.write_table(table_for(*cells), path)
    return str(path)


def _fresh(check: str, source: str) -> None:
    """Run `check(source)` of this module in a fresh process, as the app forks: before any
    thread (pytest's process may hold threads of other tests, which a fork must not copy)."""
    script = f"import sys; import tests.test_space_launch as t; t.{check}(sys.argv[1])"
    done = subprocess.run(
        [sys.executable, "-c", script, source], cwd=Path(__file__).parents[1],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("checked"), done.stdout[-2000:]


def _forked(load):  # noqa: ANN001, ANN202
    """`_launch._forked(load)` called as the app calls it (a fork before any thread)."""
    assert _launch._can_fork(), "this process has started a thread: it cannot fork"
    return _launch._forked(load)


def _same_board(source: str) -> None:
    here = load_board([source], resamples=RESAMPLES, discover=False, defer_intervals=True,
                      use_cache=False)  # fmt: skip
    pid = os.getpid()
    pids: list[int] = []

    def load():  # noqa: ANN202
        pids.append(os.getpid())  # in the child: this list is the child's copy
        assert os.getpid() != pid, "the load ran in the parent"
        return load_board([source], resamples=RESAMPLES, discover=False, defer_intervals=True)

    board = _forked(load)()
    assert pids == [] and board._incomplete and not board.from_cache
    assert board._rows is None  # the rows stayed in the child: read again on first use
    want, got = first_view(here), first_view(board)
    assert (got.summary, got.table, got.plots) == (want.summary, want.table, want.plots)
    assert board.tables[source].equals(here.tables[source])
    pd.testing.assert_frame_equal(board.pooled, here.pooled)  # the deferred intervals, here
    cached = load_board([source], resamples=RESAMPLES, discover=False)
    assert cached.from_cache  # written here by `complete`, with the complete cells
    pd.testing.assert_frame_equal(cached.pooled, here.pooled)
    print("checked")


def _dead_child(source: str) -> None:
    pid = os.getpid()
    here: list[int] = []

    def load():  # noqa: ANN202
        if os.getpid() != pid:
            os._exit(3)  # killed before it answered
        here.append(pid)
        return load_board([source], resamples=RESAMPLES, discover=False, use_cache=False)

    board = _forked(load)()
    assert here == [pid] and len(board.pooled) == 60  # loaded in this process instead
    print("checked")


def _error_in_child(source: str) -> None:
    def load():  # noqa: ANN202
        raise ValueError("SKILLFOLLOW_RESAMPLES must be a positive integer, got 'x'")

    with pytest.raises(ValueError, match="got 'x'"):
        _forked(load)()
    print("checked")


def test_the_forked_load_gives_the_board_a_load_here_gives(source: str) -> None:
    _fresh("_same_board", source)


def test_a_child_that_dies_costs_a_load_in_the_thread(source: str) -> None:
    _fresh("_dead_child", source)


def test_an_error_in_the_child_is_raised_here(source: str) -> None:
    _fresh("_error_in_child", source)

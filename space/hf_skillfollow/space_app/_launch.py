"""Starting the app: shared by `space/app.py` and `hf-skillfollow leaderboard`."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import gradio as gr

    from hf_skillfollow.space_app._board import Board

ENV_RESAMPLES = "SKILLFOLLOW_RESAMPLES"
#: Seconds after the app is built when deferred intervals are computed even if no page has
#: loaded yet (so that the start-up cache is written on a Space nobody visits).
COMPLETE_AFTER_S = 20.0


def resamples_from_env(default: int | None = None) -> int:
    raw = os.environ.get(ENV_RESAMPLES)
    if not raw:
        if default is None:
            from hf_skillfollow.space_app._board import DEFAULT_RESAMPLES as default
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{ENV_RESAMPLES} must be a positive integer, got {raw!r}") from None
    if value < 1:
        raise ValueError(f"{ENV_RESAMPLES} must be a positive integer, got {raw!r}")
    return value


def make_demo(
    sources: Sequence[str] = (), *, discover: bool | None = None, resamples: int | None = None
) -> gr.Blocks:
    """Load every source (or its cached cells), compute the cells once, and build the app.

    Importing gradio takes about as long as loading 10^6 rows and computing their cells, and
    parquet reads and numpy release the GIL, so the board loads in a worker thread while this
    thread imports gradio (0.5-1 s saved on a busy 2-core machine, bench/space.py). A cache
    miss defers the bootstrap intervals of the rows the first view does not show until the
    page has loaded (`Board.complete`), or `COMPLETE_AFTER_S` when no page asks first.
    """
    pending = _load_in_background(sources, resamples, discover)
    from hf_skillfollow.space_app._ui import build_app

    board = pending.result()
    demo = build_app(board)
    timer = threading.Timer(COMPLETE_AFTER_S, board.complete_soon)
    timer.daemon = True
    timer.start()
    return demo


def _load_in_background(
    sources: Sequence[str], resamples: int | None, discover: bool | None
) -> Future[Board]:
    def load() -> Board:
        from hf_skillfollow.space_app._board import load_board

        n = resamples or resamples_from_env()
        return load_board(sources, resamples=n, discover=discover, defer_intervals=True)

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="skillfollow-load")
    try:
        return pool.submit(load)
    finally:
        pool.shutdown(wait=False)


def launch(
    sources: Sequence[str] = (),
    *,
    port: int | None = None,
    host: str | None = None,
    share: bool = False,
    discover: bool | None = None,
    resamples: int | None = None,
) -> None:
    demo = make_demo(sources, discover=discover, resamples=resamples)
    # The board's CSS, page script and CSV route travel with `demo.launch` (see _ui.BoardBlocks).
    demo.launch(server_name=host, server_port=port, share=share)

"""Starting the app: shared by `space/app.py` and `hf-skillfollow leaderboard`."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

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

    Importing gradio takes longer than loading 10^6 rows and computing their cells, so the
    board loads beside it (`_load_in_background`): in a forked child process where there is
    fork (no lock shared with the import, nothing imported twice), else in a worker thread.
    A cache miss defers the bootstrap intervals of the rows the first view does not show
    until the page has loaded (`Board.complete`), or `COMPLETE_AFTER_S` when no page asks
    first.
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
        return pool.submit(_forked(load) if _can_fork() else load)
    finally:
        pool.shutdown(wait=False)


def _can_fork() -> bool:
    """Fork where it is safe to: Linux (macOS's system libraries are not fork-safe), and
    before this process has started a thread of its own."""
    import multiprocessing

    alone = threading.active_count() == 1
    return sys.platform == "linux" and alone and "fork" in multiprocessing.get_all_start_methods()


def _forked(load: Callable[[], Board]) -> Callable[[], Board]:
    """`load` run in a child forked now; the function returned waits for its answer (in the
    worker thread). The rows are read and the cells computed on another core without the
    GIL that gradio's import (this process's main thread) holds nearly all the time (a
    thread beside the import took ~2 s of wall time for ~0.5 s of work: docs/leaderboard.md,
    "Cold start"). The child sends back the cells, not the rows (`_board.Computed`): the rows
    are read again if a view needs them, as after a start from the cache. A child that dies
    without an answer costs a load in the thread.
    """
    import multiprocessing

    # imported before the fork, so that the child does not import them a second time (and
    # the metrics, which the first page's intervals need here)
    from hf_skillfollow import metrics  # noqa: F401
    from hf_skillfollow.space_app import _board  # noqa: F401 (pandas, pyarrow, the board)

    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(load, send), daemon=True,
                            name="skillfollow-load")  # fmt: skip
    child.start()
    send.close()

    def result() -> Board:
        from hf_skillfollow.space_app._board import restored

        try:
            answer = receive.recv()
        except EOFError:  # the child died (killed, out of memory): load here instead
            return load()
        finally:
            receive.close()
            child.join()
        if isinstance(answer, BaseException):
            raise answer
        return restored(answer)

    return result


def _child(load: Callable[[], Board], send: Connection) -> None:
    import gc

    from hf_skillfollow.space_app._board import computed

    # A short-lived process: collecting would also touch (and copy) the parent's pages.
    gc.disable()
    try:
        answer: object = computed(load())
    except Exception as exc:  # the parent raises it, as the thread would have
        answer = exc
    send.send(answer)
    send.close()


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

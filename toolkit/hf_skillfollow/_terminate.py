"""SIGTERM unwinds a command like Ctrl-C, so what it started is stopped before it ends.

Python's default SIGTERM ends the process at once and no ``finally`` runs: the children a
command started in sessions of their own outlive it (the embedded llama.cpp server of `run`,
the two ``harbor run`` jobs of `run --harness harbor`, which go on running trials against an
endpoint nobody reads). Inside `sigterm_unwinds()`, SIGTERM raises `Terminated` (a
KeyboardInterrupt) in the main thread instead: asyncio cancels the running tasks, their
cleanup stops those children, and once the stack is unwound the process ends by SIGTERM
after all, so whoever sent it sees the status it expects.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: raised where the main thread was, to unwind it."""


def _raise(signum: int, frame: FrameType | None) -> None:
    del signum, frame
    raise Terminated


@contextlib.contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """Within the block, SIGTERM unwinds the main thread, then ends the process by SIGTERM."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread
        return
    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    except Terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        raise  # not reached: the default action ends the process
    finally:
        signal.signal(signal.SIGTERM, previous)

"""Idle worker processes kept for reuse (the reference and math workers, the sandbox's zygotes),
and the one shared pool a module starts on first use."""

from __future__ import annotations

import atexit
import queue
import threading
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar


class Worker(Protocol):
    def alive(self) -> bool: ...

    def close(self) -> None: ...


W = TypeVar("W", bound=Worker)


class Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=Closable)


class Shared(Generic[C]):
    """One process-wide instance made by ``make`` on first use (thread-safe) and closed at
    exit: a module's worker pool, so importing the module starts nothing."""

    def __init__(self, make: Callable[[], C]) -> None:
        self.make = make
        self.value: C | None = None
        self.lock = threading.Lock()

    def get(self) -> C:
        with self.lock:
            if self.value is None:
                self.value = self.make()
                atexit.register(self.value.close)
            return self.value


class IdlePool(Generic[W]):
    """Workers started on demand by ``start``; a taken worker is either put back or
    discarded by its taker. A worker that died while idle (killed from outside) is replaced."""

    def __init__(self, start: Callable[[], W]) -> None:
        self.start = start
        self.idle: queue.SimpleQueue[W] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.all: list[W] = []
        # held while ``fill`` starts workers: ``take`` waits for them instead of starting more
        self.filling = threading.Lock()

    def fill(self, count: int) -> None:
        """Start workers, idle, until ``count`` are held (idle or taken)."""
        with self.filling:
            with self.lock:
                missing = count - len(self.all)
            for _ in range(missing):
                worker = self.start()
                with self.lock:
                    self.all.append(worker)
                self.idle.put(worker)

    def take(self) -> W:
        with self.filling:
            pass
        while True:
            try:
                worker = self.idle.get_nowait()
            except queue.Empty:
                break
            if worker.alive():
                return worker
            self.discard(worker)
        worker = self.start()
        with self.lock:
            self.all.append(worker)
        return worker

    def put(self, worker: W) -> None:
        self.idle.put(worker)

    def discard(self, worker: W) -> None:
        worker.close()
        with self.lock:
            if worker in self.all:
                self.all.remove(worker)

    def close(self) -> None:
        with self.lock:
            workers, self.all = self.all, []
        for worker in workers:
            worker.close()

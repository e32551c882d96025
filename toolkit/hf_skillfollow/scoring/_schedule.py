"""The order of ``score_many``'s work: missing expected outputs first, then programs, longest first.

A program's cost is only known once its task's expected outputs exist (the canonical
solution's measured CPU time, which a passing program roughly repeats); before that, only a
guess from the inputs. Computing every missing reference first, then running the programs
longest-first by measured cost, keeps a task whose cost the guess misses (MBPP+'s Mbpp/255:
small inputs, a ~1 GB output) from starting last and running alone at the end of a batch.
Pure bookkeeping under one condition variable; the threads that do the work call it.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Literal

Item = tuple[Literal["reference"], Hashable] | tuple[Literal["program"], int]


class Schedule:
    """Work items for a fixed set of threads; ``take`` blocks while a reference in progress
    may still release programs."""

    def __init__(
        self,
        references: Sequence[Hashable],
        waiting: Mapping[Hashable, Iterable[int]],
        ready: Mapping[int, float],
    ) -> None:
        """``references``: keys to compute, in the order to start them; ``waiting``: the
        programs (indices) each reference releases; ``ready``: programs runnable now, with
        their costs."""
        self._references = list(references)
        self._waiting = {key: list(items) for key, items in waiting.items()}
        self._ready: list[tuple[float, int]] = [(-cost, i) for i, cost in ready.items()]
        heapq.heapify(self._ready)
        self._in_progress = 0
        self._closed = False
        self._cond = threading.Condition()

    def take(self) -> Item | None:
        """The next item, or None when all is done (or the schedule was closed)."""
        with self._cond:
            while not self._closed:
                if self._references:
                    self._in_progress += 1
                    return ("reference", self._references.pop(0))
                if self._ready:
                    return ("program", heapq.heappop(self._ready)[1])
                if not self._in_progress:
                    return None
                self._cond.wait()
            return None

    def reference_done(self, key: Hashable, cost: float) -> None:
        """Release the programs waiting for ``key``, each with cost ``cost``."""
        with self._cond:
            self._in_progress -= 1
            for i in self._waiting.pop(key, ()):
                heapq.heappush(self._ready, (-cost, i))
            self._cond.notify_all()

    def close(self) -> None:
        """Hand out nothing more (the batch was interrupted or failed)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

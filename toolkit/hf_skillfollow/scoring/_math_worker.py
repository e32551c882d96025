"""Math checks in worker processes of their own, so that one answer can cost only itself.

Each worker is a plain interpreter (``python -P -m hf_skillfollow.scoring._math_worker``) that
reads one JSON request per line (task id, reference, reply text) and writes one verdict per
line; its main thread gives math-verify's ``signal.alarm`` timeouts. A check that runs past
``MATH_TIMEOUT_S`` kills its own worker only; a worker that dies mid-check (out of memory, a
signal) fails that answer only; the next check takes a fresh worker. Workers run under an
address-space limit (``MEMORY_BYTES``): ``\\boxed{(x+1)^{10^{7}}}`` reached 1.5 GB resident in
5 s without one. Replies are JSON, never pickles: the worker parses untrusted text.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import subprocess
import sys
import threading
import time
from typing import Any

from hf_skillfollow.scoring._idle import IdlePool, Shared
from hf_skillfollow.scoring._verdict import Verdict

#: ceiling on one math check (wall clock); math-verify's own timeouts normally end it far earlier
MATH_TIMEOUT_S = 120.0
#: address-space limit of a math worker, read when it starts (its interpreter maps ~60 MB;
#: ``\boxed{(x+1)^{10^{7}}}`` maps GBs before math-verify's 5 s timeout: 2.5 GB on a fast core)
MEMORY_BYTES = 1 << 30
#: how long a new worker may take to load math-verify
STARTUP_TIMEOUT_S = 120.0


class _WorkerEnded(Exception):
    pass


class _Worker:
    def __init__(self) -> None:
        # its own session: a cancelled batch kills the worker's group (``_sandbox.CancelScope``)
        # this process's import path, however it was set (an installed package, PYTHONPATH, a
        # test runner's rootdir): the worker must import the same scorer
        path = os.pathsep.join(p for p in sys.path if p)
        self.proc = subprocess.Popen(
            # -P: not the current folder first on the path (a package of the same name there)
            [sys.executable, "-P", "-m", __name__, str(MEMORY_BYTES)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": path},
            start_new_session=True,
        )
        self.buffer = b""
        # its imports take ~1.5 s: they are not counted against the first answer's check
        try:
            ready = self._read(STARTUP_TIMEOUT_S)
        except _WorkerEnded:
            ready = None
        if ready != {"ready": True}:
            self.close()
            raise RuntimeError(f"math worker did not start ({ready or self.status()})")

    def call(self, request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        """The worker's reply, or None when ``timeout`` passed first."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise _WorkerEnded from None
        return self._read(timeout)

    def _read(self, timeout: float) -> dict[str, Any] | None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if select.select([fd], [], [], remaining)[0]:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise _WorkerEnded
                self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)

    def status(self) -> str:
        code = self.proc.wait()
        return f"signal {-code}" if code < 0 else f"exit status {code}"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


class _Pool:
    """Up to ``os.cpu_count()`` workers (at least 2), started on demand and reused."""

    def __init__(self) -> None:
        self.workers: IdlePool[_Worker] = IdlePool(_Worker)
        self.slots = threading.BoundedSemaphore(max(2, os.cpu_count() or 2))

    def check(self, task_id: str, reference: str, text: str) -> Verdict:
        from hf_skillfollow.scoring import _sandbox

        scope = _sandbox._scope.get()
        with self.slots:
            if scope is not None and scope.cancelled:
                raise _sandbox.Cancelled("the scorer is stopping")
            worker = self.workers.take()
            request = {"task_id": task_id, "reference": reference, "text": text}
            try:
                with _sandbox._registered(worker.proc.pid, scope):
                    reply = worker.call(request, MATH_TIMEOUT_S)
            except _WorkerEnded:
                self.workers.discard(worker)
                if scope is not None and scope.cancelled:
                    raise _sandbox.Cancelled("the scorer is stopping") from None
                return _failed(task_id, f"math check failed: its worker ended ({worker.status()})")
            except BaseException:
                self.workers.discard(worker)
                raise
            if reply is None:
                self.workers.discard(worker)  # stuck, perhaps in native code: only it is killed
                return _failed(task_id, f"math check exceeded {MATH_TIMEOUT_S:.0f} s")
            self.workers.put(worker)
            return Verdict(reply["task_id"], reply["passed"], reply["reason"], reply["details"])

    def close(self) -> None:
        self.workers.close()


def _failed(task_id: str, reason: str) -> Verdict:
    return Verdict(task_id, False, reason, {"extracted": "", "method": "none"})


_pool: Shared[_Pool] = Shared(_Pool)


def check(task: Any, text: str) -> Verdict:
    """Score ``text`` for the math task ``task`` in a worker process. Thread-safe."""
    return _pool.get().check(task.task_id, task.reference or "", text)


# --- the worker ------------------------------------------------------------------------------


class _Task:
    def __init__(self, task_id: str, reference: str) -> None:
        self.task_id, self.reference = task_id, reference


def _serve(memory_bytes: int) -> None:
    # No PR_SET_PDEATHSIG: it fires when the *thread* that started the worker ends (score_many's
    # threads do, between batches). The worker ends when its stdin closes instead: at once
    # when idle, after the check in progress otherwise (math-verify's timeouts bound it).
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    import logging

    import math_verify  # noqa: F401  (loaded once, before the first check)

    # its timeouts are verdicts here; a warning per timed-out parse would only clutter stderr
    logging.getLogger("math_verify").setLevel(logging.ERROR)

    from hf_skillfollow.scoring._math import score_math

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    stdout.write(b'{"ready": true}\n')
    stdout.flush()
    for line in stdin:
        request = json.loads(line)
        task = _Task(request["task_id"], request["reference"])
        try:
            verdict = score_math(task, request["text"]).to_json()
        except MemoryError:
            verdict = _failed(
                task.task_id, f"math check ran out of memory (limit {memory_bytes >> 20} MiB)"
            ).to_json()
            stdout.write(json.dumps(verdict).encode() + b"\n")
            stdout.flush()
            return  # what the failed allocation left behind is not reused
        stdout.write(json.dumps(verdict).encode() + b"\n")
        stdout.flush()


if __name__ == "__main__":
    _serve(int(sys.argv[1]))

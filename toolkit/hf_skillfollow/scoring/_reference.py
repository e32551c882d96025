"""Expected outputs from the canonical solutions, in a pool of warm trusted workers.

Canonical solutions are the benchmark's own code, trusted exactly as EvalPlus trusts them
(its ``trusted_exec`` runs them in the evaluating process), so they need no sandbox: each
worker is a plain interpreter started once (``python -m hf_skillfollow.scoring._reference``
with the sandbox's environment, so that ``PYTHONHASHSEED`` and thread counts match the
candidates'), and forks one child per task. The child gets rlimits (CPU, address space, an
alarm as wall-clock backstop), computes the outputs with EvalPlus's ``trusted_exec``
semantics and writes the task's cache payload itself; nothing of one task survives into the
next. A worker exits when its stdin closes (the process that started it is gone), killing a
task in progress, and a task's process dies with its worker (``PR_SET_PDEATHSIG``).

Payload (read by ``_judge``): a length-prefixed pickle of the inputs; the index
(``_wire.index``: per output its byte length and its flags, ``_wire.SAME_BYTES_PASS``
(identical bytes from the program pass: the value equals a fresh copy of itself, and no
special oracle applies) and ``_wire.FLOATS`` (EvalPlus's ``is_floats``, which sets ``atol``
for the stage)); then the expected outputs' ``_wire.dumps`` bytes, base then plus, back to
back, so that the judge maps them from the file instead of copying them (Mbpp/255's come to
~1 GB); then the digests of the outputs longer than ``_wire.DIGEST_ABOVE`` (``_wire.digests``:
the sha256 of their bytes, computed as they are written), with which the judge accepts a
program's large output by its digest alone. The index's size follows from the number of
inputs, so it is reserved and written last, and each output is encoded straight into the file
after it: no output's bytes are held in memory whole.
"""

from __future__ import annotations

import ctypes
import gc
import hashlib
import json
import math
import mmap
import os
import pickle
import re
import resource
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from typing import IO, Any

from hf_skillfollow.scoring._idle import IdlePool, Shared
from hf_skillfollow.scoring._wire import (
    DIGEST_ABOVE,
    FLOATS,
    SAME_BYTES_PASS,
    digests,
    index,
    index_size,
    noting_pickler,
    section,
)

_HEADER = struct.Struct("<Q")
_PR_SET_PDEATHSIG = 1


# --- the host side ---------------------------------------------------------------------------


class _Worker:
    def __init__(self) -> None:
        from hf_skillfollow.scoring._sandbox import PYTHON_MODULE, _child_env

        self.proc = subprocess.Popen(
            [*PYTHON_MODULE, __name__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=_child_env(),
            cwd="/",
        )

    def call(self, job: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        _send(self.proc.stdin, job)
        reply = _receive(self.proc.stdout)
        if reply is None:
            raise RuntimeError(f"reference worker ended (exit status {self.proc.wait()})")
        return reply

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


class _Pool:
    """Up to ``os.cpu_count()`` workers, started on demand and reused."""

    def __init__(self) -> None:
        self.workers: IdlePool[_Worker] = IdlePool(_Worker)
        self.slots = threading.BoundedSemaphore(os.cpu_count() or 2)

    def run(self, job: dict[str, Any]) -> dict[str, Any]:
        with self.slots:
            worker = self.workers.take()
            try:
                reply = worker.call(job)
            except BaseException:
                self.workers.discard(worker)
                raise
            self.workers.put(worker)
            return reply

    def close(self) -> None:
        self.workers.close()


_pool: Shared[_Pool] = Shared(_Pool)


def compute(job: dict[str, Any]) -> dict[str, Any]:
    """Write ``job["path"]`` (the payload) and return the header; ``passed`` False on failure.

    ``job``: code, entry_point, inputs (the pickled ``{"base_input": [...], "plus_input":
    [...]}``, the payload's first section), output_not_none, same_bytes_pass_ok, cpu_s,
    memory_bytes, wall_s, path.
    """
    return _pool.get().run(job)


def _send(stream: IO[bytes], obj: Any) -> None:
    blob = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(blob)) + blob)
    stream.flush()


def _receive(stream: IO[bytes]) -> Any:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    body = stream.read(size)
    return pickle.loads(body) if len(body) == size else None


# --- the worker ------------------------------------------------------------------------------


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _serve() -> None:
    # warm the imports every task needs, once, before the first fork
    from hf_skillfollow.scoring import _child, _oracle, _wire  # noqa: F401

    gc.freeze()  # as in _zygote: what every task's fork inherits is not collected again
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while (job := _receive(stdin)) is not None:
        _send(stdout, _run_forked(job))


def _run_forked(job: dict[str, Any]) -> dict[str, Any]:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the task's own process
        os.close(read_fd)
        # the worker's stdin/stdout carry the protocol: what the solution prints goes nowhere
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        code = 0
        try:
            _die_with_parent()
            header = _compute(job)
            os.write(write_fd, json.dumps(header).encode())
        except BaseException as exc:
            from hf_skillfollow.scoring._child import describe

            reason = "timeout" if isinstance(exc, _Timeout) else describe(exc)
            os.write(write_fd, json.dumps({"passed": False, "reason": reason}).encode())
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    text = _await_result(read_fd, pid)
    _, status, _ = os.wait4(pid, 0)
    try:
        return dict(json.loads(text))
    except ValueError:
        if os.WIFSIGNALED(status):
            why = f"killed by signal {os.WTERMSIG(status)} (CPU, memory or wall-clock limit)"
        else:
            why = f"exit status {os.waitstatus_to_exitcode(status)}"
        return {"passed": False, "reason": f"the canonical solution's process ended: {why}"}


def _await_result(read_fd: int, pid: int) -> bytes:
    """The child's result; if the host goes away meanwhile (our stdin closes: the host
    sends nothing while a job runs), the child is killed and this worker exits."""
    poller = select.poll()
    poller.register(read_fd, select.POLLIN | select.POLLHUP)
    poller.register(0, select.POLLIN | select.POLLHUP)
    chunks = []
    while True:
        for fd, _ in poller.poll():
            if fd == 0:
                os.kill(pid, signal.SIGKILL)
                os._exit(0)
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                os.close(read_fd)
                return b"".join(chunks)
            chunks.append(chunk)


class _Timeout(BaseException):
    pass


def _on_limit(signum: int, frame: Any) -> None:
    raise _Timeout()


def _compute(job: dict[str, Any]) -> dict[str, Any]:
    from hf_skillfollow.scoring._child import load_entry_point

    cpu = int(job["cpu_s"]) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2))
    resource.setrlimit(resource.RLIMIT_AS, (job["memory_bytes"], job["memory_bytes"]))
    signal.signal(signal.SIGXCPU, _on_limit)
    signal.signal(signal.SIGALRM, _on_limit)
    signal.alarm(int(job["wall_s"]) + 1)
    header: dict[str, Any] = {"passed": True, "reason": "reference outputs computed"}
    inputs = pickle.loads(job["inputs"])  # our own bytes (the host's), not the solution's
    stages = [inputs[f"{stage}_input"] for stage in _STAGES]
    # read too: a large output's bytes are mapped back from the file for its flags
    fd = os.open(job["path"], os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb", buffering=_WRITE_BYTES) as file:
        file.write(section(job["inputs"]))  # as the host pickled them: never mutated
        at = file.tell()
        file.write(bytes(index_size(*map(len, stages))))  # the index, once it is known
        sink = _Sink(file, job["same_bytes_pass_ok"])
        for i, stage in enumerate(_STAGES):
            # EvalPlus's trusted_exec: fresh globals per stage, deep-copied inputs (copied by
            # pickle, twice as fast as copy.deepcopy for plain data, and the same copy), and
            # each output encoded as it is at the end of the stage
            fn = load_entry_point(job["code"], job["entry_point"])
            outputs, spent = [], 0.0
            for inp in stages[i]:
                start = time.process_time()
                outputs.append(fn(*pickle.loads(pickle.dumps(inp, pickle.HIGHEST_PROTOCOL))))
                spent += time.process_time() - start
            if job["output_not_none"]:
                outputs = [o is not None for o in outputs]
            sink.stage(i, outputs)
            header[f"{stage}_cpu_s"] = spent
            _KEPT.append(outputs)
        file.write(digests(sink.digests))
        file.seek(at)
        file.write(index(sink.lengths, (bytes(sink.flags[0]), bytes(sink.flags[1]))))
    signal.alarm(0)
    header["maxrss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return header


_STAGES = ("base", "plus")
#: the payload file's writes: the pickler's 64-KB frames gathered into few large writes
_WRITE_BYTES = 1 << 22
#: an output's bytes up to this size are also kept in memory while it is written (for its
#: flags); a larger one's are hashed as they are written (a program's output of that size is
#: sent by its digest first) and read back from the file, which holds them in the page cache
_KEEP_BYTES = DIGEST_ABOVE


class _Sink:
    """The payload file as the pickler's destination: each expected output's bytes go to the
    file as the pickler writes them, so that no output is ever held whole in memory as bytes
    beside its value (Mbpp/255's largest is 798 MB). The sha256 of each output longer than
    ``_KEEP_BYTES`` is computed on the way, into ``digests``."""

    def __init__(self, file: Any, same_bytes_pass_ok: bool) -> None:
        from hf_skillfollow.scoring._oracle import is_floats

        self.file, self.same_bytes_pass_ok, self.is_floats = file, same_bytes_pass_ok, is_floats
        self.pickler = noting_pickler(self)
        self.lengths: tuple[list[int], list[int]] = ([], [])
        self.flags = (bytearray(), bytearray())
        self.kept: list[bytes] | None = []
        self.size, self.high = 0, False
        self.hasher: Any = None
        self.digests: list[tuple[int, bytes]] = []  # (output number, sha256)

    def write(self, data: bytes) -> int:  # the pickler's writes
        self.file.write(data)
        self.size += len(data)
        if self.kept is not None:
            if self.size <= _KEEP_BYTES:
                self.kept.append(data)
                return len(data)
            self.high = any(map(_high_bytes, self.kept))
            self.hasher = hashlib.sha256()
            for part in self.kept:
                self.hasher.update(part)
            self.kept = None
        self.high = self.high or _high_bytes(data)
        self.hasher.update(data)
        return len(data)

    def stage(self, stage: int, outputs: list[Any]) -> None:
        """Write one stage's outputs (0: base, 1: plus) and note their lengths and flags."""
        for out in outputs:
            length = self._put(out)
            if self.hasher is not None:
                number = len(self.lengths[0]) + len(self.lengths[1])
                self.digests.append((number, self.hasher.digest()))
            self.lengths[stage].append(length)
            self.flags[stage].append(self._flags(out, length))

    def _put(self, out: Any) -> int:
        self.kept, self.size, self.high, self.pickler.named = [], 0, False, False
        self.hasher = None
        self.pickler.dump(out)
        return self.size

    def _flags(self, out: Any, length: int) -> int:
        named, floats = self.pickler.named, self.is_floats(out)
        if self.kept is not None:
            blob = self.kept[0] if len(self.kept) == 1 else b"".join(self.kept)
            return _flags(out, blob, named, self.same_bytes_pass_ok, floats)
        if not (named or self.high):  # its bytes need not be read again
            return _flags(out, b"", named, self.same_bytes_pass_ok, floats, high=False)
        self.file.flush()
        end = self.file.tell()
        with mmap.mmap(self.file.fileno(), end, access=mmap.ACCESS_READ) as written:
            return _flags(out, written, named, self.same_bytes_pass_ok, floats, end - length)


def _high_bytes(data: Any, start: int = 0) -> bool:
    """Whether ``data[start:]`` holds a byte a NaN's bits begin with (see ``_MAYBE_NAN``)."""
    return data.find(b"\x7f", start) >= 0 or data.find(b"\xff", start) >= 0


# Freed by the task process's exit, not one object at a time (Mbpp/255's outputs hold 128
# million references: half a second).
_KEPT: list[list[Any]] = []

# An output whose bytes name no class (``_wire.noting_pickler``) is ints, floats, strings,
# bytes, None, bools and containers of them, which equal a fresh copy unless a float is NaN:
# every float is BINFLOAT ("G" and 8 big-endian bytes), and a NaN's begin 7f/ff, then f1-ff,
# or f0 and six bytes not all zero (7ff0 0000 0000 0000 is infinity, which equals itself:
# HumanEval/130's outputs hold many). A match inside other data sends a number or flat list
# of numbers to a test of its values, anything else to the exact check below. The two bytes
# are searched for first, at C speed (Mbpp/255's ~1 GB of strings holds neither).
_MAYBE_NAN = re.compile(rb"G[\x7f\xff](?:[\xf1-\xff]|\xf0(?!\x00{6}))")


def _maybe_nan(data: Any, start: int) -> bool:
    """Whether ``data[start:]`` (bytes, or the payload file mapped) may hold a NaN."""
    return _high_bytes(data, start) and _MAYBE_NAN.search(data, start) is not None


def _numbers_without_nan(out: Any) -> bool:
    """Whether ``out`` is a number or a flat list or tuple of numbers, none of them NaN.
    Their sum, at C speed, is NaN if one is (or if infinities cancel: then the exact check
    decides). HumanEval/130's lists of a million floats match the pattern above inside other
    floats' bytes."""
    try:
        if type(out) is list or type(out) is tuple:
            return not math.isnan(sum(out))
        return type(out) is float and not math.isnan(out)
    except (TypeError, OverflowError):  # not all numbers, or an int beyond any float
        return False


def _flags(
    out: Any,
    data: Any,
    named: bool,
    same_bytes_pass_ok: bool,
    floats: bool,
    start: int = 0,
    high: bool = True,
) -> int:
    """``data[start:]``: ``out``'s bytes (``data`` is bytes, or the payload file mapped);
    ``named``: whether they name a class or function; ``high``: False when the caller found
    no 7f or ff byte in them (no NaN, and ``data`` is then read only if ``named``)."""
    flags = FLOATS if floats else 0
    if not same_bytes_pass_ok:
        return flags
    # Decoding to compare would cost seconds on large outputs (Mbpp/255's come to ~1 GB of
    # tuples; HumanEval/130's to 90 MB of floats and integers, in whose bytes the opcodes
    # that name a class occur as data).
    if not named and (not (high and _maybe_nan(data, start)) or _numbers_without_nan(out)):
        return flags | SAME_BYTES_PASS
    # A program output with these very bytes is a structurally identical value; EvalPlus
    # passes it if a fresh copy of the expected output compares equal (not so with NaN,
    # or numpy arrays, whose comparison has no truth value).
    try:
        with memoryview(data) as whole, whole[start:] as blob:
            equal = pickle.loads(blob) == out
        if type(equal) is bool and equal:
            flags |= SAME_BYTES_PASS
    except Exception:
        pass
    return flags


if __name__ == "__main__":
    _serve()

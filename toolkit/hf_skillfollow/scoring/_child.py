"""The untrusted side of the sandbox: the process that runs the program, and nothing else.

Forked by the judging harness (``_judge``) after confinement. Before the program's first line
runs it closes every descriptor but its pipe back to the judge, so the result file and the
task's data file are out of reach; it never holds the expected outputs (the judge reads them
only after the fork). It reports, in order, one message per stage load and one per input:
``("ok", output)``, ``("err", text)``, ``("notnone", flag)`` or ``("items", elements)``; an
output longer than ``_wire.DIGEST_ABOVE`` first as its length and sha256 only, then, if the
judge's answer (on the one pipe it reads) asks for them, as its bytes.
Nothing it sends is trusted: the judge compares every output itself.
"""

from __future__ import annotations

import os
import pickle
import re
import resource
import signal
import time
from typing import Any, NoReturn

from hf_skillfollow.scoring import _confine, _seccomp, _wire

_REASON_CHARS = 300


class CpuTimeout(BaseException):
    """RLIMIT_CPU's soft limit (SIGXCPU) was reached."""


def cpu_exhausted() -> bool:
    """Whether this process has really used up its RLIMIT_CPU soft limit."""
    soft, _ = resource.getrlimit(resource.RLIMIT_CPU)
    return soft != resource.RLIM_INFINITY and time.process_time() >= soft - 0.05


def on_sigxcpu(signum: int, frame: Any) -> None:
    # The kernel sends SIGXCPU at the soft limit; a SIGXCPU from another process (the
    # program signalling the judge) is ignored rather than taken for a timeout.
    if cpu_exhausted():
        raise CpuTimeout()


def describe(exc: BaseException) -> str:
    """A short text for an exception the program raised; never raises itself."""
    try:
        name = type(exc).__name__
        text = str(exc)
        return (f"{name}: {text}" if text else name)[:_REASON_CHARS]
    except BaseException:  # hostile __str__ or __name__: fall back to the plain type
        return f"exception of type {type.__repr__(type(exc))}"[:_REASON_CHARS]


def _isolate(pipe: int, answers: int, req: dict[str, Any]) -> None:
    low, high = sorted((pipe, answers))
    os.closerange(3, low)
    os.closerange(low + 1, high)
    os.closerange(high + 1, 1 << 20)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _confine.set_cpu_limit(req["limits"]["cpu_s"])
    # No process of its own (only threads): the CPU and address-space limits of this process
    # are then the program's whole budget, and its CPU usage the judge's to read (wait4).
    try:
        _seccomp.install("program")
    except _confine.ConfineError:
        if req["isolation"] != "none":  # without namespaces the filter is a best effort
            raise
    if os.geteuid() == 0:  # userns (or unconfined root): root here must not ptrace the judge
        _confine.drop_capabilities()
    _confine.set_dumpable(True)  # the judge is the one that must not be inspectable


def _send_error(pipe: int, exc: BaseException) -> None:
    if isinstance(exc, CpuTimeout):  # the judge checks this claim against our CPU usage
        _wire.send(pipe, _wire.TIMEOUT_CLAIM)
    else:
        _wire.send(pipe, _wire.ERR, describe(exc).encode("utf-8", "replace"))


def load_entry_point(code: str, entry_point: str) -> Any:
    """Execute a program in fresh globals and return its entry point."""
    namespace: dict[str, Any] = {}
    exec(compile(code, "<solution>", "exec"), namespace)
    if entry_point not in namespace:
        raise NameError(f"entry point {entry_point!r} is not defined")
    return namespace[entry_point]


def _encode(req: dict[str, Any], out: Any) -> tuple[bytes, bytes | tuple[int, bytes]]:
    """The tag and body of the message for one output, or for an ``OK`` output longer than
    ``_wire.DIGEST_ABOVE`` its length and sha256 (``_wire.commit``: its bytes are hashed as
    they are pickled, never held whole). For EvalPlus's not-None tasks (regular
    expressions) a match or None is sent as a flag (a match is not plain data); any other
    value as itself, for the judge to refuse unless it is a bool. Its set tasks accept any
    iterable, so one that is not plain data (a generator) is sent as its elements."""
    if req.get("output_not_none") and (out is None or isinstance(out, re.Match)):
        return _wire.NOT_NONE, b"\x01" if out is not None else b"\x00"
    try:
        return _wire.OK, _wire.commit(out)
    except BaseException as exc:
        if req.get("output_set_eq"):
            return _wire.ITEMS, _wire.dumps(list(out))
        raise TypeError(
            f"output of type {type.__repr__(type(out))} cannot be checked outside the "
            f"program (it is not plain data): {describe(exc)}"
        ) from None


def _stage(req: dict[str, Any], inputs: list[Any], pipe: int, answers: int) -> bool:
    """One EvalPlus stage with fresh globals; False after the first error."""
    try:
        fn = load_entry_point(req["code"], req["entry_point"])
    except BaseException as exc:
        _send_error(pipe, exc)
        return False
    _wire.send(pipe, _wire.LOADED)
    out = _wire.Outbox(pipe)
    for inp in inputs:
        try:
            value = fn(*inp)
            tag, body = _encode(req, value)
            if type(body) is tuple:  # committed to by its digest: sent only if asked for
                out.flush()
                _wire.write_all(pipe, _wire.digest_message(*body))
                if not _wire.await_answer(answers):
                    _wire.send_dump(pipe, _wire.OK, value, body[0])
                continue
        except BaseException as exc:
            out.flush()
            _send_error(pipe, exc)
            return False
        out.add(tag, body)
    out.flush()
    return True


def serve(req: dict[str, Any], inputs: bytes, pipe: int, answers: int) -> NoReturn:
    """Run the program on the task's base inputs, then (if all ran) on its plus inputs
    (``inputs``: the pickled ``{"base_input": [...], "plus_input": [...]}``); ``pipe``: its
    messages to the judge, ``answers``: the judge's answers to its ``DIGEST`` messages."""
    try:
        given = pickle.loads(inputs)  # the task's data, written by the reference: trusted
        _isolate(pipe, answers, req)
        for stage in ("base", "plus"):
            if not _stage(req, given[f"{stage}_input"], pipe, answers):
                break
    except BaseException:  # the judge sees the missing messages and fails the program
        pass
    # Skip interpreter shutdown: the program's atexit hooks and finalizers do not run.
    os._exit(0)

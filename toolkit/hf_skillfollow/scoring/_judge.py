"""The trusted side of the sandbox: fork the program's process, then judge what it sends.

Runs in the confined harness, which is not dumpable, so the program (same uid, no
capabilities) can neither ptrace it nor read its memory or descriptors. The expected outputs
are read from the data file only after the fork: the program's process never has them. Every
comparison (EvalPlus's, special oracles, ``atol``) happens here, on outputs unpickled as plain
data, and only this process writes the verdict.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import time
from typing import Any

from hf_skillfollow.scoring import _child, _wire


class _NotNone:
    """Stands for a non-bool output of EvalPlus's not-None tasks that was not None."""


def judge(req: dict[str, Any], inputs: dict[str, Any], data_fd: int | None) -> dict[str, Any]:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the program's process; never returns
        os.close(read_fd)
        _child.serve(req, inputs, write_fd)
    os.close(write_fd)
    max_bytes = max(64 << 20, req["limits"]["memory_bytes"] // 4)
    inbox = _wire.Inbox(read_fd, pid, max_bytes)
    try:
        if req["mode"] == "program":
            return _judge_program(req, inbox)
        assert data_fd is not None
        expected = pickle.loads(_wire.read_rest(data_fd))  # trusted: our own reference run
        os.close(data_fd)
        return _judge_candidate(req, inputs, expected, inbox)
    except _child.CpuTimeout:
        return _fail(None, None, "timeout: checking the outputs exceeded its CPU budget")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        inbox.reap(block=True)


def _fail(stage: str | None, index: int | None, reason: str) -> dict[str, Any]:
    return {"passed": False, "stage": stage, "index": index, "reason": reason}


def _judge_program(req: dict[str, Any], inbox: _wire.Inbox) -> dict[str, Any]:
    try:
        message = inbox.next()
    except _wire.WireError as exc:
        return _fail(None, None, str(exc))
    if message is None:
        return _fail(None, None, _ended(req, inbox))
    tag, value = message
    if tag == "ok":
        return {"passed": True, "reason": "program ran to completion"}
    return _fail(None, None, _text(value))


def _judge_candidate(
    req: dict[str, Any], inputs: dict[str, Any], expected: dict[str, Any], inbox: _wire.Inbox
) -> dict[str, Any]:
    for stage in ("base", "plus"):
        failure = _judge_stage(req, stage, inputs[f"{stage}_input"], expected[stage], inbox)
        if failure is not None:
            return failure
    counts = f"{len(inputs['base_input'])} base + {len(inputs['plus_input'])} plus inputs"
    return {"passed": True, "stage": None, "index": None, "reason": f"passed all {counts}"}


def _judge_stage(
    req: dict[str, Any], stage: str, inputs: list[Any], expected: list[Any], inbox: _wire.Inbox
) -> dict[str, Any] | None:
    """EvalPlus's per-input loop (``unsafe_execute``), with outputs from the program's process."""
    from hf_skillfollow.scoring import _oracle

    loaded = _receive(req, inbox)
    if loaded[0] != "ok":
        return _fail(stage, None, f"{stage}: program failed to load: {loaded[1]}")
    atol = req["atol"]
    for i, (inp, exp) in enumerate(zip(inputs, expected, strict=True)):
        tag, out = _receive(req, inbox)
        if tag != "ok":
            return _fail(stage, i, f"{stage} input #{i}: {out}")
        try:
            if isinstance(out, _Items):
                assert set(out.elements) == set(exp)
            else:
                atol = _oracle.matches(req["dataset"], req["entry_point"], inp, out, exp, atol)
        except _child.CpuTimeout:
            raise
        except BaseException as exc:
            bare = isinstance(exc, AssertionError) and not str(exc)
            return _fail(
                stage,
                i,
                f"{stage} input #{i}: " + ("wrong output" if bare else _child.describe(exc)),
            )
    return None


class _Items:
    """The elements of an unpicklable iterable output of a set-comparison task."""

    def __init__(self, elements: Any) -> None:
        self.elements = elements


def _receive(req: dict[str, Any], inbox: _wire.Inbox) -> tuple[str, Any]:
    """("ok", output) or ("fail", reason) for the next message; never trusts the sender."""
    try:
        message = inbox.next()
    except _wire.WireError as exc:
        return "fail", f"output not accepted: {exc}"
    if message is None:
        return "fail", _ended(req, inbox)
    tag, value = message
    if tag == "ok":
        return "ok", value
    if tag == "notnone" and req.get("output_not_none") and type(value) is bool:
        return "ok", _NotNone() if value else None
    if tag == "items" and req.get("output_set_eq") and type(value) is list:
        return "ok", _Items(value)
    if tag == "err":
        return "fail", _text(value)
    return "fail", f"output not accepted: unexpected message {tag[:40]!r}"


def _text(value: Any) -> str:
    return value[:300] if type(value) is str else "error"


def _ended(req: dict[str, Any], inbox: _wire.Inbox) -> str:
    """Why the program's messages stopped. Its pipe closes just before it can be reaped; a
    process that closed its pipe and lives on is killed rather than waited for."""
    for _ in range(50):
        if inbox.reap(block=False) is not None:
            break
        time.sleep(0.02)
    else:
        with contextlib.suppress(ProcessLookupError):
            os.kill(inbox.pid, signal.SIGKILL)
    exit_ = inbox.reap(block=True)
    if exit_ is None:
        return "the program's process vanished"
    status, usage = exit_
    cpu_s = req["limits"]["cpu_s"]
    if usage.ru_utime + usage.ru_stime >= cpu_s or (
        os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU
    ):
        return f"timeout: CPU time budget of {cpu_s:.1f} s exceeded"
    return f"the program ended its process (exit status {os.waitstatus_to_exitcode(status)})"

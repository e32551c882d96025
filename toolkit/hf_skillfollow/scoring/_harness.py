"""The sandboxed child: ``python -m hf_skillfollow.scoring._harness`` (started by ``_sandbox``).

Protocol: a JSON request on stdin; the task's pickled data (inputs, and for candidates the
expected outputs) on the inherited ``data_fd``; the result on the inherited ``out_fd`` as one
JSON line, followed for ``reference`` runs by the pickled payload that becomes the cache file.
The child holds the data of ONE task only. Untrusted code runs only after confinement
succeeded; any confinement failure is reported and nothing runs.
"""

from __future__ import annotations

import copy
import json
import os
import pickle
import resource
import signal
import sys
import time
from typing import Any

from hf_skillfollow.scoring import _confine, _oracle

_REASON_CHARS = 300


class CpuTimeout(BaseException):
    """RLIMIT_CPU's soft limit (SIGXCPU) was reached."""


def _on_sigxcpu(signum: int, frame: Any) -> None:
    raise CpuTimeout()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, CpuTimeout):
        return "timeout: CPU time budget exceeded"
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text[:_REASON_CHARS]


def _confine_self(req: dict[str, Any]) -> None:
    limits = _confine.Limits(**req["limits"])
    if req["isolation"] != "none":
        _confine.make_filesystem_private(req.get("uid"), req["hide"], req["expose"])
        if not _confine.network_is_down():
            raise _confine.ConfineError("network namespace not in effect")
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    signal.signal(signal.SIGXCPU, _on_sigxcpu)
    _confine.set_limits(limits)
    _confine.drop_privileges(req.get("uid"), limits.nproc)


def _load(code: str, entry_point: str) -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(code, "<solution>", "exec"), namespace)
    if entry_point not in namespace:
        raise NameError(f"entry point {entry_point!r} is not defined")
    return namespace[entry_point]


def _run_stage(
    req: dict[str, Any], stage: str, inputs: list[Any], expected: list[Any]
) -> dict[str, Any] | None:
    """One EvalPlus stage (fresh globals, as EvalPlus runs each stage in a fresh process)."""
    try:
        fn = _load(req["code"], req["entry_point"])
    except BaseException as exc:
        return {
            "passed": False,
            "stage": stage,
            "index": None,
            "reason": f"{stage}: program failed to load: {_describe(exc)}",
        }
    atol = req["atol"]
    for i, inp in enumerate(inputs):
        try:
            out = fn(*inp)
            atol = _oracle.matches(req["dataset"], req["entry_point"], inp, out, expected[i], atol)
        except BaseException as exc:
            what = (
                "wrong output"
                if isinstance(exc, AssertionError) and not str(exc)
                else _describe(exc)
            )
            return {
                "passed": False,
                "stage": stage,
                "index": i,
                "reason": f"{stage} input #{i}: {what}",
            }
    return None


def _candidate(req: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    for stage in ("base", "plus"):
        failure = _run_stage(req, stage, data[f"{stage}_input"], data[stage])
        if failure is not None:
            return failure
    counts = f"{len(data['base_input'])} base + {len(data['plus_input'])} plus inputs"
    return {"passed": True, "stage": None, "index": None, "reason": f"passed all {counts}"}


def _reference(req: dict[str, Any], data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """EvalPlus's ``trusted_exec``: deep-copied inputs, per-input time, not-None mapping."""
    payload = dict(data)
    header: dict[str, Any] = {"passed": True, "reason": "reference outputs computed"}
    for stage in ("base", "plus"):
        fn = _load(req["code"], req["entry_point"])
        outputs, times = [], []
        for inp in data[f"{stage}_input"]:
            start = time.process_time()
            outputs.append(fn(*copy.deepcopy(inp)))
            times.append(time.process_time() - start)
        if req.get("output_not_none"):
            outputs = [o is not None for o in outputs]
        payload[stage], payload[f"{stage}_time"] = outputs, times
        header[f"{stage}_cpu_s"] = sum(times)
    header["maxrss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return header, payload


def _program(req: dict[str, Any]) -> dict[str, Any]:
    exec(compile(req["code"], "<program>", "exec"), {"__name__": "__sandbox__"})
    return {"passed": True, "reason": "program ran to completion"}


def _dispatch(req: dict[str, Any], data: dict[str, Any], out: int) -> None:
    mode = req["mode"]
    if mode == "reference":
        header, payload = _reference(req, data)
        _write(
            out,
            json.dumps(header).encode()
            + b"\n"
            + pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL),
        )
        return
    try:
        result = _candidate(req, data) if mode == "candidate" else _program(req)
    except BaseException as exc:
        result = {"passed": False, "reason": _describe(exc)}
    _write(out, json.dumps(result).encode() + b"\n")


def _write(fd: int, blob: bytes) -> None:
    view = memoryview(blob)
    while view:
        view = view[os.write(fd, view) :]


def main() -> None:
    req = json.loads(sys.stdin.buffer.read())
    out = req["out_fd"]
    try:
        data: dict[str, Any] = {}
        if req.get("data_fd") is not None:
            with os.fdopen(req["data_fd"], "rb") as fh:
                data = pickle.load(fh)
        _confine_self(req)
    except BaseException as exc:
        _write(
            out,
            json.dumps(
                {"passed": False, "sandbox_error": True, "reason": f"sandbox: {_describe(exc)}"}
            ).encode()
            + b"\n",
        )
        os._exit(3)
    try:
        _dispatch(req, data, out)
    except BaseException as exc:
        _write(out, json.dumps({"passed": False, "reason": _describe(exc)}).encode() + b"\n")
    # Skip interpreter shutdown: atexit hooks and finalizers registered by the program do not run.
    os._exit(0)


if __name__ == "__main__":
    main()

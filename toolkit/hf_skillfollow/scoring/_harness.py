"""The sandboxed harness: ``python -m hf_skillfollow.scoring._harness`` (started by ``_sandbox``).

Protocol: a JSON request on stdin; on the inherited ``data_fd`` the task's data as a
length-prefixed section of pickled inputs, followed for candidates by the pickled expected
outputs; the result on the inherited ``out_fd`` as one JSON line, followed for ``reference``
runs by the payload that becomes the cache file (inputs section + expected outputs). The
inherited ``lifeline_fd`` ends the harness when the scorer is gone (``_confine.die_with_scorer``).

The harness confines itself (minimal root, limits, unprivileged uid, seccomp filter), then
for untrusted code (``candidate``, ``program``) forks the program's process (``_child``) and
judges what it sends (``_judge``); it reads the expected outputs only after that fork. ``reference`` runs (the dataset's canonical solutions) run in
the harness itself. Any confinement failure is reported and nothing runs.
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

from hf_skillfollow.scoring import _child, _confine, _judge, _rootfs, _seccomp, _wire

_INPUTS_LIMIT = 1 << 34


def _confine_self(req: dict[str, Any]) -> None:
    limits = _confine.Limits(**{**req["limits"], "cpu_s": _own_cpu_budget(req)})
    namespaces = req["isolation"] != "none"
    if namespaces:
        spec = _rootfs.RootSpec(**{k: tuple(map(_tuple, v)) for k, v in req["root"].items()})
        _rootfs.enter(spec, req.get("uid"), limits.scratch_bytes)
        if not _confine.network_is_down():
            raise _confine.ConfineError("network namespace not in effect")
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    signal.signal(signal.SIGXCPU, _child.on_sigxcpu)
    # The program's process may signal the harness (same uid): only its own verdict suffers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _confine.set_limits(limits)
    _confine.drop_privileges(req.get("uid"), limits.nproc)
    if namespaces:
        _seccomp.install()
    _confine.set_dumpable(False)


def _tuple(item: Any) -> Any:
    return tuple(item) if isinstance(item, list) else item


def _own_cpu_budget(req: dict[str, Any]) -> float:
    # A judging harness unpickles and compares what the program sends: room for that, while
    # the program's process gets exactly the task's budget (``_child``).
    cpu_s = float(req["limits"]["cpu_s"])
    return cpu_s if req["mode"] == "reference" else 2 * cpu_s + 5


def _reference(req: dict[str, Any], data: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """EvalPlus's ``trusted_exec``: deep-copied inputs, per-input time, not-None mapping."""
    expected: dict[str, Any] = {}
    header: dict[str, Any] = {"passed": True, "reason": "reference outputs computed"}
    for stage in ("base", "plus"):
        fn = _child.load_entry_point(req["code"], req["entry_point"])
        outputs, times = [], []
        for inp in data[f"{stage}_input"]:
            start = time.process_time()
            outputs.append(fn(*copy.deepcopy(inp)))
            times.append(time.process_time() - start)
        if req.get("output_not_none"):
            outputs = [o is not None for o in outputs]
        expected[stage], expected[f"{stage}_time"] = outputs, times
        header[f"{stage}_cpu_s"] = sum(times)
    header["maxrss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    inputs = {k: data[k] for k in ("base_input", "plus_input")}
    payload = _wire.section(_dumps(inputs)) + _dumps(expected)
    return header, payload


def _dumps(obj: Any) -> bytes:
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def _dispatch(req: dict[str, Any], inputs: dict[str, Any], out: int) -> None:
    if req["mode"] == "reference":
        header, payload = _reference(req, inputs)
        _wire.write_all(out, json.dumps(header).encode() + b"\n" + payload)
        return
    try:
        result = _judge.judge(req, inputs, req.get("data_fd"))
    except BaseException as exc:
        result = {"passed": False, "reason": f"harness: {_child.describe(exc)}"}
    _wire.write_all(out, json.dumps(result).encode() + b"\n")


def main() -> None:
    req = json.loads(sys.stdin.buffer.read())
    out = req["out_fd"]
    try:
        _confine.die_with_scorer(req["lifeline_fd"], req["isolation"] != "none")
        inputs: dict[str, Any] = {}
        if req.get("data_fd") is not None:
            inputs = pickle.loads(_wire.read_section(req["data_fd"], _INPUTS_LIMIT))
        _confine_self(req)
    except BaseException as exc:
        _wire.write_all(
            out,
            json.dumps(
                {
                    "passed": False,
                    "sandbox_error": True,
                    "reason": f"sandbox: {_child.describe(exc)}",
                }
            ).encode()
            + b"\n",
        )
        os._exit(3)
    try:
        _dispatch(req, inputs, out)
    except BaseException as exc:
        _wire.write_all(
            out, json.dumps({"passed": False, "reason": _child.describe(exc)}).encode() + b"\n"
        )
    os._exit(0)


if __name__ == "__main__":
    main()

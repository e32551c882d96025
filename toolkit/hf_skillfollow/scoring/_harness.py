"""The sandboxed harness: what a run becomes once ``_zygote`` has set up its namespaces.

Protocol: the request (JSON, read by the run from a descriptor the zygote passed on); on the
inherited ``data_fd`` the task's data as a length-prefixed section of pickled inputs,
followed by the pickled expected outputs; the result on the inherited ``out_fd`` as one JSON
line. The inherited ``lifeline_fd`` ends the harness when the scorer is gone
(``_confine.die_with_scorer``).

The harness confines itself (minimal root, limits, unprivileged uid, seccomp filter), then
forks the program's process (``_child``) and judges what it sends (``_judge``); it reads the
expected outputs only after that fork. Any confinement failure is reported and nothing runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from typing import Any, NoReturn

from hf_skillfollow.scoring import _child, _confine, _judge, _rootfs, _seccomp, _wire

_INPUTS_LIMIT = 1 << 34


def _confine_self(req: dict[str, Any]) -> None:
    limits = _confine.Limits(**{**req["limits"], "cpu_s": _own_cpu_budget(req)})
    namespaces = req["isolation"] != "none"
    if namespaces:
        _rootfs.enter(_rootfs.RootSpec.from_json(req["root"]), req.get("uid"), limits.scratch_bytes)
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
    _confine.first_for_the_oom_killer()
    _confine.drop_privileges(req.get("uid"), limits.nproc)
    if namespaces:
        _seccomp.install()
    _confine.set_dumpable(False)


def _own_cpu_budget(req: dict[str, Any]) -> float:
    # The judge decodes and compares what the program sends: room for that, while the
    # program's process gets exactly the task's budget (``_child``).
    return 2 * float(req["limits"]["cpu_s"]) + 5


def report_sandbox_error(out: int, exc: BaseException) -> None:
    """The run's result when the sandbox could not be set up: nothing ran."""
    reason = f"sandbox: {_child.describe(exc)}"
    result = {"passed": False, "sandbox_error": True, "reason": reason}
    with contextlib.suppress(OSError):
        _wire.write_all(out, json.dumps(result).encode() + b"\n")


def serve(req: dict[str, Any]) -> NoReturn:
    """Confine this process, judge the program, write the result; never returns."""
    out = req["out_fd"]
    try:
        _confine.die_with_scorer(req["lifeline_fd"], req["isolation"] != "none")
        inputs = b""
        if req.get("data_fd") is not None:
            # kept pickled: the program's process unpickles them after the fork (and the
            # judge only for EvalPlus's special oracles), so no fork copies them
            inputs = _wire.read_section(req["data_fd"], _INPUTS_LIMIT)
        _confine_self(req)
    except BaseException as exc:
        report_sandbox_error(out, exc)
        os._exit(3)
    try:
        result = _judge.judge(req, inputs, req.get("data_fd"))
    except BaseException as exc:
        result = {"passed": False, "reason": f"harness: {_child.describe(exc)}"}
    with contextlib.suppress(BaseException):
        _wire.write_all(out, json.dumps(result).encode() + b"\n")
    os._exit(0)

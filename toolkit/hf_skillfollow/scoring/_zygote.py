"""The zygote: a pre-imported interpreter that forks one sandbox per run.

``_sandbox`` starts one zygote per concurrent run (``python -m
hf_skillfollow.scoring._zygote FD``, the sandbox's environment, a new session). It imports
the harness once; each run is then a ``fork`` instead of a fresh interpreter, which saves the
~0.15 s of CPU that starting Python and importing the harness cost per program.

The zygote never reads a request, task data or a program. Each run arrives on its socket as
a one-word datagram carrying descriptors (``SCM_RIGHTS``): the request file, the result file,
the run's lifeline and, for candidates, the task's data. Only the forked run reads them, so
the memory every run is forked from holds imported modules and nothing of any earlier run.
Per run the zygote answers ``pid N`` (the run's process group, which the host kills on
timeout or cancellation) and then ``exit STATUS CPU_SECONDS`` (``wait4``: the run with every
process it waited for). It exits when the host's end of the socket closes.

The forked run does what ``unshare --mount --net --ipc --pid --mount-proc --fork
--kill-child [--user --map-root-user]`` did before: new namespaces, then a second fork whose
child is PID 1 of the new PID namespace, mounts its own ``/proc`` and becomes the harness
(``_harness.serve``); the first fork waits and passes its exit status on. In ``root`` mode
the zygote saves that first process (its fork, page faults and exit: 2 to 4 ms of CPU per
run): it forks each run into a new PID namespace itself (``unshare(CLONE_NEWPID)`` before the
fork, ``setns`` back to its own after), so the run is PID 1 at once and enters its other
namespaces alone. A new user namespace (``userns`` mode) cannot be entered that way without
moving the zygote into it, so that mode keeps the first process.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import os
import signal
import socket
import sys
from typing import NoReturn

from hf_skillfollow.scoring import _child, _harness, _oracle, _rootfs, _seccomp
from hf_skillfollow.scoring._confine import ConfineError, die_with_parent, libc
from hf_skillfollow.scoring._namespaces import CLONE_NEWNS as _CLONE_NEWNS
from hf_skillfollow.scoring._namespaces import CLONE_NEWPID as _CLONE_NEWPID
from hf_skillfollow.scoring._namespaces import become_init, enter_namespaces
from hf_skillfollow.scoring._namespaces import unshare as _unshare

#: deterministic standard modules that programs commonly import: loaded once, here
_PRELOAD = ("math", "cmath", "re", "collections", "itertools", "functools", "heapq", "bisect")
_PRELOAD += ("string", "typing", "fractions", "decimal", "operator", "copy")


def main(sock_fd: int, mode: str, root: str | None = None) -> None:
    """Serve runs on ``sock_fd``; with ``root`` (root mode: the minimal root's spec as JSON),
    in a mount namespace of its own whose ``/`` is that root, built here once."""
    for name in _PRELOAD:
        __import__(name)
    with contextlib.suppress(ImportError):  # without EvalPlus the judge says so per task
        _oracle.special_oracle()  # EvalPlus's special oracles, also loaded once
    with contextlib.suppress(ConfineError):  # an unsupported machine: each run says so
        _seccomp.compiled("harness")
        _seccomp.compiled("program")
    libc()
    # our own PID namespace, to return to after each run's fork (root mode)
    own_pid_ns = os.open("/proc/self/ns/pid", os.O_RDONLY) if mode == "root" else None
    if root is not None:
        _build_root(_rootfs.RootSpec.from_json(json.loads(root)))
    # What is imported lives as long as each run: its collections need not walk it again
    # (nor write to its pages, which the fork shares).
    gc.freeze()
    sock = socket.socket(fileno=sock_fd)
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 16, 4)
        except OSError:
            return
        if not msg or not fds:
            return  # the host closed its end (or speaks nonsense): nothing to serve
        pid, in_pid_ns = _fork(own_pid_ns)
        if pid == 0:
            sock.close()
            if own_pid_ns is not None:
                os.close(own_pid_ns)
            start(fds, in_pid_ns)
        for fd in fds:
            os.close(fd)
        try:
            sock.send(f"pid {pid}".encode())
            _, status, usage = os.wait4(pid, 0)
            sock.send(f"exit {status} {usage.ru_utime + usage.ru_stime!r}".encode())
        except OSError:  # the host is gone: so is the run
            _kill(pid)
            return


def _build_root(spec: _rootfs.RootSpec) -> None:
    """The static minimal root, once: each run's new mount namespace is then a copy of this
    one, and the run mounts only its own /tmp, /dev/shm and /proc (1 ms of CPU less per run
    than assembling the root each time). The zygote itself needs nothing of the host's tree
    from here on: it has imported what it runs, and holds its socket and namespace."""
    try:
        if not _unshare(_CLONE_NEWNS):
            raise ConfineError(f"unshare: {os.strerror(ctypes.get_errno())}")
        _rootfs.build(spec)
    except BaseException as exc:  # each run reports it and runs nothing
        _rootfs.build_failed = f"building the zygote's root: {_child.describe(exc)}"


def _fork(own_pid_ns: int | None) -> tuple[int, bool]:
    """``os.fork()``; with ``own_pid_ns``, into a new PID namespace if one can be made (the
    child is its PID 1). Also says which."""
    in_pid_ns = own_pid_ns is not None and _unshare(_CLONE_NEWPID)
    pid = -1
    try:
        pid = os.fork()
    finally:
        # the zygote's next child would join this namespace: back to our own (in the zygote
        # only; the child cannot return to an ancestor's)
        if in_pid_ns and pid != 0 and libc().setns(own_pid_ns, _CLONE_NEWPID) != 0:
            os._exit(4)  # no run may share another's PID namespace: stop serving
    return pid, in_pid_ns


def _kill(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def start(fds: list[int], in_pid_ns: bool = False) -> NoReturn:
    """The forked run: read the request, enter the namespaces, become the harness.
    ``in_pid_ns``: forked as PID 1 of a new PID namespace already (root mode)."""
    out = fds[1]
    try:
        os.setsid()
        die_with_parent()
        req_fd, out, lifeline, *data = fds
        with os.fdopen(req_fd, "rb") as fh:
            req = json.loads(fh.read())
        req.update(out_fd=out, lifeline_fd=lifeline, data_fd=data[0] if data else None)
        if req["isolation"] == "none":
            os.chdir(req["scratch"])
            _harness.serve(req)
        if in_pid_ns and req["isolation"] == "root":
            enter_namespaces(user=False, pid=False)
            become_init()
            _harness.serve(req)
        enter_namespaces(req["isolation"] == "userns")
        child = os.fork()
        if child == 0:
            become_init()
            _harness.serve(req)
        for fd in (out, lifeline, *data):  # this process only waits: it holds nothing
            os.close(fd)
        _pass_on(os.waitpid(child, 0)[1])
    except BaseException as exc:
        _harness.report_sandbox_error(out, exc)
        os._exit(3)


def _pass_on(status: int) -> NoReturn:
    """Exit as the harness did (as ``unshare --fork`` does): same code or same signal."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], *sys.argv[3:4])

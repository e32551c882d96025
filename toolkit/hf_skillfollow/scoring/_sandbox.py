"""Parent side of the sandbox: start one fresh, confined process per program.

Each run is ``unshare --mount --net --ipc --pid --mount-proc --fork --kill-child python -m
hf_skillfollow.scoring._harness`` started with ``subprocess`` (never forked from a parent
holding expected outputs), with a minimal environment. As root the child then drops to a
fresh unprivileged uid; otherwise ``--user --map-root-user`` is added. Where namespaces are
unavailable the run degrades to rlimits only and says so (``isolation: none``) in the result.
See docs/sandbox.md.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import IO, Any

import hf_skillfollow
from hf_skillfollow.scoring._confine import TMPFS_TARGETS

_NS_FLAGS = ["--mount", "--net", "--ipc", "--pid", "--mount-proc", "--fork", "--kill-child"]
_UID_BASE, _UID_SPAN = 200_000, 100_000
_uids = itertools.count()
_uid_lock = threading.Lock()
GIB = 1024**3


@dataclass(frozen=True)
class SandboxLimits:
    """Per-run limits. CPU time, not wall time, decides timeouts (load-independent)."""

    cpu_s: float = 4.0
    memory_bytes: int = 4 * GIB
    file_bytes: int = 16 * 1024 * 1024
    nproc: int = 8
    wall_s: float | None = None  # default: 3 x cpu_s + 20 s, a backstop for sleeping programs

    def wall(self) -> float:
        return self.wall_s if self.wall_s is not None else 3 * self.cpu_s + 20.0


@dataclass
class SandboxResult:
    result: dict[str, Any]
    returncode: int | None = None
    isolation: str = "none"
    details: dict[str, Any] = field(default_factory=dict)


@cache
def isolation_mode() -> str:
    """The strongest isolation this machine allows: ``root``, ``userns`` or ``none``."""
    unshare = shutil.which("unshare")
    if unshare is None or not sys.platform.startswith("linux"):
        return "none"
    if os.geteuid() == 0 and _probe([unshare, *_NS_FLAGS]):
        return "root"
    if _probe([unshare, "--user", "--map-root-user", *_NS_FLAGS]):
        return "userns"
    return "none"


def _probe(prefix: list[str]) -> bool:
    try:
        proc = subprocess.run(
            [*prefix, "mount", "-t", "tmpfs", "tmpfs", "/tmp"], capture_output=True, timeout=20
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


def _next_uid() -> int:
    # A fresh uid per run makes RLIMIT_NPROC a per-run cap and keeps concurrent runs apart.
    with _uid_lock:
        return _UID_BASE + (os.getpid() * 7919 + next(_uids)) % _UID_SPAN


def _child_env() -> dict[str, str]:
    package_parent = str(Path(hf_skillfollow.__file__).resolve().parents[1])
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": "/tmp/sandbox",
        # Expected outputs and candidates must see the same str/set iteration order.
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": package_parent,
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


@cache
def _visibility() -> dict[str, list[str]]:
    """Home directories to hide from programs, and the interpreter and toolkit paths to keep
    inside them or inside the directories that get a fresh tmpfs (a checkout or venv in /tmp)."""
    hide = sorted(
        {
            os.path.realpath(p)
            for p in ("/root", os.path.expanduser("~"))
            if os.path.isdir(p) and p != "/"
        }
    )
    paths = {
        os.path.realpath(p)
        for p in [*sys.path, _child_env()["PYTHONPATH"]]
        if p and os.path.isdir(p)
    }
    covered = [*hide, *TMPFS_TARGETS]
    inside = sorted(p for p in paths if any(p.startswith(c + "/") for c in covered))
    # keep only the top-most of nested paths
    expose = [p for p in inside if not any(p != q and p.startswith(q + "/") for q in inside)]
    return {"hide": hide, "expose": expose}


def _command(mode: str) -> list[str]:
    python = [sys.executable, "-s", "-P", "-m", "hf_skillfollow.scoring._harness"]
    unshare = shutil.which("unshare") or "unshare"
    if mode == "root":
        return [unshare, *_NS_FLAGS, *python]
    if mode == "userns":
        return [unshare, "--user", "--map-root-user", *_NS_FLAGS, *python]
    return python


def run(
    request: dict[str, Any],
    limits: SandboxLimits,
    data: IO[bytes] | None = None,
    payload_sink: Callable[[IO[bytes]], None] | None = None,
) -> SandboxResult:
    """Run ``request`` (see ``_harness``) in a fresh confined process and collect its result.

    ``payload_sink`` receives the stream positioned after the result line when the run
    passed (reference runs write their pickled outputs there); it is never unpickled here.
    """
    mode = isolation_mode()
    # The scratch dir for mode "none"; the namespace modes move to a private tmpfs instead.
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryDirectory(prefix="hf-skillfollow-") as scratch,
    ):
        fds = [out.fileno()] + ([data.fileno()] if data is not None else [])
        full = {
            **request,
            "isolation": mode,
            "uid": _next_uid() if mode == "root" else None,
            "limits": {
                k: getattr(limits, k) for k in ("cpu_s", "memory_bytes", "file_bytes", "nproc")
            },
            "out_fd": out.fileno(),
            **_visibility(),
            "data_fd": data.fileno() if data is not None else None,
        }
        returncode, wall_killed, cpu_used = _spawn(
            _command(mode), json.dumps(full).encode(), fds, limits.wall(), scratch
        )
        out.seek(0)
        result = _parse(out.readline(64 * 1024), returncode, wall_killed, cpu_used, limits)
        if payload_sink is not None and result["passed"]:
            payload_sink(out)
    details = {"isolation": mode, "uid": full["uid"], "cpu_s": round(cpu_used, 3)}
    return SandboxResult(result, returncode, mode, details)


def _spawn(
    cmd: list[str], stdin: bytes, fds: list[int], wall: float, cwd: str
) -> tuple[int, bool, float]:
    """Exit code, whether the wall-clock backstop fired, and CPU seconds used (wait4 rusage,
    which includes the namespace init that ``unshare`` waited for)."""
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=fds,
        env=_child_env(),
        cwd=cwd,
        start_new_session=True,
    )
    fired = threading.Event()
    timer = threading.Timer(wall, lambda: (fired.set(), _kill_group(proc)))
    timer.start()
    try:
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(stdin)
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    _kill_group(proc)  # stragglers of the no-namespace fallback (the group outlives its leader)
    _await_group_exit(proc.pid)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here; keep Popen consistent
    return proc.returncode, fired.is_set(), usage.ru_utime + usage.ru_stime


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    # Killing `unshare` also kills the namespace's init (--kill-child), which takes every
    # process of the namespace with it; the group kill covers the no-namespace fallback.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def _await_group_exit(pgid: int, timeout: float = 5.0) -> None:
    # After a wall-clock kill, `unshare` is reaped while the harness (PID 1 of the namespace,
    # same group) may still be tearing the namespace down: wait until nothing of it is left.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.01)


def _parse(
    header: bytes, returncode: int, wall_killed: bool, cpu_used: float, limits: SandboxLimits
) -> dict[str, Any]:
    if header:
        try:
            result = json.loads(header)
            if isinstance(result, dict) and isinstance(result.get("passed"), bool):
                return result
        except ValueError:
            pass
    if wall_killed:
        return {
            "passed": False,
            "reason": f"timeout: wall-clock backstop of {limits.wall():.0f} s exceeded",
        }
    if cpu_used >= limits.cpu_s:
        return {
            "passed": False,
            "reason": f"timeout: CPU time budget of {limits.cpu_s:.1f} s exceeded",
        }
    return {
        "passed": False,
        "reason": f"no verdict: the program ended the process (exit status {returncode})",
    }

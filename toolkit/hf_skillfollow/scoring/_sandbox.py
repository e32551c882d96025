"""Parent side of the sandbox: start one fresh, confined process per program.

Each run is ``unshare --mount --net --ipc --pid --mount-proc --fork --kill-child python -m
hf_skillfollow.scoring._harness`` started with ``subprocess`` (never forked from a parent
holding expected outputs), with a minimal environment. As root the child then drops to a
fresh unprivileged uid; otherwise ``--user --map-root-user`` is added. Where namespaces are
unavailable the run degrades to rlimits only and says so (``isolation: none``) in the result.

Lifetime: each harness holds the read end of a *lifeline* pipe whose write end only this
process holds, so it exits (taking its PID namespace along) when this process dies, however
it dies. Runs started inside a ``CancelScope`` are killed when the scope is cancelled (an
interrupted ``score`` or ``run``) and raise ``Cancelled`` instead of returning a verdict.
See docs/sandbox.md.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import IO, Any

import hf_skillfollow
from hf_skillfollow.scoring._rootfs import SCRATCH

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
        "HOME": SCRATCH,
        # Expected outputs and candidates must see the same str/set iteration order.
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": package_parent,
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


#: shared libraries that extension modules load; bound read-only (or re-created as links)
_SYSTEM_LIBS = ("/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/libx32", "/lib", "/lib64", "/lib32")
_SYSTEM_FILES = ("/etc/ld.so.cache",)
#: caches that may hold benchmark data or expected outputs, hidden wherever they are exposed
_CACHE_ENV = ("HF_HOME", "HF_DATASETS_CACHE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE")
_CACHE_ENV += ("XDG_CACHE_HOME", "XDG_DATA_HOME")


@cache
def _exposed() -> tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, str], ...]]:
    """Directories, files and links of the minimal root: where this interpreter imports from
    (at the paths it uses), the toolkit's ``scoring`` package, and the shared libraries."""
    prefixes = {os.path.abspath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    paths = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths |= {p for p in sys.path if p and any(_within(os.path.abspath(p), q) for q in prefixes)}
    paths.add(str(Path(__file__).resolve().parent))
    links = []
    for path in _SYSTEM_LIBS:
        if os.path.islink(path):
            links.append((path, os.readlink(path)))
        else:
            paths.add(path)
    dirs = sorted({os.path.abspath(p) for p in paths if os.path.isdir(p)})
    # only the top-most of nested directories: a bind already shows what lies below it
    top = tuple(d for d in dirs if not any(d != e and _within(d, e) for e in dirs))
    files = tuple(
        f for f in _SYSTEM_FILES if os.path.isfile(f) and not any(_within(f, d) for d in top)
    )
    return top, files, tuple(links)


def _within(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _hidden(exposed: tuple[str, ...]) -> tuple[str, ...]:
    """Known homes of expected outputs and benchmark data that lie inside an exposed
    directory, at their path inside the sandbox (read afresh: tests and users move them)."""
    from hf_skillfollow.scoring._code import cache_dir

    cache = cache_dir()
    known = [str(cache), str(cache.parent)]
    known += [
        v
        for k, v in os.environ.items()
        if v and k.startswith("SKILLFOLLOW_") and k.endswith(("_DIR", "_FILE"))
    ]
    known += [os.environ[k] for k in _CACHE_ENV if os.environ.get(k)]
    hidden = set()
    for path in known:
        real = os.path.realpath(path)
        for directory in exposed:
            base = os.path.realpath(directory)
            if _within(real, base):
                hidden.add(directory + real[len(base) :])
    return tuple(sorted(hidden))


def root_spec() -> dict[str, Any]:
    """The minimal root of a run (``_rootfs.RootSpec`` as JSON)."""
    dirs, files, links = _exposed()
    return {"expose": dirs, "files": files, "links": links, "hide": _hidden(dirs)}


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
            "root": root_spec() if mode != "none" else None,
            "data_fd": data.fileno() if data is not None else None,
        }
        returncode, wall_killed, cpu_used = _spawn(
            _command(mode), full, fds, limits.wall(), scratch
        )
        out.seek(0)
        result = _parse(out.readline(64 * 1024), returncode, wall_killed, cpu_used, limits)
        if payload_sink is not None and result["passed"]:
            payload_sink(out)
    details = {"isolation": mode, "uid": full["uid"], "cpu_s": round(cpu_used, 3)}
    return SandboxResult(result, returncode, mode, details)


def _spawn(
    cmd: list[str], request: dict[str, Any], fds: list[int], wall: float, cwd: str
) -> tuple[int, bool, float]:
    """Exit code, whether the wall-clock backstop fired, and CPU seconds used (wait4 rusage,
    which includes the namespace init that ``unshare`` waited for)."""
    scope = _scope.get()
    if scope is not None and scope.cancelled:
        raise Cancelled("the scorer is stopping")
    # The lifeline's write end is not inheritable and never passed on: only this process
    # holds it, so it closes exactly when this process ends or the run is over.
    lifeline, keep_alive = os.pipe()
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=[*fds, lifeline],
            env=_child_env(),
            cwd=cwd,
            start_new_session=True,
        )
    except BaseException:
        os.close(keep_alive)
        raise
    finally:
        os.close(lifeline)
    try:
        with _registered(proc, scope):
            returncode, fired, cpu = _wait(
                proc, json.dumps({**request, "lifeline_fd": lifeline}).encode(), wall
            )
    finally:
        os.close(keep_alive)
    if scope is not None and scope.cancelled:
        raise Cancelled("the scorer is stopping")
    return returncode, fired, cpu


def _wait(proc: subprocess.Popen[bytes], stdin: bytes, wall: float) -> tuple[int, bool, float]:
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


class Cancelled(Exception):
    """The run's scope was cancelled: its sandbox was killed and it has no verdict."""


class CancelScope:
    """Runs started while the scope is active (in any thread that entered it) are killed
    together by ``cancel()``; later runs in it do not start."""

    def __init__(self) -> None:
        self.cancelled = False

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        token = _scope.set(self)
        try:
            yield
        finally:
            _scope.reset(token)

    def cancel(self) -> None:
        with _live_lock:
            self.cancelled = True
            procs = [proc for proc, scope in _live.items() if scope is self]
        for proc in procs:
            _kill_group(proc)


_scope: contextvars.ContextVar[CancelScope | None] = contextvars.ContextVar(
    "sandbox_scope", default=None
)
_live: dict[subprocess.Popen[bytes], CancelScope | None] = {}
_live_lock = threading.Lock()


@contextlib.contextmanager
def _registered(proc: subprocess.Popen[bytes], scope: CancelScope | None) -> Iterator[None]:
    # Registered under the lock that cancel() takes: a run is either seen by the cancel's
    # sweep or sees the cancellation itself.
    with _live_lock:
        _live[proc] = scope
        cancelled = scope is not None and scope.cancelled
    if cancelled:
        _kill_group(proc)
    try:
        yield
    finally:
        with _live_lock:
            del _live[proc]


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

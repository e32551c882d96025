"""Parent side of the sandbox: one fresh, confined process tree per program.

Runs are forked by *zygotes* (``_zygote``): pre-imported interpreters started with
``subprocess`` and a minimal environment, one per concurrent run, that never hold a request,
task data or expected outputs. Each run enters new mount, network, IPC and PID namespaces
(plus a user namespace when not root; as root the harness drops to a fresh unprivileged
uid) and becomes the harness (``_harness``). Where namespaces are unavailable the run
degrades to rlimits only and says so (``isolation: none``) in the result.

Lifetime: each harness holds the read end of a *lifeline* pipe whose write end only this
process holds, so it exits (taking its PID namespace along) when this process dies, however
it dies; a zygote exits when its socket to this process closes. Runs started inside a
``CancelScope`` are killed when the scope is cancelled (an interrupted ``score`` or ``run``)
and raise ``Cancelled`` instead of returning a verdict. See docs/sandbox.md.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import IO, Any

import hf_skillfollow
from hf_skillfollow._dirs import cache_root
from hf_skillfollow.scoring._idle import IdlePool
from hf_skillfollow.scoring._rootfs import SCRATCH, RootSpec, prebuildable

#: a sandbox-side interpreter, without the user site nor the working directory on its path
PYTHON_MODULE = [sys.executable, "-s", "-P", "-m"]
_ZYGOTE = [*PYTHON_MODULE, "hf_skillfollow.scoring._zygote"]
_RUN = b"run"  # a zygote's only request; the run's descriptors travel with it
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


def isolation_mode() -> str:
    """The strongest isolation this machine allows: ``root``, ``userns`` or ``none``."""
    # One probe per process: ``score_many``'s threads all start their first run at once.
    with _mode_lock:
        return _isolation_mode()


_mode_lock = threading.Lock()


@cache
def _isolation_mode() -> str:
    if not sys.platform.startswith("linux"):
        return "none"
    if os.geteuid() == 0 and _probe("root"):
        return "root"
    if _probe("userns"):
        return "userns"
    return "none"


def _probe(mode: str) -> bool:
    """Whether a run's namespaces (and a tmpfs mount in them) can be set up in ``mode``: in a
    fork of this process while it is small, and otherwise, or when the fork fails or says no,
    in a fresh interpreter, as before the fork (a fork's failure must not weaken the runs)."""
    from hf_skillfollow.scoring import _namespaces

    if _namespaces.fork_is_cheap():
        with contextlib.suppress(OSError):  # no fork now (memory, a process limit)
            if _namespaces.probe_in_fork(mode):
                return True
    cmd = [*PYTHON_MODULE, "hf_skillfollow.scoring._namespaces", mode]
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=60, env=_child_env(), cwd="/")
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
    directory, at their path inside the sandbox (the variables are read afresh: tests and
    users move them; their real paths are resolved once per set of names, so a symlink among
    them retargeted during the run is not followed again)."""
    known = [str(cache_root())]
    known += [
        v
        for k, v in os.environ.items()
        if v and k.startswith("SKILLFOLLOW_") and k.endswith(("_DIR", "_FILE"))
    ]
    known += [os.environ[k] for k in _CACHE_ENV if os.environ.get(k)]
    return _inside(exposed, tuple(known))


@lru_cache(maxsize=16)
def _inside(exposed: tuple[str, ...], known: tuple[str, ...]) -> tuple[str, ...]:
    # cached by the paths as named: their real paths (a dozen lstat calls) once, not per run
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


def run(
    request: dict[str, Any], limits: SandboxLimits, data: IO[bytes] | None = None
) -> SandboxResult:
    """Run ``request`` (see ``_harness``) in a fresh confined process tree; its result."""
    mode = isolation_mode()
    uid = _next_uid() if mode == "root" else None
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(_unnamed_file())
        full = {
            **request,
            "isolation": mode,
            "uid": uid,
            "limits": {
                k: getattr(limits, k) for k in ("cpu_s", "memory_bytes", "file_bytes", "nproc")
            },
            "root": root_spec() if mode != "none" else None,
        }
        if mode == "none":  # the namespace modes work in a private tmpfs instead
            full["scratch"] = stack.enter_context(
                tempfile.TemporaryDirectory(prefix="hf-skillfollow-")
            )
        returncode, wall_killed, cpu_used = _spawn(full, out, data, limits.wall())
        out.seek(0)
        result = _parse(out.readline(64 * 1024), returncode, wall_killed, cpu_used, limits)
    details = {"isolation": mode, "uid": uid, "cpu_s": round(cpu_used, 3)}
    return SandboxResult(result, returncode, mode, details)


def _spawn(
    request: dict[str, Any], out: IO[bytes], data: IO[bytes] | None, wall: float
) -> tuple[int | None, bool, float]:
    """Exit code (None: the zygote ended before the run did), whether the wall-clock backstop
    fired, and CPU seconds used by the run's whole process tree."""
    scope = _scope.get()
    if scope is not None and scope.cancelled:
        raise Cancelled("the scorer is stopping")
    zygote = _serving(request)
    ended: tuple[int, float] | None = None
    fired = False
    try:
        # The lifeline's write end is not inheritable and never passed on: only this process
        # holds it, so it closes exactly when this process ends or the run is over.
        lifeline, keep_alive = os.pipe()
        try:
            with _unnamed_file() as req:
                req.write(json.dumps(request).encode())
                req.seek(0)
                fds = [req.fileno(), out.fileno(), lifeline]
                pgid = zygote.start([*fds, *([data.fileno()] if data is not None else [])])
            os.close(lifeline)
            lifeline = -1
            if pgid is not None:
                with _registered(pgid, scope):
                    ended, fired = _wait(zygote, pgid, wall)
        finally:
            if lifeline >= 0:
                os.close(lifeline)
            os.close(keep_alive)
    finally:
        if ended is None:  # the zygote died, hung or was interrupted: never reuse it
            _zygotes.discard(zygote)
        else:
            _zygotes.put(zygote)
    if scope is not None and scope.cancelled:
        raise Cancelled("the scorer is stopping")
    status, cpu = ended if ended is not None else (None, 0.0)
    return status, fired, cpu


def _unnamed_file() -> IO[bytes]:
    """A file without a name for a run's request or result: a memfd where there is one (9
    against 30 µs of CPU for a temporary file on this machine's ext4 /tmp), else a temporary
    file."""
    if hasattr(os, "memfd_create"):
        return os.fdopen(os.memfd_create("sandbox", os.MFD_CLOEXEC), "w+b")
    return tempfile.TemporaryFile()


def _serving(request: dict[str, Any]) -> _Zygote:
    """A zygote that can fork ``request``'s run. Idle ones started for another root (the
    environment's hidden paths changed since) are replaced; a request whose root is no longer
    the one the environment gives fails at once instead of starting zygotes without end."""
    zygote = _zygotes.take()
    while not zygote.serves(request):
        _zygotes.discard(zygote)
        if zygote.mode == request["isolation"] and zygote.root == root_spec():
            raise RuntimeError(
                "the sandbox's root changed while the run was prepared (a SKILLFOLLOW_* folder "
                "or cache variable changed during the run); run it again"
            )
        zygote = _zygotes.take()
    return zygote


def _wait(zygote: _Zygote, pgid: int, wall: float) -> tuple[tuple[int, float] | None, bool]:
    # The wall-clock backstop is the socket's timeout, not a timer thread (0.17 ms of the
    # scorer's CPU per run to start and join).
    fired = False
    try:
        ended = zygote.ended(wall)
    except TimeoutError:
        fired = True
        _kill_group(pgid)
        try:
            ended = zygote.ended(60)
        except TimeoutError:
            ended = None
    if ended is None:
        _kill_group(pgid)
    _await_group_exit(pgid)
    return ended, fired


class _Zygote:
    """One zygote process and the host's end of its socket (see ``_zygote``)."""

    def __init__(self) -> None:
        self.mode = mode = isolation_mode()
        #: the root it built once for all its runs (root mode), or None: each run builds its own
        self.root: dict[str, Any] | None = None
        if mode == "root":
            spec = root_spec()
            if prebuildable(RootSpec.from_json(spec)):
                self.root = spec
        root = [json.dumps(self.root)] if self.root is not None else []
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [*_ZYGOTE, str(theirs.fileno()), mode, *root],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=[theirs.fileno()],
                env=_child_env(),
                cwd="/",
                start_new_session=True,  # a Ctrl-C to the terminal reaches only the scorer
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.sock = ours

    def serves(self, request: dict[str, Any]) -> bool:
        """Whether it can fork ``request``'s run: started for the run's isolation mode, and
        with the run's root where it built one (the hidden paths follow the environment)."""
        return self.mode == request["isolation"] and self.root in (None, request["root"])

    def start(self, fds: list[int]) -> int | None:
        """Fork a run holding ``fds``: its process group (None: the zygote is gone)."""
        self.sock.settimeout(60)
        try:
            socket.send_fds(self.sock, [_RUN], fds)
            reply = self.sock.recv(64)
        except OSError:
            return None
        return int(reply.split()[1]) if reply.startswith(b"pid ") else None

    def ended(self, timeout: float) -> tuple[int, float] | None:
        """The run's exit code and CPU seconds; None when the zygote is gone. Raises
        ``TimeoutError`` when no answer came within ``timeout`` seconds."""
        self.sock.settimeout(timeout)
        try:
            reply = self.sock.recv(64)
        except TimeoutError:
            raise
        except OSError:
            return None
        if not reply.startswith(b"exit "):
            return None
        _, status, cpu = reply.split()
        return os.waitstatus_to_exitcode(int(status)), float(cpu)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        self.sock.close()  # the zygote exits when its socket closes; make sure of it
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.proc.wait()


_zygotes: IdlePool[_Zygote] = IdlePool(_Zygote)
atexit.register(_zygotes.close)


def prestart(count: int) -> None:
    """Probe the isolation level and start ``count`` zygotes in a background thread, while
    the caller does other work (the ``score`` command loads its tasks meanwhile: on two cores
    the probe and the zygotes' imports take the idle one instead of coming after it). Runs
    take these zygotes; nothing else changes, and a failure here is met again, and reported,
    by the first run."""

    def start() -> None:
        with contextlib.suppress(Exception):
            isolation_mode()
            _zygotes.fill(count)

    threading.Thread(target=start, name="sandbox-prestart", daemon=True).start()


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
            groups = [pgid for pgid, scope in _live.items() if scope is self]
        for pgid in groups:
            _kill_group(pgid)


_scope: contextvars.ContextVar[CancelScope | None] = contextvars.ContextVar(
    "sandbox_scope", default=None
)
_live: dict[int, CancelScope | None] = {}  # process group of each run -> its scope
_live_lock = threading.Lock()


@contextlib.contextmanager
def _registered(pgid: int, scope: CancelScope | None) -> Iterator[None]:
    # Registered under the lock that cancel() takes: a run is either seen by the cancel's
    # sweep or sees the cancellation itself.
    with _live_lock:
        _live[pgid] = scope
        cancelled = scope is not None and scope.cancelled
    if cancelled:
        _kill_group(pgid)
    try:
        yield
    finally:
        with _live_lock:
            del _live[pgid]


def _kill_group(pgid: int) -> None:
    # The group holds the run's first process and the harness, PID 1 of the namespace, whose
    # death takes every process of the namespace with it; without namespaces, the program's
    # processes too.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _await_group_exit(pgid: int, timeout: float = 5.0) -> None:
    # The zygote has reaped the run's first process, but the namespace may still be tearing
    # down: wait until nothing of the group is left.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.01)


def _parse(
    header: bytes, returncode: int | None, wall_killed: bool, cpu_used: float, limits: SandboxLimits
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
    if returncode is None:
        return {"passed": False, "reason": "no verdict: the sandbox's zygote process ended"}
    return {
        "passed": False,
        "reason": f"no verdict: the program ended the process (exit status {returncode})",
    }

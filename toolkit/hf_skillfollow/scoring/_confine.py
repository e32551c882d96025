"""Child side of the sandbox: limits, privileges and lifetime of the confined harness.

Runs inside the namespaces that ``_sandbox`` starts the harness in (``unshare --mount --net
--ipc --pid --fork --kill-child``, plus ``--user --map-root-user`` when not root). The
filesystem is ``_rootfs``'s, the system-call filter ``_seccomp``'s. See docs/sandbox.md for
the threat model.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import resource
import select
import signal
import socket
from dataclasses import dataclass
from functools import cache

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH, AT_FDCWD = 2, -100
#: pivot_root(2), which has no libc wrapper, by architecture
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
_MS_NOATIME, _MS_NODIRATIME, _MS_RELATIME = 1024, 2048, 1 << 21
_PR_SET_PDEATHSIG, _PR_SET_NO_NEW_PRIVS = 1, 38
_PR_SET_DUMPABLE, _PR_CAPBSET_DROP, _PR_SET_SECUREBITS = 4, 24, 28
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
# SECBIT_NOROOT, NO_SETUID_FIXUP, KEEP_CAPS_LOCKED, NO_CAP_AMBIENT_RAISE, each with its lock
_SECUREBITS_NO_ROOT_POWERS = 0xEF
_CAPABILITY_VERSION_3 = 0x20080522
#: statvfs f_flag bits -> mount flags that must be kept on remount (locked in user namespaces)
KEEP_FLAGS = {
    2: MS_NOSUID,
    4: MS_NODEV,
    8: MS_NOEXEC,
    1024: _MS_NOATIME,
    2048: _MS_NODIRATIME,
    4096: _MS_RELATIME,
}


class ConfineError(RuntimeError):
    """The requested isolation could not be established; untrusted code must not run."""


@dataclass(frozen=True)
class Limits:
    cpu_s: float
    memory_bytes: int
    file_bytes: int
    nproc: int
    nofile: int = 256
    scratch_bytes: int = 64 * 1024 * 1024


#: the C functions the sandbox calls, looked up once (the zygote calls ``libc()`` before it
#: forks: a function first looked up in a run is a new ctypes object in every run)
_LIBC_FUNCTIONS = ("mount", "umount2", "unshare", "setns", "prctl", "syscall", "capset")


@cache
def libc() -> ctypes.CDLL:
    # The C library is already loaded into the interpreter: no library search (find_library
    # would run ldconfig, which the minimal root does not have).
    lib = ctypes.CDLL(None, use_errno=True)
    for name in _LIBC_FUNCTIONS:
        getattr(lib, name)
    return lib


def mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    args = [x.encode() if x is not None else None for x in (source, target, fstype)]
    rc = libc().mount(
        args[0], args[1], args[2], ctypes.c_ulong(flags), data.encode() if data else None
    )
    if rc != 0:
        err = ctypes.get_errno()
        raise ConfineError(f"mount {target}: {os.strerror(err)}")


def die_with_scorer(lifeline: int, pid_namespace: bool) -> None:
    """Exit as soon as the scorer that started this harness is gone, however it ended.

    ``lifeline`` is the read end of a pipe whose only write end the scorer holds; when that
    closes, the kernel signals this process (``O_ASYNC``). The handler exits: as the PID
    namespace's init that takes every process of the namespace along; without a namespace the
    harness kills its own process group first. (A namespace's init ignores signals it has no
    handler for, so the default action of SIGIO would not do.)"""

    def scorer_gone(signum: int, frame: object) -> None:
        if not pid_namespace:
            os.killpg(0, signal.SIGKILL)
        os._exit(4)

    signal.signal(signal.SIGIO, scorer_gone)
    fcntl.fcntl(lifeline, fcntl.F_SETOWN, os.getpid())
    fcntl.fcntl(lifeline, fcntl.F_SETFL, fcntl.fcntl(lifeline, fcntl.F_GETFL) | os.O_ASYNC)
    poller = select.poll()
    poller.register(lifeline, select.POLLIN)
    if poller.poll(0):  # nothing is ever written: an event means the scorer died already
        scorer_gone(signal.SIGIO, None)


def set_limits(limits: Limits) -> None:
    """CPU seconds counted from now, address space, file size, open files, no core dumps."""
    set_cpu_limit(limits.cpu_s)
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits.nofile, limits.nofile))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def first_for_the_oom_killer() -> None:
    """Should the host run out of memory, the kernel's OOM killer ends this sandbox (and the
    program's process, which inherits the setting) before the scorer or anything else.
    Raising one's own score needs no privilege; where ``/proc`` lacks it, nothing changes."""
    with contextlib.suppress(OSError):
        write_file("/proc/self/oom_score_adj", "1000")


def write_file(path: str, text: str) -> None:
    """Write ``text`` to a ``/proc`` file with plain system calls: ``open(..., encoding=
    "ascii")`` would import that codec afresh in every forked run (1.5 ms of CPU each)."""
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode("ascii"))
    finally:
        os.close(fd)


def read_file(path: str) -> str:
    """A small ``/proc`` file's text (see ``write_file``)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 4096).decode("ascii")
    finally:
        os.close(fd)


def set_cpu_limit(cpu_s: float) -> None:
    """``cpu_s`` more CPU seconds from now: soft limit -> SIGXCPU, 2 s later SIGKILL."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu = int(used.ru_utime + used.ru_stime + cpu_s) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2))


def pivot_root(new_root: str, put_old: str) -> None:
    """``pivot_root(2)``: ``new_root`` becomes ``/``, the old root is moved to ``put_old``."""
    number = _PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise ConfineError(f"pivot_root: unsupported architecture {os.uname().machine!r}")
    if libc().syscall(number, new_root.encode(), put_old.encode()) != 0:
        raise ConfineError(f"pivot_root: {os.strerror(ctypes.get_errno())}")


def set_dumpable(dumpable: bool) -> None:
    """Not dumpable: processes of the same uid cannot ptrace this one or open its
    ``/proc/<pid>/mem`` or ``fd/``. Call after the last uid change, which resets it."""
    if libc().prctl(_PR_SET_DUMPABLE, int(dumpable), 0, 0, 0) != 0:
        raise ConfineError("prctl(PR_SET_DUMPABLE) failed")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint32) for n in ("effective", "permitted", "inheritable")]


def drop_capabilities() -> None:
    """Give up every capability for good, so that uid 0 (inside a user namespace) confers no
    power over processes of the same uid, and exec cannot bring the capabilities back."""
    c = libc()
    last_cap = int(read_file("/proc/sys/kernel/cap_last_cap"))
    if c.prctl(_PR_SET_SECUREBITS, _SECUREBITS_NO_ROOT_POWERS, 0, 0, 0) != 0:
        raise ConfineError("prctl(PR_SET_SECUREBITS) failed")
    for cap in range(last_cap + 1):
        if c.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise ConfineError(f"prctl(PR_CAPBSET_DROP, {cap}) failed")
    c.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header, data = _CapHeader(_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    if c.capset(ctypes.byref(header), ctypes.byref(data)) != 0:
        raise ConfineError("capset failed")


def die_with_parent() -> None:
    """SIGKILL this process when its parent dies."""
    if libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise ConfineError("prctl(PR_SET_PDEATHSIG) failed")


def drop_privileges(uid: int | None, nproc: int) -> None:
    """Become ``uid`` (root mode) for good, cap its process count, forbid setuid gains."""
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        if os.getuid() != uid or os.geteuid() != uid:
            raise ConfineError("could not drop privileges")
        # The parent-death signal (``_zygote.become_init``) is cleared by the uid change.
        die_with_parent()
    # RLIMIT_NPROC counts the processes of the real uid: a fresh uid per candidate makes it
    # a per-candidate cap. Root (CAP_SYS_RESOURCE) would ignore it, hence the drop first.
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    if libc().prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise ConfineError("prctl(PR_SET_NO_NEW_PRIVS) failed")


def network_is_down() -> bool:
    """True when the only interface is loopback (a fresh network namespace has just ``lo``)."""
    return [name for _, name in socket.if_nameindex()] == ["lo"]

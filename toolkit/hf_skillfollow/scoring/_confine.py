"""Child side of the sandbox: confine the current process before untrusted code runs.

Runs inside the namespaces that ``_sandbox`` starts the child in (``unshare --mount --net
--ipc --pid --fork --kill-child``, plus ``--user --map-root-user`` when not root), so every
mount change here is private to the child. See docs/sandbox.md for the threat model.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import resource
import socket
from collections.abc import Iterator
from dataclasses import dataclass

_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_NOATIME, _MS_NODIRATIME = 32, 4096, 1024, 2048
_MS_RELATIME, _MS_REC = 1 << 21, 16384
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_DUMPABLE, _PR_CAPBSET_DROP, _PR_SET_SECUREBITS = 4, 24, 28
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
# SECBIT_NOROOT, NO_SETUID_FIXUP, KEEP_CAPS_LOCKED, NO_CAP_AMBIENT_RAISE, each with its lock
_SECUREBITS_NO_ROOT_POWERS = 0xEF
_CAPABILITY_VERSION_3 = 0x20080522
# statvfs f_flag bits -> mount flags that must be kept on remount (locked in user namespaces)
_KEEP_FLAGS = {
    2: _MS_NOSUID,
    4: _MS_NODEV,
    8: _MS_NOEXEC,
    1024: _MS_NOATIME,
    2048: _MS_NODIRATIME,
    4096: _MS_RELATIME,
}

SCRATCH = "/tmp/sandbox"
#: world-writable places that get a fresh private tmpfs in the child's mount namespace
TMPFS_TARGETS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
_SKIP_RO = ("/proc", "/sys", "/dev")


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


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    libc = _libc()
    args = [x.encode() if x is not None else None for x in (source, target, fstype)]
    rc = libc.mount(
        args[0], args[1], args[2], ctypes.c_ulong(flags), data.encode() if data else None
    )
    if rc != 0:
        err = ctypes.get_errno()
        raise ConfineError(f"mount {target}: {os.strerror(err)}")


def _mount_points() -> Iterator[str]:
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        for line in fh:
            raw = line.split()[4]
            yield re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), raw)


def make_filesystem_private(uid: int | None, hide: list[str], expose: list[str]) -> str:
    """Private tmpfs over the world-writable dirs, ``hide`` emptied; in both, the ``expose``
    subtrees (the interpreter's and the toolkit's own paths) stay visible. Every other mount
    goes read-only, and the scratch dir becomes the cwd."""
    for target in TMPFS_TARGETS:
        if os.path.isdir(target):
            _cover(target, _inside(target, expose), "size=64m,mode=1777")
    for directory in hide:
        _cover(directory, _inside(directory, expose), "size=1m,mode=0755")
    _remount_all_read_only()
    os.makedirs(SCRATCH, mode=0o700)
    if uid is not None:
        os.chown(SCRATCH, uid, uid)
    os.chdir(SCRATCH)
    return SCRATCH


def _inside(directory: str, paths: list[str]) -> list[str]:
    return [p for p in paths if p.startswith(directory.rstrip("/") + "/")]


def _cover(directory: str, keep: list[str], options: str) -> None:
    # Hold each kept subtree by an O_PATH descriptor, cover the directory with an empty tmpfs,
    # then bind the held subtrees back through /proc/self/fd: e.g. /root hidden while
    # /root/.pyenv/... stays importable, or /tmp fresh while a checkout in /tmp/x stays.
    held = [(path, os.open(path, os.O_PATH | os.O_DIRECTORY)) for path in keep]
    try:
        _mount("tmpfs", directory, "tmpfs", _MS_NOSUID | _MS_NODEV, options)
        for path, fd in held:
            os.makedirs(path, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}", path, None, _MS_BIND | _MS_REC, None)
    finally:
        for _, fd in held:
            os.close(fd)


def _remount_all_read_only() -> None:
    for target in sorted(set(_mount_points()), key=len, reverse=True):
        if target.startswith(_SKIP_RO) or target in TMPFS_TARGETS:
            continue
        flags = os.statvfs(target).f_flag
        keep = sum(ms for st, ms in _KEEP_FLAGS.items() if flags & st)
        try:
            _mount("none", target, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | keep, None)
        except ConfineError:
            if target == "/":
                raise


def set_limits(limits: Limits) -> None:
    """CPU seconds counted from now, address space, file size, open files, no core dumps."""
    set_cpu_limit(limits.cpu_s)
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits.nofile, limits.nofile))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def set_cpu_limit(cpu_s: float) -> None:
    """``cpu_s`` more CPU seconds from now: soft limit -> SIGXCPU, 2 s later SIGKILL."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu = int(used.ru_utime + used.ru_stime + cpu_s) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2))


def set_dumpable(dumpable: bool) -> None:
    """Not dumpable: processes of the same uid cannot ptrace this one or open its
    ``/proc/<pid>/mem`` or ``fd/``. Call after the last uid change, which resets it."""
    if _libc().prctl(_PR_SET_DUMPABLE, int(dumpable), 0, 0, 0) != 0:
        raise ConfineError("prctl(PR_SET_DUMPABLE) failed")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint32) for n in ("effective", "permitted", "inheritable")]


def drop_capabilities() -> None:
    """Give up every capability for good, so that uid 0 (inside a user namespace) confers no
    power over processes of the same uid, and exec cannot bring the capabilities back."""
    libc = _libc()
    with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as fh:
        last_cap = int(fh.read())
    if libc.prctl(_PR_SET_SECUREBITS, _SECUREBITS_NO_ROOT_POWERS, 0, 0, 0) != 0:
        raise ConfineError("prctl(PR_SET_SECUREBITS) failed")
    for cap in range(last_cap + 1):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise ConfineError(f"prctl(PR_CAPBSET_DROP, {cap}) failed")
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header, data = _CapHeader(_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    if libc.capset(ctypes.byref(header), ctypes.byref(data)) != 0:
        raise ConfineError("capset failed")


def drop_privileges(uid: int | None, nproc: int) -> None:
    """Become ``uid`` (root mode) for good, cap its process count, forbid setuid gains."""
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        if os.getuid() != uid or os.geteuid() != uid:
            raise ConfineError("could not drop privileges")
    # RLIMIT_NPROC counts the processes of the real uid: a fresh uid per candidate makes it
    # a per-candidate cap. Root (CAP_SYS_RESOURCE) would ignore it, hence the drop first.
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    if _libc().prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise ConfineError("prctl(PR_SET_NO_NEW_PRIVS) failed")


def network_is_down() -> bool:
    """True when the only interface is loopback (a fresh network namespace has just ``lo``)."""
    return [name for _, name in socket.if_nameindex()] == ["lo"]

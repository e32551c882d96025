"""A run's namespaces, and the probe that says whether they can be made here.

Shared by the zygote (which makes them for every run), the scorer (which probes once per
process, before it starts any zygote) and the agent harness's sandbox init
(``harness._nsinit``, its flags). Nothing here imports more than ``_confine``. While the
scorer is small (as ``score`` is when it probes, at its start) the probe runs in a fork of it,
so that no interpreter starts for it (a fresh one costs 0.05 s of CPU on the path to the first
run), and the child calls only what is already loaded; a large scorer's fork costs more than
an interpreter, so there, and wherever the fork fails or says no, the scorer asks a fresh
interpreter instead (``python -m hf_skillfollow.scoring._namespaces MODE``: exit status 0 for
yes).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
import warnings

from hf_skillfollow.scoring._confine import (
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_PRIVATE,
    MS_REC,
    ConfineError,
    die_with_parent,
    libc,
    mount,
    write_file,
)

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER = 0x00020000, 0x08000000, 0x10000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
#: how long the forked probe may take before it counts as a failure (it takes milliseconds;
#: the interpreter asked after it has its own minute)
PROBE_TIMEOUT_S = 10.0
#: above this resident size a fork costs the scorer more than a fresh interpreter: the fork
#: copies its page tables and each page it writes afterwards faults once (1 GiB: about 0.35 s)
FORK_BELOW_BYTES = 128 * 1024 * 1024

# Python 3.12+ warns of a fork with threads (a lock another thread held stays held in the
# child); the probe's child takes none. Said once, for this module's forks only: a
# catch_warnings() around the fork would swap the process-wide filter list for a copy and
# back while other threads use it, dropping or reinstating their own changes.
warnings.filterwarnings(
    "ignore",
    r"This process \(pid=\d+\) is multi-threaded, use of fork\(\)",
    DeprecationWarning,
    r"hf_skillfollow\.scoring\._namespaces\Z",
)


def unshare(flags: int) -> bool:
    return libc().unshare(flags) == 0


def enter_namespaces(user: bool, pid: bool = True) -> None:
    """New mount, network, IPC and (with ``pid``, for the next child) PID namespaces; with
    ``user``, a new user namespace in which the caller is root (``unshare --map-root-user``)."""
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | (CLONE_NEWPID if pid else 0)
    if not unshare(flags | (CLONE_NEWUSER if user else 0)):
        raise OSError(ctypes.get_errno(), f"unshare: {os.strerror(ctypes.get_errno())}")
    if user:
        maps = (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1"))
        for name, text in maps:
            write_file(f"/proc/self/{name}", text)


def become_init() -> None:
    """PID 1 of the new PID namespace: dies with its parent (the zygote in root mode, the
    run's first process in userns mode), sees only its own processes in a fresh ``/proc``,
    and keeps mounts from propagating to the host."""
    die_with_parent()
    mount("none", "/", None, MS_REC | MS_PRIVATE, None)
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    try:
        # Only processes the reader could ptrace are listed: the harness, which is not
        # dumpable, is then invisible to the program (its status, statm, stat and schedstat
        # would tell how large the expected outputs are). Linux 5.8 and later.
        mount("proc", "/proc", "proc", flags, "hidepid=ptraceable")
    except ConfineError:
        mount("proc", "/proc", "proc", flags, None)


def probe(mode: str) -> int:
    """Exit status 0 when runs in ``mode`` (``root`` or ``userns``) can be set up here:
    the namespaces a run enters, its PID 1, and a tmpfs mounted there."""
    try:
        enter_namespaces(mode == "userns")
        child = os.fork()
        if child == 0:
            try:
                become_init()
                mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m")
            except BaseException:
                os._exit(1)
            os._exit(0)
        return os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
    except OSError:
        return 1


def fork_is_cheap() -> bool:
    """Whether this process is small enough that a fork of it probes faster than a fresh
    interpreter."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            resident = int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return False
    return resident < FORK_BELOW_BYTES


def probe_in_fork(mode: str, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """Whether runs in ``mode`` can be set up here, probed in a fork of this process (which
    may have threads: the child is single-threaded and calls only loaded C functions, and
    what it changes, namespaces and mounts, is its own)."""
    libc()  # looked up here, not in the child
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the forked probe; its exit status is the answer
        code = 1
        try:
            code = probe(mode)
        finally:
            os._exit(code)
    deadline = time.monotonic() + timeout
    pause = 0.0005
    alive = True
    try:
        while True:
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: its pid may be another's now
                alive = False
                raise
            if done:
                alive = False
                return os.waitstatus_to_exitcode(status) == 0
            if time.monotonic() > deadline:
                return False
            time.sleep(pause)
            pause = min(2 * pause, 0.05)
    finally:
        if alive:  # it hung, or the wait was interrupted (Ctrl-C): not left running
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


if __name__ == "__main__":
    sys.exit(probe(sys.argv[1]))

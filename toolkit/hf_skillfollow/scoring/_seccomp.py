"""A seccomp filter for the sandbox: no new namespaces, no mounts, less kernel surface.

Installed by the harness after it has confined itself (``PR_SET_NO_NEW_PRIVS`` is set), so
the judge and the program's process both run under it and cannot remove it. Without it a
program could ``unshare(CLONE_NEWUSER)`` and hold every capability inside a user namespace
of its own (mount, netlink, ...). The filter is a small classic-BPF program built here:

- foreign system-call ABIs (i386 ``int 0x80``, x32 on x86_64) kill the process;
- ``unshare`` and ``clone`` with any namespace flag, and ``setns``, fail with ``EPERM``;
- ``clone3`` fails with ``ENOSYS`` (its flags are behind a pointer a filter cannot read; libc
  then falls back to ``clone``, which the filter can check);
- the mount family, ``bpf``, ``userfaultfd``, ``perf_event_open``, the key-management calls
  and io_uring fail with ``EPERM``: a Python program scored on its outputs never needs them.
"""

from __future__ import annotations

import ctypes
import os
import struct
from functools import cache
from typing import Literal

from hf_skillfollow.scoring._confine import ConfineError, libc

_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_RET_ALLOW, _RET_KILL_PROCESS, _RET_ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
_EPERM, _ENOSYS = 1, 38
# BPF opcodes: ld word abs, jeq/jge/jset immediate, ret immediate
_LD_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_OFF_NR, _OFF_ARCH, _OFF_ARG0 = 0, 4, 16  # struct seccomp_data; arg0's low word (little-endian)

# CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET; unshare also takes NEWTIME (0x80,
# which in clone's flags is part of the exit signal).
_NS_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
_CLONE_NEWTIME = 0x80

_GENERIC_NEW = {  # numbers shared by every architecture since Linux 5.1
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "clone3": 435,
    "mount_setattr": 442,
}
_ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (
        0xC000003E,
        {
            "clone": 56,
            "unshare": 272,
            "setns": 308,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "add_key": 248,
            "request_key": 249,
            "keyctl": 250,
            "perf_event_open": 298,
            "bpf": 321,
            "userfaultfd": 323,
            "fork": 57,
            "vfork": 58,
            "shmget": 29,
            "memfd_create": 319,
            **_GENERIC_NEW,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "clone": 220,
            "unshare": 97,
            "setns": 268,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "add_key": 217,
            "request_key": 218,
            "keyctl": 219,
            "perf_event_open": 241,
            "bpf": 280,
            "userfaultfd": 282,
            "shmget": 194,
            "memfd_create": 279,
            **_GENERIC_NEW,
        },
    ),
}
_X32_BIT = 0x40000000
_DENIED = (
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "add_key",
    "request_key",
    "keyctl",
    "perf_event_open",
    "bpf",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
)


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> list[bytes]:
    """The filter's BPF instructions for this machine (``ConfineError`` if unsupported)."""
    machine = machine or os.uname().machine
    if machine not in _ARCHES:
        raise ConfineError(f"no seccomp filter for architecture {machine!r}")
    arch, nr = _ARCHES[machine]
    deny, enosys = _RET_ERRNO | _EPERM, _RET_ERRNO | _ENOSYS
    # Tail, addressed by distance from the end: [check clone flags] [check unshare flags]
    tail = [
        _op(_LD_ABS, _OFF_ARG0),  # clone: flags
        _op(_JSET, _NS_FLAGS, 0, 1),
        _op(_RET, deny),
        _op(_RET, _RET_ALLOW),
        _op(_LD_ABS, _OFF_ARG0),  # unshare: flags
        _op(_JSET, _NS_FLAGS | _CLONE_NEWTIME, 0, 1),
        _op(_RET, deny),
        _op(_RET, _RET_ALLOW),
    ]
    dispatch = [(nr[name], "deny") for name in _DENIED] + [
        (nr["clone3"], "enosys"),
        (nr["clone"], "clone"),
        (nr["unshare"], "unshare"),
    ]
    # dispatch: for each entry a jeq that skips to its action, then "ret allow", then actions
    actions = {"deny": deny, "enosys": enosys}
    body: list[bytes] = []
    n = len(dispatch)
    # layout after the dispatch jumps: [ret allow][ret deny][ret enosys][tail...]
    offsets = {"allow": 0, "deny": 1, "enosys": 2, "clone": 3, "unshare": 7}
    for i, (number, action) in enumerate(dispatch):
        remaining = n - i - 1  # jumps after this one, before the "ret allow"
        body.append(_op(_JEQ, number, remaining + offsets[action], 0))
    head = [
        _op(_LD_ABS, _OFF_ARCH),
        _op(_JEQ, arch, 1, 0),
        _op(_RET, _RET_KILL_PROCESS),
        _op(_LD_ABS, _OFF_NR),
    ]
    if machine == "x86_64":
        head += [_op(_JGE, _X32_BIT, 0, 1), _op(_RET, _RET_KILL_PROCESS)]
    return [
        *head,
        *body,
        _op(_RET, _RET_ALLOW),
        _op(_RET, actions["deny"]),
        _op(_RET, actions["enosys"]),
        *tail,
    ]


_CLONE_THREAD = 0x00010000
#: for the program's process only: no new process (fork and vfork, and clone without
#: CLONE_THREAD: glibc's fork, posix_spawn and vfork all are such clones), and no memory
#: outside the address space (System V shared memory, memfd), which RLIMIT_AS would not count
_PROGRAM_DENIED = ("fork", "vfork", "shmget", "memfd_create")


def program_filter(machine: str | None = None) -> list[bytes]:
    """The second filter, installed by the program's process over the first: it cannot
    create processes (threads share its CPU and address-space limits, so those limits are
    the whole run's), nor hold memory that its address-space limit does not count."""
    machine = machine or os.uname().machine
    if machine not in _ARCHES:
        raise ConfineError(f"no seccomp filter for architecture {machine!r}")
    arch, nr = _ARCHES[machine]
    deny = _RET_ERRNO | _EPERM
    names = [name for name in _PROGRAM_DENIED if name in nr]  # aarch64 has no fork/vfork
    # after the jumps: [ret allow][ret deny][ld flags][jset CLONE_THREAD][ret allow][ret deny]
    body = [_op(_JEQ, nr[name], len(names) - i + 1, 0) for i, name in enumerate(names)]
    body.append(_op(_JEQ, nr["clone"], 2, 0))
    head = [
        _op(_LD_ABS, _OFF_ARCH),
        _op(_JEQ, arch, 1, 0),
        _op(_RET, _RET_KILL_PROCESS),
        _op(_LD_ABS, _OFF_NR),
    ]
    return [
        *head,
        *body,
        _op(_RET, _RET_ALLOW),
        _op(_RET, deny),
        _op(_LD_ABS, _OFF_ARG0),  # clone: flags
        _op(_JSET, _CLONE_THREAD, 0, 1),
        _op(_RET, _RET_ALLOW),
        _op(_RET, deny),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


@cache
def compiled(which: Literal["harness", "program"] = "harness") -> tuple[int, bytes]:
    """The instruction count and bytes of ``program()`` (``which="harness"``) or
    ``program_filter()`` (``"program"``) for this machine; built once, in the zygote."""
    instructions = program() if which == "harness" else program_filter()
    return len(instructions), b"".join(instructions)


def install(which: Literal["harness", "program"] = "harness") -> None:
    """Install ``compiled(which)`` on this process and every process it forks."""
    count, blob = compiled(which)
    prog = _SockFprog(count, blob)
    if libc().prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise ConfineError(f"seccomp filter: {ctypes.get_errno()}")

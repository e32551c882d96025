"""The sandbox's seccomp program, run in a small classic-BPF interpreter written here.

The live test (tests/test_sandbox_isolation.py) shows on this machine that a program cannot
create a user namespace; this one checks the filter's decisions call by call on both
architectures it supports, including aarch64, which no test machine here runs. System-call
numbers and flags are the kernel's (``asm/unistd_64.h``, ``asm-generic/unistd.h``,
``linux/sched.h``), written out here independently of the module.
"""

from __future__ import annotations

import struct

import pytest

from hf_skillfollow.scoring._seccomp import program

ALLOW, KILL = 0x7FFF0000, 0x80000000
EPERM, ENOSYS = 0x00050000 | 1, 0x00050000 | 38
ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
NR = {
    "x86_64": {"read": 0, "clone": 56, "unshare": 272, "setns": 308, "mount": 165, "bpf": 321},
    "aarch64": {"read": 63, "clone": 220, "unshare": 97, "setns": 268, "mount": 40, "bpf": 280},
}
CLONE3 = 435
SIGCHLD, CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET, CLONE_NEWTIME = (
    17,
    0x10000000,
    0x20000,
    0x40000000,
    0x80,
)
# what glibc's fork() passes to clone
FORK_FLAGS = 0x01000000 | 0x00200000 | SIGCHLD  # CHILD_SETTID | CHILD_CLEARTID | SIGCHLD


def run_bpf(instructions: list[bytes], nr: int, arch: int, arg0: int = 0) -> int:
    """Classic BPF as seccomp runs it, for the opcodes the filter uses."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    pc, acc = 0, 0
    while True:
        code, jt, jf, k = struct.unpack("=HBBI", instructions[pc])
        pc += 1
        if code == 0x20:  # ld [k]
            acc = struct.unpack_from("<I", data, k)[0]
        elif code == 0x06:  # ret k
            return k
        elif code in (0x15, 0x35, 0x45):  # jeq, jge, jset
            hit = {0x15: acc == k, 0x35: acc >= k, 0x45: bool(acc & k)}[code]
            pc += jt if hit else jf
        else:
            raise AssertionError(f"unexpected opcode {code:#x}")


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_filter_decisions(machine: str) -> None:
    prog = program(machine)
    nr, arch = NR[machine], ARCH[machine]

    def decide(name: str | int, arg0: int = 0, on: int = arch) -> int:
        return run_bpf(prog, nr[name] if isinstance(name, str) else name, on, arg0)

    assert decide("read") == ALLOW
    assert decide("clone", FORK_FLAGS) == ALLOW  # fork() and threads still work
    assert decide("clone", CLONE_NEWUSER | SIGCHLD) == EPERM
    assert decide("clone", CLONE_NEWNET | SIGCHLD) == EPERM
    assert decide("clone", CLONE_NEWTIME | SIGCHLD) == ALLOW  # 0x80 is the exit signal there
    assert decide("unshare", CLONE_NEWUSER) == EPERM
    assert decide("unshare", CLONE_NEWNS) == EPERM
    assert decide("unshare", CLONE_NEWTIME) == EPERM
    assert decide("unshare", 0x400) == ALLOW  # CLONE_FILES: no namespace
    assert decide(CLONE3) == ENOSYS  # libc falls back to clone, which is checked
    assert decide("setns") == EPERM
    assert decide("mount") == EPERM
    assert decide("bpf") == EPERM
    other = ARCH["aarch64" if machine == "x86_64" else "x86_64"]
    assert decide("read", on=other) == KILL  # a foreign system-call ABI
    assert decide("read", on=0x40000003) == KILL  # i386 (int 0x80 on x86_64)
    if machine == "x86_64":
        assert decide(0x40000000 | 272, CLONE_NEWUSER) == KILL  # the x32 ABI


def test_unknown_architectures_refuse_to_confine() -> None:
    from hf_skillfollow.scoring._confine import ConfineError

    with pytest.raises(ConfineError, match="riscv64"):
        program("riscv64")


# the program's own filter (``program_filter``), stacked on the one above
PROGRAM_NR = {
    "x86_64": {"fork": 57, "vfork": 58, "shmget": 29, "memfd_create": 319, "shmat": 30},
    "aarch64": {"shmget": 194, "memfd_create": 279, "shmat": 196},
}
CLONE_VM, CLONE_FS, CLONE_FILES, CLONE_SIGHAND, CLONE_VFORK = 0x100, 0x200, 0x400, 0x800, 0x4000
CLONE_THREAD, CLONE_SYSVSEM, CLONE_SETTLS = 0x10000, 0x40000, 0x80000
# what glibc's pthread_create passes to clone
THREAD_FLAGS = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM
THREAD_FLAGS |= CLONE_SETTLS | 0x00100000 | 0x00200000  # PARENT_SETTID | CHILD_CLEARTID
# what glibc's posix_spawn passes to clone
SPAWN_FLAGS = CLONE_VM | CLONE_VFORK | SIGCHLD


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_program_filter_decisions(machine: str) -> None:
    from hf_skillfollow.scoring._seccomp import program_filter

    prog = program_filter(machine)
    nr, arch = {**NR[machine], **PROGRAM_NR[machine]}, ARCH[machine]

    def decide(name: str, arg0: int = 0, on: int = arch) -> int:
        return run_bpf(prog, nr[name], on, arg0)

    assert decide("read") == ALLOW
    assert decide("clone", THREAD_FLAGS) == ALLOW  # threads share the process's limits
    assert decide("clone", FORK_FLAGS) == EPERM  # fork()
    assert decide("clone", SPAWN_FLAGS) == EPERM  # posix_spawn, subprocess
    assert decide("clone", CLONE_VM | SIGCHLD) == EPERM
    assert decide("shmget") == EPERM
    assert decide("shmat") == ALLOW  # nothing to attach without shmget in a fresh namespace
    assert decide("memfd_create") == EPERM
    assert decide("mount") == ALLOW  # the first filter's business, not this one's
    if machine == "x86_64":
        assert decide("fork") == EPERM
        assert decide("vfork") == EPERM
    other = ARCH["aarch64" if machine == "x86_64" else "x86_64"]
    assert decide("read", on=other) == KILL

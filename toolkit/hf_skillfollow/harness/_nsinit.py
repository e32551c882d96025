"""The init of one sandbox environment: namespaces, a minimal root, then reap until killed.

Run by `_env.SandboxEnvironment.start` as ``python -P -m hf_skillfollow.harness._nsinit SPEC``
in Harbor's interpreter, which has the package (Harbor loads `_env` from it;
`.ci/setup-harbor` installs it with ``--no-deps``) but not the toolkit's dependencies: this
module and the scorer's confinement helpers it shares (`scoring._confine`,
`scoring._namespaces`: the libc calls, mount and namespace flags) use the standard library
only. The handshake on stdout/stdin:

1. it enters a new user namespace and prints ``userns``; the host (root, outside) writes
   ``/proc/<pid>/{uid,gid}_map`` mapping inside 0 to an unprivileged host id range, then
   sends one line;
2. it becomes uid 0 of that namespace, unshares mount, network, IPC, UTS and PID
   namespaces and forks the namespace's PID 1, which builds the root and prints
   ``ready <host pid of PID 1>`` (or ``error <reason>``).

The root is a fresh tmpfs: the host's ``/usr`` and ``/etc`` read-only (the host's tools, no
secrets readable: host root's files are unmapped, so ``other`` permissions apply), writable
``/app``, ``/root``, ``/tmp``, ``/logs``, ``/tests``, ``/runtime``, a private ``/proc`` and
devpts, and nothing else of the host: ``/work``, ``/home``, the host's ``/root`` and ``/tmp``
do not exist inside. The network namespace has only loopback. Every command later enters
these namespaces with ``nsenter`` and runs without capabilities (see `_env`).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from hf_skillfollow.scoring._confine import (
    AT_FDCWD,
    MNT_DETACH,
    MS_BIND,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_PRIVATE,
    MS_RDONLY,
    MS_REC,
    MS_REMOUNT,
    ConfineError,
    die_with_parent,
    libc,
    mount,
    pivot_root,
    set_dumpable,
)
from hf_skillfollow.scoring._namespaces import (
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWUSER,
)

_CLONE_NEWUTS = 0x4000000
_MOVE_MOUNT, _F_EMPTY_PATH = 429, 4
_STAGE = "/tmp"
#: the host's trees shown read-only inside (the top-level links of a merged /usr are copied)
_SYSTEM = ("usr", "etc", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
_WRITABLE = ("app", "root", "tmp", "logs/agent", "logs/verifier", "logs/artifacts", "tests",
             "runtime", "home", "run", "var/tmp", "opt", "srv", "mnt")  # fmt: skip
_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
#: how `_env` starts this module, in Harbor's interpreter as root: ``-P`` keeps the current
#: folder (where Harbor was started: a cloned skills repository, a task folder) off the path
HELPER = [sys.executable, "-P", "-m", "hf_skillfollow.harness._nsinit"]
#: of the host's memory, the most one trial's `memory_mb` (its cgroup) or `storage_mb` (its
#: tmpfs root, which is memory too) may be: a task file must not take the host's memory
SIZE_CEILING_FRACTION = 0.5


def size_ceiling_mb(meminfo: str = "/proc/meminfo") -> int:
    """The largest `memory_mb` or `storage_mb` a trial may ask for on this host."""
    with open(meminfo) as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(int(line.split()[1]) / 1024 * SIZE_CEILING_FRACTION)
    raise OSError(f"{meminfo}: no MemTotal")


def check_sizes(task_toml: str, sizes: dict[str, int | None], ceiling_mb: int) -> None:
    """Refuse a task's `[environment]` size over `ceiling_mb` or under 0, in one line naming
    the file and key (refused, not clamped: a task sized for more memory than it gets fails in
    ways that look like the agent's fault; a negative memory_mb, which Harbor accepts, made
    the cgroup's limit unwritable, and the trial ran with none)."""
    for key, value in sizes.items():
        if value is not None and value > ceiling_mb:
            raise ValueError(
                f"{task_toml}: [environment] {key} = {value}: over the sandbox's ceiling of "
                f"{ceiling_mb} (MB, {SIZE_CEILING_FRACTION:.0%} of this host's memory)"
            )
        if value is not None and value < 0:
            raise ValueError(f"{task_toml}: [environment] {key} = {value}: under 0")


#: the cores a trial may use when its task.toml names no `[environment] cpus`: one, so that
#: `--concurrency N` trials take at most N cores however many processes each one starts
DEFAULT_CPUS = 1
#: the cpu cgroup hierarchies tried, in order: v1's `cpu` controller, then the unified one (v2)
CPU_CGROUP_ROOTS = ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup")
_CGROUP_PARENT = "hf-skillfollow"
#: v2's default period; v1's is read from the cgroup
_V2_PERIOD_US = 100_000
#: the kernel refuses a quota under 1 ms
_MIN_QUOTA_US = 1000


def host_cpus() -> int:
    """The cores this process may run on (its affinity: a container's cpuset included)."""
    return len(os.sched_getaffinity(0))


def check_cpus(task_toml: str, cpus: float | None, host: int) -> None:
    """Refuse a task's `[environment] cpus` over the host's `host` cores, or not above 0, in
    one line naming the file and key (refused, not clamped, as memory_mb is: a task sized for
    more cores than it gets times out in ways that look like the agent's fault)."""
    if cpus is None:
        return
    if not cpus > 0:  # NaN too
        raise ValueError(f"{task_toml}: [environment] cpus = {cpus}: not above 0")
    if cpus > host:
        raise ValueError(
            f"{task_toml}: [environment] cpus = {cpus}: over the sandbox's ceiling of {host} "
            "(the cores this host lets Harbor run on)"
        )


def cpu_quota_us(cpus: float, period_us: int) -> int:
    """The CFS quota giving `cpus` cores' worth of time per period (fractions too)."""
    return max(_MIN_QUOTA_US, round(cpus * period_us))


def make_cpu_cgroup(
    name: str, cpus: float, roots: tuple[str, ...] = CPU_CGROUP_ROOTS
) -> Path | None:
    """A cgroup under the first writable cpu hierarchy of `roots` whose quota is `cpus` cores
    (v1: cpu.cfs_quota_us against the cgroup's cpu.cfs_period_us; v2: cpu.max), or None where
    the host lets us make none (not root, no cpu controller, a v2 root holding processes)."""
    leaf = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
    for root in map(Path, roots):
        if (root / "cpu.cfs_quota_us").is_file():
            made = _cpu_cgroup_v1(root / _CGROUP_PARENT / leaf, cpus)
        elif "cpu" in _read_words(root / "cgroup.controllers"):
            made = _cpu_cgroup_v2(root, leaf, cpus)
        else:
            continue
        if made is not None:
            return made
    return None


def _read_words(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []


def _cpu_cgroup_v1(path: Path, cpus: float) -> Path | None:
    try:
        path.mkdir(parents=True, exist_ok=True)
        period = int((path / "cpu.cfs_period_us").read_text())
        (path / "cpu.cfs_quota_us").write_text(str(cpu_quota_us(cpus, period)))
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            path.rmdir()
        return None
    return path


def _cpu_cgroup_v2(root: Path, leaf: str, cpus: float) -> Path | None:
    parent = root / _CGROUP_PARENT
    path = parent / leaf
    try:
        # v2 hands a controller down one level at a time: root -> parent -> the trial's cgroup
        _enable_cpu(root)
        parent.mkdir(exist_ok=True)
        _enable_cpu(parent)
        path.mkdir(exist_ok=True)
        (path / "cpu.max").write_text(f"{cpu_quota_us(cpus, _V2_PERIOD_US)} {_V2_PERIOD_US}")
    except OSError:
        with contextlib.suppress(OSError):
            path.rmdir()
        return None
    return path


def _enable_cpu(cgroup: Path) -> None:
    if "cpu" not in _read_words(cgroup / "cgroup.subtree_control"):
        (cgroup / "cgroup.subtree_control").write_text("+cpu")


def _check(rc: int, what: str) -> None:
    if rc != 0:
        raise OSError(ctypes.get_errno(), f"{what}: {os.strerror(ctypes.get_errno())}")


def _bind_read_only(source: str, target: str) -> None:
    mount(source, target, None, MS_BIND | MS_REC, None)
    mount("none", target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID, None)


def _build_root(spec: dict) -> None:
    mount("none", "/", None, MS_REC | MS_PRIVATE, None)
    # Each bind's source arrives as a detached copy of its mount that the host made
    # (open_tree): this uid may not traverse the folders above it, and a plain descriptor
    # would name a mount of the host's namespace, which cannot be bound here.
    held = [(int(fd), target) for fd, target in spec.get("binds", [])]
    mount("sandbox", _STAGE, "tmpfs", MS_NOSUID | MS_NODEV, f"size={spec['storage_mb']}m,mode=755")
    new = _STAGE
    for name in _SYSTEM:
        host = f"/{name}"
        if os.path.islink(host):
            os.symlink(os.readlink(host), f"{new}/{name}")
        elif os.path.isdir(host):
            os.mkdir(f"{new}/{name}")
            _bind_read_only(host, f"{new}/{name}")
    for name in _WRITABLE:
        os.makedirs(f"{new}/{name}", mode=0o755, exist_ok=True)
    os.chmod(f"{new}/tmp", 0o1777)
    os.chmod(f"{new}/var/tmp", 0o1777)
    os.makedirs(f"{new}/dev/pts")
    os.mkdir(f"{new}/dev/shm")
    for device in _DEVICES:
        open(f"{new}/dev/{device}", "w").close()  # noqa: SIM115 (a mount point)
        mount(f"/dev/{device}", f"{new}/dev/{device}", None, MS_BIND, None)
    mount(
        "devpts",
        f"{new}/dev/pts",
        "devpts",
        MS_NOSUID | MS_NOEXEC,
        "newinstance,ptmxmode=0666,mode=620",
    )
    os.symlink("pts/ptmx", f"{new}/dev/ptmx")
    for link, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):  # fmt: skip
        os.symlink(target, f"{new}/dev/{link}")
    mount("shm", f"{new}/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777")
    for fd, target in held:  # read-only, at the path the job names (an agent's install, a relay)
        os.makedirs(f"{new}{target}", exist_ok=True)
        _check(
            libc().syscall(
                _MOVE_MOUNT, fd, b"", AT_FDCWD, f"{new}{target}".encode(), _F_EMPTY_PATH
            ),
            f"move_mount {target}",
        )
        mount("none", f"{new}{target}", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID, None)
        os.close(fd)
    os.mkdir(f"{new}/proc")
    mount("proc", f"{new}/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    os.mkdir(f"{new}/.old")
    pivot_root(new, f"{new}/.old")
    os.chdir("/")
    _check(libc().umount2(b"/.old", MNT_DETACH), "umount old root")
    os.rmdir("/.old")


def _init(spec: dict) -> None:
    """PID 1 of the sandbox: build the root, bring loopback up, then reap orphans forever."""
    die_with_parent()
    try:
        _build_root(spec)
        _check(libc().sethostname(b"sandbox", 7), "sethostname")
        subprocess.run(["/usr/sbin/ip", "link", "set", "lo", "up"], check=True, capture_output=True)
    except (OSError, ConfineError, subprocess.CalledProcessError) as exc:
        print(f"error {exc}", flush=True)
        os._exit(3)
    # Commands run as this uid without capabilities: they must not ptrace the capable init.
    set_dumpable(False)
    print(f"ready {spec['host_pid']}", flush=True)
    os.close(1)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    while True:
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
        signal.sigtimedwait({signal.SIGCHLD}, 5.0)


def main() -> None:
    spec = json.loads(sys.argv[1])
    die_with_parent()
    _check(libc().unshare(CLONE_NEWUSER), "unshare user")
    print("userns", flush=True)
    if not sys.stdin.readline().strip():
        sys.exit("nsinit: the host did not map the user namespace")
    os.setgroups([])
    os.setresgid(0, 0, 0)
    os.setresuid(0, 0, 0)
    # A credential change clears the parent-death signal: set it again, then make sure the
    # parent (Harbor) did not die before it was set.
    die_with_parent()
    if os.getppid() == 1:
        sys.exit("nsinit: Harbor is gone")
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | _CLONE_NEWUTS | CLONE_NEWPID
    _check(libc().unshare(flags), "unshare")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(write_end)
        # The host pid is known only to the parent (inside, this process is PID 1).
        spec["host_pid"] = int(os.read(read_end, 32))
        os.close(read_end)
        _init(spec)
    os.close(read_end)
    os.write(write_end, str(pid).encode())
    os.close(write_end)
    _, status = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()

"""A Harbor environment that runs a trial in namespaces on this machine, without Docker.

Harbor loads it by import path (``--env hf_skillfollow.harness._env:SandboxEnvironment``,
which `run --harness harbor --env sandbox` passes); it imports Harbor, so it runs only in
Harbor's interpreter (`.ci/setup-harbor`). Each trial gets its own user, mount, PID,
network (loopback only), IPC and UTS namespaces (`_nsinit`), and every command runs there
through ``nsenter`` without capabilities, under a per-trial process cap and, where the
host's memory cgroup (v1) is writable, a memory limit, and where its cpu cgroup (v1 or v2) is,
a CPU quota (`[environment] cpus`, default 1). Files cross the boundary only as tar
streams through a confined ``tar``: the host never follows a path that the trial could have
turned into a symlink. See docs/harness.md for what a trial can see.

What it cannot do: build images. A task's ``environment/Dockerfile`` may use only ``FROM``
(ignored: the host's read-only ``/usr`` is the image), ``WORKDIR``, ``ENV`` and ``COPY`` of
files from ``environment/``; anything else is refused with the file and line. Without a
Dockerfile the files of ``environment/`` are copied into the working directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import random
import shlex
import shutil
import signal
import tarfile
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from harbor.environments.base import BaseEnvironment, ExecResult, transfer_tar_filter
from harbor.environments.capabilities import EnvironmentCapabilities

from hf_skillfollow.harness._env_recipe import read_dockerfile
from hf_skillfollow.harness._nsinit import (
    DEFAULT_CPUS,
    HELPER,
    check_cpus,
    check_sizes,
    host_cpus,
    make_cpu_cgroup,
    size_ceiling_mb,
)
from hf_skillfollow.harness._relay import HostSide
from hf_skillfollow.scoring._confine import AT_FDCWD

_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: a command's stdout/stderr kept (the rest is read and dropped) and a transfer's bytes
_OUTPUT_CAP = 8 * 1024 * 1024
_TRANSFER_CAP = 512 * 1024 * 1024
_NPROC = 512
_DEFAULT_MEMORY_MB = 4096
_DEFAULT_STORAGE_MB = 2048
_CGROUP = Path("/sys/fs/cgroup/memory")
_OPEN_TREE, _OPEN_TREE_CLONE, _AT_RECURSIVE = 428, 1, 0x8000
#: where the relay's sockets appear inside a trial
_RELAY_DIR = "/run/hf-skillfollow-relay"


class SandboxEnvironment(BaseEnvironment):
    """One trial's namespaces; see the module docstring."""

    def __init__(
        self,
        *args: Any,
        loopback_ports: list[int] | None = None,
        read_only_paths: list[str] | None = None,
        path_prepend: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Harbor's arguments, plus this environment's own (``--ek`` / job ``kwargs``):
        `loopback_ports`, ports of the host's 127.0.0.1 that the trial may reach at the same
        address (a model endpoint for an agent running inside); `read_only_paths`, absolute
        host folders shown read-only at the same path (an agent installed beforehand); and
        `path_prepend`, folders put first on the trial's PATH."""
        self._ports = [int(p) for p in loopback_ports or []]
        self._ro_paths = [str(Path(p).resolve()) for p in read_only_paths or []]
        for path in self._ro_paths:
            if not Path(path).is_dir():
                raise ValueError(f"read_only_paths: {path} is not a folder")
        self._path = ":".join([*(path_prepend or []), _PATH])
        self._init_pid: int | None = None
        super().__init__(*args, **kwargs)

    @staticmethod
    def type() -> str:
        return "skillfollow-sandbox"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        # An allowlist is enforced for the host's loopback only (the relay's ports); any other
        # entry is refused below rather than silently given no network.
        return EnvironmentCapabilities(
            disable_internet=True,
            network_allowlist=True,
            network_allowlist_hostnames=True,
            network_allowlist_ipv4_addresses=True,
        )

    def validate_network_policy_support(self, network_policy: Any = None) -> None:
        super().validate_network_policy_support(network_policy)
        policy = network_policy or self.network_policy
        others = [h for h in policy.allowed_hosts if h not in ("127.0.0.1", "localhost")]
        if others:
            raise ValueError(
                f"the sandbox environment reaches no network but the host's loopback ports of "
                f"its loopback_ports option; the task or agent asks for {', '.join(others[:3])}"
            )

    def _validate_definition(self) -> None:
        self._recipe = read_dockerfile(self.environment_dir)

    @property
    def _workdir(self) -> str:
        return self.task_env_config.workdir or self._recipe.workdir

    async def start(self, force_build: bool) -> None:
        del force_build  # nothing is built
        config = self.task_env_config
        sizes = {"memory_mb": config.memory_mb, "storage_mb": config.storage_mb}
        task_toml = str(self.environment_dir.parent / "task.toml")
        check_sizes(task_toml, sizes, size_ceiling_mb())
        check_cpus(task_toml, config.cpus, host_cpus())
        self._base_uid = 1_000_000 + 65536 * random.randrange(1, 16000)
        memory = _make_cgroup(self.session_id, config.memory_mb)
        if memory is None:
            self.logger.warning(
                "sandbox: no writable memory cgroup (v1) on this host: the trial runs without "
                "a memory limit (the process cap and the tmpfs size still hold)"
            )
        cpu = make_cpu_cgroup(self.session_id, config.cpus or DEFAULT_CPUS)
        if cpu is None:
            self.logger.warning(
                "sandbox: no writable cpu cgroup (v1 cpu controller or v2 cpu.max) on this "
                "host: the trial runs without a CPU limit and may use every core"
            )
        #: every process of the trial joins each (the helper at start, each command in _argv)
        self._cgroups = [c for c in (memory, cpu) if c is not None]
        self._relay_dir = tempfile.mkdtemp(prefix="hf-skillfollow-relay-") if self._ports else None
        sources = [(p, p) for p in self._ro_paths]
        if self._relay_dir is not None:
            os.chmod(self._relay_dir, 0o755)  # the trial's uid is not ours
            sources.append((self._relay_dir, _RELAY_DIR))
        fds = [_detached_copy(source) for source, _ in sources]
        spec = {
            "storage_mb": self.task_env_config.storage_mb or _DEFAULT_STORAGE_MB,
            "binds": [[fd, target] for fd, (_, target) in zip(fds, sources, strict=True)],
        }
        try:
            self._helper = await asyncio.create_subprocess_exec(
                *HELPER, json.dumps(spec),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, start_new_session=True, pass_fds=fds,
            )  # fmt: skip
        finally:
            for fd in fds:
                os.close(fd)
        for cgroup in self._cgroups:
            (cgroup / "cgroup.procs").write_text(str(self._helper.pid))
        assert self._helper.stdin and self._helper.stdout
        if (await self._helper.stdout.readline()).strip() != b"userns":
            raise RuntimeError(f"sandbox: could not start ({await self._helper_error()})")
        try:
            for kind in ("uid", "gid"):
                Path(f"/proc/{self._helper.pid}/{kind}_map").write_text(
                    f"0 {self._base_uid} 65536\n"
                )
        except OSError as exc:
            raise RuntimeError(
                f"sandbox: cannot map the trial's user namespace ({exc.strerror}): the sandbox "
                "environment needs Harbor to run as root; use a Docker or cloud --env otherwise"
            ) from None
        self._helper.stdin.write(b"go\n")
        await self._helper.stdin.drain()
        word, _, rest = (await self._helper.stdout.readline()).decode().strip().partition(" ")
        if word != "ready":
            raise RuntimeError(
                f"sandbox: could not build the root ({rest or await self._helper_error()})"
            )
        self._init_pid = int(rest)
        if self._ports:
            await self._start_relay()
        await self.exec(f"mkdir -p {shlex.quote(self._workdir)}")
        await self._provision()

    async def _start_relay(self) -> None:
        """Each allowed port: a Unix socket here that connects to the host's 127.0.0.1:PORT,
        and `_relay` inside listening on the trial's 127.0.0.1:PORT and carrying to it."""
        assert self._relay_dir is not None
        self._relay_servers = []
        host_side = HostSide()  # one cap for the trial, all ports together
        for port in self._ports:
            path = f"{self._relay_dir}/{port}.sock"
            server = await asyncio.start_unix_server(host_side.handler(port), path=path)
            os.chmod(path, 0o777)  # the trial's uid is not ours
            self._relay_servers.append(server)
        script = (Path(__file__).parent / "_relay.py").read_text()
        specs = [f"{port}={_RELAY_DIR}/{port}.sock" for port in self._ports]
        self._relay = await asyncio.create_subprocess_exec(
            # -I: the relay's stdlib imports never come from the trial's working directory
            *self._argv(["/usr/bin/python3", "-I", "-c", script, *specs], None, None),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        assert self._relay.stdout
        line = await asyncio.wait_for(self._relay.stdout.readline(), timeout=30)
        if line.strip() != b"listening":
            raise RuntimeError("sandbox: the loopback relay did not start")

    async def _helper_error(self) -> str:
        assert self._helper.stderr
        err = await self._helper.stderr.read(4096)
        return (
            err.decode(errors="replace").strip().splitlines()[-1:][0]
            if err.strip()
            else "no output"
        )

    async def _provision(self) -> None:
        """The image's part that a sandbox can do: the Dockerfile's COPY lines, or the whole
        environment folder into the working directory when there is no Dockerfile."""
        if self._recipe.copies is None:
            files = [p for p in self.environment_dir.iterdir() if p.name != "Dockerfile"]
            if files:
                await self._put(
                    _tar_of(self.environment_dir, exclude={"Dockerfile"}), self._workdir
                )
            return
        for source, target in self._recipe.copies:
            dest = target if target.startswith("/") else f"{self._recipe.workdir}/{target}"
            path = (self.environment_dir / source).resolve()
            if not path.is_relative_to(self.environment_dir.resolve()):
                raise ValueError(
                    f"{self.environment_dir / 'Dockerfile'}: COPY {source}: outside environment/"
                )
            if path.is_dir():
                await self._put(_tar_of(path), dest.rstrip("/") or "/")
            else:
                into = dest if dest.endswith("/") else str(PurePosixPath(dest).parent)
                name = path.name if dest.endswith("/") else PurePosixPath(dest).name
                await self._put(_tar_of_file(path, name), into)

    async def stop(self, delete: bool) -> None:
        del delete  # nothing outlives the namespaces
        pid = getattr(self, "_init_pid", None)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)  # PID 1 of the namespace: every process goes with it
        helper = getattr(self, "_helper", None)
        if helper is not None and helper.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                helper.kill()
            await helper.wait()
        for server in getattr(self, "_relay_servers", []):
            server.close()
        relay_dir = getattr(self, "_relay_dir", None)
        if relay_dir is not None:
            shutil.rmtree(relay_dir, ignore_errors=True)
        for cgroup in getattr(self, "_cgroups", []):
            for _ in range(50):
                try:
                    cgroup.rmdir()
                    break
                except OSError:
                    await asyncio.sleep(0.1)

    def _argv(self, command: list[str], cwd: str | None, env: dict[str, str] | None) -> list[str]:
        merged = {"HOME": "/root", "PATH": self._path, "LANG": "C.UTF-8", "TERM": "xterm-256color",
                  **self._recipe.env, **self._startup_env(), **(self._merge_env(env) or {})}  # fmt: skip
        if self._init_pid is None:
            raise RuntimeError("sandbox: the environment is not running")
        inside = [
            "nsenter", "--target", str(self._init_pid), "--user", "--mount", "--net", "--ipc",
            "--uts", "--pid", "--root", "--wd", "--",
            "/usr/bin/setpriv", "--no-new-privs", "--bounding-set=-all", "--inh-caps=-all", "--",
            "/usr/bin/prlimit", f"--nproc={_NPROC}", "--core=0", "--",
            "/usr/bin/env", "-i", "-C", cwd or self._workdir,
            *(f"{k}={v}" for k, v in merged.items()), *command,
        ]  # fmt: skip
        if not self._cgroups:
            return inside
        # Joined before nsenter runs, so every process of the command is in the trial's cgroups.
        joins = " && ".join(
            f"echo $$ > {shlex.quote(str(c / 'cgroup.procs'))}" for c in self._cgroups
        )
        return ["/bin/sh", "-c", f'{joins} && exec "$@"', "sh", *inside]

    async def _run(
        self, command: list[str], *, stdin: bytes | None = None, cwd: str | None = None,
        env: dict[str, str] | None = None, timeout_sec: float | None = None, cap: int = _OUTPUT_CAP,
    ) -> tuple[int, bytes, bytes]:  # fmt: skip
        proc = await asyncio.create_subprocess_exec(
            *self._argv(command, cwd, env),
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )  # fmt: skip
        assert proc.stdout and proc.stderr

        async def feed() -> None:
            if stdin is not None and proc.stdin is not None:
                try:
                    proc.stdin.write(stdin)
                    await proc.stdin.drain()
                    proc.stdin.close()
                except (BrokenPipeError, ConnectionResetError):
                    pass

        work = asyncio.gather(
            feed(), _bounded(proc.stdout, cap), _bounded(proc.stderr, cap), proc.wait()
        )
        try:
            _, out, err, rc = await asyncio.wait_for(work, timeout=timeout_sec)
        except BaseException as exc:  # a timeout, or Harbor cancelling the trial
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            if isinstance(exc, TimeoutError):
                raise RuntimeError(f"Command timed out after {timeout_sec} seconds") from None
            raise
        return rc, out, err

    async def exec(
        self, command: str, cwd: str | None = None, env: dict[str, str] | None = None,
        timeout_sec: int | None = None, user: str | int | None = None,
    ) -> ExecResult:  # fmt: skip
        # Every command is uid 0 of the trial's user namespace (an unprivileged host uid,
        # no capabilities); another task user cannot be switched to without capabilities.
        del user
        rc, out, err = await self._run(
            ["/bin/bash", "-c", command], cwd=cwd, env=env, timeout_sec=timeout_sec
        )
        return ExecResult(
            stdout=out.decode(errors="replace") or None,
            stderr=err.decode(errors="replace") or None,
            return_code=rc,
        )  # fmt: skip

    async def _put(self, archive: bytes, target_dir: str) -> None:
        rc, _, err = await self._run(
            ["/bin/sh", "-c", 'mkdir -p "$1" && tar -x --no-same-owner -C "$1"', "sh", target_dir],
            stdin=archive, timeout_sec=600,
        )  # fmt: skip
        if rc != 0:
            raise RuntimeError(f"upload to {target_dir}: {err.decode(errors='replace')[-500:]}")

    async def _get(self, directory: str, member: str) -> bytes:
        rc, out, err = await self._run(
            ["tar", "-c", "-C", directory, "--", member], timeout_sec=600, cap=_TRANSFER_CAP
        )
        if rc != 0:
            raise RuntimeError(
                f"download of {directory}/{member}: {err.decode(errors='replace')[-500:]}"
            )
        if len(out) >= _TRANSFER_CAP:
            raise RuntimeError(f"download of {directory}/{member}: over {_TRANSFER_CAP} bytes")
        return out

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        target = PurePosixPath(target_path)
        await self._put(_tar_of_file(Path(source_path), target.name), str(target.parent))

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        await self._put(_tar_of(Path(source_dir)), target_dir)

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        source = PurePosixPath(source_path)
        data = await self._get(str(source.parent), source.name)
        with tempfile.TemporaryDirectory() as tmp, tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(tmp, filter=transfer_tar_filter)
            got = Path(tmp) / source.name
            if got.is_symlink() or not got.is_file():
                raise RuntimeError(f"download of {source_path}: not a regular file")
            Path(target_path).parent.mkdir(parents=True, exist_ok=True)
            Path(target_path).write_bytes(got.read_bytes())

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        data = await self._get(source_dir, ".")
        Path(target_dir).mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            # The data filter refuses absolute names, `..` and links leading out of target_dir.
            tar.extractall(target_dir, filter=transfer_tar_filter)


def _detached_copy(path: str) -> int:
    """A descriptor of a detached copy of the mount tree at `path` (open_tree), which the
    trial's init attaches inside its own mount namespace (a plain descriptor cannot be)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    flags = _OPEN_TREE_CLONE | os.O_CLOEXEC | _AT_RECURSIVE
    fd = libc.syscall(_OPEN_TREE, AT_FDCWD, path.encode(), flags)
    if fd < 0:
        raise RuntimeError(f"sandbox: cannot share {path}: {os.strerror(ctypes.get_errno())}")
    return int(fd)


async def _bounded(stream: asyncio.StreamReader, cap: int) -> bytes:
    """Up to `cap` bytes of a stream, reading (and dropping) the rest so the writer never blocks."""
    kept = bytearray()
    while chunk := await stream.read(65536):
        if len(kept) < cap:
            kept += chunk[: cap - len(kept)]
    return bytes(kept)


def _tar_of(directory: Path, exclude: set[str] = frozenset()) -> bytes:  # type: ignore[assignment]
    """A tar of a trusted host folder (task files, a skill pool), links kept as links."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for child in sorted(directory.iterdir()):
            if child.name not in exclude:
                tar.add(child, arcname=child.name, recursive=True)
    return buf.getvalue()


def _tar_of_file(path: Path, name: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(path, arcname=name, recursive=False)
    return buf.getvalue()


def _make_cgroup(session_id: str, memory_mb: int | None) -> Path | None:
    """A memory cgroup for the trial where the host lets us make one (cgroup v1, root)."""
    path = (
        _CGROUP
        / "hf-skillfollow"
        / "".join(c if c.isalnum() or c in "-_" else "_" for c in session_id)
    )
    try:
        path.mkdir(parents=True, exist_ok=True)
        limit = (memory_mb or _DEFAULT_MEMORY_MB) * 1024 * 1024
        (path / "memory.limit_in_bytes").write_text(str(limit))
    except OSError:
        return None
    # With swap accounting, memory and swap together: else the trial fills the host's swap.
    with contextlib.suppress(FileNotFoundError):
        (path / "memory.memsw.limit_in_bytes").write_text(str(limit))
    return path

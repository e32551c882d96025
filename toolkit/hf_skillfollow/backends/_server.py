"""Launching a model server subprocess the toolkit owns: free port, readiness, clean stop.

Shared by the embedded llama.cpp backend and the vLLM-server backend. The child gets its own
process group (so the whole tree is stopped together) and, on Linux, a parent-death signal
(so a `kill -9` of the runner does not leave an orphan server holding CPU and a port).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import httpx

from hf_skillfollow.backends._base import BackendStartupError

_STOP_GRACE_S = 10.0
_POLL_S = 0.25


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free right now on `host` (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def is_loopback_url(url: str) -> bool:
    """True when `url` points at this machine (no credentials needed for our own servers)."""
    host = urlparse(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass
class ServerProcess:
    """A running server child process and the file that collects its output."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log_tail(self, n_chars: int = 2000) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return text[-n_chars:].strip()

    def alive(self) -> bool:
        return self.process.poll() is None


def _set_parent_death_signal() -> None:
    # Runs in the child between fork and exec: ask Linux to SIGTERM us when the parent dies.
    import ctypes

    pr_set_pdeathsig = 1
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(pr_set_pdeathsig, signal.SIGTERM)


def _spawn(name: str, cmd: Sequence[str], env: dict[str, str] | None) -> ServerProcess:
    log_file = tempfile.NamedTemporaryFile(  # noqa: SIM115 (owned by ServerProcess)
        prefix=f"hf-skillfollow-{name}-", suffix=".log", delete=False
    )
    preexec = _set_parent_death_signal if sys.platform.startswith("linux") else None
    # Popen is called on the event-loop thread on purpose: PDEATHSIG fires when the *thread*
    # that forked exits, so spawning from a worker thread would kill the server early.
    process = subprocess.Popen(
        list(cmd),
        stdin=subprocess.DEVNULL,
        stdout=log_file,
        stderr=subprocess.STDOUT,
        env={**os.environ, **(env or {})},
        start_new_session=True,
        preexec_fn=preexec,  # noqa: PLW1509
    )
    log_file.close()
    return ServerProcess(name=name, process=process, log_path=Path(log_file.name))


async def _wait_ready(server: ServerProcess, ready_url: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    async with httpx.AsyncClient(timeout=2.0, trust_env=False) as client:
        while time.monotonic() < deadline:
            if not server.alive():
                raise BackendStartupError(
                    f"{server.name} server exited with code {server.process.returncode} before "
                    f"it was ready. Last output:\n{server.log_tail()}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get(ready_url)).status_code == 200:
                    return
            await asyncio.sleep(_POLL_S)
    raise BackendStartupError(
        f"{server.name} server did not answer {ready_url} within {timeout_s:.0f} s. "
        f"Last output:\n{server.log_tail()}"
    )


def stop_server(server: ServerProcess, grace_s: float = _STOP_GRACE_S) -> None:
    """SIGTERM the server's process group, then SIGKILL after `grace_s`; always reaps it."""
    if server.alive():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.process.pid, signal.SIGTERM)
        try:
            server.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.process.pid, signal.SIGKILL)
            server.process.wait()
    with contextlib.suppress(OSError):
        server.log_path.unlink()


@contextlib.asynccontextmanager
async def launched_server(
    name: str,
    cmd: Sequence[str],
    *,
    ready_url: str,
    ready_timeout_s: float,
    env: dict[str, str] | None = None,
) -> AsyncIterator[ServerProcess]:
    """Start `cmd`, wait until GET `ready_url` answers 200, yield, and stop it on any exit
    (normal, exception, cancellation, KeyboardInterrupt)."""
    server = _spawn(name, cmd, env)
    try:
        await _wait_ready(server, ready_url, ready_timeout_s)
        yield server
    finally:
        stop_server(server)

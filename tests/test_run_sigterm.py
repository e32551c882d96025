"""A terminated `run` stops the embedded llama.cpp server it started (real server, real run).

SIGTERM is what a service manager, `timeout` or a CI runner sends. Python's default action
ends the process at once, so before `_terminate.sigterm_unwinds` no cleanup ran and the
server (in a session of its own) was left to its parent-death signal alone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

CLI = [sys.executable, "-m", "hf_skillfollow.cli"]


def _stat(pid: int) -> list[str] | None:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def _server_of(pid: int) -> int | None:
    """The llama.cpp server child of process `pid`, if it has one."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        fields = _stat(int(proc.name))
        with contextlib.suppress(OSError):
            cmdline = (proc / "cmdline").read_bytes()
            if fields and int(fields[1]) == pid and b"llama_cpp.server" in cmdline:
                return int(proc.name)
    return None


def _port_of(pid: int) -> int | None:
    """The TCP port the server listens on (its --config_file names it; read it from /proc)."""
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in (Path("/proc") / str(pid) / "fd").iterdir():
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
            return int(fields[1].split(":")[1], 16)
    return None


def test_sigterm_stops_the_embedded_server(tmp_path: Path, data_dir: Path) -> None:
    argv = [*CLI, "run", "--tasks-file", str(data_dir / "mbppplus-v0.1.0.jsonl"), "--limit", "4",
            "--max-tokens", "48", "--concurrency", "1", "-o", str(tmp_path), "--no-report"]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)  # fmt: skip
    server = port = None
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not list(tmp_path.glob("*/records.jsonl")):
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:] if proc.stderr else ""
            server = server or _server_of(proc.pid)
            time.sleep(0.2)
        assert server is not None, "the run should be answering from its embedded server"
        port = _port_of(server)
        assert port is not None
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == -signal.SIGTERM  # it still ends by the signal
        # The run stopped its server before it ended: nothing is left holding the port.
        assert not _alive(server), "the embedded llama.cpp server outlived the run"
        with socket.socket() as sock:
            assert sock.connect_ex(("127.0.0.1", port)) != 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if server is not None and _alive(server):
            os.killpg(server, signal.SIGKILL)

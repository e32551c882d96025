"""Running the CLI on a real pseudo-terminal, where it escapes what it shows."""

from __future__ import annotations

import os
import pty
import subprocess
import sys


def on_a_terminal(*args: object) -> str:
    """What the CLI writes to a real pseudo-terminal (stdout and stderr both)."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "hf_skillfollow.cli", *map(str, args)],
            stdout=slave, stderr=slave, timeout=300,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "3000"},
        )  # fmt: skip
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(master)
    shown = b"".join(chunks).decode().replace("\r\n", "\n")  # the tty's own line ends
    assert proc.returncode == 0, shown
    return shown

"""The olah Hub mirror for read-path tests: repo folders served through the Hub's HTTP API.

olah (PyPI) runs offline on 127.0.0.1 and serves local git repos (``ROOT/mirrors/datasets/
ORG/NAME``) as huggingface.co would, so the unmodified `huggingface_hub` and `datasets`
clients read them. HF_ENDPOINT must be set before those packages are imported, so every
client runs in a fresh interpreter (``client``).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def git_commit(folder: Path) -> None:
    """Make ``folder`` a git repo with one commit on ``main`` (what olah serves)."""
    env = os.environ | {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "commit.gpgsign=false", "commit", "-qm", "push"],
    ):
        subprocess.run(["git", *args], cwd=folder, env=env, check=True)


@contextlib.contextmanager
def mirror(root: Path, ready_repo: str) -> Iterator[str]:
    """Serve the git repos under ``root/mirrors``; yield the endpoint once ``ready_repo``
    (a dataset id) answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = root / "olah.toml"
    config.write_text(
        f'[basic]\nhost = "127.0.0.1"\nport = {port}\nrepos-path = "{root / "cache"}"\n'
        f'mirrors-path = ["{root / "mirrors"}"]\nmirror-netloc = "127.0.0.1:{port}"\n'
        f'mirror-lfs-netloc = "127.0.0.1:{port}"\n[accessibility]\noffline = true\n'
    )
    log = root / "olah.out"
    olah = [sys.executable, "-c", "from olah.server import cli; cli()"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [*olah, "-c", str(config), "--log-path", str(root / "logs")],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(f"{endpoint}/api/datasets/{ready_repo}/revision/main", proc, log)
        yield endpoint
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _wait_ready(url: str, proc: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"olah exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    pytest.fail(f"olah not ready after {timeout}s:\n{log.read_text()[-3000:]}")


def client(endpoint: str, code: str, *args: str, tmp: Path) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter whose Hub endpoint is the mirror."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    env |= {
        "HF_ENDPOINT": endpoint,
        "HF_HOME": str(tmp / "hf_home"),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
        # the caller's path first: a worktree's toolkit rather than the installed one
        "PYTHONPATH": os.pathsep.join(filter(None, (os.environ.get("PYTHONPATH"), str(ROOT)))),
    }
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=300
    )

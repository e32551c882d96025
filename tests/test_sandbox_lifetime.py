"""No sandbox process outlives the scorer (docs/sandbox.md, "Lifetime").

`hf-skillfollow score` (and `run` while it scores) is started under a small *reaper*: a
process that makes itself the child subreaper (``PR_SET_CHILD_SUBREAPER``), so every
descendant of the scorer — the zygotes, each run's first process, the harness, the program,
the program's own children —
stays in the reaper's process tree even after its parent dies. The scorer is killed once the
programs are running (each sleeps, and so does a thread it started: a program cannot create a
process of its own); 2 s later the whole tree under the reaper must be empty.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_backend_openai_retries import ProviderDouble, Reply, completion_body

CLI = [sys.executable, "-m", "hf_skillfollow.cli"]
# Forces the user-namespace mode in the CLI process, as the in-process tests do.
CLI_USERNS = [
    sys.executable,
    "-c",
    "import sys; from hf_skillfollow.scoring import _sandbox;"
    " _sandbox.isolation_mode = lambda: 'userns';"
    " from hf_skillfollow.cli import main; sys.argv[0] = 'hf-skillfollow'; main()",
]
HARNESS = b"hf_skillfollow.scoring._zygote"  # zygotes and every process forked from them
# A program that never answers: it and a thread of it sleep far past the test (it cannot fork).
SLEEPER = (
    "import threading, time\n"
    "threading.Thread(target=time.sleep, args=(600,)).start()\n"
    "time.sleep(600)\n"
)

_REAPER = r"""
import ctypes, os, signal, subprocess, sys, threading, time
if ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
    sys.exit('prctl failed')
# A shell starting a job in the background (no job control) ignores SIGINT for it, and the
# scorer would inherit that: the test is about how the scorer answers Ctrl-C, so restore it.
signal.signal(signal.SIGINT, signal.SIG_DFL)
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=open(os.environ['REAPER_LOG'], 'wb'))
print(child.pid, flush=True)
done = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
while not done.is_set():  # reap whatever is orphaned onto us, so that the dead vanish
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass
    time.sleep(0.02)
"""


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state) of a process, or None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = raw[raw.rindex(")") + 2 :].split()
    return int(rest[1]), rest[0]


def _tree(root: int) -> dict[int, bytes]:
    """Every live (non-zombie) descendant of ``root`` with its command line."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st is not None and st[1] != "Z":
                parents[int(entry)] = st[0]
    found: dict[int, bytes] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in found:
                try:
                    found[pid] = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    found[pid] = b"?"
                frontier.append(pid)
    return found


class Reaper:
    def __init__(self, cmd: list[str], log: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _REAPER, *cmd],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**env, "REAPER_LOG": str(log)},
        )
        assert self.proc.stdout is not None
        self.child = int(self.proc.stdout.readline())
        self.log = log

    def sandboxes(self) -> list[int]:
        """Processes of the tree that run the harness (forks of it included)."""
        return [pid for pid, cmd in _tree(self.proc.pid).items() if HARNESS in cmd]

    def wait_for_programs(self, runs: int, cli: list[str], timeout: float = 240) -> None:
        """Until ``runs`` programs run: as many harness processes exist as two zygotes and
        the runs make (each: the harness, init of its namespace, and the program; in userns
        mode a first process before them, which root mode saves)."""
        from hf_skillfollow.scoring._sandbox import isolation_mode

        per_run = 2 if cli is CLI and isolation_mode() == "root" else 3
        count = 2 + runs * per_run
        deadline = time.monotonic() + timeout
        while len(self.sandboxes()) < count:
            if _stat(self.child) is None or _stat(self.child)[1] == "Z":
                pytest.fail(f"the scorer ended early: {self.log.read_text()[-3000:]}")
            assert time.monotonic() < deadline, "the programs never started"
            time.sleep(0.1)

    def survivors(self) -> dict[int, bytes]:
        return {p: c for p, c in _tree(self.proc.pid).items() if p != self.child}

    def close(self) -> None:
        for pid in _tree(self.proc.pid):  # leave nothing behind, even when the test failed
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture
def reaper_env(private_score_cache: Path) -> dict[str, str]:
    return {**os.environ, "SKILLFOLLOW_CACHE_DIR": str(private_score_cache)}


@contextlib.contextmanager
def reaped(cmd: list[str], tmp_path: Path, env: dict[str, str]) -> Iterator[Reaper]:
    reaper = Reaper(cmd, tmp_path / "scorer.log", env)
    try:
        yield reaper
    finally:
        reaper.close()


def _kill_and_check(reaper: Reaper, sig: int) -> None:
    os.kill(reaper.child, sig)
    time.sleep(2.0)
    left = reaper.survivors()
    assert left == {}, f"sandbox processes alive 2 s after {signal.Signals(sig).name}: {left}"


def _samples(path: Path) -> Path:
    rows = [{"task_id": t, "solution": SLEEPER} for t in ("Mbpp/17", "Mbpp/18")]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    ("sig", "cli"),
    [
        (signal.SIGTERM, CLI),
        (signal.SIGINT, CLI),
        (signal.SIGKILL, CLI),
        pytest.param(signal.SIGKILL, CLI_USERNS, marks=pytest.mark.slow),
    ],
    ids=["SIGTERM", "SIGINT", "SIGKILL", "SIGKILL-userns"],
)
def test_killing_score_leaves_no_sandbox_process(
    sig: int, cli: list[str], tmp_path: Path, data_dir: Path, reaper_env: dict[str, str]
) -> None:
    cmd = [
        *cli,
        "score",
        "--samples",
        str(_samples(tmp_path / "samples.jsonl")),
        "--tasks-file",
        str(data_dir / "mbppplus-v0.1.0.jsonl"),
        "-o",
        str(tmp_path / "verdicts.jsonl"),
        "--workers",
        "2",
    ]
    with reaped(cmd, tmp_path, reaper_env) as reaper:
        reaper.wait_for_programs(2, cli)
        _kill_and_check(reaper, sig)
    assert not (tmp_path / "verdicts.jsonl").exists()


@pytest.mark.slow
def test_interrupting_run_while_it_scores_leaves_no_sandbox_process(
    tmp_path: Path, data_dir: Path, reaper_env: dict[str, str]
) -> None:
    """`run` against an OpenAI-compatible provider double over real HTTP (a stand-in for a
    remote provider) whose every answer is the sleeping program: SIGINT while both arms are
    being scored."""
    answer = f"```python\n{SLEEPER}def f(*a):\n    return None\n```"
    with ProviderDouble([Reply(body=completion_body(answer))]) as double:
        cmd = [
            *CLI,
            "run",
            "--model",
            "double-model",
            "--base-url",
            double.url,
            "--tasks-file",
            str(data_dir / "mbppplus-v0.1.0.jsonl"),
            "--limit",
            "1",
            "--concurrency",
            "1",
            "--no-report",
            "-o",
            str(tmp_path / "runs"),
        ]
        with reaped(cmd, tmp_path, reaper_env) as reaper:
            reaper.wait_for_programs(2, CLI)  # SE and SD arms, scored at the same time
            _kill_and_check(reaper, signal.SIGINT)

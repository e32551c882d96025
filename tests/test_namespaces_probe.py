"""The isolation probe: a fork of a small scorer, not a fresh interpreter (issue 40's start-up).

It must answer as the zygote's runs will (root here, as in CI), say no when the namespaces
cannot be made or the probe hangs, reap its child either way, and leave the scorer's own
namespaces as they were, also when a thread asks. A large scorer, a fork that fails and a
fork that says no ask a fresh interpreter instead, so that no fork weakens the runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time

import pytest

from hf_skillfollow.scoring import _namespaces, _sandbox

pytestmark = pytest.mark.skipif(
    not hasattr(os, "fork") or os.geteuid() != 0, reason="root mode needs root (as in CI)"
)


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the processes the probe forks."""
    pids: list[int] = []
    real = os.fork

    def recorded() -> int:
        pid = real()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", recorded)
    return pids


def _reaped(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@pytest.fixture
def interpreters(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The commands of the interpreters the probe starts (they run)."""
    started: list[list[str]] = []
    real = subprocess.run

    def recorded(cmd: list[str], *args: object, **kwargs: object) -> object:
        started.append(list(cmd))
        return real(cmd, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", recorded)
    return started


def test_the_probe_starts_no_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("the probe started a process with exec")

    # a small scorer, as `score` is when it probes (this test process may be larger)
    monkeypatch.setattr(_namespaces, "FORK_BELOW_BYTES", 1 << 62)
    monkeypatch.setattr(subprocess, "Popen", refused)
    for name in ("execv", "execve", "posix_spawn"):
        monkeypatch.setattr(os, name, refused)
    _sandbox._isolation_mode.cache_clear()
    try:
        assert _sandbox.isolation_mode() == "root"
    finally:
        _sandbox._isolation_mode.cache_clear()


def test_a_probe_that_cannot_make_the_namespaces_says_no(
    monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    monkeypatch.setattr(_namespaces, "unshare", lambda flags: False)
    assert _namespaces.probe_in_fork("root") is False
    assert _namespaces.probe_in_fork("userns") is False
    assert len(forks) == 2 and all(_reaped(pid) for pid in forks)


def test_a_probe_that_hangs_is_killed_and_says_no(
    monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    monkeypatch.setattr(_namespaces, "probe", lambda mode: time.sleep(3600) or 0)
    start = time.monotonic()
    assert _namespaces.probe_in_fork("root", timeout=0.3) is False
    assert time.monotonic() - start < 5
    assert len(forks) == 1 and _reaped(forks[0])


def test_a_probe_from_a_thread_leaves_the_scorers_namespaces_as_they_were(
    forks: list[int],
) -> None:
    own = {ns: os.readlink(f"/proc/self/ns/{ns}") for ns in ("mnt", "net", "ipc", "pid")}
    answers: list[bool] = []
    thread = threading.Thread(target=lambda: answers.append(_namespaces.probe_in_fork("root")))
    thread.start()
    thread.join()
    assert answers == [True]
    assert {ns: os.readlink(f"/proc/self/ns/{ns}") for ns in own} == own
    assert len(forks) == 1 and _reaped(forks[0])


def test_an_interrupted_wait_kills_and_reaps_the_probe(
    monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    real_sleep = time.sleep
    monkeypatch.setattr(_namespaces, "probe", lambda mode: real_sleep(3600) or 0)

    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(time, "sleep", interrupted)
    try:
        with pytest.raises(KeyboardInterrupt):
            _namespaces.probe_in_fork("root")
        assert len(forks) == 1 and _reaped(forks[0])
    finally:  # not left sleeping should the assertion fail
        for pid in forks:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)


def test_the_probe_leaves_the_process_wide_warning_filters_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Other threads use the warning filters while the probe forks: swapping the list for a
    copy and back (``catch_warnings``) would drop or revive their changes."""
    import warnings

    filters = warnings.filters
    seen: list[bool] = []
    real = os.fork

    def fork() -> int:
        seen.append(warnings.filters is filters)
        return real()

    monkeypatch.setattr(os, "fork", fork)
    assert _namespaces.probe_in_fork("root") is True
    assert seen == [True] and warnings.filters is filters


def test_a_large_scorer_asks_an_interpreter_not_a_fork(
    monkeypatch: pytest.MonkeyPatch, forks: list[int], interpreters: list[list[str]]
) -> None:
    monkeypatch.setattr(_namespaces, "FORK_BELOW_BYTES", 1)
    assert _namespaces.fork_is_cheap() is False
    assert _sandbox._probe("root") is True
    assert forks == []
    assert [cmd[-2:] for cmd in interpreters] == [["hf_skillfollow.scoring._namespaces", "root"]]


def test_a_fork_that_fails_does_not_weaken_the_runs(
    monkeypatch: pytest.MonkeyPatch, interpreters: list[list[str]]
) -> None:
    def no_fork() -> int:
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(_namespaces, "FORK_BELOW_BYTES", 1 << 62)
    monkeypatch.setattr(os, "fork", no_fork)
    assert _sandbox._probe("root") is True
    assert len(interpreters) == 1


def test_a_fork_that_says_no_is_asked_again_in_an_interpreter(
    monkeypatch: pytest.MonkeyPatch, interpreters: list[list[str]]
) -> None:
    monkeypatch.setattr(_namespaces, "FORK_BELOW_BYTES", 1 << 62)
    monkeypatch.setattr(_namespaces, "probe_in_fork", lambda mode: False)
    assert _sandbox._probe("root") is True
    assert len(interpreters) == 1

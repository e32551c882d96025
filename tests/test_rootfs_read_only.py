"""The minimal root is read-only but for its writable tmpfs and /proc, whichever way it is made
so: one recursive ``mount_setattr(2)`` (Linux 5.12 and later), or a remount of each mount
where the kernel lacks that call; and whether a run assembles it (``userns`` mode) or copies
the one its zygote built once (``root`` mode: ``_rootfs.build``, then only the run's own
writable tmpfs). Each way is built here for real, in new mount and PID namespaces of a forked
process, and every mount of the result is checked."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

from hf_skillfollow.scoring import _rootfs, _sandbox, _zygote

_remounted: list[str] = []


def _spec_built_once() -> _rootfs.RootSpec:
    """The scorer's own root, less what lies inside its writable tmpfs: where the checkout or
    its venv sits under /tmp (a clone there, as CI may make), a zygote cannot build that root
    once (each run's fresh /tmp would cover those paths) and builds it per run instead, so
    only the rest of it can test the root built once."""
    spec = _rootfs.RootSpec.from_json(_sandbox.root_spec())
    inside = ("/tmp/", "/dev/shm/")
    return dataclasses.replace(
        spec,
        expose=tuple(p for p in spec.expose if not p.startswith(inside)),
        files=tuple(p for p in spec.files if not p.startswith(inside)),
    )


@pytest.fixture
def fresh_zygotes() -> Iterator[None]:
    """No zygote left idle by an earlier test, before or after: one started where the root is
    built per run (a checkout under /tmp) serves a run of any root, so a test of the zygotes
    that build theirs once would not reach one of its own."""
    _sandbox._zygotes.close()
    yield
    _sandbox._zygotes.close()


def _build_root(at_once: bool, once: bool) -> dict[str, Any]:
    """In a forked process tree: new namespaces, the minimal root (``once``: built first in a
    mount namespace of its own, as a zygote does), then what it holds."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - reports through the pipe
        os.close(read_fd)
        try:
            if not at_once:  # as on a kernel without mount_setattr
                _rootfs._read_only_at_once = lambda new, writable: False
            remount = _rootfs._all_read_only
            _rootfs._all_read_only = lambda new: (_remounted.append(new), remount(new))
            spec = _spec_built_once() if once else _rootfs.RootSpec.from_json(_sandbox.root_spec())
            if once:
                assert _rootfs.prebuildable(spec)
                assert _zygote._unshare(_zygote._CLONE_NEWNS)
                _rootfs.build(spec)
            _zygote.enter_namespaces(user=os.geteuid() != 0)
            child = os.fork()
            if child == 0:
                _zygote.become_init()
                refused = ""
                if once:  # a run whose root is not the one built is refused, not served
                    other = dataclasses.replace(spec, hide=(*spec.hide, "/elsewhere"))
                    try:
                        _rootfs.enter(other, None, 1 << 20)
                    except _rootfs.ConfineError as exc:
                        refused = str(exc)
                _rootfs.enter(spec, None, 1 << 20)
                survey = {**_survey(), "remounted": bool(_remounted), "other": refused}
                os.write(write_fd, json.dumps(survey).encode())
                os._exit(0)
            os._exit(os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]))
        except BaseException as exc:
            os.write(write_fd, json.dumps({"error": repr(exc)}).encode())
            os._exit(1)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as fh:
        text = fh.read()
    os.waitpid(pid, 0)
    return json.loads(text)


def _survey() -> dict[str, Any]:
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        points = [line.split()[4] for line in fh]
    writable = [p for p in points if not os.statvfs(p).f_flag & os.ST_RDONLY]
    refused = []
    for path in ("/x", "/usr/lib/x", "/tmp/x", "/dev/shm/x", os.__file__ + ".x"):
        try:
            with open(path, "w") as fh:
                fh.write("x")
        except OSError:
            refused.append(path)
    return {"points": points, "writable": writable, "refused": refused}


@pytest.mark.parametrize("once", [False, True], ids=["per run", "built once"])
@pytest.mark.parametrize("at_once", [True, False], ids=["mount_setattr", "remount each"])
def test_only_the_scratch_mounts_and_proc_are_writable(at_once: bool, once: bool) -> None:
    if once and os.geteuid() != 0:
        pytest.skip("a root built once per zygote is root mode's")
    got = _build_root(at_once, once)
    assert "error" not in got, got
    if once:
        assert got["other"] == "the run's root is not the one its zygote built"
    assert len(got["points"]) > 5  # the root, /tmp, /dev, the binds of the interpreter...
    assert sorted(got["writable"]) == ["/dev/shm", "/proc", "/tmp"]
    assert got["refused"] == ["/x", "/usr/lib/x", os.__file__ + ".x"]
    kernel = tuple(int(x) for x in os.uname().release.split(".")[:2])
    if at_once and kernel >= (5, 12):
        assert not got["remounted"], "mount_setattr is there, yet each mount was remounted"
    if not at_once:
        assert got["remounted"]


def _runs_from_one_root(count: int) -> list[dict[str, Any]]:
    """As a root-mode zygote: the root built once in a mount namespace of its own, then
    ``count`` runs forked from it one after the other, each in new namespaces with its own
    writable tmpfs. Each run reports what it found of earlier runs, then leaves a file in
    every writable place."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - reports through the pipe
        os.close(read_fd)
        try:
            spec = _spec_built_once()
            assert _zygote._unshare(_zygote._CLONE_NEWNS)
            _rootfs.build(spec)
            for _ in range(count):
                run = os.fork()
                if run == 0:
                    _zygote.enter_namespaces(user=False)
                    init = os.fork()
                    if init == 0:
                        _zygote.become_init()
                        _rootfs.enter(spec, 65534, 1 << 20)
                        found = [p for p in ("/tmp/left", "/dev/shm/left") if os.path.exists(p)]
                        found += os.listdir("/tmp/sandbox")
                        for path in ("/tmp/left", "/dev/shm/left", "/tmp/sandbox/left"):
                            with open(path, "w") as fh:
                                fh.write("x")
                        owner = os.stat("/tmp/sandbox").st_uid
                        survey = {"points": _survey()["points"], "found": found, "owner": owner}
                        os.write(write_fd, (json.dumps(survey) + "\n").encode())
                        os._exit(0)
                    os._exit(os.waitstatus_to_exitcode(os.waitpid(init, 0)[1]))
                os.waitpid(run, 0)
            os._exit(0)
        except BaseException as exc:
            os.write(write_fd, (json.dumps({"error": repr(exc)}) + "\n").encode())
            os._exit(1)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as fh:
        text = fh.read()
    os.waitpid(pid, 0)
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.skipif(os.geteuid() != 0, reason="a root built once per zygote is root mode's")
def test_runs_from_a_root_built_once_share_nothing_writable() -> None:
    """Each run copies the built root with its mount namespace and mounts its own /tmp,
    /dev/shm and scratch dir: what one run wrote there, a later run does not see, and the
    later run's mounts are exactly the earlier one's (none of the first run's are left in the
    root they are both forked from)."""
    first, second = _runs_from_one_root(2)
    assert "error" not in first and "error" not in second, (first, second)
    assert first["found"] == [] and second["found"] == []
    assert first["owner"] == second["owner"] == 65534
    assert first["points"] == second["points"]
    assert first["points"].count("/tmp") == 1 and first["points"].count("/dev/shm") == 1


@pytest.mark.usefixtures("fresh_zygotes")
@pytest.mark.skipif(os.geteuid() != 0, reason="a root built once per zygote is root mode's")
def test_a_zygote_that_cannot_build_its_root_fails_each_run_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A root the zygote cannot build (here a file named as a directory to expose) is no
    silent fallback: every run forked from that zygote fails as a sandbox error that says why,
    and nothing runs."""
    spec = dataclasses.asdict(_spec_built_once())  # the zygote builds this one once
    bad = {**spec, "expose": (*spec["expose"], "/etc/hostname")}
    monkeypatch.setattr(_sandbox, "root_spec", lambda: bad)
    assert _sandbox.isolation_mode() == "root"
    for _ in range(2):
        outcome = _sandbox.run({"mode": "candidate"}, _sandbox.SandboxLimits(), None)
        assert outcome.result.get("sandbox_error"), outcome.result
        reason = outcome.result["reason"]
        assert reason.startswith("sandbox: ConfineError: building the zygote's root: "), reason
        assert "/etc/hostname" in reason, reason


@pytest.mark.usefixtures("fresh_zygotes")
@pytest.mark.skipif(os.geteuid() != 0, reason="a root built once per zygote is root mode's")
def test_a_run_prepared_for_a_root_no_zygote_builds_fails_instead_of_looping(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run whose root is not the one the environment now gives (a folder variable changed
    between preparing it and starting it) gets one clear error: every zygote started for it
    would build the environment's root and be refused, one after the other, without end."""
    spec = _spec_built_once()
    now = dataclasses.asdict(spec)  # what the environment gives: zygotes build this root
    monkeypatch.setattr(_sandbox, "root_spec", lambda: now)
    stale = {**now, "hide": [*spec.hide, "/elsewhere"]}
    request = {"mode": "candidate", "isolation": "root", "root": json.loads(json.dumps(stale))}
    assert _sandbox.isolation_mode() == "root"

    def stuck(signum: int, frame: Any) -> None:
        raise AssertionError("still starting zygotes after 30 s")

    old = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(30)
    try:
        with tempfile.TemporaryFile() as out, pytest.raises(RuntimeError, match="root changed"):
            _sandbox._spawn(request, out, None, 10.0)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)

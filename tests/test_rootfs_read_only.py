"""The minimal root is read-only but for its writable tmpfs and /proc, whichever way it is made
so: one recursive ``mount_setattr(2)`` (Linux 5.12 and later), or a remount of each mount
where the kernel lacks that call. Each way is built here for real, in new mount and PID
namespaces of a forked process, and every mount of the result is checked."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from hf_skillfollow.scoring import _rootfs, _sandbox, _zygote

_remounted: list[str] = []


def _build_root(at_once: bool) -> dict[str, Any]:
    """In a forked process tree: new namespaces, the minimal root, then what it holds."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - reports through the pipe
        os.close(read_fd)
        try:
            _zygote.enter_namespaces(user=os.geteuid() != 0)
            child = os.fork()
            if child == 0:
                _zygote.become_init()
                if not at_once:  # as on a kernel without mount_setattr
                    _rootfs._read_only_at_once = lambda new: False
                remount = _rootfs._all_read_only
                _rootfs._all_read_only = lambda new: (_remounted.append(new), remount(new))
                spec = _rootfs.RootSpec(
                    **{
                        k: tuple(tuple(x) if isinstance(x, list) else x for x in v)
                        for k, v in _sandbox.root_spec().items()
                    }
                )
                _rootfs.enter(spec, None, 1 << 20)
                survey = {**_survey(), "remounted": bool(_remounted)}
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


@pytest.mark.parametrize("at_once", [True, False], ids=["mount_setattr", "remount each"])
def test_only_the_scratch_mounts_and_proc_are_writable(at_once: bool) -> None:
    got = _build_root(at_once)
    assert "error" not in got, got
    assert len(got["points"]) > 5  # the root, /tmp, /dev, the binds of the interpreter...
    assert sorted(got["writable"]) == ["/dev/shm", "/proc", "/tmp"]
    assert got["refused"] == ["/x", "/usr/lib/x", os.__file__ + ".x"]
    kernel = tuple(int(x) for x in os.uname().release.split(".")[:2])
    if at_once and kernel >= (5, 12):
        assert not got["remounted"], "mount_setattr is there, yet each mount was remounted"
    if not at_once:
        assert got["remounted"]

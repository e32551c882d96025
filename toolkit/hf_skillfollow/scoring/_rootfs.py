"""The sandbox's minimal root filesystem, built in the harness's private mount namespace.

A fresh tmpfs becomes ``/`` (``pivot_root``); the host's tree is detached, so nothing of it
is reachable by any path, ``..`` or ``/proc/self/mountinfo``. Inside, read-only:

- the interpreter's import directories (standard library, ``lib-dynload``, site-packages)
  and the toolkit's ``scoring`` package, each at its host path so that already-imported
  modules keep resolving their lazy imports;
- the shared libraries (``/usr/lib``, ``/lib*``) and ``/etc/ld.so.cache``, which extension
  modules need;
- ``/dev/{null,zero,full,random,urandom}`` and the ``/dev/fd`` links; ``/proc`` of the
  sandbox's own PID namespace;
- writable: a private tmpfs at ``/tmp`` (holding the scratch dir) and at ``/dev/shm``.

Anything named in ``hide`` that lies inside an exposed directory (the expected-output cache,
benchmark data, Hugging Face caches) is covered by an empty read-only tmpfs. See
docs/sandbox.md for the table of what a program can see.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
from dataclasses import dataclass
from typing import Any

from hf_skillfollow.scoring._confine import (
    AT_FDCWD,
    KEEP_FLAGS,
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
    libc,
    mount,
    pivot_root,
)

_MOUNT_SETATTR, _AT_RECURSIVE, _MOUNT_ATTR_RDONLY = 442, 0x8000, 1
#: where the new root is assembled: a tmpfs mounted over this (always present) directory
_STAGE = "/tmp"
_DEVICES = ("null", "zero", "full", "random", "urandom")
_DEV_LINKS = {
    "fd": "/proc/self/fd",
    "stdin": "/proc/self/fd/0",
    "stdout": "/proc/self/fd/1",
    "stderr": "/proc/self/fd/2",
}
#: the program's cwd and $HOME, on the private /tmp
SCRATCH = "/tmp/sandbox"
#: the program's writable tmpfs mounts
_WRITABLE = ("/tmp", "/dev/shm")


@dataclass(frozen=True)
class RootSpec:
    """What the new root holds, as absolute host paths (see ``_sandbox.root_spec``)."""

    expose: tuple[str, ...]  # directories, bound read-only at the same path
    files: tuple[str, ...]  # single files, bound read-only at the same path
    links: tuple[tuple[str, str], ...]  # (path, target) symlinks such as /lib -> usr/lib
    hide: tuple[str, ...]  # covered by an empty read-only tmpfs where exposed

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RootSpec:
        """The spec from its JSON form (lists for tuples)."""
        return cls(
            **{k: tuple(tuple(x) if isinstance(x, list) else x for x in v) for k, v in data.items()}
        )


#: the static root this process lives in, built once by its zygote (``build``); each run
#: forked from it mounts only its own writable tmpfs and /proc (``enter``)
_prebuilt: RootSpec | None = None
#: why the zygote could not build its root (each run then fails with this reason)
build_failed: str | None = None


def prebuildable(spec: RootSpec) -> bool:
    """Whether ``spec``'s root can be built once per zygote: not where an exposed path lies
    inside a writable tmpfs (a venv under /tmp), which each run mounts afresh over it."""
    return not any(
        path.startswith(root + "/") for path in (*spec.expose, *spec.files) for root in _WRITABLE
    )


def build(spec: RootSpec) -> None:
    """Make the static part of ``spec``'s root (everything but the writable tmpfs and /proc,
    whose mount points stay empty) this process's ``/``: once per zygote, in a mount namespace
    of its own, so that each run forked from it copies the root with its namespace instead of
    assembling it. Needs CAP_SYS_ADMIN in the mount namespace."""
    global _prebuilt
    if not prebuildable(spec):
        raise ConfineError("this root has exposed paths inside a writable tmpfs")
    _assemble(spec, None)  # its pivot leaves the cwd at the new /
    _prebuilt = spec


def enter(spec: RootSpec, uid: int | None, tmp_bytes: int) -> None:
    """Make the minimal root this process's ``/`` and ``cwd`` its scratch dir, owned by
    ``uid`` (None: the current user). Needs CAP_SYS_ADMIN in the mount namespace. In a run
    forked from a zygote that built the root (``build``), in a new mount namespace: only the
    run's own writable tmpfs (``/proc`` is ``_zygote.become_init``'s)."""
    if build_failed is not None:
        raise ConfineError(build_failed)
    if _prebuilt is None:
        _assemble(spec, (uid, tmp_bytes))
    elif spec == _prebuilt:
        _writable("", uid, tmp_bytes)
        _cover_again(spec)
    else:  # the host replaces a zygote whose root is not the run's
        raise ConfineError("the run's root is not the one its zygote built")
    os.chdir(SCRATCH)


def _cover_again(spec: RootSpec) -> None:
    """Cover, in this run's namespace, each hidden path that the zygote's build left bare: one
    made since (an expected-output cache first written after the zygote started), or removed
    and made again (the kernel detaches the build's cover with the directory)."""
    for path in spec.hide:
        if not os.path.ismount(path):
            _cover("", path, spec.expose)


def _assemble(spec: RootSpec, run: tuple[int | None, int] | None) -> None:
    """Assemble the root on a stage tmpfs and pivot into it; with ``run`` (its uid and tmpfs
    size), with the run's writable tmpfs and /proc, otherwise their empty mount points."""
    mount("none", "/", None, MS_REC | MS_PRIVATE, None)
    own = ("/proc",) if run is not None else ()
    # Hold every source before the stage tmpfs covers /tmp (a venv may live there).
    held = {
        path: os.open(path, os.O_PATH | os.O_CLOEXEC)
        for path in (*spec.expose, *spec.files, *own, *(f"/dev/{d}" for d in _DEVICES))
        if os.path.lexists(path)
    }
    try:
        mount("tmpfs", _STAGE, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
        _populate(spec, held, run)
    finally:
        for fd in held.values():
            os.close(fd)
    _pivot(_STAGE)


def _writable(new: str, uid: int | None, tmp_bytes: int) -> None:
    """The run's private tmpfs at ``/tmp`` (with its scratch dir) and ``/dev/shm``."""
    writable = f"size={tmp_bytes},mode=1777"
    mount("tmpfs", new + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, writable)
    os.mkdir(new + SCRATCH, 0o700)
    if uid is not None:
        os.chown(new + SCRATCH, uid, uid)
    mount("tmpfs", new + "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, writable)


def _populate(spec: RootSpec, held: dict[str, int], run: tuple[int | None, int] | None) -> None:
    new = _STAGE
    for path in ("/tmp", "/dev", "/proc"):
        _mkdir(new + path)
    mount("tmpfs", new + "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755")
    for device in _DEVICES:
        if f"/dev/{device}" in held:
            _bind(held[f"/dev/{device}"], new + f"/dev/{device}", directory=False)
    for name, target in _DEV_LINKS.items():
        os.symlink(target, f"{new}/dev/{name}")
    os.mkdir(new + "/dev/shm")
    if run is not None:
        _writable(new, *run)
        _bind(held["/proc"], new + "/proc", directory=True)
    for path in (*spec.expose, *spec.files):
        _shield(new, path)
    for path in spec.expose:
        if path in held:
            _bind(held[path], new + path, directory=True)
    for path in spec.files:
        if path in held:
            _bind(held[path], new + path, directory=False)
    for path in spec.hide:
        _cover(new, path, spec.expose)
    for path, target in spec.links:
        if not os.path.lexists(new + path):
            os.symlink(target, new + path)
    if not _read_only_at_once(new, writable=run is not None):
        _all_read_only(new)


class _MountAttr(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("attr_set", "attr_clr", "propagation", "userns_fd")]


def _set_read_only(path: str, read_only: bool, recursive: bool) -> bool:
    """``mount_setattr(2)`` (Linux 5.12): False where the kernel lacks it."""
    attr = _MountAttr(
        _MOUNT_ATTR_RDONLY if read_only else 0, 0 if read_only else _MOUNT_ATTR_RDONLY, 0, 0
    )
    flags = _AT_RECURSIVE if recursive else 0
    rc = libc().syscall(
        _MOUNT_SETATTR, AT_FDCWD, path.encode(), flags, ctypes.byref(attr), ctypes.sizeof(attr)
    )
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EPERM) and read_only and recursive:
        return False
    raise ConfineError(f"mount_setattr {path}: {os.strerror(err)}")


def _read_only_at_once(new: str, writable: bool) -> bool:
    """Every mount of the new root read-only in one call, then (``writable``: they are
    mounted) the writable tmpfs and /proc writable again (not what is mounted inside them)."""
    if not _set_read_only(new, True, recursive=True):
        return False
    for path in (*_WRITABLE, "/proc") if writable else ():
        _set_read_only(new + path, False, recursive=False)
    return True


def _shield(new: str, path: str) -> None:
    """An exposed path inside a writable tmpfs (a venv or checkout under /tmp) gets a
    read-only tmpfs at its first component there: otherwise the program could rename the
    directories above the bind and plant modules where the judge imports from."""
    for root in _WRITABLE:
        if path.startswith(root + "/"):
            top = f"{new}{root}/{path[len(root) + 1 :].split('/')[0]}"
            if not os.path.ismount(top):
                _mkdir(top)
                mount("tmpfs", top, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755")


def _mkdir(path: str) -> None:
    # Only ever creates directories on the stage tmpfs: no exposed tree is bound above them yet
    # (``_sandbox`` orders ``expose`` so that no path lies inside another). ``os.makedirs``
    # without its per-level checks: most parents exist already.
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        pass
    except FileNotFoundError:
        _mkdir(os.path.dirname(path))
        os.mkdir(path, 0o755)


def _bind(fd: int, target: str, directory: bool) -> None:
    if directory:
        _mkdir(target)
    else:
        _mkdir(os.path.dirname(target))
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
    mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC, None)


def _cover(new: str, path: str, exposed: tuple[str, ...]) -> None:
    """Cover ``path`` (a directory or file inside an exposed tree) with emptiness."""
    inside = [e for e in exposed if path == e or path.startswith(e.rstrip("/") + "/")]
    if not inside or not os.path.lexists(new + path):
        return
    if os.path.isdir(new + path):
        flags = MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY
        mount("tmpfs", new + path, "tmpfs", flags, "size=4k,mode=0")
    else:
        mount(new + "/dev/null", new + path, None, MS_BIND, None)


def _all_read_only(new: str) -> None:
    """Remount every mount of the new root read-only except the writable tmpfs themselves
    (not what is mounted inside them) and /proc,
    keeping the flags a user namespace locks (nosuid, nodev, noexec, atime)."""
    writable = tuple(new + p for p in _WRITABLE)
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        points = [
            re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
            for line in fh
        ]
    for point in dict.fromkeys(points):
        if not (point == new or point.startswith(new + "/")):
            continue
        if point in writable or point == new + "/proc" or point.startswith(new + "/proc/"):
            continue
        try:
            flags = os.statvfs(point).f_flag
        except OSError:  # a host mount the stage covers: not part of the new root
            continue
        keep = sum(ms for st, ms in KEEP_FLAGS.items() if flags & st)
        mount("none", point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | keep, None)


def _pivot(new_root: str) -> None:
    """``new_root`` becomes ``/``; the old root is stacked on it by ``pivot_root(".", ".")``
    and detached, so no path leads back to the host."""
    os.chdir(new_root)
    pivot_root(".", ".")
    if libc().umount2(b".", MNT_DETACH) != 0:
        raise ConfineError(f"umount old root: {os.strerror(ctypes.get_errno())}")
    os.chdir("/")

"""The one rule for opening a data file someone else wrote: only a regular file is read.

A FIFO named `x.parquet` in a local source blocks whoever opens it for reading until a
writer comes (forever, on a board); a device never ends. Every reader of rows files (local
sources, run directories, results repo folders, the read budget) asks `regular_file` first.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path


class NotRegularFile(OSError):
    """A path that names a FIFO, device, socket or folder where a data file was expected."""


def regular_file(path: str | os.PathLike[str]) -> Path:
    """`path` when it names a regular file (a symlink to one counts); NotRegularFile naming it
    otherwise. The check opens without blocking (`O_NONBLOCK`: a FIFO opens at once) and asks
    the open file, so a FIFO is told apart before any reader blocks on it."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
    finally:
        os.close(fd)
    if not stat.S_ISREG(mode):
        kind = (
            "a FIFO" if stat.S_ISFIFO(mode) else "a folder" if stat.S_ISDIR(mode) else "not a file"
        )
        raise NotRegularFile(f"{path}: {kind}, not a regular file; only regular files are read")
    return Path(path)


class OutsideSource(OSError):
    """A path in a published folder that leads, through a symbolic link, out of that folder."""


def inside(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> Path:
    """`path` when it, every link resolved, stays inside the folder `root`; OutsideSource
    naming the link otherwise. A published folder (a results repo cloned with git, a folder
    of runs) is its publisher's: a link in it to a file elsewhere on this machine would show
    that file's rows under the publisher's name."""
    return _inside(path, root, os.path.realpath(root))


def inside_all(paths: Iterable[str | os.PathLike[str]], root: str | os.PathLike[str]) -> list[Path]:
    """`inside` for each of `paths` (one listing of `root`), in order: the root resolved once
    for the listing, not once a file (a third of the check's time on a 12,500-file source).
    Not cached across calls: a root that is a link may be swapped between two listings, and
    a root resolved earlier would then let in links to the folder it named before."""
    top = os.path.realpath(root)
    return [_inside(path, root, top) for path in paths]


def _inside(path: str | os.PathLike[str], root: str | os.PathLike[str], top: str) -> Path:
    real = os.path.realpath(path)
    if real != top and os.path.commonpath([real, top]) != top:
        raise OutsideSource(
            f"{path}: a symbolic link out of {root} (to {real}); only files inside a source "
            "are read"
        )
    return Path(path)

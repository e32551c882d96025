"""Write a verification's records: one parquet file per verified run (see `_record`).

A record's file name holds the run id and its default folder is `RUN_DIR/verifications/`,
both from a source someone else published. So a run id that is not one plain file-name part
is refused before any answer is scored, and the record folder is opened without following a
symbolic link in its last part: a planted `RUN_DIR/verifications -> elsewhere` is an error,
never a way to write elsewhere. The file itself is created exclusively, also without
following links.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

import pyarrow as pa

from hf_skillfollow.schema import SCHEMA_VERSION, verifications_from_rows
from hf_skillfollow.verify._core import Verification
from hf_skillfollow.verify._record import record_bytes, record_name

#: a run id names a record file: no separators, NUL or other control characters, not a dot name
_MAX_RUN_ID = 200


def check_run_id(run_id: str, source: str) -> None:
    """ValueError naming the source when `run_id` cannot be one part of a file name."""
    problem = None
    if not run_id or run_id in (".", ".."):
        problem = "is empty or a dot name"
    elif "/" in run_id or "\\" in run_id:
        problem = "contains a path separator"
    elif any(ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 for ch in run_id):
        problem = "contains NUL or another control character"
    elif len(run_id.encode()) > _MAX_RUN_ID:
        problem = f"is longer than {_MAX_RUN_ID} bytes"
    if problem:
        raise ValueError(
            f"{source}: run_id {run_id!r} {problem}, so it cannot name a verification record "
            "file; verify with --no-record to check its rows without writing one"
        )


def check_record_folder(folder: Path) -> None:
    """ValueError when `folder` is a symbolic link (or exists and is not a folder)."""
    if folder.is_symlink():
        raise ValueError(
            f"{folder} is a symbolic link (to {os.readlink(folder)}); records are never written "
            "through one: remove it or pass --record-dir"
        )
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} exists and is not a folder; pass --record-dir")


def record_tables(v: Verification) -> dict[str, pa.Table]:
    """run_id -> that run's record table, rows in task order."""
    by_run: dict[str, list[dict[str, object]]] = {}
    for r in sorted(v.checked, key=lambda r: (r.run_id, r.task_id)):
        by_run.setdefault(r.run_id, []).append(
            {
                "schema_version": SCHEMA_VERSION,
                **v.provenance(),
                "benchmark": r.benchmark,
                "benchmark_version": r.benchmark_version,
                "benchmark_release": v.releases.get(r.benchmark_version, r.benchmark_version),
                "run_id": r.run_id,
                "cell_id": r.cell_id,
                "task_id": r.task_id,
                **{f"{arm}_{k}": getattr(c, k) for arm, c in r.arms.items() for k in ("recorded", "rescored", "reason")},
            }
        )  # fmt: skip
    return {
        run: verifications_from_rows(rows, f"verification {v.verification_id}")
        for run, rows in by_run.items()
    }


def write_records(v: Verification, folder_of_run: dict[str, Path]) -> list[Path]:
    """Write each run's record into its folder (never over an existing file); return the paths.

    All or none: every record is first written whole under a temporary name, and only then
    does each take its own name, so a `verify` that fails or is killed while writing leaves
    no record (a failure after some took their names removes those again): running `verify`
    once more (the verdicts come from its state file) writes each run's record once, not a
    second record of the runs that had one."""
    staged: list[tuple[Path, str, str]] = []  # (folder, temporary name, record name)
    written: list[Path] = []
    try:
        for run_id, table in record_tables(v).items():
            folder = folder_of_run[run_id]
            check_run_id(run_id, str(folder))
            name = record_name(v.verification_id, run_id)
            staged.append((folder, _stage(folder, name, record_bytes(table)), name))
        for folder, temp, name in staged:
            _publish(folder, temp, name)
            written.append(folder / name)
    except BaseException:
        for path in written:
            _remove(path.parent, path.name)
        raise
    finally:
        for folder, temp, _ in staged:
            _remove(folder, temp)
    return written


def _remove(folder: Path, name: str) -> None:
    """Remove a file this verification wrote, through its folder opened without following
    a link (as it was written); what cannot be removed stays, the error says the rest."""
    with contextlib.suppress(OSError):
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            os.unlink(name, dir_fd=dir_fd)
        finally:
            os.close(dir_fd)


def _write_new(folder: Path, name: str, data: bytes) -> None:
    """One record written alone, as `write_records` writes each (staged, then published)."""
    temp = _stage(folder, name, data)
    try:
        _publish(folder, temp, name)
    finally:
        _remove(folder, temp)


def _open_folder(folder: Path) -> int:
    """`folder` opened without following a link in its last part."""
    try:
        return os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:  # ELOOP: a link planted between the check and now; ENOTDIR
        raise ValueError(f"{folder}: not a plain folder ({exc.strerror})") from None


def _stage(folder: Path, name: str, data: bytes) -> str:
    """Write `data` whole under a temporary name beside `folder/name`; return that name. The
    folder's last part and the file are never links; an existing `name` is refused."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):  # then it must be a plain folder, checked next
        folder.mkdir()
    dir_fd = _open_folder(folder)
    try:
        if _exists(name, dir_fd):  # a verification id is new: never written over, nor a link
            raise FileExistsError(f"{folder / name} exists")
        temp = f".{name}.{os.getpid()}.partial"
        _create(temp, data, dir_fd)
        return temp
    finally:
        os.close(dir_fd)


def _publish(folder: Path, temp: str, name: str) -> None:
    """Give the whole temporary `temp` its record name: link(2), which never replaces a file."""
    dir_fd = _open_folder(folder)
    try:
        try:
            os.link(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
        except OSError as exc:
            if exc.errno not in _NO_HARD_LINKS:
                raise
            # A filesystem without hard links (FAT, exFAT, some network and FUSE mounts):
            # copied in place, still exclusively, and removed when that write fails.
            fd = os.open(temp, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
            with os.fdopen(fd, "rb") as fh:
                _create(name, fh.read(), dir_fd)
    finally:
        os.close(dir_fd)


#: link(2) errors that mean the filesystem has no hard links, not that the write failed
_NO_HARD_LINKS = frozenset({errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS})


def _create(name: str, data: bytes, dir_fd: int) -> None:
    """Create `name` (never an existing file, never through a link) holding `data`, synced;
    a write that fails part-way removes what it created."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    fd = os.open(name, flags, 0o644, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dir_fd)
        raise


def _exists(name: str, dir_fd: int) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True

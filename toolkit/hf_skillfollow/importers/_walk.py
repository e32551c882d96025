"""Bounded, symlink-safe reading of third-party trial folders.

Trial folders are untrusted: a walk visits at most `MAX_ENTRIES` entries, `MAX_DEPTH` levels
down, never follows a symbolic link out of the folder it was given, and opens only regular
files (a FIFO or a device is never opened for reading, so it cannot block the import). JSON
is read up to `MAX_JSON_BYTES` and refused past `MAX_JSON_DEPTH` levels of nesting. Every
refusal is an `ImportInputError` of one line naming the file (and the field, where one is
at fault).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hf_skillfollow._escape import visible_controls
from hf_skillfollow.importers._base import ImportInputError

MAX_DEPTH = 12
MAX_ENTRIES = 200_000
MAX_JSON_BYTES = 16 * 1024 * 1024
MAX_JSON_DEPTH = 64


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):
        return False
    return True


def given_path(path: Path, flag: str) -> Path:
    """A path given on the command line: it must exist and be a folder or a regular file."""
    if not path.exists():
        if path.is_symlink():
            raise ImportInputError(f"{flag} {path}: a symbolic link that leads nowhere (a loop or "
                                   "a missing target)")  # fmt: skip
        raise ImportInputError(f"{flag} {path}: no such file or folder")
    if not (path.is_dir() or path.is_file()):
        raise ImportInputError(f"{flag} {path}: not a folder or a regular file")
    return path


#: What a trial folder holds from its start (Harbor's and BenchFlow's `config.json`, then an
#: `agent/`, `verifier/` or `trajectory/` folder), before its result is written.
_TRIAL_CONFIG = "config.json"
_TRIAL_FOLDERS = frozenset({"agent", "verifier", "trajectory"})


def walk_files(root: Path, name: str, lacking: list[Path] | None = None) -> Iterator[Path]:
    """Every regular file called `name` under `root` (or `root` itself), sorted, bounded.

    A symbolic link whose target leaves `root` is skipped; one that stays inside is followed
    (as a file only: folders are entered only when they are real folders, so no cycle).
    `lacking`: each folder that looks like a trial's (`config.json` and an `agent/`,
    `verifier/` or `trajectory/` folder) but holds no `name` is appended to it: a trial killed
    before it wrote its result, which would otherwise be passed over without a word.
    """
    if root.is_file():
        if root.name == name:
            yield root
        return
    seen = 0
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        entries = listing(folder, MAX_ENTRIES - seen, root)
        seen += len(entries)
        if lacking is not None and _lacks(entries, name):
            lacking.append(folder)
        for entry in sorted(entries, key=lambda e: e.name, reverse=True):
            path = Path(entry.path)
            if entry.is_dir(follow_symlinks=False):
                if depth + 1 > MAX_DEPTH:
                    raise ImportInputError(f"{path}: nested more than {MAX_DEPTH} levels deep")
                stack.append((path, depth + 1))
            elif entry.name == name:
                if entry.is_symlink() and not _inside(path, root):
                    continue  # a link out of the given folder is never read
                yield path


def _lacks(entries: list[os.DirEntry[str]], name: str) -> bool:
    """Whether a folder of `entries` is a trial's folder without its `name` (result.json)."""
    names = {e.name for e in entries}
    if name in names or _TRIAL_CONFIG not in names or not names & _TRIAL_FOLDERS:
        return False
    return any(e.name in _TRIAL_FOLDERS and e.is_dir(follow_symlinks=False) for e in entries)


def listing(
    folder: Path, budget: int, root: Path, hint: str = "; give the job or trial folders themselves"
) -> list[os.DirEntry[str]]:
    """The entries of `folder`, refused (naming `root`) past `budget` of them: read one by one,
    so a folder of millions of entries costs no more than the bound, never listed whole."""
    try:
        with os.scandir(folder) as found:
            entries = list(itertools.islice(found, max(budget, 0) + 1))
    except OSError as exc:
        raise ImportInputError(f"{folder}: cannot list the folder ({exc.strerror})") from None
    if len(entries) > budget:
        raise ImportInputError(f"{root}: more than {MAX_ENTRIES:,} entries{hint}")
    return entries


def existing_files(folder: Path, *names: str) -> tuple[Path, ...]:
    """Those of `names` (relative paths) that are regular files inside `folder`, in order."""
    return tuple(
        path for path in (folder / name for name in names)
        if path.is_file() and _inside(path, folder)
    )  # fmt: skip


def find_file(folder: Path, *names: str) -> Path | None:
    """The first of `names` (relative paths) that is a regular file inside `folder`."""
    return next(iter(existing_files(folder, *names)), None)


def read_bytes(path: Path, limit: int, root: Path) -> bytes:
    """At most `limit` bytes of a regular file (refused past the limit), never following a
    link out of `root` and never opening a FIFO, socket or device for reading."""
    from hf_skillfollow.transcripts._reader import TranscriptError, read_bounded

    try:
        return read_bounded(path, root, limit, visible_controls(str(path)))
    except TranscriptError as exc:
        raise ImportInputError(str(exc)) from None


def read_json(path: Path, root: Path) -> Any:
    """The JSON document in `path` (bounded size, nesting counted before parsing)."""
    from hf_skillfollow.transcripts._reader import loads_bounded

    data = read_bytes(path, MAX_JSON_BYTES, root)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ImportInputError(f"{path}: not UTF-8 (byte {exc.start})") from None
    try:
        return loads_bounded(text, str(path), MAX_JSON_DEPTH)
    except ValueError as exc:
        raise ImportInputError(str(exc)) from None


def field(
    data: Any,
    path: Path,
    *keys: str,
    kind: type | tuple[type, ...] | None = None,
    required: bool = False,
    max_chars: int | None = None,
) -> Any:
    """`data[k1][k2]...`, None when absent; a wrong type is an error naming file and field.

    A JSON `true` is no number: `bool` matches only a `kind` that names it. `max_chars`: a
    longer string is an error too (a value every row or the manifest keeps whole)."""
    value = data
    for key in keys:
        if not isinstance(value, dict) or value.get(key) is None:
            if required:
                raise ImportInputError(f"{path}: field {'.'.join(keys)!r} is missing")
            return None
        value = value[key]
    if kind is None:
        return value
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        want = "/".join(k.__name__ for k in kinds)
        raise ImportInputError(
            f"{path}: field {'.'.join(keys)!r} is a {type(value).__name__}, expected {want}"
        )
    if max_chars is not None and isinstance(value, str) and len(value) > max_chars:
        raise ImportInputError(
            f"{path}: field {'.'.join(keys)!r} is longer than {max_chars} characters"
        )
    return value

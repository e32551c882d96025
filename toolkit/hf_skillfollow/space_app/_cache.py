"""The board's computed cells on disk, keyed by what they were computed from.

A start whose sources have not changed reads the cells it computed last time (one small
parquet file) instead of loading every row and recomputing every bootstrap; the rows are then
read only when a drill-down or "runs separately" needs them (`_board.Board`).

The key is a digest of: every source's revision (a Hub repo's commit sha; for a local path,
the name, size and mtime of every file below it), the bootstrap resamples, and the source
code of the toolkit itself, so a changed row, a new push or a new toolkit version computes
everything again from rows. Only numbers this board computed from rows are ever stored: the
per-run counts a submitter publishes in `stats/` are never read (docs/space.md, "Start-up
cache"). A source whose revision cannot be told (the Hub unreachable) disables the cache for
that start. Reading or writing the cache never fails the board: a broken entry is recomputed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from hf_skillfollow.space_app._sources import is_local

ENV_CACHE = "SKILLFOLLOW_BOARD_CACHE"
#: Bumped when the layout of an entry changes.
FORMAT = 2
#: Entries kept; each holds the cells of one set of revisions (a few MB at 12,500 cells).
KEEP = 8
_OFF = {"0", "off", "false", "no", "none"}  # "" is not off: unset means the default
_CELLS, _META = "cells.parquet", "meta.json"
_PACKAGE = Path(__file__).resolve().parents[1]


@dataclass
class Entry:
    """What a start needs before the first page: the decorated cells and the load's results."""

    pooled: pd.DataFrame
    warnings: list[str] = field(default_factory=list)
    loaded: list[str] = field(default_factory=list)


def cache_dir() -> Path | None:
    """`SKILLFOLLOW_BOARD_CACHE` (a folder, or 0/off); else beside the Hub cache when `HF_HOME`
    is set (a Space with persistent storage sets it to /data/...); else the user cache folder."""
    raw = os.environ.get(ENV_CACHE, "").strip()
    if raw.lower() in _OFF:
        return None
    if raw:
        return Path(raw).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "skillfollow-board"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "hf_skillfollow" / "board"


def board_key(sources: Sequence[str], resamples: int) -> str | None:
    """The entry's name for these sources now, or None when a revision cannot be told."""
    from concurrent.futures import ThreadPoolExecutor

    # One Hub round trip per repo: asked side by side, not one after another.
    with ThreadPoolExecutor(max_workers=min(8, max(1, len(sources)))) as pool:
        found = list(pool.map(source_revision, sources))
    if any(r is None for r in found):
        return None
    revisions = [[s, r] for s, r in zip(sources, found, strict=True)]
    material = {
        "format": FORMAT,
        "resamples": resamples,
        "sources": revisions,
        "code": code_digest(),
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:32]


def source_revision(source: str) -> str | None:
    """A Hub repo's commit sha, or a digest of a local path's files (name, size, mtime)."""
    if not is_local(source):
        return _hub_sha(source)
    path = Path(source).expanduser()
    if not path.exists():
        return "missing"
    digest = hashlib.sha256()
    for name, stat in _files(path):
        digest.update(f"{name}\0{stat.st_size}\0{stat.st_mtime_ns}\0{stat.st_ino}\n".encode())
    return digest.hexdigest()


def _files(path: Path) -> list[tuple[str, os.stat_result]]:
    if path.is_file():
        return [(path.name, path.stat())]
    out = []
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))  # .git, .cache: not data
        for name in sorted(files):
            full = os.path.join(root, name)
            out.append((os.path.relpath(full, path), _stat(full)))
    return out


def _stat(path: str) -> os.stat_result:
    """The file's stat, or the link's own when it points nowhere (a dangling symlink is the
    source's problem to report when it is read, never a reason for the board not to start)."""
    try:
        return os.stat(path)
    except OSError:
        return os.lstat(path)


def _hub_sha(repo_id: str) -> str | None:
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}:
        return None
    try:
        from huggingface_hub import HfApi

        return HfApi().dataset_info(repo_id, timeout=10).sha
    except Exception:  # unreachable or private: no cache this start, the rows still load
        return None


_CODE: list[str] = []


def code_digest() -> str:
    """Digest of the toolkit's source files: new code never reads numbers the old code made."""
    if not _CODE:
        digest = hashlib.sha256()
        for file in sorted(_PACKAGE.rglob("*.py")):
            digest.update(str(file.relative_to(_PACKAGE)).encode() + b"\0" + file.read_bytes())
        _CODE.append(digest.hexdigest())
    return _CODE[0]


def read(key: str | None) -> Entry | None:
    """The entry named `key`, or None (no cache, no entry, or an unreadable one)."""
    folder = _entry(key)
    if folder is None or not (folder / _META).is_file():
        return None
    try:
        meta = json.loads((folder / _META).read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT:
            return None
        pooled = pd.read_parquet(folder / _CELLS)
    except Exception:  # a torn or foreign entry: recompute rather than fail
        return None
    return Entry(pooled, list(meta["warnings"]), list(meta["loaded"]))


def write(key: str | None, entry: Entry) -> None:
    """Store `entry` under `key`, atomically (a reader sees a whole entry or none)."""
    folder = _entry(key)
    if folder is None:
        return
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder.parent))
    except OSError:  # a read-only disk costs the next start time, nothing else
        return
    try:
        entry.pooled.to_parquet(tmp / _CELLS, index=False)
        meta = {
            "format": FORMAT,
            "warnings": entry.warnings,
            "loaded": entry.loaded,
        }
        (tmp / _META).write_text(json.dumps(meta), encoding="utf-8")
        tmp.rename(folder)  # fails when another process wrote the same entry first
    except Exception:  # full disk, a value parquet cannot hold: the next start recomputes
        shutil.rmtree(tmp, ignore_errors=True)
        return
    _prune(folder.parent, keep=folder)


def _prune(root: Path, keep: Path, entries: int = KEEP) -> None:
    """Drop all but the `entries` newest entries (old revisions are never read again)."""
    try:
        found = sorted(
            (p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")),
            key=lambda p: p.stat().st_mtime_ns,
            reverse=True,
        )
    except OSError:
        return
    for old in found[entries:]:
        if old != keep:
            shutil.rmtree(old, ignore_errors=True)


def _entry(key: str | None) -> Path | None:
    root = cache_dir()
    return None if key is None or root is None else root / key

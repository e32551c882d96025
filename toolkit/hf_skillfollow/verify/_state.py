"""Resumable verification: every re-scored verdict is appended to a local state file at once.

A verdict is a function of (scorer version, benchmark release, task, answer text), so the state
is keyed by a digest of exactly those: an interrupted `verify` resumes without re-scoring,
re-verifying a re-published run re-scores only answers never seen, and a changed recorded bit
(the thing being checked) never hides behind a stale entry, because the comparison with the
recorded bits is redone on every run.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

from hf_skillfollow._dirs import cache_root
from hf_skillfollow._text import safe_text


def default_state_path(sources: list[str]) -> Path:
    """One state file per set of sources, under the toolkit's cache folder."""
    base = cache_root()
    names = sorted(str(Path(s).expanduser().resolve()) if Path(s).expanduser().exists() else s
                   for s in sources)  # fmt: skip
    digest = hashlib.sha256("\0".join(names).encode()).hexdigest()[:16]
    return base / "verify" / f"{digest}.jsonl"


def answer_key(scorer_version: str, benchmark_version: str, task_id: str, answer: str) -> str:
    parts = (scorer_version, benchmark_version, task_id, answer)
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


class VerifyState:
    """The state file: read once, then appended to (thread-safe) as verdicts arrive."""

    def __init__(self, path: Path, *, fresh: bool = False) -> None:
        self.path = path
        self.done: dict[str, dict[str, Any]] = {} if fresh else _read(path)
        self._fresh = fresh
        self._lock = threading.Lock()
        self._fh: Any = None

    def __enter__(self) -> VerifyState:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _drop_torn_tail(self.path)
        # Appended to (O_APPEND) unless --fresh: two verifies of the same sources that both
        # found no state would otherwise each write from offset 0, over the other's lines.
        self._fh = open(self.path, "w" if self._fresh else "a", encoding="utf-8")  # noqa: SIM115
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()

    def add(self, key: str, passed: bool, reason: str) -> None:
        entry = {"passed": passed, "reason": safe_text(reason)}  # UTF-8 safe (_text)
        line = json.dumps({"key": key, **entry}, ensure_ascii=False) + "\n"
        with self._lock:
            self.done[key] = entry
            # Flushed at once: a verdict costs a sandboxed run or judge requests, a write(2) is
            # nothing beside it, and a killed verify then re-scores no answer it had scored.
            self._fh.write(line)
            self._fh.flush()


def _read(path: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
            out[entry["key"]] = {"passed": bool(entry["passed"]), "reason": str(entry["reason"])}
        except (ValueError, KeyError, TypeError):
            continue  # a torn line from an interrupted run: that answer is simply re-scored
    return out


def _drop_torn_tail(path: Path) -> None:
    if not path.is_file():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as fh:
            fh.truncate(data.rfind(b"\n") + 1)

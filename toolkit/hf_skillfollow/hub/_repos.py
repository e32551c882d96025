"""The two kinds of results repo a push appends to: a local folder and a Hub dataset repo."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hf_skillfollow.hub._layout import CARD_PATH

REPO_TYPE = "dataset"
BRANCH = "main"


class LocalRepoFolder:
    """A results repo as a plain folder (what `--dry-run DIR` writes)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.name = str(root)
        self._paths: set[str] | None = None  # listed once per locked round, reset by write()

    def paths(self) -> set[str]:
        if self._paths is None:
            self._paths = self._list()
        return set(self._paths)

    def _list(self) -> set[str]:
        if not self.root.is_dir():
            return set()
        out: set[str] = set()
        # os.walk, not Path.rglob: a repo of 10^4 runs is listed on every push.
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = [d for d in dirnames if d != ".git"]
            rel = os.path.relpath(dirpath, self.root)
            prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
            out.update(prefix + f for f in filenames)
        return out

    def read(self, path: str) -> bytes:
        return (self.root / path).read_bytes()

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive lock of the folder for one read-plan-write round (other processes wait).

        flock on the directory itself: no lock file lands in the repo, and the kernel drops
        the lock when a killed push's descriptor closes.
        """
        import fcntl

        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._paths = None  # another process may have written while we waited
            yield
        finally:
            os.close(fd)

    def write(self, files: dict[str, bytes]) -> None:
        self._paths = None
        # Data files first and the card last, each via rename: an interrupted write leaves
        # no half file, and the card never describes rows that are not there yet.
        for path, data in sorted(files.items(), key=lambda item: item[0] == CARD_PATH):
            target = self.root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, target)


class HubRepo:
    """A results repo on the Hub, read through an `HfApi` (or a double with the same methods)."""

    def __init__(self, api: Any, repo_id: str) -> None:
        self.api = api
        self.repo_id = repo_id
        self.name = f"hf://datasets/{repo_id}"
        self.head = _head_sha(api, repo_id)
        self._paths = set(api.list_repo_files(repo_id, repo_type=REPO_TYPE, revision=self.head))
        self._read: dict[str, bytes] = {}

    def paths(self) -> set[str]:
        return set(self._paths)

    def read(self, path: str) -> bytes:
        if path not in self._read:
            local = self.api.hf_hub_download(
                repo_id=self.repo_id, filename=path, repo_type=REPO_TYPE, revision=self.head
            )
            self._read[path] = Path(local).read_bytes()
        return self._read[path]


def _head_sha(api: Any, repo_id: str) -> str | None:
    # Pinning reads and the commit to one revision makes a concurrent push fail instead of
    # silently racing past our idempotence checks.
    # An explicit revision: the branch create_commit writes to (and the route mirrors serve).
    return getattr(api.repo_info(repo_id, repo_type=REPO_TYPE, revision=BRANCH), "sha", None)

"""The two kinds of results repo a push appends to: a local folder and a Hub dataset repo."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hf_skillfollow.hub._layout import CARD_PATH

REPO_TYPE = "dataset"
BRANCH = "main"


class Listing:
    """A repo's paths, indexed once by folder: a push asks for one folder's files several
    times, and a repo of 10^4 runs should not be scanned (or copied) for each question."""

    def __init__(self, by_folder: dict[str, list[str]]) -> None:
        self._by_folder = by_folder  # folder ("" for the root) -> paths directly inside it
        self._sorted: set[str] = set()
        self._paths: frozenset[str] | None = None

    @classmethod
    def of(cls, paths: Iterable[str]) -> Listing:
        by_folder: dict[str, list[str]] = {}
        for path in paths:
            by_folder.setdefault(path.rpartition("/")[0], []).append(path)
        return cls(by_folder)

    def exists(self, path: str) -> bool:
        if self._paths is None:
            self._paths = frozenset(p for files in self._by_folder.values() for p in files)
        return path in self._paths

    def files_in(self, folder: str) -> list[str]:
        """Paths directly inside `folder` (no subfolders), in name order; do not modify."""
        files = self._by_folder.get(folder, [])
        if folder not in self._sorted:
            files.sort()
            self._sorted.add(folder)
        return files


class LocalRepoFolder:
    """A results repo as a plain folder (what `--dry-run DIR` writes).

    Only the folders a push asks about are listed (once per locked round), and single paths
    are checked on disk: a push into a repo of 10^4 runs lists their one folder, not the tree.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.name = str(root)
        self._listed: dict[str, list[str]] = {}  # reset by locked() and write()

    def exists(self, path: str) -> bool:
        return os.path.isfile(self.root / path)

    def files_in(self, folder: str) -> list[str]:
        """Files directly inside `folder`, in name order; do not modify."""
        if folder not in self._listed:
            self._listed[folder] = _files_in(self.root / folder, folder)
        return self._listed[folder]

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
            self._listed = {}  # another process may have written while we waited
            yield
        finally:
            os.close(fd)

    def write(self, files: dict[str, bytes]) -> None:
        self._listed = {}
        # Data files first and the card last, each via rename: an interrupted write leaves
        # no half file, and the card never describes rows that are not there yet.
        for path, data in sorted(files.items(), key=lambda item: item[0] == CARD_PATH):
            target = self.root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, target)


def _files_in(directory: Path, folder: str) -> list[str]:
    """Repo paths of the entries directly in `directory` (none if it is missing), sorted.

    A data folder holds files only (push writes nothing else there), and listdir without
    a type check per entry is what listing the transitions folder of 10^4 runs should cost.
    """
    prefix = folder + "/" if folder else ""
    try:
        return [prefix + name for name in sorted(os.listdir(directory))]
    except (FileNotFoundError, NotADirectoryError):
        return []


class HubRepo:
    """A results repo on the Hub, read through an `HfApi` (or a double with the same methods)."""

    def __init__(self, api: Any, repo_id: str) -> None:
        self.api = api
        self.repo_id = repo_id
        self.name = f"hf://datasets/{repo_id}"
        self.head = _head_sha(api, repo_id)
        self._listing = Listing.of(
            api.list_repo_files(repo_id, repo_type=REPO_TYPE, revision=self.head)
        )
        self._read: dict[str, bytes] = {}

    def exists(self, path: str) -> bool:
        return self._listing.exists(path)

    def files_in(self, folder: str) -> list[str]:
        return self._listing.files_in(folder)

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

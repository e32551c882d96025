"""The two kinds of results repo a push appends to: a local folder and a Hub dataset repo."""

from __future__ import annotations

import os
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

    def paths(self) -> set[str]:
        if not self.root.is_dir():
            return set()
        return {
            p.relative_to(self.root).as_posix()
            for p in self.root.rglob("*")
            if p.is_file() and ".git" not in p.parts
        }

    def read(self, path: str) -> bytes:
        return (self.root / path).read_bytes()

    def write(self, files: dict[str, bytes]) -> None:
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

    def paths(self) -> set[str]:
        return set(self._paths)

    def read(self, path: str) -> bytes:
        local = self.api.hf_hub_download(
            repo_id=self.repo_id, filename=path, repo_type=REPO_TYPE, revision=self.head
        )
        return Path(local).read_bytes()


def _head_sha(api: Any, repo_id: str) -> str | None:
    # Pinning reads and the commit to one revision makes a concurrent push fail instead of
    # silently racing past our idempotence checks.
    # An explicit revision: the branch create_commit writes to (and the route mirrors serve).
    return getattr(api.repo_info(repo_id, repo_type=REPO_TYPE, revision=BRANCH), "sha", None)

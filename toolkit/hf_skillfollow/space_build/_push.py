"""`push_space`: create or update a Gradio Space from a freshly built folder, through `HfApi`."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_skillfollow.space_build._folder import ENV_SOURCES, SpaceBuildError, build_space

log = logging.getLogger("hf_skillfollow.space")
REPO_TYPE = "space"


@dataclass
class SpacePushResult:
    space_id: str
    sources: list[str]
    commit_url: str | None
    url: str


def push_space(
    space_id: str,
    sources: Sequence[str],
    *,
    token: str | None = None,
    private: bool = False,
    api: Any = None,
) -> SpacePushResult:
    """Build the Space folder and upload it; running it again with the same input changes nothing.

    The sources also become the Space variable SKILLFOLLOW_SOURCES, so they can be changed in
    the Space settings without a rebuild. Vendored modules the toolkit no longer needs are
    deleted from the Space by the same commit.
    """
    from hf_skillfollow.hub._secrets import refuse_token_in, scrubbed

    parts = space_id.split("/")
    if len(parts) != 2 or not all(parts):
        raise SpaceBuildError(f"SPACE {space_id!r}: expected ORG/NAME (a Hub Space repo id)")
    with tempfile.TemporaryDirectory(prefix="skillfollow-space-") as tmp:
        built = build_space(Path(tmp), sources)
        files = {
            p.relative_to(tmp).as_posix(): p.read_bytes()
            for p in Path(tmp).rglob("*")
            if p.is_file()
        }
        refuse_token_in(files, token)
        with scrubbed(token):
            api = api if api is not None else _hf_api(token)
            api.create_repo(
                space_id, repo_type=REPO_TYPE, space_sdk="gradio", private=private, exist_ok=True
            )
            # Before the upload, so the build the upload triggers already sees the sources.
            api.add_space_variable(
                space_id,
                ENV_SOURCES,
                ",".join(built.sources),
                description="Hub dataset repos the leaderboard loads (comma-separated)",
            )
            info = api.upload_folder(
                repo_id=space_id,
                repo_type=REPO_TYPE,
                folder_path=tmp,
                commit_message=f"Deploy skillfollow leaderboard over {', '.join(built.sources)}",
                delete_patterns=["hf_skillfollow/**"],
            )
    url = f"https://huggingface.co/spaces/{space_id}"
    log.info("%s: uploaded %d file(s)", url, len(files))
    return SpacePushResult(space_id, built.sources, _commit_url(info), url)


def _commit_url(info: Any) -> str | None:
    return getattr(info, "commit_url", None) or (info if isinstance(info, str) else None)


def _hf_api(token: str | None) -> Any:
    from huggingface_hub import HfApi

    return HfApi(token=token)

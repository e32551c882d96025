"""`hf-skillfollow space build|push`: the leaderboard as a self-contained Hugging Face Space."""

from __future__ import annotations

from pathlib import Path

import click

from hf_skillfollow.cli._echo import echo
from hf_skillfollow.cli._push import token_option

_SOURCES_HELP = "Hub dataset repo id(s) the board loads, comma-separated (ORG/NAME[,ORG/NAME2])."


def _split(text: str) -> list[str]:
    return [s.strip() for s in text.split(",") if s.strip()]


@click.group("space")
def space() -> None:
    """Build or deploy the leaderboard Space (see docs/space.md)."""


@space.command("build")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.option("--sources", default="", metavar="ORG/NAME[,...]", help=_SOURCES_HELP)
@click.option(
    "--discover",
    is_flag=True,
    help="Also load every public Hub dataset tagged 'skillfollow', found at each start "
    "(a community board; with no --sources, the only sources).",
)
def build(folder: Path, sources: str, discover: bool) -> None:
    """Write a complete Space folder into FOLDER: README.md, app.py, requirements.txt, toolkit."""
    from hf_skillfollow.space_build import build_space
    from hf_skillfollow.space_build._folder import SpaceBuildError

    try:
        built = build_space(folder, _split(sources), discover=discover)
    except SpaceBuildError as exc:
        raise click.ClickException(str(exc)) from None
    echo(f"{built.folder}: Space folder for {built.describe()}")
    echo(f"  gradio {built.gradio_version}; {len(built.requirements)} pinned requirement(s)")
    echo(f"  {len(built.vendored)} toolkit module(s) vendored in hf_skillfollow/")


@space.command("push")
@click.argument("space_id", metavar="ORG/NAME")
@click.option("--sources", required=True, metavar="ORG/NAME[,...]", help=_SOURCES_HELP)
@token_option
@click.option(
    "--private", is_flag=True, help="Create the Space as private (no effect on an existing one)."
)
def push(space_id: str, sources: str, token: str | None, private: bool) -> None:
    """Create or update the Space ORG/NAME (gradio SDK) with a freshly built folder."""
    from hf_skillfollow.hub import HubError
    from hf_skillfollow.space_build import push_space
    from hf_skillfollow.space_build._folder import SpaceBuildError

    try:
        result = push_space(space_id, _split(sources), token=token, private=private)
    except (SpaceBuildError, HubError) as exc:
        raise click.ClickException(str(exc)) from None
    echo(f"{result.url}: deployed over {', '.join(result.sources)}")
    if result.commit_url:
        echo(f"  commit: {result.commit_url}")
    echo(
        f"  link it from a results card: hf-skillfollow push RUN... --repo ORG/NAME --space {space_id}"
    )

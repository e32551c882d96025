"""`hf-skillfollow leaderboard`: the Space's app, on this machine, over any sources."""

from __future__ import annotations

import click


@click.command("leaderboard")
@click.argument("sources", nargs=-1)
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=None,
    help="Port to serve on [7860, or the next free one].",
)
@click.option("--host", default=None, help="Interface to bind [127.0.0.1].")
@click.option(
    "--share/--no-share",
    default=False,
    show_default=True,
    help="Open a temporary public gradio.live link.",
)
@click.option(
    "--discover/--no-discover",
    default=None,
    help="Also load Hub datasets tagged 'skillfollow' [on only when no SOURCE and no SKILLFOLLOW_SOURCES].",
)
@click.option(
    "--resamples",
    type=click.IntRange(min=1),
    default=None,
    help="Bootstrap resamples per interval [20000, or $SKILLFOLLOW_RESAMPLES].",
)
def leaderboard(
    sources: tuple[str, ...],
    port: int | None,
    host: str | None,
    share: bool,
    discover: bool | None,
    resamples: int | None,
) -> None:
    """Launch the leaderboard over SOURCE... (run dirs, results-repo folders, parquet files or Hub repo ids).

    Without SOURCE, sources come from $SKILLFOLLOW_SOURCES (comma-separated). Every number is
    computed from the transitions rows; a start whose sources did not change reads back the
    cells it computed last time ($SKILLFOLLOW_BOARD_CACHE, docs/leaderboard.md).
    """
    try:
        from hf_skillfollow.space_app import launch
    except ImportError as exc:
        raise click.ClickException(
            f"the leaderboard needs the 'space' extra: pip install 'hf-skillfollow[space]' ({exc})"
        ) from None
    try:
        launch(
            list(sources), port=port, host=host, share=share, discover=discover, resamples=resamples
        )
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None

"""Starting the app: shared by `space/app.py` and `hf-skillfollow leaderboard`."""

from __future__ import annotations

import os
from collections.abc import Sequence

import gradio as gr

from hf_skillfollow.space_app._board import DEFAULT_RESAMPLES, load_board
from hf_skillfollow.space_app._ui import build_app

ENV_RESAMPLES = "SKILLFOLLOW_RESAMPLES"
CSS = "#sf-warnings blockquote { border-left: 4px solid #d62728; background: #fff4f4; }"


def resamples_from_env(default: int = DEFAULT_RESAMPLES) -> int:
    raw = os.environ.get(ENV_RESAMPLES)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{ENV_RESAMPLES} must be a positive integer, got {raw!r}") from None
    if value < 1:
        raise ValueError(f"{ENV_RESAMPLES} must be a positive integer, got {raw!r}")
    return value


def make_demo(
    sources: Sequence[str] = (), *, discover: bool | None = None, resamples: int | None = None
) -> gr.Blocks:
    """Load every source, compute the cells once, and build the app."""
    board = load_board(sources, resamples=resamples or resamples_from_env(), discover=discover)
    return build_app(board)


def launch(
    sources: Sequence[str] = (),
    *,
    port: int | None = None,
    host: str | None = None,
    share: bool = False,
    discover: bool | None = None,
    resamples: int | None = None,
) -> None:
    demo = make_demo(sources, discover=discover, resamples=resamples)
    demo.launch(
        server_name=host, server_port=port, share=share, css=CSS, footer_links=["api", "gradio"]
    )

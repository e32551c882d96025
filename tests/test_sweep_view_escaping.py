"""The sweep's views show a sweep file's labels and backend error reasons as text: every
payload of `tests._payloads` through the plain log, the live view's events and its table."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest
from rich.console import Console

from hf_skillfollow.sweep._view import LiveView, LogView, Tally
from tests._payloads import PAYLOADS, RICH, TERMINAL_FORBIDDEN


def _job(label: str) -> SimpleNamespace:
    return SimpleNamespace(
        name="job-1", n_pairs=4, repeat_index=0, cell=SimpleNamespace(label=label)
    )


def _assert_text(out: str, payload: str) -> None:
    assert not [c for c in TERMINAL_FORBIDDEN if c in out], (payload, out)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_the_plain_log_shows_labels_and_reasons_as_text(payload: str) -> None:
    stream = io.StringIO()
    view = LogView(Tally(1, 4), stream=stream)
    job = _job(payload)
    view.started(job, 1)
    view.failed(job, f"backend said: {payload}")
    _assert_text(stream.getvalue(), payload)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_the_live_view_shows_labels_and_reasons_as_text(payload: str) -> None:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, color_system="truecolor", width=200)
    view = LiveView(Tally(1, 4), console=console)
    job = _job(payload)
    view.started(job, 1)  # the label is now in the running table
    view.retrying(job, 1, payload, 1.0)
    console.print(view._render())
    out = buf.getvalue()
    # Rich's own styling writes CSI sequences; what matters is that none came from the payload
    if payload in RICH:
        assert "FAKE" not in payload or "[bold red]FAKE[/bold red]" in out, out
    for seq in ("\x1b]0;", "\x1b]8;;https", "\x1b]52;", "\x1b[2J", "\x9b", "\u202e"):
        assert seq not in out, (payload, out)

"""A rich progress bar for pairs: done/total, ETA, tokens and errors."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from hf_skillfollow.runner import PairOutcome


@contextmanager
def pair_progress(total: int) -> Iterator[Callable[[PairOutcome], None]]:
    """Yield a callback to call once per finished pair."""
    progress = Progress(
        TextColumn("[bold]pairs"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[tokens]:,} tokens · {task.fields[errors]} errors"),
    )
    with progress:
        bar = progress.add_task("pairs", total=total, tokens=0, errors=0)
        counts = {"tokens": 0, "errors": 0}

        def on_pair(outcome: PairOutcome) -> None:
            counts["tokens"] += outcome.tokens
            counts["errors"] += int(outcome.error)
            progress.update(bar, advance=1, **counts)

        yield on_pair


@contextmanager
def unit_progress(total: int, noun: str) -> Iterator[Callable[[bool], None]]:
    """Yield a callback to call once per finished unit, with True when it failed."""
    progress = Progress(
        TextColumn(f"[bold]{noun}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[failed]} failed"),
    )
    with progress:
        bar = progress.add_task(noun, total=total, failed=0)
        failed = 0

        def on_done(is_failure: bool) -> None:
            nonlocal failed
            failed += int(is_failure)
            progress.update(bar, advance=1, failed=failed)

        yield on_done

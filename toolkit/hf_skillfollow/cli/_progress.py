"""Rich progress bars: done/total, elapsed, ETA and a running tally, one shape for every command."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

if TYPE_CHECKING:
    from hf_skillfollow.runner import PairOutcome


def bar(noun: str, tally: str, *, stderr: bool = False) -> Progress:
    """A progress display for ``noun`` whose last column renders ``tally`` (a template over
    the task's fields). ``stderr``: where stdout carries the command's result."""
    return Progress(
        TextColumn(f"[bold]{noun}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TextColumn(tally),
        **({"console": Console(stderr=True)} if stderr else {}),
    )


@contextmanager
def pair_progress(total: int) -> Iterator[Callable[[PairOutcome], None]]:
    """Yield a callback to call once per finished pair."""
    progress = bar("pairs", "{task.fields[tokens]:,} tokens · {task.fields[errors]} errors")
    with progress:
        task = progress.add_task("pairs", total=total, tokens=0, errors=0)
        counts = {"tokens": 0, "errors": 0}

        def on_pair(outcome: PairOutcome) -> None:
            counts["tokens"] += outcome.tokens
            counts["errors"] += int(outcome.error)
            progress.update(task, advance=1, **counts)

        yield on_pair


@contextmanager
def unit_progress(total: int, noun: str) -> Iterator[Callable[[bool], None]]:
    """Yield a callback to call once per finished unit, with True when it failed."""
    progress = bar(noun, "{task.fields[failed]} failed")
    with progress:
        task = progress.add_task(noun, total=total, failed=0)
        failed = 0

        def on_done(is_failure: bool) -> None:
            nonlocal failed
            failed += int(is_failure)
            progress.update(task, advance=1, failed=failed)

        yield on_done

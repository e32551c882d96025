"""What the user sees while a sweep runs: a live `rich` view on a terminal, a plain log
otherwise (one line per event, nothing redrawn), both over the same tally."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from hf_skillfollow._escape import for_terminal, for_terminal_text

if TYPE_CHECKING:
    from hf_skillfollow.runner import PairOutcome
    from hf_skillfollow.sweep._cell import JobOutcome
    from hf_skillfollow.sweep._plan import Job, JobState


@dataclass
class Tally:
    """Cells done / running / failed / pending, pairs, errors, tokens, and the ETA."""

    total_jobs: int
    total_pairs: int
    status: dict[str, str] = field(default_factory=dict)
    pairs: dict[str, int] = field(default_factory=dict)
    #: per job: pairs with an error and tokens, counted per pair (local executor) or taken from
    #: the job's outcome when it ends (any executor; it replaces the per-pair count)
    job_errors: dict[str, int] = field(default_factory=dict)
    job_tokens: dict[str, int] = field(default_factory=dict)
    started_at: float = field(default_factory=time.monotonic)
    pairs_at_start: int = 0

    @classmethod
    def of(cls, states: list[JobState]) -> Tally:
        tally = cls(len(states), sum(s.job.n_pairs for s in states))
        for s in states:
            tally.pairs[s.job.name] = min(s.done_pairs, s.job.n_pairs)
            tally.status[s.job.name] = "done" if s.status == "done" else "pending"
            tally.job_tokens[s.job.name] = s.tokens
            tally.job_errors[s.job.name] = s.errors
        tally.pairs_at_start = tally.done_pairs
        return tally

    @property
    def tokens(self) -> int:
        return sum(self.job_tokens.values())

    @property
    def errors(self) -> int:
        return sum(self.job_errors.values())

    @property
    def done_pairs(self) -> int:
        return sum(self.pairs.values())

    def count(self, status: str) -> int:
        return sum(v == status for v in self.status.values())

    def eta_s(self) -> float | None:
        """From this session's pair rate (earlier sessions' pairs took no time here)."""
        made = self.done_pairs - self.pairs_at_start
        if made <= 0:
            return None
        rate = made / max(1e-9, time.monotonic() - self.started_at)
        return (self.total_pairs - self.done_pairs) / rate

    def line(self) -> str:
        eta = self.eta_s()
        return (
            f"cells {self.count('done')}/{self.total_jobs} done, {self.count('running')} running, "
            f"{self.count('failed')} failed, {self.count('pending')} pending · pairs "
            f"{self.done_pairs}/{self.total_pairs} · {self.errors} errors · {self.tokens:,} tokens"
            f" · ETA {_duration(eta) if eta is not None else '?'}"
        )


def _duration(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


class _Base:
    def __init__(self, tally: Tally) -> None:
        self.tally = tally
        self.labels: dict[str, str] = {}

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    # events (called by the driver and the executors, on the event loop)
    def started(self, job: Job, attempt: int) -> None:
        self.labels[job.name] = job.cell.label
        self.tally.status[job.name] = "running"
        self.emit(
            f"start  {job.cell.label} r{job.repeat_index}"
            + (f" (try {attempt})" if attempt > 1 else "")
        )

    def pair_callback(self, job: Job) -> Callable[[PairOutcome], None]:
        def on_pair(outcome: PairOutcome) -> None:
            t = self.tally
            t.pairs[job.name] = t.pairs.get(job.name, 0) + 1
            t.job_tokens[job.name] = t.job_tokens.get(job.name, 0) + outcome.tokens
            t.job_errors[job.name] = t.job_errors.get(job.name, 0) + int(outcome.error)
            self.refresh()

        return on_pair

    def set_done(self, job: Job, pairs: int) -> None:
        self.tally.pairs[job.name] = min(pairs, job.n_pairs)
        self.refresh()

    def retrying(self, job: Job, attempt: int, reason: str, wait_s: float) -> None:
        self.tally.status[job.name] = "pending"
        self.emit(f"retry  {job.cell.label} r{job.repeat_index}: try {attempt} failed ({reason}); "
                  f"next try in {wait_s:.0f} s")  # fmt: skip

    def failed(self, job: Job, reason: str) -> None:
        self.tally.status[job.name] = "failed"
        self.emit(f"FAILED {job.cell.label} r{job.repeat_index}: {reason}")

    def done(self, job: Job, outcome: JobOutcome) -> None:
        self.tally.status[job.name] = "done"
        self.tally.pairs[job.name] = min(outcome.pairs, job.n_pairs)
        self.tally.job_tokens[job.name] = outcome.tokens
        self.tally.job_errors[job.name] = outcome.errors
        for note in outcome.notes:
            self.emit(note)
        self.emit(f"done   {job.cell.label} r{job.repeat_index}: {outcome.pairs} pairs, "
                  f"{outcome.errors} with errors, {outcome.tokens:,} tokens -> {job.run_dir}")  # fmt: skip

    def note(self, text: str) -> None:
        self.emit(text)

    def emit(self, text: str) -> None:
        raise NotImplementedError

    def refresh(self) -> None:
        pass


class LogView(_Base):
    """One timestamped line per event, and the whole tally after each finished cell."""

    def __init__(self, tally: Tally, stream: TextIO | None = None) -> None:
        super().__init__(tally)
        self.stream = stream or sys.stdout

    def emit(self, text: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {for_terminal_text(text, keep='')}",
              file=self.stream, flush=True)  # fmt: skip

    def done(self, job: Job, outcome: JobOutcome) -> None:
        super().done(job, outcome)
        self.emit(self.tally.line())


class LiveView(_Base):
    """A redrawn panel: the tally, a pairs bar, the running cells; events scroll above it."""

    def __init__(self, tally: Tally, console: Any = None) -> None:
        super().__init__(tally)
        from rich.console import Console
        from rich.live import Live

        self.console = console or Console()
        self.live = Live(console=self.console, refresh_per_second=4, get_renderable=self._render)

    def __enter__(self) -> LiveView:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(None, None, None)

    def emit(self, text: str) -> None:
        self.console.print(for_terminal_text(text, keep=""), markup=False, highlight=False)

    def _render(self) -> Any:
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        t = self.tally
        running = Table.grid(padding=(0, 2))
        for name, status in t.status.items():
            if status == "running":
                running.add_row(
                    for_terminal(self.labels.get(name, name)), f"{t.pairs.get(name, 0)} pairs"
                )
        return Group(
            Text(t.line(), style="bold"),
            ProgressBar(total=max(1, t.total_pairs), completed=t.done_pairs),
            running,
        )


def make_view(tally: Tally, plain: bool | None = None) -> _Base:
    if plain is None:
        plain = not sys.stdout.isatty()
    return LogView(tally) if plain else LiveView(tally)

"""Drive a sweep's jobs through an executor: bounded cells in flight, retries with backoff,
a push as each run finishes, and a status file of how the session ended.

The backoff is the project's one policy (`backends._openai.RetryPolicy`: exponential with
jitter); what is retried here is a whole job attempt, which resumes its run directory, so a
retry never redoes a finished pair.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from hf_skillfollow.store import atomic_write_bytes
from hf_skillfollow.sweep._cell import JobOutcome, job_lock
from hf_skillfollow.sweep._file import Retry
from hf_skillfollow.sweep._plan import LOCK_DIR, STATUS_FILE, Job, read_status


class Executor(Protocol):
    """Runs one attempt of one job (`_executors`); an async context manager for its lifetime."""

    #: cells in flight at most (None: as many as the executor's resources allow)
    max_in_flight: int | None

    async def run(self, job: Job, view: Any) -> JobOutcome: ...


@dataclass(frozen=True)
class PushTarget:
    """Where finished runs are published (`hub.push_runs`), one push per finished run."""

    repo_id: str
    token: str | None = None
    private: bool = False
    dry_run_dir: Path | None = None


@dataclass
class JobResult:
    status: str  # done | failed
    attempts: int
    outcome: JobOutcome | None = None
    reason: str = ""


@dataclass
class SweepResult:
    results: dict[str, JobResult] = field(default_factory=dict)
    #: what each failed push was of (the runs stay on disk for a later push)
    push_failures: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[str]:
        return [name for name, r in self.results.items() if r.status == "failed"]

    @property
    def broken(self) -> list[str]:
        return [name for name, r in self.results.items() if r.status == "broken"]


def broken_advice(run_dir: Path, problem: str) -> str:
    """Why a run folder cannot be continued, and the command that can continue it."""
    from hf_skillfollow.store import RECORDS

    if RECORDS in problem:
        return (
            f"{problem}; to continue it: hf-skillfollow run --resume {run_dir} "
            "--set-aside-bad-records (the bad lines go to records.rejected and their tasks run "
            "again), then this sweep again"
        )
    return f"{problem}; move the folder away (the sweep then starts the run afresh)"


def _reason(exc: BaseException, base_url: str | None = None) -> str:
    """One line for the log and the status file; credentials in the base URL never appear."""
    from hf_skillfollow._redact import scrub, url_secrets

    text = " ".join((str(exc) or type(exc).__name__).split())
    name = type(exc).__name__
    return scrub(text if name in text else f"{name}: {text}", url_secrets(base_url))


def _final(exc: BaseException) -> bool:
    """Bad input (a broken run folder, data or settings) fails the same way every try."""
    return isinstance(exc, ValueError)


async def run_sweep(
    jobs: list[Job],
    executor: Executor,
    view: Any,
    *,
    retry: Retry,
    max_cells: int,
    push: PushTarget | None = None,
    already_done: Sequence[Job] = (),
    output_dir: Path | None = None,
    broken: Sequence[tuple[Job, str]] = (),
) -> SweepResult:
    """Run `jobs`; `broken` (job, problem) are the folders that cannot be continued, recorded
    in the status file with the command that continues them."""
    from hf_skillfollow.backends._openai import RetryPolicy

    policy = RetryPolicy(
        max_retries=retry.attempts - 1,
        base_delay_s=retry.base_delay_s,
        max_delay_s=retry.max_delay_s,
    )
    limit = max_cells if executor.max_in_flight is None else min(max_cells, executor.max_in_flight)
    gate = asyncio.Semaphore(max(1, limit))
    pusher = _Pusher(push, view) if push else None
    result = SweepResult()
    for job, problem in broken:
        result.results[job.name] = JobResult(
            "broken", 0, reason=broken_advice(job.run_dir, problem)
        )
    if pusher and already_done:
        await pusher.push([j.run_dir for j in already_done], "finished earlier")

    async def one(job: Job) -> None:
        for attempt in range(1, retry.attempts + 1):
            async with gate:
                view.started(job, attempt)
                try:
                    outcome = await executor.run(job, view)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - every failure is reported, none lost
                    reason = _reason(exc, job.cell.config.base_url)
                    if _final(exc) or attempt == retry.attempts:
                        result.results[job.name] = JobResult("failed", attempt, reason=reason)
                        view.failed(job, reason)
                        return
                    wait = policy.backoff(attempt - 1)
                    view.retrying(job, attempt, reason, wait)
                else:
                    result.results[job.name] = JobResult("done", attempt, outcome)
                    view.done(job, outcome)
                    if pusher:
                        await pusher.push([job.run_dir], job.cell.label)
                    return
            await asyncio.sleep(wait)  # outside the gate: a waiting cell holds no slot

    try:
        await asyncio.gather(*(one(j) for j in jobs))
        if pusher:
            result.push_failures = pusher.failed
    finally:
        if output_dir is not None:
            write_status(output_dir, [*jobs, *(j for j, _ in broken)], result)
    return result


class _Pusher:
    """One push at a time from this process (the push itself is race-safe across machines)."""

    def __init__(self, target: PushTarget, view: Any) -> None:
        self.target, self.view = target, view
        self.lock = asyncio.Lock()
        self.failed: list[str] = []

    async def push(self, run_dirs: Sequence[Path], what: str) -> None:
        if not run_dirs:
            return
        from hf_skillfollow.hub import push_runs

        t = self.target
        async with self.lock:
            try:
                res = await asyncio.to_thread(
                    push_runs, list(run_dirs), t.repo_id, private=t.private, token=t.token,
                    dry_run_dir=t.dry_run_dir,
                )  # fmt: skip
            except Exception as exc:  # noqa: BLE001 - a failed push never stops the sweep
                self.failed.append(what)
                self.view.note(f"push of {what} to {t.repo_id} failed: {_reason(exc)} "
                               "(the runs are kept; the next sweep or `push` publishes them)")  # fmt: skip
                return
        self.view.note(
            f"pushed {what} to {res.repo_id}: {len(res.added)} file(s) added"
            if res.changed
            else f"push of {what}: already published"
        )


def write_status(output_dir: Path, jobs: Sequence[Job], result: SweepResult) -> None:
    """Merge this session's outcome into the output folder's status file (other shards' jobs
    in a shared folder are kept).

    Shards finishing together into one folder each read, merge and replace the file: under
    the folder's status lock (the kernel's `flock`, as each run's records lock), so no
    shard's entries are lost to another's write (24 cells failing at once had left 17-24)."""
    path = output_dir / STATUS_FILE
    output_dir.mkdir(parents=True, exist_ok=True)
    with job_lock(output_dir / LOCK_DIR / f"{STATUS_FILE}.lock", wait=True):
        entries: dict[str, Any] = dict(read_status(output_dir))
        for job in jobs:
            r = result.results.get(job.name)
            entry: dict[str, Any] = {
                "cell": job.cell.label,
                "run_dir": job.run_dir.name,
                "status": r.status if r else "not finished",
                "attempts": r.attempts if r else 0,
            }
            if r and r.reason:
                entry["reason"] = r.reason
            if r and r.outcome:
                entry["errored_pairs"] = r.outcome.errors
            entries[job.name] = entry
        atomic_write_bytes(path, json.dumps({"jobs": entries}, indent=2, sort_keys=True).encode())

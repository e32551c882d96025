"""One attempt at one job: open or resume its run directory, run the pending pairs, write the
tables. The same function runs in-process (local executor) and in a Ray worker.

Resume is `hf-skillfollow run --resume`'s own code (`runner.plan_resume`): only the settings
`--resume` lets change are passed again, so a changed sweep file can never silently continue a
run under other settings (a changed protocol setting is another cell, in another folder). A
lock file per job keeps two processes (two shards started by mistake, a worker presumed dead)
from appending to one run at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_skillfollow.store import RunDirError, RunStore
from hf_skillfollow.sweep._plan import STAGING_DIR, Job, job_state

if TYPE_CHECKING:
    from hf_skillfollow.backends._base import ChatBackend
    from hf_skillfollow.config import RunConfig
    from hf_skillfollow.runner import PairOutcome, RunPlan

OpenBackend = Callable[["RunConfig"], AbstractAsyncContextManager["ChatBackend"]]

#: RunConfig fields that decide which backend (and which client or server) a cell needs.
BACKEND_FIELDS = ("backend", "model", "base_url", "api_key_env", "tool_mode", "tool_parser",
                  "engine_options", "concurrency", "request_timeout", "n_threads", "server_port")  # fmt: skip


class JobBusy(RuntimeError):
    """Another process holds the job's lock (it is running the same run directory)."""


@dataclass(frozen=True)
class JobOutcome:
    pairs: int
    errors: int
    tokens: int
    notes: tuple[str, ...] = ()


@contextlib.contextmanager
def job_lock(path: Path, *, wait: bool = False) -> Iterator[None]:
    """An exclusive advisory lock, released by the kernel if the holder dies; JobBusy when
    another process holds it, unless `wait` (for the short writes of the status file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            raise JobBusy(f"{path.name}: another process is running this run directory") from None
        yield
    finally:
        os.close(fd)


def open_plan(job: Job) -> RunPlan:
    """The job's run: resumed by `--resume`'s rules when its folder holds one, else new."""
    from hf_skillfollow.runner import RESUME_NEUTRAL_FIELDS, plan_new_run, plan_resume

    config = job.cell.config
    if RunStore(job.run_dir).manifest_path.is_file():
        given = {k: getattr(config, k) for k in RESUME_NEUTRAL_FIELDS}
        return plan_resume(job.run_dir, given, retry_errors=job.retry_errors)
    if job.run_dir.exists():
        if any(job.run_dir.iterdir()):
            raise RunDirError(
                f"{job.run_dir}: has files but no manifest.json, so it is not a run this sweep "
                "can continue; move it away"
            )
        job.run_dir.rmdir()  # left by a kill between mkdir and the manifest's write
    # `run`'s own planning, in a staging folder, then moved (one rename, under the job's lock)
    # to the folder named after the cell; a kill in between leaves only a manifest in staging.
    plan = plan_new_run(config, job.run_dir.parent / STAGING_DIR, job.repeat_index)
    os.rename(plan.store.root, job.run_dir)
    plan.store = RunStore(job.run_dir)
    return plan


async def run_job(
    job: Job,
    open_backend: OpenBackend,
    on_pair: Callable[[PairOutcome], None] | None = None,
) -> JobOutcome:
    from hf_skillfollow.runner import execute

    with job_lock(job.lock_path):
        plan = open_plan(job)
        if plan.pending:
            async with open_backend(plan.config) as backend:
                await execute(plan, backend, on_pair)
        plan.store.write_tables()
    state = job_state(job)
    return JobOutcome(state.done_pairs, state.errors, state.tokens, plan.notes)


def run_job_blocking(job: Job) -> JobOutcome:
    """`run_job` in a process of its own (a Ray worker), with a backend of its own."""
    from hf_skillfollow.backends import open_backend

    return asyncio.run(run_job(job, open_backend))


class SharedBackends:
    """One open backend per distinct backend setting, shared by every cell that uses it, so a
    model's `concurrency` bounds all its cells together and a local server starts once."""

    def __init__(self) -> None:
        self._stack = contextlib.AsyncExitStack()
        self._open: dict[tuple[Any, ...], ChatBackend] = {}
        self._locks: dict[tuple[Any, ...], asyncio.Lock] = {}

    @contextlib.asynccontextmanager
    async def __call__(self, config: RunConfig) -> AsyncIterator[ChatBackend]:
        from hf_skillfollow.backends import open_backend
        from hf_skillfollow.config import stable_hash

        key = (stable_hash({f: getattr(config, f) for f in BACKEND_FIELDS}),)
        async with self._locks.setdefault(key, asyncio.Lock()):
            if key not in self._open:
                self._open[key] = await self._stack.enter_async_context(open_backend(config))
        yield self._open[key]

    async def aclose(self) -> None:
        await self._stack.aclose()

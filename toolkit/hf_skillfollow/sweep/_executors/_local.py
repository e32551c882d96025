"""Every cell in this process: one event loop, backends shared per model."""

from __future__ import annotations

from typing import Any

from hf_skillfollow.sweep._cell import JobOutcome, SharedBackends, run_job
from hf_skillfollow.sweep._plan import Job


class LocalExecutor:
    max_in_flight: int | None = None

    def __init__(self, **_: Any) -> None:
        self.backends = SharedBackends()

    async def __aenter__(self) -> LocalExecutor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.backends.aclose()

    async def run(self, job: Job, view: Any) -> JobOutcome:
        return await run_job(job, self.backends, view.pair_callback(job))

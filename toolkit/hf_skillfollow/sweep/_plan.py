"""Cells -> jobs (one run directory per repeat), and what is already done in each.

A job's run directory is a pure function of its cell (`<label>-<key>-r<i>` under the sweep's
output folder), so the same command finds it again and continues it by `--resume`'s rules.
The plan reads only the folders: no model is contacted and no benchmark data is loaded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_skillfollow._errors import RETRY_CHOICES, pair_error_kinds
from hf_skillfollow.store import RunDirError, RunStore
from hf_skillfollow.sweep._matrix import Cell

#: The sweep's own status file in its output folder: what the last session ended with.
STATUS_FILE = "sweep-status.json"
LOCK_DIR = ".locks"
#: where a new run is planned before it is moved to its cell's folder
STAGING_DIR = ".staging"


@dataclass(frozen=True)
class Job:
    """One run of a cell: repeat `repeat_index`, in `run_dir`."""

    cell: Cell
    repeat_index: int
    run_dir: Path
    #: which errored pairs resume runs again (`_errors.RETRY_CHOICES`, `--retry-errors`)
    retry_errors: str = "transport"

    @property
    def name(self) -> str:
        return f"{self.cell.key}-r{self.repeat_index}"

    @property
    def n_pairs(self) -> int:
        c = self.cell.config
        size = c.partition_size or self._planned_size()
        return min(c.limit, size) if c.limit else size

    def _planned_size(self) -> int:
        """Own tasks without a partition size run every task: as many as the run planned, or
        before it is planned the benchmarks' default as an estimate (no task data is read)."""
        from hf_skillfollow.config import DEFAULT_PARTITION_SIZE

        try:
            return len(RunStore(self.run_dir).read_manifest()["task_ids"]) or DEFAULT_PARTITION_SIZE
        except (RunDirError, OSError, KeyError, TypeError, ValueError):
            return DEFAULT_PARTITION_SIZE

    @property
    def lock_path(self) -> Path:
        return self.run_dir.parent / LOCK_DIR / f"{self.run_dir.name}.lock"


@dataclass(frozen=True)
class JobState:
    """What a job's folder holds now."""

    job: Job
    done_pairs: int
    tokens: int  # recorded usage (prompt + completion) of the finished pairs
    errors: int = 0  # finished pairs with an arm that ended in a provider error
    retryable: int = 0  # ... of a kind `--retry-errors` runs again: the job is not done
    problem: str | None = None  # the folder cannot be resumed as it is
    last_failure: str | None = None  # why the previous session gave the job up

    @property
    def status(self) -> str:
        if self.problem:
            return "broken"
        if self.done_pairs - self.retryable >= self.job.n_pairs:
            return "done"
        return "partial" if self.done_pairs else "pending"


def jobs_for(cells: list[Cell], output_dir: Path, retry_errors: str = "transport") -> list[Job]:
    jobs = []
    for cell in cells:
        for r in range(cell.config.repeats):
            jobs.append(Job(cell, r, _run_dir(output_dir, cell, r), retry_errors))
    return jobs


def _run_dir(output_dir: Path, cell: Cell, repeat: int) -> Path:
    suffix = f"-{cell.key}-r{repeat}"
    wanted = output_dir / f"{cell.slug}{suffix}"
    if not wanted.exists() and output_dir.is_dir():
        # the label may have changed (a model alias renamed): the key is what identifies it
        found = sorted(p for p in output_dir.glob(f"*{suffix}") if p.is_dir())
        if found:
            return found[0]
    return wanted


def job_state(job: Job, failures: dict[str, str] | None = None) -> JobState:
    last = (failures or {}).get(job.name)
    store = RunStore(job.run_dir)
    if not store.manifest_path.is_file():
        return JobState(job, 0, 0, last_failure=last)
    try:
        manifest = store.read_manifest()
        records = store.read_records()
    except RunDirError as exc:
        return JobState(job, 0, 0, problem=str(exc), last_failure=last)
    wanted = set(manifest.get("task_ids", ()))
    done = [r for r in records if r["task_id"] in wanted]
    tokens = sum(
        int(t.get("prompt_tokens") or 0) + int(t.get("completion_tokens") or 0)
        for r in done
        for t in r["traces"]
    )
    kinds = [pair_error_kinds(r["transition"]) for r in done]
    retry = RETRY_CHOICES[job.retry_errors]
    errors, retryable = sum(bool(k) for k in kinds), sum(bool(k & retry) for k in kinds)
    return JobState(job, len(done), tokens, errors, retryable, last_failure=last)


#: A status entry is a few hundred bytes; the 10,000 runs a sweep may have take a few MiB.
MAX_STATUS_BYTES = 64 * 1024 * 1024


def read_status(output_dir: Path) -> dict[str, dict[str, Any]]:
    """Job name -> entry of the output folder's status file. The file only reports (and each
    session's write replaces it), so one that cannot be read as that (missing, not a regular
    file, over `MAX_STATUS_BYTES`, not UTF-8 JSON, not `{"jobs": {name: {...}}}`) reads as
    empty: the plan shows no last failures, and the sweep goes on."""
    from hf_skillfollow._files import regular_file

    try:
        with regular_file(output_dir / STATUS_FILE).open("rb") as f:
            raw = f.read(MAX_STATUS_BYTES + 1)
        data = json.loads(raw) if len(raw) <= MAX_STATUS_BYTES else None
    except (OSError, ValueError, RecursionError):
        return {}
    jobs = data.get("jobs") if isinstance(data, dict) else None
    if not isinstance(jobs, dict):
        return {}
    return {name: entry for name, entry in jobs.items() if isinstance(entry, dict)}


def read_failures(output_dir: Path) -> dict[str, str]:
    """Job name -> reason, for the jobs the last session marked failed."""
    return {
        name: str(entry.get("reason", ""))
        for name, entry in read_status(output_dir).items()
        if entry.get("status") == "failed"
    }


@dataclass(frozen=True)
class PlanSummary:
    states: list[JobState]

    @property
    def cells(self) -> int:
        return len({s.job.cell.key for s in self.states})

    @property
    def pairs(self) -> int:
        return sum(s.job.n_pairs for s in self.states)

    @property
    def done_pairs(self) -> int:
        return sum(min(s.done_pairs, s.job.n_pairs) for s in self.states)

    def count(self, status: str) -> int:
        return sum(s.status == status for s in self.states)

    def estimated_tokens(self) -> tuple[int | None, str]:
        """Tokens the pending pairs will take, from the recorded usage of finished pairs (per
        model where that model has finished pairs, else over all models); None without any."""
        per_model: dict[str, list[int]] = {}
        for s in self.states:
            if s.done_pairs:
                acc = per_model.setdefault(s.job.cell.model, [0, 0])
                acc[0] += s.tokens
                acc[1] += s.done_pairs
        if not per_model:
            return None, "no finished pairs yet to estimate from"
        overall = sum(a[0] for a in per_model.values()) / sum(a[1] for a in per_model.values())
        total = 0.0
        for s in self.states:
            left = max(0, s.job.n_pairs - s.done_pairs)
            acc = per_model.get(s.job.cell.model)
            total += left * (acc[0] / acc[1] if acc else overall)
        basis = sum(a[1] for a in per_model.values())
        return int(total), f"from {basis} finished pairs of {len(per_model)} model(s)"

    def as_dict(self) -> dict[str, Any]:
        tokens, basis = self.estimated_tokens()
        return {
            "cells": self.cells,
            "runs": len(self.states),
            "pairs": self.pairs,
            "conversations": 2 * self.pairs,
            "done_pairs": self.done_pairs,
            "estimated_tokens": tokens,
            "estimate_basis": basis,
            "jobs": [
                {
                    "cell": s.job.cell.label,
                    "key": s.job.cell.key,
                    "repeat": s.job.repeat_index,
                    "run_dir": str(s.job.run_dir),
                    "pairs": s.job.n_pairs,
                    "done_pairs": s.done_pairs,
                    "errored_pairs": s.errors,
                    "status": s.status,
                    **({"problem": s.problem} if s.problem else {}),
                    **({"last_failure": s.last_failure} if s.last_failure else {}),
                }
                for s in self.states
            ],
        }


def plan(jobs: list[Job], output_dir: Path) -> PlanSummary:
    failures = read_failures(output_dir)
    return PlanSummary([job_state(j, failures) for j in jobs])

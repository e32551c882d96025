"""One task and the error of loading tasks: below `tasks` (the benchmarks) and `tasks_custom`
(a maintainer's own tasks), which both build them, so neither imports the other for them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hf_skillfollow.benchmarks import BENCHMARKS


class TaskLoadError(ValueError):
    """A benchmark source could not be loaded; the message names the file or benchmark."""


@dataclass(frozen=True)
class Task:
    """One benchmark task.

    ``prompt`` is what the model sees; ``problem`` is the raw EvalPlus problem dict (inputs
    already deserialised by EvalPlus) or the MATH-500 row, used by the scorers.
    """

    benchmark: str
    task_id: str
    prompt: str
    entry_point: str | None = None
    reference: str | None = None
    problem: dict[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)
    #: digest of the benchmark file the task was loaded from (EvalPlus's md5 of the release):
    #: with the loader's version it identifies ``problem``'s inputs without hashing them
    source_digest: str | None = field(default=None, compare=False, repr=False)
    #: a maintainer's own task (`custom`, `skill-evals`): its grader (tests, answer or
    #: expectations; docs/tasks.md), which also picks its prompt
    grader: str | None = None
    #: `skill-evals`: the skill whose evals/evals.json the task comes from
    skill: str | None = None

    @property
    def domain(self) -> str:
        """The prompt domain: the benchmark's, or for an own task its grader's."""
        if self.grader is not None:
            from hf_skillfollow.prompts import GRADER_DOMAIN

            return GRADER_DOMAIN[self.grader]
        return BENCHMARKS[self.benchmark].domain

"""Grade one answer K times with the blinded judge; the verdict is the majority (docs/tasks.md).

Each repeat is one structured request through the shared path (`_structured.ask`: forced tool,
validated, retried, failure recorded). Per expectation the verdict is the majority of the
valid repeats; a tie counts as not met and is counted. The answer passes when every
expectation is met. With no valid repeat the answer is a grading failure: scored incorrect,
never a pass, and counted apart from the fails in the report.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hf_skillfollow import _structured
from hf_skillfollow.judge._request import BlindedAnswer, build_request, parse_verdicts, prompt_hash

if TYPE_CHECKING:
    from hf_skillfollow.backends._base import ChatBackend

#: repeat r's attempts use seeds seed + REPEAT_STRIDE * r + attempt
REPEAT_STRIDE = 1000


@dataclass(frozen=True)
class JudgeSettings(_structured.AskSettings):
    """How the judge model is asked; `identity` is recorded in traces and the cell id."""

    max_tokens: int = 1024
    repeats: int = 2

    @property
    def prompt_hash(self) -> str:
        return prompt_hash()

    @property
    def judge(self) -> str:
        """`<model>@<prompt hash>`, as the annotator is named."""
        return f"{self.model}@{self.prompt_hash}"

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> JudgeSettings:
        """The settings a recorded verdict was produced with (`verify` re-grades with them)."""
        return cls(**record["settings"])

    def identity(self) -> dict[str, Any]:
        """What defines the judge in the cell id (everything but where it is reached)."""
        return {
            "judge": self.judge,
            "backend": self.backend,
            "repeats": self.repeats,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "max_attempts": self.max_attempts,
        }


@dataclass(frozen=True)
class Judged:
    """The outcome of grading one answer: `passed` (majority), `failure` (no valid repeat)
    and `record`, the JSON-able verdicts of every repeat for the traces."""

    passed: bool
    failure: str | None
    record: dict[str, Any]

    @property
    def reason(self) -> str:
        if self.failure:
            return f"grading failure: {self.failure}"
        met = sum(self.record["majority"])
        return f"judge: {met} of {len(self.record['majority'])} expectation(s) met"


async def judge_answer(
    backend: ChatBackend, view: BlindedAnswer, settings: JudgeSettings
) -> Judged:
    """Grade `view` `settings.repeats` times and take the majority per expectation."""
    n = len(view.expectations)
    request = build_request(view)

    def parse(text: str) -> list[tuple[bool, str]]:
        return parse_verdicts(text, n)

    replies = await asyncio.gather(
        *(
            _structured.ask(
                backend,
                request,
                parse,
                seed=settings.seed + REPEAT_STRIDE * r,
                temperature=settings.temperature,
                max_tokens=settings.max_tokens,
                max_attempts=settings.max_attempts,
            )
            for r in range(settings.repeats)
        )
    )
    return summarise(replies, n, settings)


def summarise(replies: list[_structured.Reply], n: int, settings: JudgeSettings) -> Judged:
    """Majority, ties, unanimity and fragility of K repeats (pure; the report re-reads them)."""
    repeats = [
        {
            "verdicts": None
            if r.value is None
            else [{"passed": p, "evidence": e} for p, e in r.value],
            "failure": r.failure,
            "attempts": r.attempts,
            "raw": None if r.value is not None else r.raw,
        }
        for r in replies
    ]
    valid = [r.value for r in replies if r.value is not None]
    record: dict[str, Any] = {
        "judge": settings.judge,
        "judge_backend": settings.backend,
        "settings": dataclasses.asdict(settings),
        "repeats": repeats,
        "n_expectations": n,
        "n_valid": len(valid),
    }
    if not valid:
        failure = "; ".join(f"repeat {i + 1}: {r.failure}" for i, r in enumerate(replies))
        record.update(majority=[], ties=0, unanimous=[], fragile=False, grading_failure=True)
        return Judged(False, failure, record)
    passes = [sum(v[i][0] for v in valid) for i in range(n)]
    majority = [2 * p > len(valid) for p in passes]
    ties = sum(2 * p == len(valid) for p in passes)
    unanimous = [p in (0, len(valid)) for p in passes]
    passed = all(majority)
    record.update(
        majority=majority,
        ties=ties,
        unanimous=unanimous,
        fragile=fragile(majority, unanimous),
        grading_failure=False,
    )
    return Judged(passed, None, record)


def fragile(majority: list[bool], unanimous: list[bool]) -> bool:
    """Whether one judge disagreement could have turned the answer's verdict: a passing answer
    with any non-unanimous expectation, or a failing one whose only unmet expectation was
    not unanimous."""
    if all(majority):
        return not all(unanimous)
    unmet = [i for i, m in enumerate(majority) if not m]
    return len(unmet) == 1 and not unanimous[unmet[0]]

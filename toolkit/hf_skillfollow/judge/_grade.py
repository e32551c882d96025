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
from hf_skillfollow.judge._request import (
    INPUT_MAX_CHARS,
    BlindedAnswer,
    build_request,
    input_chars,
    parse_verdicts,
    prompt_hash,
    written_verdicts,
)

if TYPE_CHECKING:
    from hf_skillfollow.backends._base import ChatBackend

#: repeat r's attempts use seeds seed + REPEAT_STRIDE * r + attempt
REPEAT_STRIDE = 1000


#: what a run can record (config.RunConfig: judge_repeats 1-9, judge_max_tokens from 16, three
#: attempts; the token and seed ranges only keep the numbers sane)
RECORD_BOUNDS: dict[str, tuple[float, float]] = {
    "repeats": (1, 9),
    "max_attempts": (1, 3),
    "max_tokens": (16, 2**31 - 1),
    "temperature": (0.0, 2.0),
    "seed": (-(2**63), 2**63 - 1),
}


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
        """The settings a recorded verdict was produced with (`verify` re-grades with them).

        The record comes from a traces file, perhaps downloaded: its settings must be those a
        run can write (`RECORD_BOUNDS`), or `verify` would send what a stranger chose (a
        million repeats of every answer to your judge); ValueError says which is not."""
        settings = record.get("settings") if isinstance(record, dict) else None
        if not isinstance(settings, dict):
            raise ValueError("judge record: 'settings' is not an object")
        fields = {f.name: f.type for f in dataclasses.fields(cls)}
        unknown = sorted(set(settings) - set(fields))
        if unknown or not {"model", "backend"} <= set(settings):
            raise ValueError(
                f"judge record: settings keys {sorted(settings)[:8]} are not a judge's"
            )
        for key, value in settings.items():
            kind = {"str": str, "int": int, "float": (int, float)}[str(fields[key])]
            low, high = RECORD_BOUNDS.get(key, (None, None))
            if (
                isinstance(value, bool)
                or not isinstance(value, kind)
                or (low is not None and not low <= value <= high)
            ):
                bounds = "" if low is None else f" (from {low} to {high})"
                raise ValueError(f"judge record: setting {key!r} = {str(value)[:40]!r}{bounds}")
        return cls(**settings)


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
    #: why the judge was not asked (an empty answer), else None
    skipped: str | None = None

    @property
    def reason(self) -> str:
        if self.skipped is not None and self.failure is None:
            return self.skipped
        if self.failure:
            return f"grading failure: {self.failure}"
        met = sum(self.record["majority"])
        return f"judge: {met} of {len(self.record['majority'])} expectation(s) met"


async def judge_answer(
    backend: ChatBackend, view: BlindedAnswer, settings: JudgeSettings
) -> Judged:
    """Grade `view` `settings.repeats` times and take the majority per expectation."""
    n = len(view.expectations)
    size = input_chars(view)
    if size > INPUT_MAX_CHARS:
        # never judged on a cut text: an answer whose last line was cut off would be judged
        # wrong, silently; a verdict the judge could not give is a counted grading failure
        return unjudged(
            settings,
            n,
            f"truncated: the task, expected output, expectations and answer hold {size:,} "
            f"characters, more than the judge reads ({INPUT_MAX_CHARS:,}); not judged",
            truncated=True,
        )
    request = build_request(view)
    written = written_verdicts(view.answer)

    def parse(text: str) -> list[tuple[bool, str]]:
        return parse_verdicts(text, n, written)

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


def _base_record(settings: JudgeSettings, n: int) -> dict[str, Any]:
    return {
        "judge": settings.judge,
        "judge_backend": settings.backend,
        "settings": dataclasses.asdict(settings),
        "n_expectations": n,
    }


def unjudged(settings: JudgeSettings, n: int, reason: str, *, truncated: bool = False) -> Judged:
    """The verdict on an answer the judge was not asked about. ``truncated``: too long for
    the judge, a grading failure (counted); otherwise an empty answer (an arm that ended in
    an error), scored incorrect and no judged answer at all (docs/design.md: an unrecoverable
    error gives an empty answer, scored incorrect). The record keeps the settings, so
    `verify` re-grades the row with the same judge and reaches the same verdict."""
    record = {
        **_base_record(settings, n),
        "repeats": [],
        "n_valid": 0,
        "majority": [],
        "ties": 0,
        "unanimous": [],
        "fragile": False,
        "grading_failure": truncated,
        "truncated": truncated,
        "not_judged": None if truncated else reason,
    }
    return Judged(False, reason if truncated else None, record, reason)


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
        **_base_record(settings, n),
        "repeats": repeats,
        "n_valid": len(valid),
    }
    if not valid:
        failure = "; ".join(f"repeat {i + 1}: {r.failure}" for i, r in enumerate(replies))
        # no valid repeat: fewer than asked, so fragile like any verdict short of repeats
        record.update(majority=[], ties=0, unanimous=[], fragile=True, grading_failure=True)
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
        # fewer valid repeats than asked: the missing ones could have gone the other way
        fragile=fragile(majority, unanimous) or len(valid) < settings.repeats,
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

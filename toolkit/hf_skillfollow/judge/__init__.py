"""The blinded expectations judge of a maintainer's own tasks (docs/tasks.md).

It asks any backend `run` supports through the annotator's structured-output path
(`hf_skillfollow._structured`), sees one answer at a time and nothing of its arm, grades it
`repeats` times and records every verdict, so that the judge's own noise is measured.
"""

from hf_skillfollow.judge._detect import addresses_grader
from hf_skillfollow.judge._grade import (
    Judged,
    JudgeSettings,
    fragile,
    judge_answer,
    summarise,
    unjudged,
)
from hf_skillfollow.judge._request import BlindedAnswer, build_request, request_json

__all__ = [
    "BlindedAnswer",
    "JudgeSettings",
    "Judged",
    "addresses_grader",
    "build_request",
    "fragile",
    "judge_answer",
    "request_json",
    "summarise",
    "unjudged",
]

"""The judge grades what it can see, and its noise is counted over what it judged (issue 37):
an errored arm's empty answer is never judged, the judge reads the whole answer or the verdict
says it did not (`truncated`, a counted grading failure), and the noise tally counts only flips
between two judged answers, a verdict short of its repeats being fragile."""

from __future__ import annotations

import asyncio
import json

import pytest

from hf_skillfollow._structured import Reply
from hf_skillfollow.judge import JudgeSettings, summarise
from hf_skillfollow.judge._request import INPUT_MAX_CHARS
from hf_skillfollow.metrics import _own
from hf_skillfollow.tasks import Task
from tests._judge_double import AgentAndJudgeDouble

SETTINGS = JudgeSettings(model="double-model", backend="openai", repeats=2)


def _task(expectations: tuple[str, ...] = ("mentions Ada",)) -> Task:
    return Task("custom", "note", "Write a note to Ada.",
                problem={"expectations": list(expectations), "expected_output": None},
                grader="expectations")  # fmt: skip


def _judged(answers: list[str], monkeypatch: pytest.MonkeyPatch, task: Task | None = None):
    """Verdicts of `scoring._custom.judged_verdict` (the runner's and verify's one path) from
    the judge double over HTTP, and the judge requests it received."""
    from hf_skillfollow.backends import open_backend
    from hf_skillfollow.config import RunConfig
    from hf_skillfollow.scoring._custom import judged_verdict

    monkeypatch.setenv("DOUBLE_KEY", "k")

    async def go(url: str) -> list:
        config = RunConfig(backend="openai", model="double-model", base_url=url,
                           api_key_env="DOUBLE_KEY")  # fmt: skip
        async with open_backend(config) as backend:
            return [await judged_verdict(backend, task or _task(), a, SETTINGS) for a in answers]

    with AgentAndJudgeDouble(lambda p, a: "") as double:
        return asyncio.run(go(double.url)), list(double.judge_requests)


def test_an_empty_answer_is_scored_incorrect_and_never_judged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the double passes "is written politely" on repeat 0: judged, "(empty)" could pass it
    (empty, blank), requests = _judged(["", "  \n"], monkeypatch, _task(("is written politely",)))
    assert requests == []
    for verdict in (empty, blank):
        assert not verdict.passed and verdict.reason.startswith("empty answer")
        assert verdict.details["grading_failure"] is False
        record = verdict.details["judge_record"]
        assert record["not_judged"] and record["settings"]["repeats"] == 2  # verify re-grades


def test_the_judge_reads_the_whole_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    # the answer's last line is what the expectation looks for, after 8,100 characters
    long = "Some preamble line.\n" * 405 + "Thank you, Ada."
    assert len(long) > 8_100
    (verdict,), requests = _judged([long], monkeypatch)
    assert verdict.passed, verdict.reason
    assert all(long in json.loads(r)["messages"][1]["content"] for r in requests)


def test_an_answer_too_long_for_the_judge_is_a_truncated_grading_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    huge = "x" * INPUT_MAX_CHARS + " Ada"
    (verdict,), requests = _judged([huge], monkeypatch)
    assert requests == [] and not verdict.passed
    assert verdict.details["grading_failure"] is True
    assert verdict.details["judge_record"]["truncated"] is True
    assert "truncated" in verdict.reason and f"{INPUT_MAX_CHARS:,}" in verdict.reason


def _reply(*passed: bool) -> Reply:
    return Reply([(p, "e") for p in passed], "{}", 1, None)


FAILED = Reply(None, "garbage", 3, "attempt 1: invalid output: not valid JSON")


def test_a_verdict_with_fewer_valid_repeats_than_asked_is_fragile() -> None:
    one = summarise([FAILED, _reply(True, True)], 2, SETTINGS)
    assert one.passed and one.record["n_valid"] == 1 and one.record["fragile"]
    s3 = JudgeSettings("m", "openai", repeats=3)
    two = summarise([_reply(False), FAILED, _reply(False)], 1, s3)
    assert not two.passed and two.record["fragile"]
    full = summarise([_reply(True), _reply(True), _reply(True)], 1, s3)
    assert not full.record["fragile"]


# --- the noise tally -----------------------------------------------------------------------


def _t(task: str, se: bool, sd: bool) -> dict:
    return {"run_id": "r", "cell_id": "c", "task_id": task, "benchmark": "custom",
            "se_correct": se, "sd_correct": sd, "returned": True, "skills_returned": ["s"]}  # fmt: skip


def _trace(task: str, arm: str, record: dict | None) -> dict:
    return {"run_id": "r", "cell_id": "c", "task_id": task, "arm": arm, "prompt_tokens": 1,
            "completion_tokens": 1, "latency_s": 1.0, "addresses_grader": False,
            "judge_verdicts": None if record is None else json.dumps(record)}  # fmt: skip


def _rec(n_valid: int = 2, *, fragile: bool = False, **extra: object) -> dict:
    return {"majority": [True], "unanimous": [True], "n_valid": n_valid, "ties": 0,
            "fragile": fragile, "grading_failure": False, "settings": {"repeats": 2}, **extra}  # fmt: skip


def test_noise_counts_only_flips_between_two_judged_answers() -> None:
    errored = {**_rec(0), "not_judged": "empty answer: scored incorrect, not judged",
               "majority": [], "unanimous": []}  # fmt: skip
    transitions = [
        _t("judged-b", True, False),  # both judged, SE fragile: explainable
        _t("judged-c", False, True),  # both judged, unanimous: not explainable
        _t("errored-sd", True, False),  # SD errored: its empty answer was not judged
        _t("tests-task", True, False),  # a `tests` task: no judge at all
        _t("answer-task", False, True),  # an `answer` task
    ]
    traces = [
        _trace("judged-b", "se", _rec(fragile=True)), _trace("judged-b", "sd", _rec()),
        _trace("judged-c", "se", _rec()), _trace("judged-c", "sd", _rec()),
        _trace("errored-sd", "se", _rec(fragile=True)), _trace("errored-sd", "sd", errored),
        _trace("tests-task", "se", None), _trace("tests-task", "sd", None),
        _trace("answer-task", "se", None), _trace("answer-task", "sd", None),
    ]  # fmt: skip
    (noise,) = _own.judge_noise(transitions, traces).values()
    assert (noise["b"], noise["c"]) == (1, 1)
    assert (noise["b_explainable"], noise["c_explainable"]) == (1, 0)
    assert noise["answers"] == 5  # the errored arm's empty answer is no judged answer


def test_an_older_record_short_of_its_repeats_counts_as_fragile() -> None:
    # written before the rule: `fragile` false although one valid repeat of two decided it
    transitions = [_t("short", True, False)]
    traces = [_trace("short", "se", _rec(1)), _trace("short", "sd", _rec())]
    (noise,) = _own.judge_noise(transitions, traces).values()
    assert (noise["b"], noise["b_explainable"]) == (1, 1)

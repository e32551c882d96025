"""Math scoring on real MATH-500 rows: math-verify first, then \\boxed{} + normalised match."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from hf_skillfollow.scoring import extract_boxed, score_answer, score_many
from hf_skillfollow.scoring._math import normalise, score_math
from hf_skillfollow.tasks import Task, load_tasks


@pytest.fixture(scope="module")
def math500(data_dir: Path) -> dict[str, Task]:
    return {t.task_id: t for t in load_tasks("math500", data_dir / "math500.jsonl")[0]}


def _by_reference(tasks: dict[str, Task], reference: str) -> Task:
    return next(t for t in tasks.values() if t.reference == reference)


def test_boxed_extraction_takes_the_last_balanced_box() -> None:
    assert extract_boxed(r"first \boxed{1} then \boxed{\frac{a}{b^{2}}} done") == r"\frac{a}{b^{2}}"
    assert extract_boxed(r"set \boxed{\{1, 2\}}") == r"\{1, 2\}"
    assert extract_boxed(r"broken \boxed{3} and \boxed{unclosed") == "3"
    assert extract_boxed("no box here") is None


def test_equivalent_forms_pass_through_math_verify(math500: dict[str, Task]) -> None:
    half = (
        _by_reference(math500, r"\frac{1}{2}")
        if any(t.reference == r"\frac{1}{2}" for t in math500.values())
        else None
    )
    polar = math500["test/precalculus/807.json"]
    assert polar.reference == r"\left( 3, \frac{\pi}{2} \right)"
    verdict = score_answer(polar, r"So the point is $\boxed{(3, \pi/2)}$.")
    assert verdict.passed and verdict.details["method"] == "math-verify", verdict
    if half is not None:
        assert score_answer(half, r"\boxed{0.5}").passed


def test_wrong_and_missing_answers_fail(math500: dict[str, Task]) -> None:
    polar = math500["test/precalculus/807.json"]
    wrong = score_answer(polar, r"\boxed{(3, \pi)}")
    assert not wrong.passed and "differs from the reference" in wrong.reason
    assert wrong.details["extracted"] == r"(3, \pi)"
    assert score_answer(polar, "").reason == "empty answer"


def test_normalised_exact_match_is_the_fallback() -> None:
    # math-verify does not read the degree sign "°": only the normalised match accepts it.
    task = Task("math500", "custom/angle.json", "Which angle?", reference=r"90^\circ")
    verdict = score_math(task, r"The angle is \boxed{90°}.")
    assert verdict.passed and verdict.details["method"] == "exact", verdict
    assert not score_math(task, r"\boxed{45°}").passed
    assert normalise(r"\dfrac{3}{4}\,\text{cm}.") == r"\frac{3}{4}cm"
    assert normalise(r"\$18.90") == "18.90" and normalise("5.00") == "5"
    assert normalise(r"\left( 3, \frac{\pi}{2} \right)") == r"(3,\frac{\pi}{2})"


def test_math_scoring_works_from_worker_threads(math500: dict[str, Task]) -> None:
    # math-verify's signal.alarm timeouts fail in threads; score_answer runs it in processes.
    task = math500["test/precalculus/807.json"]
    results: list[bool] = []
    threads = [
        threading.Thread(
            target=lambda: results.append(score_answer(task, r"\boxed{(3,\frac{\pi}{2})}").passed)
        )
        for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True, True, True]


def test_every_reference_answer_scores_as_correct(math500: dict[str, Task]) -> None:
    tasks = list(math500.values())[:60]
    verdicts = score_many(
        [(t, f"The answer is $\\boxed{{{t.reference}}}$.") for t in tasks], workers=2
    )
    assert [v.task_id for v in verdicts] == [t.task_id for t in tasks]
    assert all(v.passed for v in verdicts), [v for v in verdicts if not v.passed]
    shifted = score_many([(t, r"\boxed{-98765}") for t in tasks[:10]], workers=2)
    assert not any(v.passed for v in shifted)


def test_score_command_scores_math_samples(data_dir: Path, tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    samples = tmp_path / "math.jsonl"
    rows = [
        {
            "task_id": "test/precalculus/807.json",
            "solution": r"\boxed{\left(3,\frac{\pi}{2}\right)}",
        },
        {"task_id": "test/precalculus/807.json", "completion": r"\boxed{(3, 0)}"},
    ]
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "verdicts.jsonl"
    cmd = [sys.executable, "-m", "hf_skillfollow.cli", "score", "--benchmark", "math500"]
    cmd += [
        "--samples",
        str(samples),
        "--output",
        str(out),
        "--tasks-file",
        str(data_dir / "math500.jsonl"),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["passed"] for line in out.read_text().splitlines()] == [True, False]

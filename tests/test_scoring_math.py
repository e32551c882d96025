"""Math scoring on real MATH-500 rows: the last \\boxed{} answer, judged by math-verify, then by
normalised exact match; a reply that states two answers fails."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from hf_skillfollow.scoring import extract_boxed, score_answer, score_many
from hf_skillfollow.scoring._extract import find_boxes
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
    assert extract_boxed(r"\boxed{a \boxed{b} c} tail") == "b"  # the last box to start
    assert extract_boxed(r"line\\\boxed{7}") == "7"  # after a LaTeX line break
    boxes = find_boxes(r"\boxed{\boxed{2}} and \boxed{5} and \fbox{ \boxed{3}")
    assert boxes.answers == ("2", "5", "3") and boxes.unclosed == 1


def test_boxed_extraction_of_a_large_crafted_answer_finishes() -> None:
    # Scanning from every opener to the end was quadratic: 8,000 openers took 41 s of CPU.
    # 200,000 (1.4 MB) are one pass now; no answer, and every opener counted as unclosed.
    boxes = find_boxes("\\boxed{" * 200_000)
    assert boxes.answers == () and boxes.unclosed == 200_000
    nested = "\\boxed{" * 100_000 + "7" + "}" * 100_000
    assert extract_boxed(nested) == "7"


def test_a_reply_that_states_two_answers_passes_for_neither(math500: dict[str, Task]) -> None:
    # On main, math-verify (unable to parse "3.") read the "final answer is $2$" while the
    # exact match read the box's 3: the reply passed a task whose answer is 2 and one whose
    # answer is 3.
    two, three = _by_reference(math500, "2"), _by_reference(math500, "3")
    reply = r"The final answer is $2$. \boxed{3.}"
    for task in (two, three):
        verdict = score_answer(task, reply)
        assert not verdict.passed, (task.reference, verdict)
        assert "states two answers: '2' and the final \\boxed{3.}" in verdict.reason
    assert score_answer(three, r"\boxed{3.}").passed  # the box alone commits to 3
    boxes = r"First \boxed{1}, then on reflection \boxed{2}."
    assert "two answers" in score_answer(two, boxes).reason
    # the same value boxed twice in two forms is one answer (as in test/number_theory/459)
    task = Task("math500", "custom/mixed.json", "?", reference=r"\frac{639}{40}")
    assert score_math(task, r"$\boxed{15\frac{39}{40}}$, or $\boxed{\frac{639}{40}}$").passed


def test_a_hedge_is_judged_by_its_boxed_answer_only(math500: dict[str, Task]) -> None:
    # On main, math-verify read the 3 of "It could be 3" (it cannot parse "4°") and the
    # exact match the box's 4: the hedge passed for 3 and for 4.
    three, four = _by_reference(math500, "3"), _by_reference(math500, "4")
    hedge = r"It could be 3, but I'd say \boxed{4°}"
    verdict = score_answer(three, hedge)
    assert not verdict.passed and verdict.details["extracted"] == "4°", verdict
    assert score_answer(four, hedge).passed


def test_an_answer_that_reads_as_two_values_fails(math500: dict[str, Task]) -> None:
    # math-verify reads digits parted by a TeX space or a degree sign as their sum (2\,3 is
    # 5), the normalised exact match drops the space (23): on main \boxed{2\,3} passed the 8
    # MATH-500 tasks whose answer is 5 and the 3 whose answer is 23.
    five, twenty_three = _by_reference(math500, "5"), _by_reference(math500, "23")
    for box in (r"2\,3", r"2^\circ3", r"2\ 3", r"2 3"):
        for task in (five, twenty_three):
            verdict = score_answer(task, f"So \\boxed{{{box}}}.")
            assert not verdict.passed, (box, verdict)
            assert "reads as two values" in verdict.reason
            # digits with only spacing between them are two values whatever math-verify's
            # number; a degree sign is content to it, and its reading (5) differs from "23"
            assert ("side by side" in verdict.reason) != ("as '5', the exact match as '23'" in verdict.reason)
    # \mbox{} between the digits: math-verify reads an expression in a symbol, the exact
    # match 23, which it may not pass
    task = Task("math500", "custom/n.json", "?", reference="23")
    assert "two values" in score_math(task, r"\boxed{2\mbox{}3}").reason
    # units in text are one answer: math-verify reads 5, the exact match "5units"
    assert score_answer(five, r"\boxed{5\text{ units}}").passed
    # so is a stated answer: "2\,3" beside a boxed 5 is a second answer (23 to the exact match)
    verdict = score_answer(five, r"The final answer is $2\,3$. \boxed{5}")
    assert not verdict.passed and "states two answers" in verdict.reason, verdict
    assert verdict.details["other_answer"] == r"2\,3"
    assert score_answer(five, r"The final answer is $5$. \boxed{5}").passed
    # a thousands separator is one number to both checks
    for reference, box in (("10000", r"10\,000"), ("1000000", r"1\,000\,000"), ("12345", "12 345")):
        task = Task("math500", "custom/n.json", "?", reference=reference)
        verdict = score_math(task, f"\\boxed{{{box}}}")
        assert verdict.passed and verdict.details["method"] == "math-verify", (box, verdict)
        assert verdict.details["extracted"] == box
    assert not score_math(
        Task("math500", "c/0.json", "?", reference="0"), r"\boxed{10\,000}"
    ).passed


@pytest.mark.slow  # 2,500 checks: ~30 s on 2 loaded cores
def test_over_all_of_math500_a_hedge_scores_as_its_box_alone(math500: dict[str, Task]) -> None:
    # Issue 21: \boxed{3} passed 19 problems, \boxed{2} 18, and the hedge 37 (their union).
    tasks = list(math500.values())
    replies = {
        "three": r"\boxed{3}",
        "two": r"\boxed{2}",
        "final-2-boxed-3.": r"The final answer is $2$. \boxed{3.}",
        "four-degrees": r"\boxed{4°}",
        "could-be-3-boxed-4°": r"It could be 3, but I'd say \boxed{4°}",
    }
    pairs = [(t, reply) for reply in replies.values() for t in tasks]
    verdicts = score_many(pairs, workers=2)
    passed = {
        name: {v.task_id for v in verdicts[k * len(tasks) : (k + 1) * len(tasks)] if v.passed}
        for k, name in enumerate(replies)
    }
    assert len(passed["three"]) == 19 and len(passed["two"]) == 18
    assert passed["final-2-boxed-3."] == set()  # two answers: passes nowhere
    assert passed["could-be-3-boxed-4°"] == passed["four-degrees"]
    assert not passed["could-be-3-boxed-4°"] & passed["three"]


def test_every_reference_solution_passes(math500: dict[str, Task]) -> None:
    # Real worked replies (reasoning, several $...$, eight with two boxes of one value): the
    # rule that other stated answers agree with the boxed one must not fail any of them.
    tasks = list(math500.values())
    verdicts = score_many([(t, t.problem["solution"]) for t in tasks], workers=2)
    assert [v for v in verdicts if not v.passed] == []


def test_a_reply_without_a_complete_box_fails_with_the_reason(math500: dict[str, Task]) -> None:
    task = math500["test/precalculus/807.json"]
    assert score_answer(task, r"So it is $(3, \frac{\pi}{2})$.").reason == "no \\boxed{} answer"
    unclosed = score_answer(task, "\\boxed{" * 20_000)
    assert unclosed.reason == "no \\boxed{} answer (20000 \\boxed{ never closed)"
    long = score_answer(task, "\\boxed{" + "1+" * 400 + "1}")
    assert not long.passed and "too long to check (at most 500)" in long.reason


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

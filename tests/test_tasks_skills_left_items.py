"""Own tasks and skills, items left open: a hostile math reference in a task file, hostile
skill names and descriptions in the catalog, a skill body leaking into the SD arm's prompt in
part (docs/tasks.md, docs/skills.md)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from hf_skillfollow.scoring import score_answer
from hf_skillfollow.scoring._math import MAX_REFERENCE_DEPTH, score_math
from hf_skillfollow.tasks import TaskLoadError, load_tasks


def _task_file(tmp_path: Path, answers: list[str]) -> Path:
    path = tmp_path / "tasks.jsonl"
    rows = [{"id": f"t{i}", "prompt": "Compute it.", "answer": a} for i, a in enumerate(answers)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# --- 1. a hostile math reference ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("+".join(["x"] * 300), "599 characters; a math reference is at most 500"),
        ("(" * 50 + "1" + ")" * 50, "brackets and braces nested 50 deep (at most 8)"),
        ("\\frac{1}{" * 20 + "2" + "}" * 20, "brackets and braces nested 20 deep (at most 8)"),
    ],
    ids=["long", "parentheses", "fractions"],
)
def test_a_math_reference_too_long_or_too_deep_is_refused_at_load(
    tmp_path: Path, reference: str, message: str
) -> None:
    # before: each loaded, and every answer checked against it cost math-verify 5 to 10 s
    path = _task_file(tmp_path, ["3", reference])
    started = time.monotonic()
    with pytest.raises(TaskLoadError) as caught:
        load_tasks("custom", path)
    assert time.monotonic() - started < 2
    assert str(caught.value).startswith(f"{path}:2: field 'answer' of task 't1': {message}")


def test_a_math_reference_at_the_limits_loads(tmp_path: Path) -> None:
    deep = "(" * MAX_REFERENCE_DEPTH + "1" + ")" * MAX_REFERENCE_DEPTH
    long = "+".join(["1"] * 250)  # 499 characters
    tasks, _ = load_tasks("custom", _task_file(tmp_path, [deep, long, "[0, 1)"]))
    assert [t.reference for t in tasks] == [deep, long, "[0, 1)"]


#: references whose value math-verify computed on until its 5 s timeout for every wrong answer
TOO_LARGE = ["9^{9^{9}}", "10^{10}!", "\\binom{10^{10}}{10^{5}}", "(x+y+z+1)^{20}"]


def test_a_reference_too_large_to_compare_is_not_compared(tmp_path: Path) -> None:
    tasks, _ = load_tasks("custom", _task_file(tmp_path, TOO_LARGE))
    score_answer(tasks[0], "\\boxed{9^{9^{9}}}")  # a worker started: not counted below
    for task in tasks:
        started = time.monotonic()
        wrong = score_answer(task, "\\boxed{3}")
        took = time.monotonic() - started
        assert not wrong.passed
        assert wrong.details["math_verify_error"].startswith(
            "not compared: the reference is too large for math-verify"
        ), wrong.details
        assert took < 3, (task.reference, took)  # math-verify's timeout alone is 5 s
        # the answer written as the reference still passes, by the normalised exact match
        right = score_answer(task, f"\\boxed{{{task.reference}}}")
        assert right.passed and right.details["method"] == "exact", right


def test_every_math500_reference_loads_as_an_own_task_and_equals_itself(
    data_dir: Path, tmp_path: Path
) -> None:
    rows = [json.loads(line) for line in (data_dir / "math500.jsonl").open(encoding="utf-8")]
    assert len(rows) == 500
    tasks, _ = load_tasks("custom", _task_file(tmp_path, [r["answer"] for r in rows]))
    assert len(tasks) == 500
    for task in tasks:
        verdict = score_math(task, f"The answer is \\boxed{{{task.reference}}}.")
        assert verdict.passed, verdict
        assert verdict.details["method"] in ("math-verify", "text"), verdict
        assert "math_verify_error" not in verdict.details

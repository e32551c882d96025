"""The `tests` grader against running the asserts: a differential test over a corpus.

`tests/grader_corpus/tests_grader.jsonl` holds honest tasks (asserts in the accepted form) with
correct and subtly wrong solutions. Each solution gets two verdicts: the grader's (the asserts
read as inputs, expected outputs and per-assert comparisons, judged outside the program's
process) and the truth, plain Python running the solution followed by the asserts. The truth
runs in a throwaway process of the project's own sandbox (the program is ours, but the
sandbox is the one confined place to run code here): the solution and its asserts become one
program whose entry point returns True after the asserts, scored like any program. The two
must agree on every solution, except where the corpus names a deliberate strictness of the
grader (docs/tasks.md lists each).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hf_skillfollow.scoring import score_solution
from hf_skillfollow.scoring._custom import problem_from_tests
from hf_skillfollow.tasks import Task

CORPUS = Path(__file__).parent / "grader_corpus" / "tests_grader.jsonl"
TASKS = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
_RUN = "__run_the_asserts__"


def _graded(item: dict) -> Task:
    problem = problem_from_tests(item["tests"], item.get("entry_point"))
    return Task("custom", item["id"], "", entry_point=problem["entry_point"],
                problem={"domain_tag": None, **problem}, grader="tests")  # fmt: skip


def _truth_task(item: dict) -> Task:
    """A task whose one input calls `_RUN()`: the program passes when that returns True."""
    problem = {
        "prompt": "",
        "canonical_solution": f"def {_RUN}():\n    return True\n",
        "entry_point": _RUN,
        "base_input": [[]],
        "plus_input": [],
        "atol": 0,
    }
    return Task("custom", f"truth/{item['id']}", "", entry_point=_RUN, problem=problem)


def _truth_program(solution: str, tests: str) -> str:
    # the asserts run in the solution's own globals, after it, as `solution + tests` would
    return (
        f"{solution}\n\n\n_TESTS = {tests!r}\n\n\ndef {_RUN}():\n"
        "    exec(compile(_TESTS, '<tests>', 'exec'), globals())\n    return True\n"
    )


def _cases() -> list[tuple[dict, str]]:
    return [(item, name) for item in TASKS for name in item["solutions"]]


def test_the_corpus_is_large_enough_and_has_both_outcomes() -> None:
    assert len(TASKS) >= 28 and len(_cases()) >= 64
    assert len({t["id"] for t in TASKS}) == len(TASKS)


@pytest.fixture(scope="module")
def verdicts() -> dict[tuple[str, str], tuple[bool, bool, str]]:
    out = {}
    for item, name in _cases():
        code = item["solutions"][name]
        graded = score_solution(_graded(item), code)
        truth = score_solution(_truth_task(item), _truth_program(code, item["tests"]))
        out[(item["id"], name)] = (graded.passed, truth.passed, graded.reason)
    return out


def test_grader_agrees_with_running_the_asserts(verdicts: dict) -> None:
    disagreements = []
    for item, name in _cases():
        graded, truth, reason = verdicts[(item["id"], name)]
        deliberate = item.get("deliberate", {}).get(name)
        if deliberate is not None:
            # stricter, never looser: the grader fails what plain Python passes
            assert (graded, truth) == (False, True), (item["id"], name, reason)
        elif graded != truth:
            disagreements.append(f"{item['id']}/{name}: grader {graded}, Python {truth} ({reason})")
    assert disagreements == []


def test_the_corpus_has_passing_and_failing_solutions(verdicts: dict) -> None:
    truths = [truth for _, truth, _ in verdicts.values()]
    assert sum(truths) >= 25 and len(truths) - sum(truths) >= 25


def test_every_deliberate_strictness_is_listed_in_the_docs() -> None:
    docs = (Path(__file__).parents[1] / "docs" / "tasks.md").read_text(encoding="utf-8")
    for item in TASKS:
        for name in item.get("deliberate", {}):
            assert f"`{item['id']}/{name}`" in docs

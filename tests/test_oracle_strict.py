"""The comparison that decides a pass: no broadcasting, and special oracles that check.

EvalPlus falls back to ``numpy.allclose`` for float outputs after only a type and length
check, and ``allclose`` broadcasts: ``[[zeros((0, 1))] for _ in numbers]`` passed
HumanEval/21 ("all 5 base + 999 plus inputs"). Its MBPP+ special oracles accepted any output
for Mbpp/164 (``exact or True``) and 0 for any input of Mbpp/295. Here an output needs the
expected output's structure, element by element (``_oracle.same_structure``), and each
special oracle needs the expected output's type and accepts only correct values
(docs/sandbox.md, "Where this scorer is stricter than EvalPlus"). The end-to-end tests score
real programs on the real tasks through the sandbox; canonical solutions keep passing.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hf_skillfollow.scoring import score_solution
from hf_skillfollow.scoring._oracle import Match, WrongOutput, matches, same_structure
from hf_skillfollow.tasks import Task, load_tasks

pytestmark = pytest.mark.usefixtures("private_score_cache")


@pytest.fixture(scope="module")
def tasks(data_dir: Path) -> dict[str, Task]:
    mbpp = load_tasks("mbppplus", data_dir / "mbppplus-v0.1.0.jsonl")[0]
    humaneval = load_tasks("humanevalplus", data_dir / "HumanEvalPlus-v0.1.10.jsonl.gz")[0]
    return {t.task_id: t for t in (*mbpp, *humaneval)}


def _canonical(task: Task) -> str:
    return task.problem["prompt"] + task.problem["canonical_solution"]


def _wrong(verdict_reason: str, why: str) -> bool:
    return verdict_reason.endswith(f"wrong output ({why})")


# --- structure, element by element (pure) ---------------------------------------------------


def test_an_empty_array_is_not_a_list_of_floats() -> None:
    exp = [0.0, 0.25, 1.0]
    out = [[np.zeros((0, 1))] for _ in exp]
    assert np.allclose(out, exp)  # what let it pass: broadcasting to an empty array
    assert not same_structure(out, exp)
    with pytest.raises(WrongOutput, match="structure differs"):
        matches("humaneval", "rescale_to_unit", ([1.0, 2.0, 5.0],), out, exp, 0)


@pytest.mark.parametrize(
    ("out", "exp", "same"),
    [
        ([1.0, 2.0], [1.0, 2.0000001], True),
        ([(1.0, 2.0)], [[1.0, 2.0]], True),  # list or tuple below the top, as EvalPlus allows
        ([1.0, [2.0]], [1.0, 2.0], False),
        ([1.0], [1.0, 2.0], False),
        (np.array(1.0), 1.0, True),  # a 0-d array has a scalar's shape
        (np.zeros(1), 1.0, False),
        (np.zeros((0,)), 1.0, False),
        ([np.zeros((0, 1)), 2.0], [1.0, 2.0], False),
        (np.zeros((2, 1)), np.zeros((2, 1)), True),
        (np.zeros((1, 2)), np.zeros((2, 1)), False),
        ((1.0, 2.0), (1.0, 2.0), True),
    ],
)
def test_structure_rule(out: object, exp: object, same: bool) -> None:
    assert same_structure(out, exp) is same


def test_close_floats_still_pass_and_far_ones_fail() -> None:
    assert matches("humaneval", "f", (), [0.1 + 0.2, 1.0], [0.3, 1.0], 0) == 1e-6
    with pytest.raises(AssertionError):
        matches("humaneval", "f", (), [0.31, 1.0], [0.3, 1.0], 0)


def test_a_one_element_array_for_a_float_fails_although_its_truth_is_true() -> None:
    # ``out == exp`` is then array([True]), whose truth value EvalPlus would take as a pass
    with pytest.raises(WrongOutput, match="structure differs"):
        matches("humaneval", "truncate_number", (3.5,), np.array([0.5]), 0.5, 0)


# --- special oracles (pure) -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "inp", "out", "exp", "why"),
    [
        ("are_equivalent", (36, 57), "not even a bool", False, "not a bool"),
        ("are_equivalent", (36, 57), 0, False, "not a bool"),
        ("sum_div", (8,), "15", 15.0, "not a number"),
        ("surface_Area", (3, 4), True, 33, "not a number"),
        ("digit_distance_nums", (1, 2), 1.0, 1, "not an int"),
        ("similar_elements", ((3, 4), (4, 5)), {4: 0}, (4,), "not a collection of elements"),
        ("similar_elements", (("ab",), ("ab",)), "ab", ("ab",), "not a collection of elements"),
        ("check_str", ("annie",), "a match", True, "not a regular-expression match"),
    ],
)
def test_special_oracles_check_the_type(
    entry: str, inp: tuple, out: object, exp: object, why: str
) -> None:
    with pytest.raises(WrongOutput, match=why):
        matches("mbpp", entry, inp, out, exp, 0)


def test_find_zero_needs_a_number() -> None:
    with pytest.raises(WrongOutput, match="not a number"):
        matches("humaneval", "find_zero", ([1, 2],), np.array(-0.5), -0.5, 1e-6)
    matches("humaneval", "find_zero", ([1, 2],), -0.5, -0.5, 1e-6)


@pytest.mark.parametrize(
    ("entry", "inp", "out", "exp"),
    [
        ("are_equivalent", (23, 47), True, False),  # MBPP's own reading (proper divisors)
        ("are_equivalent", (23, 47), False, False),  # the canonical's (all divisors)
        ("sum_div", (8,), 15, 15.0),
        ("surface_Area", (3, 4), 33, 33),
        ("surface_Area", (3, 4), 35, 33),  # EvalPlus's reading: height as perpendicular height
        ("digit_distance_nums", (12345, 9), 8, 8),
        ("digit_distance_nums", (12345, 9), 14, 8),  # EvalPlus's zero-padded reading
        ("similar_elements", ((3, 4, 5), (5, 4)), {4, 5}, (4, 5)),
        ("similar_elements", ((3, 4, 5), (5, 4)), [5, 4], (4, 5)),
        ("check_str", ("annie",), Match(), True),
        ("check_str", ("annie",), True, True),
        ("check_str", ("dawood",), None, False),
    ],
)
def test_special_oracles_accept_every_correct_reading(
    entry: str, inp: tuple, out: object, exp: object
) -> None:
    matches("mbpp", entry, inp, out, exp, 0)


@pytest.mark.parametrize(
    ("entry", "inp", "out", "exp"),
    [
        ("are_equivalent", (36, 57), True, False),  # both readings say False
        ("sum_div", (8,), 0, 15.0),  # EvalPlus accepted 0 for any input
        ("sum_div", (8,), 7, 15.0),
        ("surface_Area", (3, 4), 34, 33),
        ("digit_distance_nums", (12345, 9), 9, 8),
        ("check_str", ("dawood",), Match(), False),
    ],
)
def test_special_oracles_refuse_wrong_values(
    entry: str, inp: tuple, out: object, exp: object
) -> None:
    with pytest.raises(AssertionError):
        matches("mbpp", entry, inp, out, exp, 0)


# --- end to end, through the sandbox ---------------------------------------------------------


def test_empty_arrays_do_not_pass_float_tasks(tasks: dict[str, Task]) -> None:
    zeros = "import numpy\ndef {entry}(*args):\n    return {value}\n"
    verdict = score_solution(
        tasks["HumanEval/21"],
        zeros.format(entry="rescale_to_unit", value="[[numpy.zeros((0, 1))] for _ in args[0]]"),
    )
    assert not verdict.passed
    assert _wrong(verdict.reason, "its structure differs from the expected output's"), verdict
    verdict = score_solution(  # cmath.polar's (r, phi): a tuple of two floats
        tasks["Mbpp/252"],
        zeros.format(entry="convert", value="([numpy.zeros((0, 1))], [numpy.zeros((0, 1))])"),
    )
    assert not verdict.passed
    assert _wrong(verdict.reason, "its structure differs from the expected output's"), verdict


@pytest.mark.parametrize(
    ("task_id", "program", "why"),
    [
        ("Mbpp/164", "def are_equivalent(a, b):\n    return 'not even a bool'\n", "not a bool"),
        ("Mbpp/295", "def sum_div(n):\n    return 0\n", None),
        ("Mbpp/2", "def similar_elements(a, b):\n    return dict.fromkeys(set(a) & set(b))\n",
         "not a collection of elements"),
        ("Mbpp/737", "import re\ndef check_str(s):\n"
         "    return 'a match' if re.search('^[aeiouAEIOU][A-Za-z0-9_]*', s) else None\n",
         "not a regular-expression match, None or a bool"),
    ],
    ids=["164-any-value", "295-zero", "2-dict", "737-string"],
)  # fmt: skip
def test_special_oracles_refuse_what_evalplus_accepts(
    tasks: dict[str, Task], task_id: str, program: str, why: str | None
) -> None:
    verdict = score_solution(tasks[task_id], program)
    assert not verdict.passed
    assert verdict.reason.startswith("base input #0: wrong output"), verdict.reason
    if why is not None:
        assert _wrong(verdict.reason, why), verdict.reason


@pytest.mark.parametrize(
    ("task_id", "program"),
    [
        # MBPP's own tests sum proper divisors (23, 47 -> True); the canonical sums all
        ("Mbpp/164", "def are_equivalent(a, b):\n"
         "    s = lambda n: sum(d for d in range(1, n) if n % d == 0)\n"
         "    return s(a) == s(b)\n"),
        ("Mbpp/2", "def similar_elements(a, b):\n    return (x for x in set(a) & set(b))\n"),
        ("Mbpp/737", "import re\ndef check_str(s):\n"
         "    return bool(re.search('^[aeiouAEIOU][A-Za-z0-9_]*', s))\n"),
        ("Mbpp/558", "def digit_distance_nums(a, b):\n    a, b = str(a), str(b)\n"
         "    n = max(len(a), len(b))\n"
         "    return sum(abs(int(x) - int(y)) for x, y in zip(a.zfill(n), b.zfill(n)))\n"),
    ],
    ids=["164-proper-divisors", "2-generator", "737-bool", "558-zero-padded"],
)  # fmt: skip
def test_other_correct_readings_pass(tasks: dict[str, Task], task_id: str, program: str) -> None:
    verdict = score_solution(tasks[task_id], program)
    assert verdict.passed, verdict.reason


SPECIAL = ["Mbpp/164", "Mbpp/295", "Mbpp/581", "Mbpp/558", "Mbpp/2", "Mbpp/7", "Mbpp/737"]
SPECIAL += ["Mbpp/787", "Mbpp/794", "HumanEval/32", "HumanEval/21", "Mbpp/252"]


@pytest.mark.parametrize("task_id", SPECIAL)
def test_canonical_solutions_pass(tasks: dict[str, Task], task_id: str) -> None:
    verdict = score_solution(tasks[task_id], _canonical(tasks[task_id]))
    assert verdict.passed, verdict.reason

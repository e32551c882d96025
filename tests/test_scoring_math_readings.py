"""A math answer has one reading (issue 37): numbers side by side with TeX spacing between them,
and words compared as words, not as products of one-letter symbols."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from hf_skillfollow.scoring._math import is_text, score_math
from hf_skillfollow.tasks import Task, load_tasks


def _passes(reference: str, boxed: str) -> bool:
    task = SimpleNamespace(task_id="t", reference=reference)
    return score_math(task, f"The answer is $\\boxed{{{boxed}}}$.").passed


#: every TeX and LaTeX horizontal spacing command, the invisible boxes, and the do-nothing
#: commands and groups that can stand between two digits
SPACING = [
    r"\,", r"\:", r"\;", r"\>", r"\ ", r"\!", r"\quad", r"\qquad", r"\enspace", r"\enskip",
    r"\thinspace", r"\medspace", r"\thickspace", r"\negthinspace", r"\negmedspace",
    r"\negthickspace", r"\hspace{1em}", r"\hspace*{1em}", r"\hskip 1em", r"\hskip1em plus 1fil",
    r"\kern1em", r"\kern 0.5em", r"\mkern3mu", r"\mskip 3mu", r"\mspace{3mu}", r"\phantom{0}",
    r"\hphantom{0}", r"\vphantom{0}", r"\phantom{12}", r"~", r"\space", r"\nobreakspace",
    r"\hfill", r"\hfil", r"\strut", r"\mathstrut", r"\mbox{}", r"\mbox{ }", r"\text{ }",
    r"\text{}", r"\mathrm{ }", r"{}", r"\/", r"\relax", r"\nobreak", r"\allowbreak",
    r"\displaystyle", r"\textstyle", r"\scriptstyle", r"\smash{}", r"\quad\quad", r"\ \ ",
]  # fmt: skip


@pytest.mark.parametrize("space", SPACING)
def test_two_numbers_with_any_spacing_between_pass_no_reading(space: str) -> None:
    for answer in (f"2{space}3", f"{{2}}{space}{{3}}", f"2{space}{{3}}", f"{{2}}{space}3"):
        for reference in ("5", "23", "6"):
            assert not _passes(reference, answer), (answer, reference)


@pytest.fixture(scope="module")
def math500(data_dir: Path) -> list[Task]:
    return load_tasks("math500", data_dir / "math500.jsonl")[0]


def test_spacing_passes_none_of_the_math500_tasks_whose_answer_is_5(math500: list[Task]) -> None:
    fives = [t for t in math500 if t.reference in ("5", "23")]
    assert len(fives) >= 7
    for task in fives:
        for answer in (r"2\quad 3", r"2\qquad 3", r"2\phantom{0}3", r"{2}\quad{3}", r"2\ {3}"):
            assert not score_math(task, f"\\boxed{{{answer}}}").passed, (task.task_id, answer)


def test_every_math500_reference_passes_as_its_own_answer(math500: list[Task]) -> None:
    # honest answers keep their verdicts (a pmatrix's `\\`, `\frac9{19}`, units in text)
    failing = [t.task_id for t in math500 if not score_math(t, f"\\boxed{{{t.reference}}}").passed]
    assert failing == []


@pytest.mark.parametrize(
    ("reference", "answer"),
    [
        ("10000", r"10\,000"), (r"\frac{5}{2}", r"2\,\frac{1}{2}"), ("(1, 2)", r"(1,\ 2)"),
        (r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}", r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}"),
        ("5", r"5\text{ units}"), (r"3\sqrt2", r"3\sqrt{2}"), ("6", r"2\cdot 3"),
        (r"\frac{9}{19}", r"\frac9{19}"), ("1000000", r"1\,000\,000"),
    ],
)  # fmt: skip
def test_honest_spacing_still_passes(reference: str, answer: str) -> None:
    assert _passes(reference, answer)


# --- a reference in words is compared as text ---------------------------------------------


@pytest.mark.parametrize(
    ("reference", "answer"),
    [("Tokyo", "Kyoto"), ("listen", "silent"), ("AB", "BA"), ("Tokyo", "Tokyo or Kyoto"),
     ("Tokyo", r"\text{Kyoto}"), ("east", "tease"), ("Tokyo", "Tokyo, Kyoto")],
)  # fmt: skip
def test_an_anagram_of_a_word_reference_fails(reference: str, answer: str) -> None:
    assert is_text(reference)
    assert not _passes(reference, answer)


@pytest.mark.parametrize("answer", ["Tokyo", r"\text{Tokyo}", "tokyo", r"\textbf{Tokyo}", "Tokyo."])
def test_the_word_itself_passes(answer: str) -> None:
    assert _passes("Tokyo", answer)


def test_math500_word_answers_are_text(math500: list[Task]) -> None:
    evelyn = next(t for t in math500 if t.reference == r"\text{Evelyn}")
    assert score_math(evelyn, r"\boxed{\text{Evelyn}}").passed
    assert score_math(evelyn, r"\boxed{Evelyn}").passed
    assert not score_math(evelyn, r"\boxed{\text{Evlyne}}").passed
    assert {t.reference for t in math500 if is_text(t.reference)} == {
        r"\text{Evelyn}", r"\text{east}", r"\text{even}", r"\text{ellipse}", r"\text{Navin}"
    }  # fmt: skip


@pytest.mark.parametrize(
    "reference", ["x", "2xy", r"\sin x", r"\frac{\pi}{2}", "10\\%", "(C)", "pi"]
)
def test_mathematical_references_stay_mathematical(reference: str) -> None:
    assert not is_text(reference)


# --- decisions (docs/sandbox.md, "The math check") -------------------------------------------


def test_fullwidth_digits_read_as_digits() -> None:
    assert _passes("3", "３") and _passes("12", "１２") and _passes("Tokyo", "Ｔｏｋｙｏ")
    assert not _passes("4", "３")


def test_a_number_written_as_text_is_text() -> None:
    assert _passes("3", r"3\text{ apples}")
    assert not _passes("3", r"\text{3 apples}")


def test_a_percent_sign_is_a_unit() -> None:
    assert _passes(r"10\%", "10") and _passes(r"10\%", r"10\%") and _passes("10", r"10\%")
    assert not _passes(r"10\%", "0.1") and not _passes("0.1", r"10\%")

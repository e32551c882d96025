"""Math scoring: one committed answer, judged by math-verify, then by normalised exact match.

The committed answer is the content of the reply's last complete ``\\boxed{}`` (the math
prompts ask for it there), found once by ``_extract.find_boxes``; both checks judge that
string and nothing else. math-verify gets only ``\\boxed{answer}`` with latex extraction of
that box alone (no fallback to another match, no plain-number reading): left to read the whole
reply it takes, for ``The final answer is $2$. \\boxed{3.}``, the 2 (it cannot parse ``3.``)
while the exact match takes the 3, so one reply passed for two answers. Every other answer
the reply states (another box, a "final answer is $x$") must agree with the committed one, or
the reply fails as stating two answers. See docs/sandbox.md, "The math check".

``score_math`` runs in the calling process; ``scoring`` runs it in math worker processes
(``_math_worker``), whose main thread gives math-verify's ``signal.alarm`` timeouts.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from hf_skillfollow.scoring._extract import find_boxes
from hf_skillfollow.scoring._verdict import Verdict

#: longest committed answer checked: math-verify's cost grows steeply with length (a crafted
#: 1,000-character answer took 4.6 s to parse); the longest MATH-500 reference has 53
MAX_ANSWER_CHARS = 500
#: most distinct answers a reply may state besides its committed one before it fails
MAX_OTHER_ANSWERS = 8

# A TeX space between a digit and a group of exactly three digits is a thousands separator
# ("10\\,000"); math-verify would read it as a sum or a product of the parts (10 * 000 = 0)
_DIGIT_GROUP = re.compile(r"(?<=\d)(?:\\[,;: ]|\s)(?=\d{3}(?!\d))")
_TEXT_WRAPPERS = re.compile(r"\\(?:text|textbf|textit|textsc|mathrm|mathbf|mbox)\{([^{}]*)\}")
_DROP = re.compile(r"\\left|\\right|\\!|\\,|\\;|\\:|\\ |\\\$|\$|\s+")
_DEGREES = re.compile(r"\^\{?\\circ\}?|°")
# "final answer is $x$" / "final answer: 12": an answer stated in words, read in bounded
# steps from each anchor (math-verify's own anchors backtrack without bound on crafted text)
_STATED = re.compile(
    r"final\s{1,3}answer\s{0,3}(?:is)?\s{0,3}:?\s{0,3}"
    rf"(?:\$\$?([^$\n]{{1,{MAX_ANSWER_CHARS}}})\$|(-?\d[\d,]{{0,40}}(?:\.\d{{1,40}})?))",
    re.IGNORECASE,
)


def normalise(answer: str) -> str:
    """A conservative canonical form for exact matching of final answers."""
    s = answer.strip()
    s = _TEXT_WRAPPERS.sub(r"\1", s)
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = _DEGREES.sub("", s)
    s = _DROP.sub("", s)
    s = s.rstrip(".")
    if re.fullmatch(r"-?\d+\.0+", s):
        s = s.split(".")[0]
    return s


def ungrouped(answer: str) -> str:
    """``answer`` with its thousands separators dropped: the one string both checks judge."""
    return _DIGIT_GROUP.sub("", answer)


def stated_answers(text: str) -> list[str]:
    """Answers the reply states in words ("final answer is $x$"), boxes aside."""
    out = []
    for match in _STATED.finditer(text):
        answer = match.group(1) if match.group(1) is not None else match.group(2)
        if "\\boxed" not in answer and "\\fbox" not in answer:  # a box is read as a box
            out.append(answer.strip())
    return out


def score_math(task: Any, text: str) -> Verdict:
    reference = task.reference or ""
    details: dict[str, Any] = {"extracted": "", "reference": reference}
    if not text.strip():
        return Verdict(task.task_id, False, "empty answer", details)
    boxes = find_boxes(text)
    answer = boxes.last
    if answer is None:
        reason = "no \\boxed{} answer"
        if boxes.unclosed:
            reason += f" ({boxes.unclosed} \\boxed{{ never closed)"
        return _failed(task, details, reason)
    details["extracted"] = answer[: MAX_ANSWER_CHARS + 1]
    if len(answer) > MAX_ANSWER_CHARS:
        return _failed(
            task,
            details,
            f"\\boxed{{}} answer of {len(answer):,} characters is too long to check "
            f"(at most {MAX_ANSWER_CHARS})",
        )
    judge = _Judge(reference)
    answer = ungrouped(answer)
    two_numbers = judge.second_reading(answer, numbers_only=True)
    if two_numbers is not None:
        return _two_readings(task, details, answer, two_numbers)
    others = [ungrouped(o) for o in (*boxes.answers[:-1], *stated_answers(text))]
    other = _disagreeing(judge, answer, others)
    if other is not None:
        details["other_answer"] = other[: MAX_ANSWER_CHARS + 1]
        return _failed(
            task,
            details,
            f"the reply states two answers: {other[:80]!r} and the final \\boxed{{{answer[:80]}}}"
            "; it must commit to one",
        )
    if judge.equivalent(answer):
        return Verdict(
            task.task_id,
            True,
            "math-verify: equivalent to the reference",
            {**details, "method": "math-verify"},
        )
    if judge.error:
        details["math_verify_error"] = judge.error
    if normalise(answer) == normalise(reference):
        reading = judge.second_reading(answer)
        if reading is not None:
            return _two_readings(task, details, answer, reading)
        return Verdict(
            task.task_id,
            True,
            "normalised \\boxed{} answer equals the reference",
            {**details, "method": "exact"},
        )
    return _failed(task, details, f"answer {answer[:80]!r} differs from the reference")


def _two_readings(task: Any, details: dict[str, Any], answer: str, reading: str) -> Verdict:
    return _failed(
        task,
        details,
        f"the answer reads as two values: math-verify reads \\boxed{{{answer[:80]}}} as "
        f"{reading[:80]!r}, the exact match as {normalise(answer)[:80]!r}; it must commit to one",
    )


def _failed(task: Any, details: dict[str, Any], reason: str) -> Verdict:
    return Verdict(task.task_id, False, reason, {**details, "method": "none"})


def _disagreeing(judge: _Judge, answer: str, others: list[str]) -> str | None:
    """The first stated answer that is neither the committed one (normalised) nor equal to it
    for math-verify, or that reads as two numbers itself (``2\\,3`` beside a boxed 5);
    ``answer`` itself when there are too many to compare."""
    mine = normalise(answer)
    distinct = list(dict.fromkeys(o for o in others if normalise(o) != mine))
    if len(distinct) > MAX_OTHER_ANSWERS:
        return distinct[0]
    for other in distinct:
        if len(other) > MAX_ANSWER_CHARS or not judge.same(answer, other):
            return other
        if judge.second_reading(other, numbers_only=True) is not None:
            return other
    return None


class _Judge:
    """math-verify, reading each answer as the only box of a text."""

    def __init__(self, reference: str) -> None:
        from math_verify import LatexExtractionConfig

        self.timeout = 5 if threading.current_thread() is threading.main_thread() else None
        self.only_the_box = [LatexExtractionConfig(boxed_match_priority=0)]
        self.reference = reference
        self.error: str | None = None
        self._read: dict[str, list[Any]] = {}  # each answer is read more than once

    def read(self, answer: str) -> list[Any]:
        if answer not in self._read:
            self._read[answer] = self._parse(answer)
        return self._read[answer]

    def _parse(self, answer: str) -> list[Any]:
        from math_verify import parse

        return (
            self._guard(
                lambda: parse(
                    f"\\boxed{{{answer}}}",
                    extraction_config=self.only_the_box,
                    fallback_mode="no_fallback",
                    extraction_mode="first_match",
                    parsing_timeout=self.timeout,
                )
            )
            or []
        )

    def gold(self) -> list[Any]:
        from math_verify import parse

        ref = self.reference
        return (
            self._guard(
                lambda: (
                    parse(f"${ref}$", parsing_timeout=self.timeout)
                    or parse(f"\\boxed{{{ref}}}", parsing_timeout=self.timeout)
                )
            )
            or []
        )

    def equivalent(self, answer: str) -> bool:
        gold, pred = self.gold(), self.read(answer)
        return bool(gold and pred and self._verify(gold, pred))

    def second_reading(self, answer: str, numbers_only: bool = False) -> str | None:
        """What math-verify reads ``answer`` as, where that differs from its reading of the
        normalised string the exact match compares (``\\boxed{2\\,3}``: 5 against "23");
        None when it agrees or cannot read ``answer`` at all (``90°``). ``numbers_only``:
        only where both readings are numbers (``5\\text{ units}`` normalises to "5units",
        which math-verify reads as a product of letters, and is still one answer).

        The exact match may only pass an answer that has no second reading, or the one reply
        passes a task whose answer is 5 (math-verify) and one whose answer is 23 (exact); an
        answer read as two numbers fails whatever the reference."""
        mine = self.read(answer)
        if not mine:
            return None
        plain = self.read(normalise(answer))
        if plain and self._verify(plain, mine):
            return None
        if numbers_only and not (plain and _is_number(mine[0]) and _is_number(plain[0])):
            return None
        return str(mine[0])

    def same(self, answer: str, other: str) -> bool:
        mine, theirs = self.read(answer), self.read(other)
        return bool(mine and theirs and self._verify(mine, theirs))

    def _verify(self, gold: list[Any], pred: list[Any]) -> bool:
        from math_verify import verify

        return bool(self._guard(lambda: verify(gold, pred, timeout_seconds=self.timeout)))

    def _guard(self, call: Any) -> Any:
        try:
            return call()
        except BaseException as exc:  # its TimeoutException derives from BaseException
            if isinstance(exc, KeyboardInterrupt | SystemExit | MemoryError):
                raise
            self.error = f"{type(exc).__name__}: {exc}"[:200]
            return None


def _is_number(value: Any) -> bool:
    """Whether a math-verify reading is a plain number (a sympy number, not an expression in
    symbols, a set or an equation)."""
    return getattr(value, "is_number", False) is True

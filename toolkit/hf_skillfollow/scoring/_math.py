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

import math
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
#: deepest nesting of brackets and braces in an own task's reference (MATH-500's deepest is 2):
#: math-verify's parse time grows with it (20 nested parentheses took 1.7 s, 50 two 5 s
#: timeouts per answer checked)
MAX_REFERENCE_DEPTH = 8
#: most decimal digits of a value the reference's reading may make sympy compute: math-verify
#: compares ``9^{9^{9}}``, ``10^{10}!`` or ``\binom{10^{10}}{10^{5}}`` with any wrong answer until
#: its 5 s timeout, once per answer; the largest MATH-500 reference has 11 digits
MAX_REFERENCE_DIGITS = 100_000

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
    """The one string both checks judge: ``answer`` with fullwidth characters read as their
    ASCII forms (``３`` is 3), a percent sign read as a unit (``10\\%`` is 10, never 0.1)
    and thousands separators dropped."""
    return _DIGIT_GROUP.sub("", _PERCENT.sub("", answer.translate(_HALFWIDTH)))


#: fullwidth ASCII variants (U+FF01 to U+FF5E) and the ideographic space, as ASCII
_HALFWIDTH = {0xFF01 + i: 0x21 + i for i in range(0x5E)} | {0x3000: 0x20}
_PERCENT = re.compile(r"\\?%")


def is_text(reference: str) -> bool:
    """Whether ``reference`` is words rather than mathematics: a word of two or more letters
    outside LaTeX commands (``Tokyo``, ``\\text{Evelyn}``, ``AB``) that is not a function's
    name, and no digit. math-verify reads letters as symbols multiplied together, so any
    anagram of a word (``Kyoto`` for ``Tokyo``) would be equal to it."""
    s = _COMMANDS.sub(" ", _ENVIRONMENTS.sub(" ", reference))
    if any(c.isdigit() for c in s):
        return False
    return any(w.lower() not in _MATH_WORDS for w in _WORD.findall(s))


_ENVIRONMENTS = re.compile(r"\\(?:begin|end)\{[^{}]*\}")
_COMMANDS = re.compile(r"\\[A-Za-z]+")
_WORD = re.compile(r"[^\W\d_]{2,}")
_MATH_WORDS = frozenset(
    ("sin", "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan", "sinh", "cosh",
     "tanh", "log", "ln", "lg", "exp", "sqrt", "pi", "inf", "infty", "max", "min", "gcd", "lcm",
     "det", "mod", "deg", "lim")
)  # fmt: skip


def reference_problem(reference: str) -> str | None:
    """Why ``reference`` cannot be the reference of an own task's ``answer`` grader, or None.

    Checked when the task file is loaded, so that a hostile reference is refused once, naming
    its line, instead of costing seconds of math-verify per answer: longer than any answer the
    check compares (``MAX_ANSWER_CHARS``: nothing could ever equal it), or nested deeper than
    ``MAX_REFERENCE_DEPTH``. A value too large to compare is only seen once math-verify has
    read it (``reference_digits``, at scoring time)."""
    if len(reference) > MAX_ANSWER_CHARS:
        return (
            f"{len(reference):,} characters; a math reference is at most {MAX_ANSWER_CHARS}, the "
            "longest \\boxed{} answer the math check compares"
        )
    depth = deepest = 0
    for c in reference:
        if c in "{([":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "})]":
            depth = max(0, depth - 1)  # intervals such as [0, 1) close with another bracket
    if deepest > MAX_REFERENCE_DEPTH:
        return (
            f"brackets and braces nested {deepest} deep (at most {MAX_REFERENCE_DEPTH}): "
            "math-verify's reading of it takes seconds per answer"
        )
    return None


def reference_digits(reading: Any) -> float:
    """An upper bound on the decimal digits of the numbers sympy may compute to compare the
    math-verify ``reading`` (a sympy expression, a matrix or a string) with an answer: ``inf``
    for a power tower such as ``9^{9^{9}}``. Read from the expression's structure, never by
    evaluating it: a power multiplies its base's digits by its exponent's value (and a power
    of a sum of symbols counts ``_DIGITS_PER_TERM`` per term of its expansion), a factorial
    or gamma of n has about n·digits(n), a binomial coefficient about k·digits(n), a product
    the sum of its factors' digits, anything else the most of its parts'. A symbol counts as
    a one-digit number."""
    try:
        return _digits(reading)
    except RecursionError:  # a reading nested past Python's stack is no value to compare
        return math.inf


def _digits(value: Any) -> float:
    import sympy

    if isinstance(value, sympy.MatrixBase):
        return max((_digits(x) for x in value), default=0.0)
    if not isinstance(value, sympy.Basic):
        return 0.0  # math-verify's string reading: compared as text
    if isinstance(value, sympy.Integer | sympy.Rational):
        return max(_int_digits(value.p), _int_digits(value.q))
    if isinstance(value, sympy.Float):
        _sign, mantissa, exponent, bits = value._mpf_
        return abs(exponent + bits) * math.log10(2) if mantissa else 0.0
    if value.is_Atom:
        return 1.0  # a symbol, pi, e, i, infinity
    parts = [_digits(a) for a in value.args]
    if isinstance(value, sympy.Pow):
        base, exponent = parts
        power = _value_bound(exponent)
        digits = base * power if base else 0.0
        if isinstance(value.base, sympy.Add) and value.base.free_symbols:
            # sympy expands it to compare: (x+1)^{1000} has 1,001 terms, (x+y+z+1)^{20} 1,771
            terms = _expansion_terms(len(value.base.args), power)
            digits = max(digits, terms * _DIGITS_PER_TERM)
        return digits
    if isinstance(value, sympy.factorial | sympy.factorial2 | sympy.subfactorial | sympy.gamma):
        return _value_bound(parts[0]) * max(parts[0], 1.0)
    if isinstance(value, sympy.binomial):
        return _value_bound(parts[1]) * max(parts[0], 1.0)
    if isinstance(value, sympy.Mul):
        return sum(parts)
    return max(parts, default=0.0) + (1.0 if isinstance(value, sympy.Add) else 0.0)


#: what one term of an expanded power of a sum counts for (1,000 terms reach the limit): each
#: took ~3 ms of math-verify's comparison here ((x+y+z+1)^{20}: 4.1 s; (x+1)^{300}: 0.4 s)
_DIGITS_PER_TERM = 100


def _expansion_terms(summands: int, power: float) -> float:
    """How many terms ``(a_1 + ... + a_m)^n`` has once expanded: C(n + m - 1, m - 1)."""
    if power > 1e15:
        return math.inf
    n, k = power + summands - 1, summands - 1
    log_terms = (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)) / math.log(10)
    return _value_bound(log_terms)


def _int_digits(n: int) -> float:
    """log10 of ``|n|`` (0 for 0 and ±1), from its bit length: exact enough, never slow."""
    n = abs(int(n))
    if n <= 1:
        return 0.0
    return math.log10(n) if n < 1 << 64 else n.bit_length() * math.log10(2)


def _value_bound(digits: float) -> float:
    """The largest value a number of ``digits`` (log10) can have, ``inf`` past floats."""
    return math.inf if digits > 300 else 10.0**digits


def text_form(answer: str) -> str:
    """How a text answer is compared: ``normalise``d (wrappers, spaces and ``$`` dropped),
    fullwidth forms as ASCII, and case folded."""
    return normalise(answer.translate(_HALFWIDTH)).casefold()


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
    judge: _Judge | _TextJudge = (
        _TextJudge(reference) if is_text(reference) else _Judge(ungrouped(reference))
    )
    answer = ungrouped(answer)
    pair = judge.side_by_side(answer)
    if pair is not None:
        return _side_by_side(task, details, answer, pair)
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
    if isinstance(judge, _TextJudge):
        if judge.equivalent(answer):
            return Verdict(
                task.task_id,
                True,
                "text: the normalised answer equals the reference (a reference in words)",
                {**details, "method": "text"},
            )
        return _failed(task, details, f"answer {answer[:80]!r} differs from the reference")
    if judge.equivalent(answer):
        return Verdict(
            task.task_id,
            True,
            "math-verify: equivalent to the reference",
            {**details, "method": "math-verify"},
        )
    if judge.error:
        details["math_verify_error"] = judge.error
    if normalise(answer) == normalise(judge.reference):
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


def _side_by_side(
    task: Any, details: dict[str, Any], answer: str, pair: tuple[str, str, str]
) -> Verdict:
    first, gap, second = pair
    return _failed(
        task,
        details,
        f"the answer reads as two values: \\boxed{{{answer[:80]}}} sets {first[:20]} and "
        f"{second[:20]} side by side with only {gap[:40]!r} between them, which math-verify "
        "reads as nothing; it must commit to one",
    )


def _failed(task: Any, details: dict[str, Any], reason: str) -> Verdict:
    return Verdict(task.task_id, False, reason, {**details, "method": "none"})


def _disagreeing(judge: _Judge | _TextJudge, answer: str, others: list[str]) -> str | None:
    """The first stated answer that is neither the committed one (normalised) nor equal to it
    for math-verify (as text, for a reference in words), or that reads as two numbers itself
    (``2\\,3`` or ``2\\quad 3`` beside a boxed 5); ``answer`` itself when there are too many
    to compare."""
    mine = normalise(answer)
    distinct = list(dict.fromkeys(o for o in others if normalise(o) != mine))
    if len(distinct) > MAX_OTHER_ANSWERS:
        return distinct[0]
    for other in distinct:
        if len(other) > MAX_ANSWER_CHARS or not judge.same(answer, other):
            return other
        if judge.side_by_side(other) is not None:
            return other
        if judge.second_reading(other, numbers_only=True) is not None:
            return other
    return None


class _TextJudge:
    """A reference in words (``is_text``): compared as normalised text, never by math-verify."""

    error: str | None = None

    def __init__(self, reference: str) -> None:
        self.reference = reference

    def equivalent(self, answer: str) -> bool:
        return text_form(answer) == text_form(self.reference)

    def same(self, answer: str, other: str) -> bool:
        return text_form(answer) == text_form(other)

    def side_by_side(self, answer: str) -> None:
        return None

    def second_reading(self, answer: str, numbers_only: bool = False) -> None:
        return None


# The answer as tokens: a command (with, in the first reading, the brace and bracket groups
# that follow it: its arguments, so that the digits of ``\\frac{1}{2}`` or ``\\phantom{0}`` are
# not the answer's numbers), a number, or one other character.
_NUMBER = r"(?P<num>\d+(?:\.\d+)?|\.\d+)"
_WITH_ARGUMENTS = re.compile(
    r"(?P<cmd>\\(?:[A-Za-z]+\*?|.)(?:\s*(?:\{(?:[^{}]|\{[^{}]*\})*\}|\[[^\[\]]*\]))*)"
    rf"|{_NUMBER}|(?P<other>.)",
    re.DOTALL,
)
_BARE = re.compile(
    rf"(?P<cmd>\\(?:[A-Za-z]+\*?|.))|{_NUMBER}|(?P<brace>[{{}}])|(?P<other>.)", re.DOTALL
)
#: a character between two numbers that is itself content (an operator, a letter, a delimiter)
_CONTENT = re.compile(r"[-+*/=<>,;:()\[\]|&^_!'.A-Za-z]")


def numbers_side_by_side(answer: str) -> list[tuple[str, str, str]]:
    """(number, gap, number) for every two numbers of ``answer`` with no content character
    between them, only spaces, commands, braces or other characters (``2\\quad 3``, ``2~3``,
    ``2\\phantom{0}3``, ``{2}\\quad{3}``); whether a gap is nothing is math-verify's to say
    (``_Judge.side_by_side``). Read twice: once with a command's brace groups as its arguments
    (braces elsewhere are content), once with every brace as part of a gap (a gap of braces
    alone, as in ``\\frac{1}{2}``, is not one)."""
    out = []
    for tokens, braces_in_gaps in ((_WITH_ARGUMENTS, False), (_BARE, True)):
        previous: str | None = None
        gap: list[str] = []
        for match in tokens.finditer(answer):
            kind, text = match.lastgroup, match.group()
            if kind == "num":
                joined = "".join(gap)
                if previous is not None and (
                    not braces_in_gaps
                    or joined.strip(" {}")
                    or not ("{" in joined or "}" in joined)
                ):
                    out.append((previous, joined, text))
                previous, gap = text, []
            elif kind == "other" and (_CONTENT.match(text) or text in "{}"):
                previous, gap = None, []
            else:
                gap.append(text)
    return list(dict.fromkeys(out))


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
        gold = (
            self._guard(
                lambda: (
                    parse(f"${ref}$", parsing_timeout=self.timeout)
                    or parse(f"\\boxed{{{ref}}}", parsing_timeout=self.timeout)
                )
            )
            or []
        )
        digits = max((reference_digits(g) for g in gold), default=0.0)
        if digits > MAX_REFERENCE_DIGITS:
            # comparing it would run to math-verify's timeout for every wrong answer: the
            # normalised exact match alone decides, and the details say why
            size = "over 10^300" if math.isinf(digits) else f"about {digits:,.0f}"
            self.error = (
                f"not compared: the reference is too large for math-verify: {size} digits "
                f"(counting {_DIGITS_PER_TERM} per term of an expanded power; at most "
                f"{MAX_REFERENCE_DIGITS:,}); exact match only"
            )
            return []
        return gold

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

    def side_by_side(self, answer: str) -> tuple[str, str, str] | None:
        """Two numbers of ``answer`` with a gap between them that math-verify reads as nothing,
        or None. The rule is on the answer's structure, not a list of spacing commands: a gap
        is nothing when math-verify reads ``7<gap>1`` as it reads ``7 1`` (the sum of the
        parts, as for a mixed number) or ``71``. Then the one box says 5 to math-verify and
        23 or "2 3" to a reader, whatever TeX spacing it uses (``\\quad``, ``\\hspace{}``,
        ``\\phantom{0}``, ``~``, or a command math-verify learns to drop later); it fails
        whatever the reference. A gap math-verify reads as content (``\\cdot``, ``\\\\``) or
        cannot read at all is not nothing."""
        pairs = numbers_side_by_side(answer)
        if len({gap for _, gap, _ in pairs if gap.strip(" {}")}) > MAX_OTHER_ANSWERS:
            return pairs[0]  # each gap costs a parse: a crafted answer is not probed at length
        for first, gap, second in pairs:
            if not gap.strip(" {}") or self._reads_as_nothing(gap):
                return first, gap, second
        return None

    def _reads_as_nothing(self, gap: str) -> bool:
        # the probe closes what the gap leaves open: `}\\quad{` is probed as `{7}\\quad{1}`
        depth = lowest = 0
        for c in gap:
            depth += (c == "{") - (c == "}")
            lowest = min(lowest, depth)
        probe = self.read("{" * -lowest + "7" + gap + "1" + "}" * (depth - lowest))
        return bool(probe) and any(
            (plain := self.read(joined)) and self._verify(plain, probe) for joined in ("7 1", "71")
        )

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

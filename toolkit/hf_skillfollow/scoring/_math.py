"""Math scoring: math-verify, then ``\\boxed{}`` parsing and normalised exact match.

``score_math`` runs in the calling process. math-verify's timeouts use ``signal.alarm``,
which only works in a main thread, so ``scoring.score_answer`` runs this in a pool of
worker processes; here the timeouts are switched off when not in the main thread.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from hf_skillfollow.scoring._extract import extract_boxed
from hf_skillfollow.scoring._verdict import Verdict

_TEXT_WRAPPERS = re.compile(r"\\(?:text|textbf|textit|textsc|mathrm|mathbf|mbox)\{([^{}]*)\}")
_DROP = re.compile(r"\\left|\\right|\\!|\\,|\\;|\\:|\\ |\\\$|\$|\s+")
_DEGREES = re.compile(r"\^\{?\\circ\}?|°")


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


def score_math(task: Any, text: str) -> Verdict:
    reference = task.reference or ""
    boxed = extract_boxed(text)
    details: dict[str, Any] = {
        "extracted": boxed if boxed is not None else "",
        "reference": reference,
    }
    if not text.strip():
        return Verdict(task.task_id, False, "empty answer", details)
    equivalent, error = _math_verify(reference, text)
    if error:
        details["math_verify_error"] = error
    if equivalent:
        return Verdict(
            task.task_id,
            True,
            "math-verify: equivalent to the reference",
            {**details, "method": "math-verify"},
        )
    if boxed is not None and normalise(boxed) == normalise(reference):
        return Verdict(
            task.task_id,
            True,
            "normalised \\boxed{} answer equals the reference",
            {**details, "method": "exact"},
        )
    reason = (
        "no \\boxed{} answer"
        if boxed is None
        else f"answer {boxed[:80]!r} differs from the reference"
    )
    return Verdict(task.task_id, False, reason, {**details, "method": "none"})


def _math_verify(reference: str, text: str) -> tuple[bool, str | None]:
    from math_verify import parse, verify

    timeout = 5 if threading.current_thread() is threading.main_thread() else None
    try:
        gold = parse(f"${reference}$", parsing_timeout=timeout) or parse(
            f"\\boxed{{{reference}}}", parsing_timeout=timeout
        )
        pred = parse(text, parsing_timeout=timeout)
        if not gold or not pred:
            return False, None
        return bool(verify(gold, pred, timeout_seconds=timeout)), None
    except BaseException as exc:  # its TimeoutException derives from BaseException
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        return False, f"{type(exc).__name__}: {exc}"[:200]

"""Answer extraction: code blocks for programs, ``\\boxed{}`` answers for math.

See docs/design.md, "Protocol", and docs/sandbox.md, "The math check".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# An unterminated fence (output cut at max_tokens) runs to the end of the text.
_PYTHON_BLOCK = re.compile(
    r"```[ \t]*(?:python3?|py)[ \t]*\r?\n(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE
)
_ANY_BLOCK = re.compile(r"```[^\n`]*\r?\n(.*?)(?:```|\Z)", re.DOTALL)
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
# A backslash escapes the next character (an escaped brace neither opens nor closes a group).
_BRACE_TOKEN = re.compile(r"\\.|[{}]", re.DOTALL)


def extract_code(text: str) -> str:
    """The first ```python block, else the first fenced block, else the raw text."""
    for pattern in (_PYTHON_BLOCK, _ANY_BLOCK):
        match = pattern.search(text)
        if match:
            return match.group(1)
    return text


@dataclass(frozen=True)
class Boxes:
    """The complete ``\\boxed{}`` answers of a text, in order, and the openers never closed.

    ``answers`` holds one entry per outermost complete box: the content of the last box that
    starts inside it (itself included), so ``\\boxed{\\boxed{2}}`` answers ``2``."""

    answers: tuple[str, ...]
    unclosed: int

    @property
    def last(self) -> str | None:
        return self.answers[-1] if self.answers else None


def find_boxes(text: str) -> Boxes:
    """Every complete ``\\boxed{...}`` / ``\\fbox{...}`` (nested braces balanced), in one pass.

    Linear in the text: the braces are matched once with a stack, instead of scanning from
    every opener to the end (quadratic: ``"\\boxed{" * 8000`` took 41 s of CPU)."""
    box_braces = {m.end() - 1 for m in _BOXED.finditer(text)}
    if not box_braces:
        return Boxes((), 0)
    stack: list[int] = []  # content start of each open group; -1 for a plain brace
    complete: list[tuple[int, int]] = []  # (content start, content end) of each closed box
    for token in _BRACE_TOKEN.finditer(text):
        ch, at = token.group(), token.start()
        if ch == "{":
            stack.append(at + 1 if at in box_braces else -1)
        elif ch == "}" and stack:
            start = stack.pop()
            if start >= 0:
                complete.append((start, at))
    unclosed = sum(1 for start in stack if start >= 0)
    return Boxes(tuple(text[s:e] for s, e in _outermost(complete)), unclosed)


def _outermost(complete: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """For each outermost box, the last-starting box within it (itself included)."""
    out: list[tuple[int, int]] = []
    outer_end = -1
    for start, end in sorted(complete):
        if start > outer_end:  # not inside the current outermost box: a new one
            out.append((start, end))
            outer_end = end
        else:  # nested: a later start within the same outermost box
            out[-1] = (start, end)
    return out


def extract_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` (nested braces balanced), or None."""
    return find_boxes(text).last

"""Answer extraction: code blocks for programs, the last ``\\boxed{}`` for math.

See docs/design.md, "Protocol".
"""

from __future__ import annotations

import re

# An unterminated fence (output cut at max_tokens) runs to the end of the text.
_PYTHON_BLOCK = re.compile(
    r"```[ \t]*(?:python3?|py)[ \t]*\r?\n(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE
)
_ANY_BLOCK = re.compile(r"```[^\n`]*\r?\n(.*?)(?:```|\Z)", re.DOTALL)
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")


def extract_code(text: str) -> str:
    """The first ```python block, else the first fenced block, else the raw text."""
    for pattern in (_PYTHON_BLOCK, _ANY_BLOCK):
        match = pattern.search(text)
        if match:
            return match.group(1)
    return text


def extract_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` (nested braces balanced), or None."""
    for match in reversed(list(_BOXED.finditer(text))):
        content = _balanced(text, match.end())
        if content is not None:
            return content
    return None


def _balanced(text: str, start: int) -> str | None:
    depth = 1
    i = start
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2  # an escaped brace (\{ or \}) does not open or close a group
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start:i]
        i += 1
    return None

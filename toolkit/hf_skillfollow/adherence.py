"""Adherence proxy: did the SE answer use a retrieved skill?

Lexical/structural only: a function or variable name defined in a returned skill's code, or
the skill's own name as an identifier, appears in the answer. It over- and under-counts
(common names, paraphrased use); it is a diagnostic, never an outcome.

See docs/design.md, "Metrics": stage diagnostics.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hf_skillfollow.skills import SkillPool

# The fence's info string ends at the first newline: `[ \t]*\n`, not `\s*\n`, which backtracks
# over every blank line after an unclosed fence (quadratic on a skill body, once per pair).
_CODE_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)
_DEFINED = re.compile(r"^\s*(?:def|class)\s+([A-Za-z_]\w*)", re.MULTILINE)
_GENERIC = frozenset({"main", "solve", "helper", "test", "check", "f", "g"})


def skill_markers(body: str, name: str) -> set[str]:
    """Identifiers that mark use of a skill: names it defines, and its name as snake_case."""
    markers = {m for block in _CODE_BLOCK.findall(body) for m in _DEFINED.findall(block)}
    markers.add(name.replace("-", "_"))
    return {m for m in markers if m not in _GENERIC and not m.startswith("test")}


_WORD = re.compile(r"\w+")


def adheres(pool: SkillPool, returned: list[str], answer: str) -> bool:
    """True when any marker of any returned skill occurs in `answer` as a whole word.

    An identifier marker is a whole word exactly when it is one of the answer's maximal word
    runs: one pass over the answer, however many names a skill defines (one pattern per
    marker made a skill defining 40,000 functions cost seconds per pair)."""
    words = set(_WORD.findall(answer))
    for name in returned:
        skill = pool.get(name)
        for marker in skill_markers(skill.body, skill.name):
            if _WORD.fullmatch(marker):
                if marker in words:
                    return True
            elif re.search(rf"\b{re.escape(marker)}\b", answer):
                return True
    return False

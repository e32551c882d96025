"""Skill names a model cannot tell apart (docs/skills.md, "Look-alike names").

A model reads names as text: `pdf` and `pdf` + U+3164 (an invisible Hangul filler), or
`pdf-tool` and `рdf-tool` (Cyrillic р), are one name to it. Unicode's security mechanisms
(UTS #39) give the two rules applied here:

- `name_problem`: a name holding an invisible character (Unicode's Default_Ignorable code
  points, format characters, spaces other than U+0020) or letters of more than one script
  (Latin with Cyrillic, ...; Han with Hiragana/Katakana, Hangul or Bopomofo is one script, as
  UTS #39's augmented script sets say) is an error: such a name exists only to be confused.
- `skeleton`: UTS #39's confusable skeleton (NFD, each character replaced by the prototype of
  its confusables.txt class, NFD again); two names of one pool with the same skeleton get a
  warning, since each can be legitimate alone.

The confusables and scripts data are Unicode's, as shipped by `confusable_homoglyphs`.
"""

from __future__ import annotations

import unicodedata
from functools import cache

from hf_skillfollow._skill_findings import shown

#: Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt): drawn as nothing.
_DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160),
    (0x17B4, 0x17B5), (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E),
    (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)  # fmt: skip
#: Scripts that write one language together (UTS #39, "augmented script sets").
_ONE_WRITING = (
    frozenset({"HAN", "HIRAGANA", "KATAKANA"}),
    frozenset({"HAN", "HANGUL"}),
    frozenset({"HAN", "BOPOMOFO"}),
)
_NO_SCRIPT = frozenset({"COMMON", "INHERITED", "Unknown"})


def _invisible(ch: str) -> bool:
    code = ord(ch)
    if any(lo <= code <= hi for lo, hi in _DEFAULT_IGNORABLE):
        return True
    return unicodedata.category(ch) in ("Cf", "Zs", "Zl", "Zp") and ch != " "


def _scripts(name: str) -> set[str]:
    from confusable_homoglyphs.categories import alias

    return {alias(ch) for ch in name} - _NO_SCRIPT


def name_problem(name: str) -> str | None:
    """Why `name` is refused as a skill name (invisible or mixed-script characters), or None."""
    hidden = [ch for ch in name if _invisible(ch)]
    if hidden:
        codes = ", ".join(f"U+{ord(ch):04X}" for ch in dict.fromkeys(hidden))
        return f"holds invisible characters ({codes}): {shown(name)}"
    scripts = _scripts(name)
    if len(scripts) > 1 and not any(scripts <= one for one in _ONE_WRITING):
        return f"mixes scripts ({', '.join(sorted(scripts))}): {shown(name)}"
    return None


@cache
def _prototypes() -> dict[str, str]:
    """Each confusable character's prototype (the fixed point of its confusables.txt class).

    The shipped data lists each pair of confusables.txt in both directions: a prototype lists
    all the characters mapped to it, a character mapped to a prototype lists that prototype.
    A class of two (one character and its prototype) cannot be told apart that way, and either
    stands for both: the smaller is taken."""
    from confusable_homoglyphs.confusables import confusables_data

    out = {}
    for ch, entries in confusables_data.items():
        if len(entries) != 1:
            continue  # a prototype of several characters: itself
        other = entries[0]["c"]
        if len(confusables_data.get(other, ())) != 1:
            out[ch] = other  # mapped to a prototype of several (or of a sequence)
        elif other < ch:
            out[ch] = other
    return out


def skeleton(name: str) -> str:
    """UTS #39's skeleton of `name`, case-folded (names differing in case already collide)."""
    table = _prototypes()
    text = unicodedata.normalize("NFD", name)
    text = "".join(table.get(ch, ch) for ch in text)
    return unicodedata.normalize("NFD", text).casefold()

"""How much of a submitter's string the page shows: the table's names and ids, the drill-down's
records and annotators. A module of its own so that the re-scoring section (which the table
imports) can cut its strings without importing the table."""

from __future__ import annotations

import re
import unicodedata

#: Characters of a submitter's string shown in a table cell or heading (the CSV has them all).
SHOWN_CHARS = 120

#: Characters that draw nothing: Unicode's format characters (category Cf: zero-width space,
#: joiners, word joiner, BOM, soft hyphen, bidi marks, invisible operators, tags), the
#: combining grapheme joiner and the Hangul and Mongolian fillers. `org/vic<U+200B>tim` read
#: exactly as `org/victim` in the table, the Models tab and the plots' tooltips, so one source
#: could show its cells under another's model name. Variation selectors are kept (emoji).
#: Line breaks too: a name is one line, and a plot point's tooltip (one fact per line) showed
#: a model named `org/a<LF>RAE +99.0 ...` as a forged RAE line above the cell's own.
_INVISIBLE = re.compile(
    # an emoji tag sequence (the flag of England: black flag, tag letters, cancel tag) is kept
    "(?P<flag>\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{1,7}\U000e007f)|"
    "[\n\x0b\x0c\r\x85\u2028\u2029\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891"
    "\u08e2\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u2064"
    "\u2066-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)

#: Scripts whose letters join (Arabic, Syriac, N'Ko, Mandaic, Mongolian, Phags-pa, Arabic
#: presentation forms, Adlam): a ZWNJ or ZWJ between two of their letters changes the
#: letters' shapes (Persian `می‌خواهم`), so it draws something and is part of the word.
_JOINING = re.compile(
    "[\u0600-\u074f\u0750-\u077f\u07c0-\u07ff\u0840-\u085f\u0870-\u08ff\u1800-\u18af"
    "\ua840-\ua87f\ufb50-\ufdff\ufe70-\ufefc\U0001e900-\U0001e95f]"
)


def _joins(text: str, at: int) -> bool:
    """Whether the ZWNJ/ZWJ at `text[at]` shapes what is drawn, as it does in honest text:
    after a virama (Hindi `क्‍ष`, Sinhala `ශ්‍රී`, Malayalam chillus), between letters of a
    joining script (Persian, Arabic), or a ZWJ inside an emoji sequence (`👨‍💻`, `🏳️‍🌈`).
    Between Latin letters (`org/vic<ZWJ>tim`) it draws nothing and is escaped."""
    before = text[at - 1] if at else ""
    after = text[at + 1] if at + 1 < len(text) else ""
    if before and unicodedata.combining(before) == 9:  # a virama
        return True
    if before and after and _JOINING.match(before) and _JOINING.match(after):
        return True
    # an emoji, its presentation selector or its skin tone, then an emoji
    emoji = before == "\ufe0f" or "\U0001f3fb" <= before <= "\U0001f3ff" or _symbol(before)
    return text[at] == "\u200d" and emoji and _symbol(after)


def _symbol(char: str) -> bool:
    return char != "" and unicodedata.category(char) == "So"


def _shown(m: re.Match[str]) -> str:
    char = m.group()
    if m.group("flag") or (char in "\u200c\u200d" and _joins(m.string, m.start())):
        return char
    return ascii(char)[1:-1]


def capped(value: object, limit: int = SHOWN_CHARS) -> str:
    """`value` as text, cut to `limit` characters with an ellipsis: a 5 MB model name would
    otherwise be sent to every visitor (and the CSS wraps what is left, so a long name
    without spaces cannot widen the table). A character that draws nothing or breaks the line
    is shown as its escape (`\\u200b`, `\\n`), as the page shows control characters."""
    text = str(value)
    text = text if len(text) <= limit else text[:limit] + f"… ({len(text):,} characters)"
    return _INVISIBLE.sub(_shown, text)

"""How much of a submitter's string the page shows: the table's names and ids, the drill-down's
records and annotators. A module of its own so that the re-scoring section (which the table
imports) can cut its strings without importing the table."""

from __future__ import annotations

import re

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
    "[\n\x0b\x0c\r\x85\u2028\u2029\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u17b4\u17b5"
    "\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0"
    "\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)


def capped(value: object, limit: int = SHOWN_CHARS) -> str:
    """`value` as text, cut to `limit` characters with an ellipsis: a 5 MB model name would
    otherwise be sent to every visitor (and the CSS wraps what is left, so a long name
    without spaces cannot widen the table). A character that draws nothing or breaks the line
    is shown as its escape (`\\u200b`, `\\n`), as the page shows control characters."""
    text = str(value)
    text = text if len(text) <= limit else text[:limit] + f"… ({len(text):,} characters)"
    return _INVISIBLE.sub(lambda m: ascii(m.group())[1:-1], text)

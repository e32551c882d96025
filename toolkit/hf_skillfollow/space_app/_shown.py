"""How much of a submitter's string the page shows: the table's names and ids, the drill-down's
records and annotators. A module of its own so that the re-scoring section (which the table
imports) can cut its strings without importing the table."""

from __future__ import annotations

#: Characters of a submitter's string shown in a table cell or heading (the CSV has them all).
SHOWN_CHARS = 120


def capped(value: object, limit: int = SHOWN_CHARS) -> str:
    """`value` as text, cut to `limit` characters with an ellipsis: a 5 MB model name would
    otherwise be sent to every visitor (and the CSS wraps what is left, so a long name
    without spaces cannot widen the table)."""
    text = str(value)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text):,} characters)"

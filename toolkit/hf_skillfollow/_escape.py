"""The one rule for every output: a string a submitter wrote is data, escaped for where it goes.

Model names, task ids, run ids, cell ids, annotator names, file names, reasons and error
texts all come from rows, folders or repos that a third party controls. Whatever writes them
into HTML, Markdown, a CSV file or a terminal passes them through the function for that
output here, at the point of writing (never earlier: the rows and JSON keep the exact text).

- `for_html`: text content or a quoted attribute value.
- `for_markdown`: inline text and table cells of Markdown (GFM): every character that can
  start markup is backslash-escaped, line breaks become spaces, so a value can neither end a
  table row nor open a heading, link, image, emphasis or raw HTML.
- `for_markdown_code`: the same value shown as an inline code span.
- `for_csv_cell`: a cell a spreadsheet opens: text starting with a formula trigger gets a
  leading apostrophe (OWASP "CSV injection").
- `for_terminal`: a line on a terminal printed through Rich: escape sequences (CSI, OSC such
  as OSC 8 links and OSC 52 clipboard writes, DCS, ...) are removed, other control
  characters, bidirectional overrides and lone surrogates are shown as visible escapes, and Rich markup is
  escaped so `[bold]` or `[/]` prints as typed.
- `for_terminal_text`: the same for text written to a terminal as is (`click.echo`, not through
  Rich): sequences removed, controls shown, nothing else changed. The CLI's `echo`
  (cli/_echo.py) applies it to every line a command prints.
"""

from __future__ import annotations

import html
import re
from typing import Any

__all__ = [
    "for_csv_cell",
    "frame_to_csv",
    "for_html",
    "for_markdown",
    "for_markdown_code",
    "for_terminal",
    "for_terminal_text",
    "visible_controls",
]

# ESC-introduced sequences (ECMA-48): CSI ... final byte; OSC/DCS/SOS/PM/APC ... up to BEL or
# ST (ESC \) or the end of the text; any other two-character ESC sequence. Their C1 forms
# (U+009B CSI, U+009D OSC, ...) alike.
_ESCAPE_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[\x20-\x7e]?"
)
# C0, DEL, C1, and the Unicode bidi controls that reorder what a reader sees ("Trojan source").
# Lone surrogates (a JSON "\ud800", a file name that is not UTF-8) too: no output encodes them,
# so a line holding one would fail to print or write instead of showing it.
_CONTROL = re.compile(
    r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_LINE_BREAKS = re.compile(r"\r\n|[\r\n\x0b\x0c\x85\u2028\u2029]")
# The ASCII punctuation that can begin or end inline markup in GFM (emphasis, code, links,
# images, HTML, entities, headings, tables, strikethrough, math on the Hub); CommonMark lets
# a backslash escape each. `-`, `+`, `=` and `1.` matter only where a line starts.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#|!~&$])")
_MARKDOWN_LINE_START = re.compile(r"^(\s*\d*)([-+=.)])")
_CSV_TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def visible_controls(text: str, keep: str = "") -> str:
    """Control characters as Python escapes (`\\x1b`, `\\u202e`): shown, never acted on.

    Characters in `keep` (say the newlines of a multi-line message we wrote) stay as they are.
    """

    def shown(m: re.Match[str]) -> str:
        return m.group() if m.group() in keep else ascii(m.group())[1:-1]

    return _CONTROL.sub(shown, text)


def for_terminal(value: object) -> str:
    """Safe in a Rich markup string and on any terminal: sequences gone, markup escaped."""
    from rich.markup import escape

    return escape(for_terminal_text(value, keep=""))


def for_terminal_text(value: object, keep: str = "\n") -> str:
    """Safe written raw to any terminal: escape sequences removed whole, other control
    characters (but those in `keep`: the newlines of a multi-line message we wrote) shown."""
    return visible_controls(_ESCAPE_SEQUENCE.sub("", _text(value)), keep=keep)


def for_html(value: object) -> str:
    """Text content or a double- or single-quoted attribute value of HTML."""
    return html.escape(visible_controls(_text(value), keep="\n\t"), quote=True)


def for_markdown(value: object) -> str:
    """Inline Markdown text or a table cell showing exactly `value`, on one line."""
    text = visible_controls(_LINE_BREAKS.sub(" ", _text(value)))
    text = _MARKDOWN_SPECIAL.sub(r"\\\1", text)
    return _MARKDOWN_LINE_START.sub(r"\1\\\2", text, count=1)


def for_markdown_code(value: object) -> str:
    """`value` as an inline code span, also inside a GFM table cell.

    Inside a code span nothing is markup, so only the span's own fence and the table's `|`
    (which GFM splits cells on before inline parsing) need care: the fence is one backtick
    longer than the longest run of backticks in the text.
    """
    text = visible_controls(_LINE_BREAKS.sub(" ", _text(value))).replace("|", "\\|")
    runs = [len(r) for r in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def for_csv_cell(value: object, keep: str = "") -> object:
    """A CSV cell that a spreadsheet shows as text, never evaluates; non-strings unchanged.

    Control characters are shown as escapes first (a bare CR is not quoted by pandas' writer
    and starts a new row in a spreadsheet; an escape sequence acts on a terminal that shows
    the file); then a string starting with `=`, `+`, `-` or `@` (or their full-width forms,
    which some spreadsheets read alike) gets a leading apostrophe, as OWASP advises, and the
    CSV writer quotes it as any other cell. `keep`: controls left as they are (the newlines
    of a multi-line answer, for a writer that quotes cells holding them, as `csv` does).
    """
    if not isinstance(value, str):
        return value
    value = visible_controls(value, keep=keep)
    return "'" + value if value.startswith(_CSV_TRIGGERS) else value


def frame_to_csv(frame: Any) -> str:
    """A pandas frame as CSV text with every string cell passed through `for_csv_cell`.

    Numbers stay numbers (a negative float is written as -1.5, not as text): only cells that
    hold strings can carry a formula.
    """
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    safe = frame.copy()
    for column in safe.columns:
        if not (is_numeric_dtype(safe[column]) or is_bool_dtype(safe[column])):
            safe[column] = safe[column].astype(object).map(for_csv_cell)
    return str(safe.to_csv(index=False))


def _text(value: object) -> str:
    return "" if value is None else str(value)

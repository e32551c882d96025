"""The one rule for Markdown the board renders: a `<` is text, never the start of a tag.

Gradio's Markdown passes raw HTML through its sanitiser, which takes a plain-text `<repo>` as
an unknown tag and drops it and everything after it (the About tab stopped at
`("Re-scored by`). The board writes no HTML inside Markdown, so every `<` outside a code span
is written as `&lt;`; submitters' strings inside it were already escaped with
`_escape.for_markdown` / `for_markdown_code` (a `\\<` stays as it is).
"""

from __future__ import annotations

import re

# A code span (any backtick fence, CommonMark) or a `<` that is not backslash-escaped.
_SPAN_OR_LT = re.compile(r"(?P<fence>`+)(?:.|\n)*?(?<!`)(?P=fence)(?!`)|(?<!\\)<")


def rendered(markdown: str) -> str:
    """`markdown` with every bare `<` outside code spans as an entity."""
    return _SPAN_OR_LT.sub(lambda m: m.group() if m.group("fence") else "&lt;", markdown)


# What marked (Gradio's Markdown, GFM) turns into a link by itself in plain text: a URL's
# scheme separator, a `www.` host and an e-mail address. `_escape.for_markdown` stops link
# and image syntax, not these.
_AUTOLINK = re.compile(r"(?i)(?<=[a-z0-9])(:)(?=//)|(?<=www)(\.)|(@)")


def unlinked(escaped: str) -> str:
    """A submitter's string already escaped for Markdown, with nothing marked would autolink:
    the `:` of `://`, the `.` after `www` and every `@` written as character references
    (shown as typed). A bad annotations file named `Verify at https://attacker.example/login`
    was a live link in the drill-down."""
    return _AUTOLINK.sub(lambda m: f"&#{ord(m.group())};", escaped)

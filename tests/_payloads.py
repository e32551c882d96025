"""Hostile strings a submitter can put in any name: every output test uses this one list.

Each payload targets one output (Markdown, HTML, CSV, terminal/Rich); every output must show
every payload as text and act on none of them. `ESCAPE_SEQUENCES` are the payloads holding
terminal escape sequences, which no terminal output may contain raw.
"""

from __future__ import annotations

MARKDOWN = [
    "evil|model",
    "x\r\n| injected | row |",
    "line\n# Verified by Hugging Face ✓",
    "![pixel](https://attacker.example/p.png)",
    "[Verified by Hugging Face ✓](https://attacker.example)",
    "<img src=https://attacker.example/p.png onerror=alert(1)>",
    "<script>alert(1)</script>",
    "**bold** _em_ ~~gone~~ `code`",
    "back\\slash\\|",
    "- list item",
    "1. numbered",
]
HTML = ['"><svg onload=alert(1)>', "'><a href=https://attacker.example>Your session expired</a>"]
CSV = [
    "=cmd|' /C calc'!A0",
    '=HYPERLINK("https://attacker.example","click")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(1,1)",
    "\t=1+1",
    "\r=1+1",
    "\uff1d1+1",
]
ESCAPE_SEQUENCES = [
    "\x1b[2J\x1b[Hcleared",
    "\x1b]0;window title\x07",
    "\x1b]8;;https://attacker.example\x1b\\click\x1b]8;;\x1b\\",
    "\x1b]52;c;ZWNobyBwd25lZA==\x07",
    "\x9b31mC1 CSI",
    "bell\x07 backspace\x08 nul\x00",
    "rtl \u202eevil\u202c",
]
RICH = ["[/]", "[bold red]FAKE[/bold red]", "[link=https://attacker.example]x[/link]", "trail\\"]

PAYLOADS = [*MARKDOWN, *HTML, *CSV, *ESCAPE_SEQUENCES, *RICH]

#: characters that must never reach a terminal raw
TERMINAL_FORBIDDEN = (
    [chr(c) for c in range(0x20) if chr(c) not in "\n"]
    + [chr(c) for c in range(0x7F, 0xA0)]
    + ["\u202e", "\u202c"]
)

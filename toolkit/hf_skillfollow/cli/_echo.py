"""The one way a command prints a line: `echo`, which shows a submitter's string as text.

Lines quote model names, run and task ids, pool and file names, and error texts of backends
and scorers, all of which a third party may control. `echo` passes the whole line through
`_escape.for_terminal_text` (escape sequences removed, control characters and line breaks
shown as escapes),
so no command needs to know which of its values are hostile. Output meant for a program
(JSON, CSV, Markdown written to a pipe or a file) keeps its exact bytes: see `data`.
"""

from __future__ import annotations

import sys

import click

from hf_skillfollow._escape import for_terminal_text


def echo(message: object = "", *, err: bool = False, nl: bool = True, block: bool = False) -> None:
    """`click.echo` of `message` made safe for a terminal.

    A message is one line: a line break inside it (a file or model name holding one) is shown
    as `\\n`, so a value cannot print a line of its own. `block`: a text of several lines we
    composed (a rendered table), whose values the renderer already escaped: newlines kept.
    """
    click.echo(for_terminal_text(message, keep="\n" if block else ""), err=err, nl=nl)


def data(text: str, *, nl: bool = True) -> None:
    """Output meant for a program (JSON, CSV, JSONL, Markdown) on stdout: its exact bytes into
    a pipe or a file; on a terminal, shown like any other line, so an escape sequence inside
    a value cannot act there."""
    if sys.stdout.isatty():
        echo(text, nl=nl, block=True)
    else:
        click.echo(text, nl=nl)

"""Submitter strings are data in every output: each output is tested with the one payload list.

The Markdown checks render with markdown-it-py (CommonMark plus GFM tables, the parser Rich
itself uses), the terminal checks print through a real Rich console, the CSV checks read the
file back with the csv module, as a spreadsheet importer would.
"""

from __future__ import annotations

import csv
import io
import unicodedata
from html.parser import HTMLParser

import pytest

from hf_skillfollow._escape import (
    for_csv_cell,
    for_html,
    for_markdown,
    for_markdown_code,
    for_terminal,
    frame_to_csv,
)
from tests._payloads import CSV, ESCAPE_SEQUENCES, PAYLOADS, RICH, TERMINAL_FORBIDDEN

FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def render_markdown(text: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(text)


class _Tags(HTMLParser):
    """Every start tag (with its attributes) and the text of each table cell."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.cells: list[str] = []
        self._in_cell = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))
        if tag in ("td", "th"):
            self._in_cell = True
            self.cells.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th"):
            self._in_cell = False

    def handle_data(self, data: str) -> None:
        if self._in_cell:
            self.cells[-1] += data


def parse_html(text: str) -> _Tags:
    parser = _Tags()
    parser.feed(text)
    parser.close()
    return parser


def markdown_shows_as_text(markdown: str, expected_cells: list[str]) -> None:
    """`markdown` renders to exactly the expected table cells and no other markup."""
    parsed = parse_html(render_markdown(markdown))
    tags = {t for t, _ in parsed.tags}
    assert tags <= {"table", "thead", "tbody", "tr", "th", "td", "code"}, (tags, markdown)
    assert parsed.cells == expected_cells, markdown


def one_line(value: str) -> str:
    """What a one-line rendering of `value` shows: line breaks as spaces, controls escaped."""
    from hf_skillfollow._escape import visible_controls

    for brk in ("\r\n", "\r", "\n"):
        value = value.replace(brk, " ")
    return visible_controls(value)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_markdown_table_cell_shows_the_payload_as_typed(payload: str) -> None:
    table = f"| name | other |\n|---|---|\n| {for_markdown(payload)} | x |\n"
    markdown_shows_as_text(table, ["name", "other", one_line(payload).strip(), "x"])


@pytest.mark.parametrize("payload", PAYLOADS)
def test_markdown_inline_text_stays_one_paragraph_of_text(payload: str) -> None:
    parsed = parse_html(render_markdown(f"{for_markdown(payload)}\n"))
    assert [t for t, _ in parsed.tags] == ["p"], payload


@pytest.mark.parametrize("payload", [*PAYLOADS, "``", "a ` b", "`x`"])
def test_markdown_code_span_in_a_table_cell_shows_the_payload(payload: str) -> None:
    table = f"| name |\n|---|\n| {for_markdown_code(payload)} |\n"
    html = render_markdown(table)
    parsed = parse_html(html)
    assert {t for t, _ in parsed.tags} <= {"table", "thead", "tbody", "tr", "th", "td", "code"}
    assert parsed.cells[1].strip() == one_line(payload).strip(), html


@pytest.mark.parametrize("payload", PAYLOADS)
def test_html_text_and_attribute_values_stay_text(payload: str) -> None:
    from hf_skillfollow._escape import visible_controls

    parsed = parse_html(f'<div title="{for_html(payload)}"><p>{for_html(payload)}</p></div>')
    assert [t for t, _ in parsed.tags] == ["div", "p"]
    assert parsed.tags[0][1] == [("title", visible_controls(payload, keep="\n\t"))]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_csv_cells_never_start_a_formula(payload: str) -> None:
    out = io.StringIO()
    csv.writer(out).writerow([for_csv_cell(payload), 1.5, -2])
    (row,) = list(csv.reader(io.StringIO(out.getvalue())))
    assert not row[0].startswith(FORMULA_START), row
    assert row[0] == csv_expected(payload)
    assert row[1:] == ["1.5", "-2"]  # numbers stay numbers


def csv_expected(payload: str) -> str:
    """Written independently of the code: control characters as Python escapes, then an
    apostrophe before a formula trigger."""
    shown = "".join(
        ascii(ch)[1:-1] if unicodedata.category(ch) == "Cc" or ch in "\u202c\u202e" else ch
        for ch in payload
    )
    return "'" + shown if shown[:1] in "=+-@\uff1d\uff0b\uff0d\uff20" and shown else shown


def test_csv_payloads_are_prefixed_and_nothing_else_is() -> None:
    for payload in CSV:
        assert for_csv_cell(payload) == csv_expected(payload)
        assert for_csv_cell(payload).startswith(("'", "\\"))
    for text in ("org/model-7b", "run-1", "", "n/a", "a=b"):
        assert for_csv_cell(text) == text
    assert for_csv_cell(-1.5) == -1.5 and for_csv_cell(None) is None


def test_frame_to_csv_prefixes_text_columns_and_keeps_numbers() -> None:
    import pandas as pd

    frame = pd.DataFrame({"model": CSV, "rae": [-1.5] * len(CSV), "flag": [True] * len(CSV)})
    rows = list(csv.DictReader(io.StringIO(frame_to_csv(frame))))
    assert [r["model"] for r in rows] == [csv_expected(p) for p in CSV]
    assert {r["rae"] for r in rows} == {"-1.5"} and {r["flag"] for r in rows} == {"True"}


def _rich_print(markup: str) -> str:
    from rich.console import Console

    out = io.StringIO()
    console = Console(file=out, width=400, force_terminal=True, color_system="truecolor")
    console.print(markup, highlight=False)
    return out.getvalue()


@pytest.mark.parametrize("payload", PAYLOADS)
def test_terminal_text_is_printed_as_typed_and_sends_no_control_sequence(payload: str) -> None:
    safe = for_terminal(payload)
    for ch in TERMINAL_FORBIDDEN:
        assert ch not in safe, (payload, ch)
    printed = _rich_print(f"name: {safe}")  # a markup string, as Rich table cells are
    assert "\x1b]" not in printed  # no OSC (links, title, clipboard) from the payload
    if payload in RICH:
        assert payload in printed  # markup shown as typed, not consumed
    if payload not in ESCAPE_SEQUENCES:
        from hf_skillfollow._escape import visible_controls

        assert visible_controls(payload) in printed


def test_terminal_escape_sequences_are_removed_whole() -> None:
    assert for_terminal("\x1b]8;;https://attacker.example\x1b\\click\x1b]8;;\x1b\\") == "click"
    assert for_terminal("\x1b[2J\x1b[Hcleared") == "cleared"
    assert for_terminal("\x1b]52;c;ZWNobyBwd25lZA==\x07after") == "after"
    assert for_terminal("a\x00b\x07c") == "a\\x00b\\x07c"
    assert for_terminal("[bold red]FAKE[/bold red]") == "\\[bold red]FAKE\\[/bold red]"


# ---------------------------------------------------------------- outputs: report


def _hostile_run(tmp_path):
    """A run directory with one cell per payload, the payload as the model name."""
    import json

    import pyarrow.parquet as pq

    from tests._cells import rows_for, table_for

    rows = []
    for i, payload in enumerate(PAYLOADS):
        rows += rows_for({"a": 2, "b": 3, "c": 1}, {"a": 1, "d": 1}, run_id=f"r{i}",
                         cell_id=f"c{i:02d}", model=payload)  # fmt: skip
    folder = tmp_path / "run"
    folder.mkdir()
    pq.write_table(table_for(rows), folder / "transitions.parquet")
    (folder / "manifest.json").write_text(json.dumps({"run_id": "r"}))
    return folder


def _report(*args: str) -> str:
    from click.testing import CliRunner

    from hf_skillfollow.cli import cli

    result = CliRunner(env={"COLUMNS": "3000"}).invoke(
        cli, ["report", *args, "--resamples", "200"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return result.stdout


def test_report_csv_prefixes_formulas_in_names(tmp_path) -> None:
    text = _report(str(_hostile_run(tmp_path)), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    models = {r["cell_id"]: r["model"] for r in rows}
    for i, payload in enumerate(PAYLOADS):
        shown = models[f"c{i:02d}"]
        assert not shown.startswith(FORMULA_START), shown
        assert shown == csv_expected(payload)
    assert {r["n_pairs"] for r in rows} == {"8"}  # numbers stay numbers


def test_report_table_prints_names_as_typed_and_no_control_sequence(tmp_path) -> None:
    from hf_skillfollow._escape import visible_controls

    out = _report(str(_hostile_run(tmp_path)))
    assert not [ch for ch in TERMINAL_FORBIDDEN if ch in out]
    for payload in PAYLOADS:
        if payload not in ESCAPE_SEQUENCES:
            assert visible_controls(payload) in out, payload
    assert "click" in out and "\x1b" not in out


def test_report_markdown_renders_names_as_text_in_one_row_each(tmp_path) -> None:
    out = _report(str(_hostile_run(tmp_path)), "--format", "markdown")
    html = render_markdown(out)
    parsed = parse_html(html)
    assert not {t for t, _ in parsed.tags} & {"img", "a", "script", "h1", "h2", "em", "del"}
    table = out.split("\n\n")[0]
    lines = table.splitlines()
    assert len(lines) == 2 + len(PAYLOADS)
    columns = lines[0].count("|") - 1
    first_cells = parse_html(render_markdown(table)).cells[::columns][1:]  # column 1 past the header
    assert sorted(first_cells) == sorted(one_line(p).strip() for p in PAYLOADS)


def test_error_lines_show_escape_sequences_as_text(tmp_path) -> None:
    from click.testing import CliRunner

    from hf_skillfollow.cli import cli

    name = tmp_path / "x\x1b]0;owned\x07\x1b[2J.parquet"
    result = CliRunner().invoke(cli, ["report", str(name)])
    assert result.exit_code != 0
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "\\x1b]0;owned\\x07" in result.output


# ---------------------------------------------------------------- outputs: dataset card


def test_card_shows_hostile_names_as_text_in_their_own_rows() -> None:
    from hf_skillfollow.hub._card import render_card
    from hf_skillfollow.hub._stats import run_stats
    from hf_skillfollow.schema import transitions_from_rows
    from tests._fixtures_hub import CELL_B, outcome_rows

    rows = []
    for i, payload in enumerate(PAYLOADS):
        rows += outcome_rows(CELL_B, run_id=f"r{i}", cell_id=f"c{i:02d}", model=payload,
                             benchmark="mbppplus")  # fmt: skip
    card = render_card(run_stats(transitions_from_rows(rows)), repo_id="org/x", has_traces=False)
    body = card.split("---\n", 2)[2]
    parsed = parse_html(render_markdown(body))
    tags = [t for t, _ in parsed.tags]
    assert "img" not in tags and "script" not in tags and "svg" not in tags
    assert all("attacker.example" not in str(attrs) for _, attrs in parsed.tags)
    headings = [line for line in body.splitlines() if line.startswith("#")]
    assert not [h for h in headings if "Verified" in h]
    start = next(i for i, line in enumerate(body.splitlines()) if line.startswith("| model |"))
    table = "\n".join(body.splitlines()[start:]).split("\n\n")[0]
    cells = parse_html(render_markdown(table)).cells
    width = 16  # the card's cells table has 16 columns (errors among them)
    assert len(cells) == width * (1 + len(PAYLOADS))  # every row whole, none added
    assert sorted(cells[width::width]) == sorted(one_line(p).strip() for p in PAYLOADS)

"""Session 22, brief A2: the board under hostile published rows and hostile links.

A source's owner controls every byte of its rows, and anyone can write a link. The browser
tests run one board (`hf-skillfollow leaderboard`, 127.0.0.1 only) over one source whose every
name, id, trace, judge record and annotator carries a payload that would set `window.__pwn`
and `document.title`, or fetch from a local "tracker" server (which stands for an outside
host: it records every request, so a fetch is seen, not guessed), in Debian's Chromium.
"""

from __future__ import annotations

import http.server
import json
import re
import threading
from html import unescape
from pathlib import Path
from urllib.parse import quote

import pyarrow.parquet as pq
import pytest

from tests._board_fixtures import chromium, start_board, write_annotations
from tests._fixtures_hub import CELL_A, trace_rows, write_run_dir

ROWS = "#sf-table tbody tr"


class _Tracker(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        _Tracker.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def payload(tracker: str, tag: str) -> str:
    """HTML that runs script or fetches `tracker/tag...` wherever it is rendered as markup,
    and Markdown that would show an image or a javascript: link."""
    return (
        f"<img src={tracker}/{tag}.png onerror=\"window.__pwn='{tag}';document.title='pwned'\">"
        f"<svg onload=\"window.__pwn='{tag}'\"></svg>"
        f"![p]({tracker}/{tag}-md.png)[click](javascript:window.__pwn='{tag}')"
    )


def write_hostile_source(root: Path, tracker: str) -> Path:
    """One run of CELL_A's outcomes in which every string a submitter writes is a payload:
    identity columns, task ids, queries, returned skills, errors, traces (messages, extracted
    answer, error, judge record) and an annotator's name."""
    from hf_skillfollow.schema import traces_from_rows, transitions_from_rows
    from tests._rows import transition_row

    p = lambda tag: payload(tracker, tag)  # noqa: E731
    identity = dict(
        model="org/x" + p("model"), skill_pool="pool" + p("pool"), condition="normal" + p("cond"),
        benchmark_version="v" + p("version"), run_id="run-" + p("run"), cell_id="cell" + p("cell"),
        judged_by="judge" + p("judge"), agent="agent" + p("agent"), retriever="bm" + p("retr"),
    )  # fmt: skip
    rows = []
    for (se, sd, got), n in CELL_A.items():
        for _ in range(n):
            i = len(rows)
            rows.append(
                transition_row(
                    **identity, task_id=f"Mbpp/{i}" + p(f"task{i}"), se_correct=se,
                    sd_correct=sd, invoked=got, returned=got, n_calls=int(got),
                    queries=["q" + p("query")] if got else [],
                    skills_returned=["skill" + p("skill"), "prefix-sum"] if got else [],
                    se_error="error" + p("error") if i == 11 else None,
                )
            )  # fmt: skip
    run = root / "run1"
    run.mkdir(parents=True)
    pq.write_table(transitions_from_rows(rows), run / "transitions.parquet")
    traces = trace_rows(rows)
    record = {
        "judge": "J" + p("judge-name"), "settings": {"repeats": 1}, "n_expectations": 1,
        "expectations": ["e" + p("expectation")], "n_valid": 1, "majority": [True], "ties": 0,
        "unanimous": [True], "fragile": False,
        "repeats": [{"verdicts": [{"passed": True, "evidence": "ev" + p("evidence")}]}],
    }  # fmt: skip
    for t in traces:
        t["messages"][1]["content"] = "user" + p("message")
        t.update(extracted="x" + p("extracted"), error="e" + p("trace-error"),
                 grader="expectations", judge="J", judge_verdicts=json.dumps(record))  # fmt: skip
    pq.write_table(traces_from_rows(traces), run / "traces.parquet")
    write_annotations(run, "annotator" + p("annotator"))
    # a benchmark named by 900 characters without a space: a series of the coverage plot
    write_run_dir(root, "run-long", CELL_A, cell_id="cellLong", model="org/long",
                  benchmark="bench-" + "x" * 900, traces=False)  # fmt: skip
    return root


@pytest.fixture(scope="module")
def tracker():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Tracker)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def app(tmp_path_factory, tracker):
    tmp = tmp_path_factory.mktemp("attacks")
    source = write_hostile_source(tmp / "hostile", tracker)
    proc, url = start_board(tmp, [str(source)], cache="off")
    yield url
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


def _page(browser, requests: list[str]):
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.on("request", lambda r: requests.append(r.url))
    return page


def _no_side_effects(page, requests: list[str], url: str) -> None:
    assert page.evaluate("window.__pwn") is None
    assert page.title() != "pwned"
    assert [r for r in requests if not r.startswith(url)] == []
    assert _Tracker.hits == []


@pytest.mark.browser
def test_hostile_rows_run_no_script_and_fetch_nothing_on_any_tab(browser, app):
    """Guard: table, plots (hovered), drill-down with traces, judge record and annotations,
    Models, Skills and About tabs show every payload as text."""
    _Tracker.hits.clear()
    requests: list[str] = []
    page = _page(browser, requests)
    page.goto(app + "?nonreportable=1")
    page.locator(ROWS).first.wait_for(timeout=90_000)
    assert "<img src=" in page.locator(ROWS).first.inner_text()
    for point in page.locator("#sf-plots .sf-pt").all():
        point.dispatch_event("pointerover")
    page.locator(ROWS).first.click()
    traces = page.locator("#sf-traces .sf-traces").first
    traces.wait_for(timeout=60_000)
    page.locator("#sf-decomposition", has_text="Why did it help").wait_for(timeout=60_000)
    assert "onerror=" in traces.inner_text()
    for tab in ("Models", "Skills", "About"):
        page.get_by_role("tab", name=tab).click()
        page.wait_for_timeout(2_000)
    page.wait_for_timeout(1_500)  # time for an image to be fetched, were one rendered
    _no_side_effects(page, requests, app)
    page.close()


@pytest.mark.browser
def test_a_link_naming_a_pool_or_partition_not_on_the_board_fetches_nothing(browser, app, tracker):
    """Before: `?pool=<img src=...>` was set on a dropdown that allows no custom value, so
    every later event failed in Gradio's preprocessing with an error toast quoting the value
    as HTML: the visitor's browser fetched the tracker 5 times and no filter answered. Now the
    value is dropped, named as text in a warning, and the board keeps answering."""
    _Tracker.hits.clear()
    requests: list[str] = []
    page = _page(browser, requests)
    hostile = payload(tracker, "link")
    page.goto(f"{app}?pool={quote(hostile)}&partition={quote(hostile)}&nonreportable=1")
    page.locator(ROWS).first.wait_for(timeout=90_000)
    toast = page.locator("[data-testid='toast-body']", has_text="not on this board").first
    toast.wait_for(timeout=30_000)
    assert "<img src=" in toast.inner_text()
    # an event after the link's view: it must answer
    page.locator("#sf-f-mincond").get_by_label("20").check()
    page.locator("#sf-summary", has_text="reportable at n_cond ≥ 20").wait_for(timeout=30_000)
    page.wait_for_timeout(1_500)
    assert page.locator("[data-testid='toast-body'] img, [data-testid='toast-body'] a").count() == 0
    texts = page.locator("[data-testid='toast-body']").all_inner_texts()
    assert [t for t in texts if t.startswith("Error")] == []
    _no_side_effects(page, requests, app)
    page.close()


@pytest.mark.browser
def test_a_long_benchmark_name_is_cut_in_the_legend_and_does_not_widen_a_plot(browser, app):
    """Before: a plot's legend drew each series' name whole (the coverage plot's series are
    benchmarks, which a source names): a 906-character name without a space was one line
    wider than its plot. Now the legend shows 60 characters with the length, and wraps."""
    page = _page(browser, [])
    page.goto(app + "?nonreportable=1")
    legend = page.locator("#sf-plots .sf-legend", has_text="bench-xxx").first
    legend.wait_for(timeout=90_000)
    assert "906 characters" in legend.inner_text()
    for figure in page.locator("#sf-plots figure").all():
        assert figure.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), "a plot overflows"
    page.close()


URL_COLUMN = (
    "Verify at https://attacker.example/login or www.attacker.example, ops@attacker.example"
)


@pytest.fixture(scope="module")
def bad_annotations_app(tmp_path_factory):
    """A board over one run whose annotations file has a column named by a phishing line."""
    import pyarrow as pa

    tmp = tmp_path_factory.mktemp("annotations")
    run = write_run_dir(tmp / "src", "run-a", CELL_A, cell_id="cellA", model="org/a")
    path = write_annotations(run, "seed")
    table = pq.read_table(path)
    pq.write_table(table.append_column(URL_COLUMN, pa.array(["x"] * table.num_rows)), path)
    proc, url = start_board(tmp, [str(tmp / "src")], cache="off")
    yield url
    proc.terminate()
    proc.wait(timeout=30)


@pytest.mark.browser
def test_a_url_in_an_annotations_problem_is_text_not_a_link(browser, bad_annotations_app):
    """Before: the drill-down's "Annotations." line quotes the bad file's problem, escaped for
    Markdown (no link or image syntax), but Gradio's Markdown autolinks a bare URL, a `www.`
    host and an e-mail address: the column name above was three live links
    (https://attacker.example/login, http://www.attacker.example..., mailto:). Now they are
    shown as typed and nothing in the section is a link."""
    page = _page(browser, [])
    page.goto(bad_annotations_app + "?cell=cellA")
    box = page.locator("#sf-decomposition")
    box.get_by_text("could not be read", exact=False).first.wait_for(timeout=90_000)
    assert box.locator("a").count() == 0
    assert URL_COLUMN in box.inner_text()
    page.close()


# --- the judge record in a task's traces ---------------------------------------------------


def _judged_source(root: Path, record: str) -> Path:
    """CELL_A as cellJ (org/j), every trace row carrying `record` as its judge record."""
    from hf_skillfollow.schema import traces_from_rows

    run = write_run_dir(root, "run-j", CELL_A, cell_id="cellJ", model="org/j")
    rows = trace_rows(pq.read_table(run / "transitions.parquet").to_pylist())
    for row in rows:
        row.update(grader="expectations", judge="J", judge_verdicts=record)
    pq.write_table(traces_from_rows(rows), run / "traces.parquet")
    return root


def _drill_down(root: Path) -> list[str]:
    from hf_skillfollow.space_app._board import cell_key, load_board
    from hf_skillfollow.space_app._ui import _show_cell

    board = load_board([str(root)], resamples=200, discover=False, use_cache=False)
    return [str(p) for p in _show_cell(board, cell_key("cellJ", board.sources[0]))]


@pytest.mark.parametrize(
    "record",
    [
        '{"judge": "J", "majority": [true], "repeats": ["not an object"]}',
        '{"judge": "J", "majority": [true], "repeats": [{"verdicts": ["not an object"]}]}',
        '{"judge": "J", "majority": [true], "repeats": {"verdicts": []}}',
        '{"judge": "J", "majority": 7, "repeats": []}',
        "[" * 100_000 + "]" * 100_000,
    ],
    ids=["repeat-str", "verdict-str", "repeats-dict", "majority-int", "nested"],
)
def test_a_judge_record_of_another_shape_is_a_note_in_the_traces(tmp_path, record):
    """Before: `_drill._judge_html` read the record as it came: a repeat or verdict that is not
    an object raised AttributeError, `[` nested 100,000 deep RecursionError, in the drill-down
    of the cell (its first flipped task's traces are drawn with it), so the cell could not be
    opened. Now the traces are drawn and the judge part is one note saying what is wrong."""
    parts = _drill_down(_judged_source(tmp_path / "s", record))
    traces = parts[-1]
    assert "SE arm" in traces and "SD arm" in traces
    assert "judge record not shown" in traces


def test_a_judge_record_is_shown_cut_and_counted_whatever_its_lists_hold(tmp_path):
    """Before: every expectation of the record and every repeat's evidence went whole into the
    task's traces (a source holds values of up to 4 MB): this 3.2 MB record (200,000
    expectations, three 0.5 MB evidences) made the traces 27.8 MB of HTML, sent to every
    visitor opening the cell. Now 50 expectations are shown with the count of the rest, each
    evidence cut to 2,000 characters with its length, the judge's name as the table cuts names."""
    record = {
        "judge": "J" * 500_000, "settings": {"repeats": 1}, "n_valid": 1, "ties": 0,
        "majority": [True] * 200_000,
        "repeats": [{"verdicts": [{"passed": True, "evidence": "E" * 500_000}] * 3}],
    }  # fmt: skip
    parts = _drill_down(_judged_source(tmp_path / "s", json.dumps(record)))
    traces = parts[-1]
    assert max(map(len, parts)) < 200_000, [len(p) for p in parts]
    assert "199,950 more expectations not shown" in traces
    assert "498,000 more characters not shown" in traces
    assert "500,000 characters" in traces
    assert "e3: <b>met</b> (✓)" in traces


def test_an_honest_judge_record_is_shown_whole():
    """Guard: a record hf-skillfollow writes shows its statements, votes and evidence."""
    from hf_skillfollow.space_app._drill import _judge_html

    record = {
        "judge": "acme/judge@p1", "expectations": ["names the function"], "majority": [False],
        "repeats": [{"verdicts": [{"passed": False, "evidence": "no def"}]},
                    {"verdicts": [{"passed": True, "evidence": "def f"}]}],
    }  # fmt: skip
    html = "".join(_judge_html({"judge_verdicts": json.dumps(record)}))
    assert "judge acme/judge@p1" in html
    assert '<q class="sf-expect">names the function</q>: <b>not met</b> (✗✓)' in html
    assert "no def | def f" in html


# --- one model dressed as another ------------------------------------------------------------

VICTIM = "org/victim"
ZERO_WIDTH = "org/vic\u200btim"  # a zero-width space
CYRILLIC = "org/v\u0456ctim"  # a Cyrillic і


def _lookalikes(tmp_path: Path):
    from hf_skillfollow.space_app._board import load_board

    roots = []
    for name, model in (("lab", VICTIM), ("zw", ZERO_WIDTH), ("cyr", CYRILLIC)):
        write_run_dir(tmp_path / name, f"run-{name}", CELL_A, cell_id=f"cell-{name}", model=model)
        roots.append(str(tmp_path / name))
    return load_board(roots, resamples=200, discover=False, use_cache=False)


def test_a_model_name_with_a_zero_width_character_does_not_read_as_another(tmp_path):
    """Before: `org/vic<U+200B>tim` was drawn exactly as `org/victim` in the table, the plots'
    tooltips, the drill-down and the Models tab (for_html shows control and bidi characters,
    not format characters), so a source could show its cells under another's model name.
    Now every capped string on the page shows such a character as its escape; the CSV and
    the API keep the value as published."""
    from hf_skillfollow.space_app import _models
    from hf_skillfollow.space_app import _table as T
    from hf_skillfollow.space_app._board import cell_key
    from hf_skillfollow.space_app._ui import _show_cell, render_view

    board = _lookalikes(tmp_path)
    view = render_view(board, T.ViewState(T.Filters(show_nonreportable=True)))
    shown = "org/vic\\u200btim"
    assert shown in view.table and shown in view.plots
    assert "\u200b" not in view.table + view.plots
    header, *_ = _show_cell(board, cell_key("cell-zw", str(tmp_path / "zw")))
    assert shown in header and "\u200b" not in header
    models = _models.models_html(_models.models_frame(board.cells()))
    assert models.count(f"<b>{shown}</b>") == 1 and models.count(f"<b>{VICTIM}</b>") == 1
    assert ZERO_WIDTH in {r["model"] for r in T.records(board.cells(), 10)}


def test_a_model_name_with_a_lookalike_letter_gets_no_model_card_link(tmp_path):
    """Before: the card link's Hub-id rule used Python's Unicode `\\w`, so `org/vіctim` (a
    Cyrillic і) got the same ↗ model-card link as `org/victim`, pointing at a look-alike URL.
    Hub ids are ASCII: now only `org/victim` has a link, in the table and on the Models tab."""
    from hf_skillfollow.space_app import _models
    from hf_skillfollow.space_app import _table as T
    from hf_skillfollow.space_app._labels import card_url
    from hf_skillfollow.space_app._ui import render_view

    assert card_url(CYRILLIC) == "" and card_url("org/\u0663b") == ""
    assert card_url(VICTIM) == "https://huggingface.co/org/victim"
    board = _lookalikes(tmp_path)
    view = render_view(board, T.ViewState(T.Filters(show_nonreportable=True)))
    models = _models.models_html(_models.models_frame(board.cells()))
    for html in (view.table, models):
        assert html.count('class="sf-card"') == 1
        assert 'href="https://huggingface.co/org/victim"' in html


# --- what every visitor is sent ----------------------------------------------------------------


def _many_pools(root: Path, n: int) -> Path:
    """`n` one-row cells, each with its own 1,000-character pool and task file name."""
    from hf_skillfollow.schema import transitions_from_rows
    from tests._rows import transition_row

    rows = [
        transition_row(run_id=f"run{i}", cell_id=f"c{i}", task_id="t",
                       skill_pool=f"{i:06d}" + "p" * 994, benchmark_version=f"{i:06d}" + "v" * 994)
        for i in range(n)
    ]  # fmt: skip
    run = root / "runs"
    run.mkdir(parents=True)
    pq.write_table(transitions_from_rows(rows), run / "transitions.parquet")
    return root


def test_the_filters_list_a_bounded_number_of_choices_and_the_page_stays_small(tmp_path):
    """Before: every distinct pool / condition and task set was a choice of its dropdown, sent
    whole in the page: 5,000 one-row cells with 1,000-character pools (a 0.6 MB file) made
    the page 37 MB for every visitor. Now a dropdown lists at most 500 choices of 100,000
    characters in all (those carried by the most cells), says how many more there are, and
    any other value can still be typed or linked (the dropdowns allow custom values)."""
    import urllib.request

    from hf_skillfollow.space_app import _table as T
    from hf_skillfollow.space_app._board import load_board
    from hf_skillfollow.space_app._ui import _known_choices, render_view

    source = _many_pools(tmp_path / "many", 5_000)
    proc, url = start_board(tmp_path, [str(source)], cache="off")
    try:
        with urllib.request.urlopen(url, timeout=120) as reply:
            page = reply.read()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert len(page) < 2_000_000, f"{len(page):,} bytes"
    assert b"more not listed: name one in a link (?pool=...)" in page

    board = load_board([str(source)], resamples=200, discover=False, use_cache=False)
    cells = board.first_view(T.VIEW_COLUMNS)
    shown, left = T.listed(cells["pool_condition"], T.choices(cells, "pool_condition"))
    assert len(shown) <= T.MAX_CHOICES and sum(map(len, shown)) <= T.MAX_CHOICE_CHARS
    assert left == 5_000 - len(shown) > 0
    unlisted = "004999" + "p" * 994 + " / normal"
    assert unlisted not in shown
    f = _known_choices(board, T.Filters(pools=(unlisted,), show_nonreportable=True))
    assert f.pools == (unlisted,)
    view = render_view(board, T.ViewState(f), plots=False)
    assert "<b>1</b> of 5,000 cells match" in view.summary


def test_a_few_short_choices_are_all_listed():
    """Guard: a board's usual filters list every choice, in alphabetical order."""
    import pandas as pd

    from hf_skillfollow.space_app import _table as T

    values = pd.Series(["b", "a", "b", "c"])
    assert T.listed(values, ["a", "b", "c"]) == (["a", "b", "c"], 0)


def test_the_banner_shows_ten_problems_folds_ninety_and_counts_the_rest(tmp_path):
    """Before: a source that reuses another's run ids with other rows raises one warning per
    run id, and the banner drew every one, whole in its tooltip: 3,000 reused 909-character
    run ids made a 3.9 MB banner, 3,000 lines above the table, for every visitor. Now ten
    lines, ninety more folded under them, the rest counted; a tooltip holds 1,000 characters."""
    from hf_skillfollow.schema import transitions_from_rows
    from hf_skillfollow.space_app._board import load_board
    from hf_skillfollow.space_app._ui import warnings_html
    from tests._rows import transition_row

    roots = []
    for name in ("victim", "copycat"):
        run = tmp_path / name / "runs"
        run.mkdir(parents=True)
        rows = [
            transition_row(run_id=f"run-{i:05d}" + "r" * 1_000, cell_id=f"c{i}", task_id="t",
                           model=f"org/{name}")
            for i in range(300)
        ]  # fmt: skip
        pq.write_table(transitions_from_rows(rows), run / "transitions.parquet")
        roots.append(str(tmp_path / name))
    board = load_board(roots, resamples=200, discover=False, use_cache=False)
    assert len(board.warnings) == 300
    html = warnings_html(board.warnings)
    assert len(html) < 200_000, f"{len(html):,} characters"
    head = html.split("<details>")[0]
    assert head.count("<li title=") == 10 and "run-00009" in head and "run-00010" not in head
    assert "<summary>90 more</summary>" in html and "200 more problems not shown" in html
    assert "run-00099" in html and "run-00100" not in html
    tips = [unescape(t) for t in re.findall(r'title="([^"]*)"', html)]
    assert max(map(len, tips)) == 1_001 and tips[0].endswith("…")


def test_a_few_problems_are_all_lines_of_the_banner():
    """Guard: up to ten problems are each a line, with the whole text in the tooltip."""
    from hf_skillfollow.space_app._ui import warnings_html

    html = warnings_html(["Source 'a' skipped: <b>x</b>", "y" * 500])
    assert html.count("<li title=") == 2 and "<details>" not in html
    assert "Source &#x27;a&#x27; skipped: &lt;b&gt;x&lt;/b&gt;" in html
    assert f'title="{"y" * 500}"' in html


def test_a_line_break_in_a_name_cannot_forge_a_line_of_a_plot_tooltip(tmp_path):
    """Before: a plot point's tooltip is one fact per line, and a model named
    `org/a<LF>RAE +99.0 ...` showed a forged RAE line above the cell's own (for_html keeps line
    breaks). Now a capped name shows a line break as its escape: the tooltip has its three
    lines, the name in the first."""
    from hf_skillfollow.space_app import _table as T
    from hf_skillfollow.space_app._board import load_board
    from hf_skillfollow.space_app._ui import render_view

    forged = "RAE +99.0 [+90.0, +99.9] · OAE +50.0 · lift +1.0 · Δselect +0.0 pp"
    write_run_dir(tmp_path, "run-a", CELL_A, cell_id="cellA", model=f"org/a\n{forged}\u2028x")
    board = load_board([str(tmp_path)], resamples=200, discover=False, use_cache=False)
    view = render_view(board, T.ViewState(T.Filters(show_nonreportable=True)))
    (tip,) = {t for t in re.findall(r"<title>(.*?)</title>", view.plots, re.S) if "org/a" in t}
    lines = unescape(tip).split("\n")
    assert len(lines) == 3, lines
    assert lines[0].startswith(f"org/a\\n{forged}\\u2028x · mbppplus")
    assert lines[1].startswith("RAE +33.3")


def test_tool_calls_nested_too_deep_are_shown_as_text_in_the_traces(tmp_path):
    """Before: `_drill._pretty_json` parsed a message's tool_calls with json.loads and caught
    ValueError only: `[` nested 9,000 deep (18 KB, under the 20,000 characters a message
    shows) raised RecursionError in the drill-down's handler. Now it is shown as written."""
    from hf_skillfollow.schema import traces_from_rows

    deep = "[" * 9_000 + "]" * 9_000
    run = write_run_dir(tmp_path / "s", "run-j", CELL_A, cell_id="cellJ", model="org/j")
    rows = trace_rows(pq.read_table(run / "transitions.parquet").to_pylist())
    for row in rows:
        row["messages"][1]["tool_calls"] = deep
    pq.write_table(traces_from_rows(rows), run / "traces.parquet")
    traces = _drill_down(tmp_path / "s")[-1]
    assert "SE arm" in traces and "SD arm" in traces and deep in traces


def test_tool_calls_whose_indentation_would_be_large_are_shown_as_written():
    """Before: tool calls were indented whatever their depth: `[` nested 900 deep (1.8 KB)
    became 1.6 MB, cut to 20,000 characters; 200 such messages made one arm 4 MB of HTML and
    took seconds of the server's CPU per opened task. Now such JSON is shown as written (one
    arm 0.4 MB), and ordinary tool calls are still indented."""
    from hf_skillfollow.space_app._drill import _trace

    deep = "[" * 900 + "]" * 900
    messages = [{"role": "assistant", "content": "", "tool_calls": deep}] * 200
    html = _trace({"correct": True, "messages": messages, "extracted": "x"}, "se")
    assert len(html) < 500_000, f"{len(html):,} characters"
    assert html.count(deep) == 200
    call = '[{"id": "c1", "function": {"name": "search_skills"}}]'
    html = _trace({"correct": True, "messages": [{"role": "assistant", "tool_calls": call}]}, "se")
    assert "\n  {\n    &quot;id&quot;: &quot;c1&quot;," in html


def test_the_disagreeing_tasks_of_a_re_scoring_are_listed_up_to_a_bound(tmp_path):
    """Before: the drill-down's re-scoring section listed every arm a source's own
    verification record disagrees with: 20,000 rows (0.4 MB of files) made the header
    19.4 MB for every visitor opening the cell. Now 100 arms are listed and the rest counted
    (the counts line above still counts every row)."""
    from hf_skillfollow.schema import (
        VERIFICATIONS_SCHEMA,
        transitions_from_rows,
        verifications_from_rows,
    )
    from hf_skillfollow.space_app._board import cell_key, load_board
    from hf_skillfollow.space_app._ui import _show_cell
    from tests._rows import transition_row
    from tests.test_published_attacks_round2 import _agreeing_record_rows

    run = tmp_path / "run-v"
    run.mkdir()
    rows = [
        transition_row(run_id="run-v", cell_id="cellV", model="org/v", task_id=f"t{i:05d}",
                       se_correct=True, sd_correct=False, invoked=True, returned=True, n_calls=1)
        for i in range(3_000)
    ]  # fmt: skip
    pq.write_table(transitions_from_rows(rows), run / "transitions.parquet")
    record = _agreeing_record_rows(run)
    for r in record:  # every verdict of both arms the other way, with a long reason
        r.update(se_rescored=False, sd_rescored=True, se_reason="R" * 300, sd_reason="R" * 300)
    (run / "verifications").mkdir()
    table = verifications_from_rows(record).cast(VERIFICATIONS_SCHEMA)
    pq.write_table(table, run / "verifications" / "x--run-v.parquet")
    board = load_board([str(tmp_path)], resamples=200, discover=False, use_cache=False)
    header = str(_show_cell(board, cell_key("cellV", board.sources[0]))[0])
    assert len(header) < 200_000, f"{len(header):,} characters"
    assert header.count("<tr><td>t0") == 100
    assert "… and 5,900 more disagreeing arms" in header
    assert "(3000 of 3000 rows re-scored, 0 agree" in header

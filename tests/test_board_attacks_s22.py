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
import threading
from pathlib import Path
from urllib.parse import quote

import pyarrow.parquet as pq
import pytest

from tests._board_fixtures import chromium, start_board, write_annotations
from tests._fixtures_hub import CELL_A, trace_rows

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

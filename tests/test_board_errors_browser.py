"""Issue 38, item 2 on the board: every cell's error rate, error-heavy cells flagged and their
effects not reported, in a real headless Chromium at 1440 and 390 px.

One app process over `_board_fixtures.write_error_source`: cellDOWN, every pair of which
ended in a provider error (before the fix the board dropped the error columns before
counting, so it read 0 errored pairs and showed `OAE +0.0`), and cellONE, one errored pair
of 40 (2.5%: reported, RAE +50.0).
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from tests._board_fixtures import chromium, start_board, write_error_source

pytestmark = pytest.mark.browser
ROWS = "#sf-table tbody tr"
HIDDEN = "not reported: 100.0% of pairs errored"
#: A signed effect as the board writes one (+0.0, −12.5): an error-heavy row shows none.
SIGNED = re.compile(r"[+−-]\d+\.\d")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("errors")
    proc, url = start_board(tmp, [write_error_source(tmp)], cache="off")
    yield url
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


def _open(browser, url: str, query: str = "", width: int = 1440):
    page = browser.new_page(viewport={"width": width, "height": 900 if width > 400 else 844})
    page.goto(url + query)
    page.locator(ROWS).first.wait_for(timeout=90_000)
    return page


def _row(page, cell_id: str):
    return page.locator(f'{ROWS}[data-sf-cell^="{cell_id}@"]')


def _visible_text(row) -> str:
    """What a reader sees of a row: the text of its displayed cells only."""
    return row.evaluate(
        "r => [...r.cells].filter(c => c.getClientRects().length).map(c => c.innerText).join(' | ')"
    )


@pytest.mark.parametrize("width", [1440, 390])
def test_rows_show_the_error_rate_and_flag_an_error_heavy_cell(browser, app, width):
    page = _open(browser, app, "?nonreportable=1", width=width)
    _row(page, "cellDOWN").wait_for(timeout=60_000)  # the link's view replaces the first one
    down = _visible_text(_row(page, "cellDOWN"))
    assert "error-heavy" in down, down
    assert "100.0% (40)" in down, down
    assert HIDDEN in down, down  # in the RAE column, which a phone shows too
    assert not SIGNED.search(down), down  # no effect as a number (was OAE +0.0, Δskip +0.0)
    flag = _row(page, "cellDOWN").locator(".sf-heavy:visible").first
    assert flag.is_visible()
    assert flag.evaluate("e => getComputedStyle(e).color") != "rgb(0, 0, 0)"
    one = _visible_text(_row(page, "cellONE"))
    assert "2.5% (1)" in one and "error-heavy" not in one, one
    assert "+50.0" in one and "not reported" not in one, one
    wrap = page.locator(".sf-table-wrap").first
    assert wrap.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), "table scrolls sideways"
    page.close()


def test_an_error_heavy_cell_is_not_reportable_nor_plotted(browser, app):
    page = _open(browser, app)
    assert _row(page, "cellONE").count() == 1
    assert _row(page, "cellDOWN").count() == 0  # hidden with the non-reportable cells
    page.close()
    page = _open(browser, app, "?nonreportable=1")
    _row(page, "cellDOWN").wait_for(timeout=60_000)
    reportable = _row(page, "cellDOWN").locator("td").nth(13).inner_text()  # "Reportable"
    assert reportable.split() == ["no", "error-heavy"], reportable
    assert page.locator('#sf-plots .sf-pt[data-sf-cell^="cellDOWN@"]').count() == 0
    assert page.locator('#sf-plots .sf-pt[data-sf-cell^="cellONE@"]').count() >= 1
    page.close()


def test_drill_down_header_says_the_errors_and_withholds_the_effects(browser, app):
    page = _open(browser, app, "?nonreportable=1")
    _row(page, "cellDOWN").wait_for(timeout=60_000)
    _row(page, "cellDOWN").click()
    head = page.locator(".sf-drill-head", has_text="org/down-7b").first
    head.wait_for(timeout=60_000)
    text = head.inner_text()
    assert "errored pairs" in text and "100.0% (40)" in text and HIDDEN in text, text
    decomposition = page.locator("#sf-decomposition", has_text="Decomposition").first
    decomposition.wait_for(timeout=60_000)
    said = decomposition.inner_text()
    assert HIDDEN in said and "OAE, RAE and Δskip are not shown" in said, said
    assert not SIGNED.search(said), said
    page.get_by_role("tab", name="Leaderboard").click()
    _row(page, "cellONE").click()
    head = page.locator(".sf-drill-head", has_text="org/flaky-7b").first
    head.wait_for(timeout=60_000)
    text = head.inner_text()
    assert "errored pairs" in text and "2.5% (1)" in text and "not reported" not in text, text
    page.close()


def test_csv_and_cells_api_carry_the_error_columns(browser, app):
    page = _open(browser, app, "?nonreportable=1")
    _row(page, "cellDOWN").wait_for(timeout=60_000)
    href = page.locator("#sf-summary a.sf-csv").get_attribute("href")
    rows = {
        r["cell_id"]: r for r in csv.DictReader(io.StringIO(page.request.get(app + href).text()))
    }
    down, one = rows["cellDOWN"], rows["cellONE"]
    assert (down["n_errored"], float(down["error_rate"]), down["error_heavy"]) == (
        "40",
        100.0,
        "True",
    )
    assert down["reportable"] == "False"
    assert (one["n_errored"], float(one["error_rate"]), one["error_heavy"]) == ("1", 2.5, "False")
    assert one["reportable"] == "True"
    page.close()
    # the API the page offers (gr.api "cells"), through the Gradio client's HTTP route
    from gradio_client import Client

    client = Client(app, verbose=False)
    found = client.predict(
        [], [], [], "", 10, ["non-reportable cells"], "rae:desc", api_name="/cells"
    )
    found = json.loads(found) if isinstance(found, str) else found
    by_id = {r["cell_id"]: r for r in found}
    assert by_id["cellDOWN"]["n_errored"] == 40 and by_id["cellDOWN"]["error_heavy"] is True
    assert by_id["cellONE"]["error_rate"] == pytest.approx(2.5)

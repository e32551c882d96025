"""The table's pages: PAGE_ROWS rows per reply, a pager under the table, the page in the URL.

A reply lays out one page only (bench/space.py: the layout of a 200-row table cost Chromium
~90 ms per filter); every filtered row stays reachable, page by page, in the filtered order.
The fixture has 120 reportable cells (three pages); the browser test drives the pager in a
real Chromium.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from hf_skillfollow.space_app import _cache
from hf_skillfollow.space_app import _table as T
from hf_skillfollow.space_app._board import load_board
from hf_skillfollow.space_app._ui import render_view
from tests._cells import rows_for, table_for

N_CELLS = 120
KEY = re.compile(r'<tr[^>]* data-sf-cell="([^"]+)"')


def _write_source(folder: Path) -> Path:
    """N_CELLS single-run cells, each with n_cond 12 (reportable at every threshold) and a
    distinct RAE (cell i has b = 1 + i % 11 helpful flips), so the default sort is total."""
    cells = []
    for i in range(N_CELLS):
        cells.append(
            rows_for(
                {"a": 2, "b": 1 + i % 11, "c": 11 - i % 11 - 1, "d": 0},
                {"a": 3, "d": 3},
                model=f"org/m{i}",
                cell_id=f"cell-{i}",
                run_id=f"run-{i}",
            )
        )
    path = folder / "transitions.parquet"
    pq.write_table(table_for(*cells), path)
    return path


@pytest.fixture()
def board(tmp_path: Path, monkeypatch):
    monkeypatch.setenv(_cache.ENV_CACHE, str(tmp_path / "cache"))
    return load_board([str(_write_source(tmp_path))], resamples=200, discover=False)


def _keys(html: str) -> list[str]:
    return KEY.findall(html)


def test_pages_cover_the_filtered_rows_in_order_and_a_page_past_the_end_is_the_last(board):
    f = T.Filters(sort="n_cond:desc")
    everyone = T.apply_filters(board.view(False, T.VIEW_COLUMNS), f)["_key"].astype(str).tolist()
    assert len(everyone) == N_CELLS
    pages = [_keys(render_view(board, T.ViewState(f, page=p)).table) for p in (1, 2, 3)]
    assert [len(p) for p in pages] == [T.PAGE_ROWS, T.PAGE_ROWS, N_CELLS - 2 * T.PAGE_ROWS]
    assert pages[0] + pages[1] + pages[2] == everyone
    last = render_view(board, T.ViewState(f, page=99))
    assert _keys(last.table) == pages[2]
    assert "rows <b>101–120</b> of 120 · page 3 of 3" in last.table
    # the summary carries the page shown (the URL follows it), not the one asked for
    assert 'data-sf-query="sort=n_cond%3Adesc&amp;table_page=3"' in last.summary
    assert "120</b> of 120 cells match · 50 per page, the CSV holds all" in last.summary


def test_the_pager_links_to_its_neighbours_and_disables_the_ends(board):
    first = render_view(board, T.ViewState(T.Filters())).table
    assert 'data-sf-page="2" aria-label="next page (page 2)"' in first
    assert 'data-sf-page="3" aria-label="last page (page 3)"' in first
    assert '<button type="button" disabled aria-label="previous page">' in first
    assert 'data-sf-page="1"' not in first  # no button leads to the page shown
    middle = render_view(board, T.ViewState(T.Filters(), page=2)).table
    assert 'data-sf-page="1" aria-label="previous page (page 1)"' in middle
    assert 'data-sf-page="3" aria-label="next page (page 3)"' in middle
    # one page holds every row: no pager
    one = render_view(board, T.ViewState(T.Filters(model_query="org/m7"))).table
    assert "sf-pager" not in one and len(_keys(one)) == 1 + 10  # m7, m70-m79


def test_the_page_round_trips_through_the_url_and_a_bad_one_is_one_clear_error():
    state = T.ViewState(T.Filters(min_cond=5), page=2)
    query = T.query_string(state.filters, runs=False, all_columns=False, page=2)
    assert query == "min_cond=5&table_page=2"
    assert T.state_from_query({"min_cond": ["5"], "table_page": ["2"]}) == state
    assert T.state_from_query({}).page == 1
    for bad in ("0", "-1", "two", ""):
        with pytest.raises(ValueError, match=r"^page must be a positive whole number, got "):
            T.state_from_query({"table_page": [bad]})


# --- in Chromium ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def paged_app(tmp_path_factory):
    from tests.test_space_client import _free_port

    tmp = tmp_path_factory.mktemp("paged-app")
    port = _free_port()
    env = {
        **os.environ,
        "GRADIO_ANALYTICS_ENABLED": "False",
        "HF_HUB_OFFLINE": "1",
        _cache.ENV_CACHE: str(tmp / "board-cache"),
    }
    cmd = [sys.executable, "-m", "hf_skillfollow.cli", "leaderboard", str(_write_source(tmp)),
           "--port", str(port), "--no-discover", "--resamples", "200"]  # fmt: skip
    log = open(tmp / "server.log", "w")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 180
    while True:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError((tmp / "server.log").read_text()[-3000:])
        try:
            with urllib.request.urlopen(url, timeout=2):
                break
        except OSError:
            time.sleep(0.2)
    yield url
    proc.terminate()
    proc.wait(timeout=30)


@pytest.mark.browser
def test_next_previous_and_a_shared_page_link_in_chromium(paged_app):
    from playwright.sync_api import sync_playwright

    from tests.test_space_browser import CHROMIUM, CHROMIUM_ARGS

    rows, pager = "#sf-table tbody tr", "#sf-table .sf-pager"

    def keys(page) -> list[str]:
        return page.locator(rows).evaluate_all("rs => rs.map(r => r.dataset.sfCell)")

    def plots(page) -> list:
        """(outer tag, figures, distinct cells plotted) of the plots."""
        return page.evaluate(
            "() => { const p = document.querySelector('#sf-plots .sf-plots');"
            " return [p.tagName, p.querySelectorAll('figure svg').length,"
            " new Set([...p.querySelectorAll('.sf-pt')].map(c => c.dataset.sfCell)).size]; }"
        )

    def wait_at(page, n: int) -> None:
        page.wait_for_function(
            f"() => document.querySelector('{pager}')?.dataset.sfAt === '{n}'", timeout=60_000
        )

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.goto(paged_app)
        page.locator(rows).first.wait_for(timeout=90_000)
        first = keys(page)
        assert len(first) == T.PAGE_ROWS
        assert "rows 1–50 of 120 · page 1 of 3" in page.locator(pager).inner_text()
        page.locator(pager).get_by_role("button", name="next page").click()
        wait_at(page, 2)
        second = keys(page)
        assert len(second) == T.PAGE_ROWS and not set(first) & set(second)
        page.wait_for_function("() => location.search.includes('table_page=2')", timeout=30_000)
        page.locator(pager).get_by_role("button", name="previous page").click()
        wait_at(page, 1)
        assert keys(page) == first
        # a shared link to the last page shows it, its Next and Last disabled
        other = browser.new_page(viewport={"width": 1440, "height": 900})
        other.goto(paged_app + "?table_page=3")
        wait_at(other, 3)
        assert len(keys(other)) == N_CELLS - 2 * T.PAGE_ROWS
        assert other.locator(pager).get_by_role("button", name="next page").is_disabled()
        assert not set(keys(other)) & set(first + second)
        # the link's reply swapped the plots in whole (PlotSwap), not patched them
        assert plots(other) == ["SECTION", 3, N_CELLS]
        # a filter change shows its first page again, its plots swapped back in a <div>
        other.locator("#sf-f-mincond label", has_text="5").first.click()
        wait_at(other, 1)
        other.wait_for_function("() => !location.search.includes('table_page=')", timeout=30_000)
        other.wait_for_function(
            "() => document.querySelector('#sf-plots .sf-plots')?.tagName === 'DIV'",
            timeout=30_000,
        )
        assert plots(other) == ["DIV", 3, N_CELLS]
        browser.close()


def test_plot_swap_alternates_per_session_and_leaves_other_html_alone():
    from types import SimpleNamespace

    from hf_skillfollow.space_app._ui import PlotSwap

    swap, plots = PlotSwap(), '<div class="sf-plots"><figure>x</figure></div>'
    a, b = SimpleNamespace(session_hash="a"), SimpleNamespace(session_hash="b")
    assert swap.wrap(plots, a) == '<section class="sf-plots"><figure>x</figure></section>'
    assert swap.wrap(plots, b).startswith("<section")  # each session alternates on its own
    assert swap.wrap(plots, a) == plots
    assert swap.wrap(plots, a).startswith("<section")
    assert swap.wrap("", a) == "" and swap.wrap(T.EMPTY_HTML, a) == T.EMPTY_HTML

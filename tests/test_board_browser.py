"""What a submitter or a link writes is shown as text in a real Chromium (issue 20, 6, 7, 13).

One app process over two sources: an annotated run whose annotator name is Markdown with an
image from a local "tracker" server, and a run whose model name is 300 characters without a
space. The tracker (a plain HTTP server on 127.0.0.1) records every request, so an image
that loads is seen, not guessed.
"""

from __future__ import annotations

import http.server
import threading
from urllib.parse import quote

import pytest

from tests._board_fixtures import VICTIM, chromium, start_board
from tests._board_fixtures import write_annotations as _annotations
from tests._fixtures_hub import CELL_A, write_run_dir

pytestmark = pytest.mark.browser
LONG = "org/" + "w" * 296  # 300 characters, no space to break at


class _Tracker(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        _Tracker.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def tracker():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Tracker)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def app(tmp_path_factory, tracker):
    tmp = tmp_path_factory.mktemp("markup")
    named = tmp / "named"
    run = write_run_dir(named, "run-n", CELL_A, **VICTIM)
    # the backticks close the code span the name was shown in on main
    _annotations(run, f"a` ![t]({tracker}/annotator.png) <img src={tracker}/raw.png> `b")
    wide = tmp / "wide"
    write_run_dir(wide, "run-w", CELL_A, cell_id="cellW", model=LONG)
    proc, url = start_board(tmp, [str(named), str(wide)], cache=str(tmp / "cache"))
    yield url, "cellV"  # a bare cell_id opens the one cell that has it
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


def test_markdown_in_an_annotator_name_is_text_in_the_drill_down(browser, app):
    """Item 6: on main the image loaded for every visitor who opened the cell."""
    url, key = app
    _Tracker.hits.clear()
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(f"{url}?cell={quote(key)}")
    box = page.locator("#sf-decomposition")
    box.get_by_text("Why did it help", exact=False).first.wait_for(timeout=90_000)
    page.wait_for_timeout(1500)  # time for an image to be fetched, if one were rendered
    assert box.locator("img").count() == 0
    assert "![t](" in box.inner_text() and "<img src=" in box.inner_text()
    assert _Tracker.hits == []
    page.close()


def test_html_in_a_link_parameter_is_text_in_the_warning(browser, app, tracker):
    """Item 7: gr.Warning renders HTML; on main the link's text became a link and an image."""
    url, _ = app
    _Tracker.hits.clear()
    payload = f'<a href="{tracker}/phish">Your session expired</a><img src="{tracker}/toast.png">'
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(f"{url}?min_cond={quote(payload)}")
    toast = page.locator("[data-testid='toast-body']").first
    toast.wait_for(timeout=90_000)
    page.wait_for_timeout(1500)
    assert toast.locator("a, img").count() == 0
    assert "Your session expired</a>" in toast.inner_text()
    assert _Tracker.hits == []
    page.close()


def test_a_long_name_without_spaces_does_not_widen_the_table(browser, app):
    """Item 13: on main a 300-character name made the table 3,142 px wide."""
    url, _ = app
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(url + "?nonreportable=1")
    page.locator("#sf-table tbody tr", has_text="org/www").first.wait_for(timeout=90_000)
    wrap = page.locator(".sf-table-wrap").first
    assert wrap.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), "table scrolls sideways"
    page.close()

"""The leaderboard in a real headless Chromium (Debian's /usr/bin/chromium via Playwright).

Loads the board over the fixture of test_space_client (hand-counted cells), applies a filter
and sees the rows change, clicks a row to open its drill-down, and saves screenshots under
the test's tmp folder. Gradio 6's table is a virtual grid, so rows are found as
`.virtual-body [role=row]`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_space_client import BAD_SCHEMA, start_app

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ROWS = "#sf-table .virtual-body [role=row]"


@pytest.fixture
def page(tmp_path):
    if not CHROMIUM.is_file():
        pytest.fail(
            f"{CHROMIUM} is missing: apt-get install -y chromium (never `playwright install`)"
        )
    from playwright.sync_api import sync_playwright

    proc, url = start_app(tmp_path / "app")
    try:
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                str(tmp_path / "chromium-profile"),
                executable_path=str(CHROMIUM),
                args=CHROMIUM_ARGS,
                headless=True,
                viewport={"width": 1500, "height": 1400},
            )
            try:
                tab = context.new_page()
                tab.goto(url)
                yield tab
            finally:
                context.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _wait_rows(page, n: int) -> None:
    page.wait_for_function(
        "([sel, n]) => document.querySelectorAll(sel).length === n", arg=[ROWS, n], timeout=60_000
    )


@pytest.mark.browser
def test_board_filter_and_drill_down_in_chromium(page, tmp_path):
    page.locator(ROWS).first.wait_for(timeout=90_000)
    _wait_rows(page, 2)  # cells A and B are reportable at n_cond >= 10
    first_row = page.locator(ROWS).first.inner_text()
    assert "model-alpha" in first_row and "35" in first_row
    assert "⚠ disagree" in page.locator(ROWS).nth(1).inner_text()
    assert BAD_SCHEMA in page.locator("#sf-warnings").inner_text()
    page.locator("#sf-plot-lift-rae svg text", has_text="Aggregate lift vs RAE").first.wait_for(
        timeout=30_000
    )
    page.locator(
        "#sf-plot-select-lift svg text", has_text="Selection gap vs aggregate lift"
    ).first.wait_for(timeout=30_000)
    page.screenshot(path=str(tmp_path / "board.png"), full_page=True)

    page.locator("#sf-f-mincond label", has_text="5").first.click()
    _wait_rows(page, 3)  # cell C (n_cond 6) joins at threshold 5
    assert "model-gamma" in page.locator("#sf-table .virtual-body").inner_text()
    assert "2** sign" not in page.locator("#sf-summary").inner_text()  # rendered markdown, not raw
    assert "2 sign disagreement" in page.locator("#sf-summary").inner_text()

    page.locator(ROWS).first.locator("[role=gridcell], td").nth(1).click()
    matrices = page.locator("#sf-matrices")
    matrices.get_by_text("b = 9").first.wait_for(timeout=30_000)
    assert "c = 2" in matrices.inner_text()
    assert "10.29 − 4.41" in page.locator("#sf-decomposition").inner_text()
    page.locator("#sf-flips .virtual-body [role=row]").first.wait_for(timeout=30_000)
    page.screenshot(path=str(tmp_path / "drilldown.png"), full_page=True)
    assert (tmp_path / "board.png").stat().st_size > 10_000
    assert (tmp_path / "drilldown.png").stat().st_size > 10_000

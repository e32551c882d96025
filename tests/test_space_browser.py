"""The leaderboard in a real headless Chromium (Debian's /usr/bin/chromium via Playwright).

One app process over the hand-counted fixture of test_space_client, one browser, a page per
check. Screenshots at 1440 px, 390 px and in dark mode are written to bench/out/space-browser/
(ignored by git); the path is printed.
"""

from __future__ import annotations

import re
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
ROWS = "#sf-table tbody tr"
ARTIFACTS = Path(__file__).resolve().parents[1] / "bench" / "out" / "space-browser"
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    proc, url = start_app(tmp_path_factory.mktemp("browser-app"))
    yield url
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not CHROMIUM.is_file():
        pytest.fail(
            f"{CHROMIUM} is missing: apt-get install -y chromium (never `playwright install`)"
        )
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    print(f"\nscreenshots: {ARTIFACTS}")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


def _open(
    browser, url: str, width: int = 1440, height: int = 900, query: str = "", ready: str = ROWS
):
    """A new page at ``url + query``, once ``ready`` is visible (the board's rows; a link to
    a cell opens the drill-down tab, which hides them)."""
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(url + query)
    page.locator(ready).first.wait_for(timeout=90_000)
    return page


def _models(page) -> list[str]:
    return [
        t.split("\n")[0].strip() for t in page.locator(f"{ROWS} td:first-child").all_inner_texts()
    ]


def _wait_models(page, expected: list[str]) -> None:
    page.wait_for_function(
        "([sel, want]) => JSON.stringify([...document.querySelectorAll(sel)]"
        ".map(td => td.innerText.split('\\n')[0].trim())) === JSON.stringify(want)",
        arg=[f"{ROWS} td:first-child", expected],
        timeout=60_000,
    )


def test_first_screen_at_1440_shows_every_key_column_and_the_plots(browser, app_url):
    page = _open(browser, app_url)
    _wait_models(page, ["model-alpha", "model-beta"])
    assert BAD_SCHEMA in page.locator("#sf-warnings").inner_text()
    wrap = page.locator(".sf-table-wrap").first
    assert wrap.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), "table scrolls sideways"
    for header in (
        "RAE pp",
        "Agg lift pp",
        "Δselect pp",
        "McNemar p",
        "OAE pp",
        "Δskip pp",
        "Reportable",
    ):
        box = page.locator("#sf-table th", has_text=header).first.bounding_box()
        assert box and box["x"] + box["width"] <= 1440, header
    first_row = page.locator(ROWS).first.bounding_box()
    assert first_row and first_row["y"] + first_row["height"] < 900  # the board is above the fold
    assert page.locator("#sf-plots svg").count() == 3
    assert page.locator("#sf-plots figcaption", has_text="Aggregate lift vs RAE").is_visible()
    page.screenshot(path=str(ARTIFACTS / "board-1440.png"), full_page=True)
    page.close()


def test_filters_header_sort_model_search_and_url_state(browser, app_url):
    page = _open(browser, app_url)
    page.locator("#sf-f-mincond label", has_text="5").first.click()
    _wait_models(page, ["model-alpha", "model-beta", "model-gamma"])
    assert "2 sign disagreement" in page.locator("#sf-summary").inner_text()
    page.locator("#sf-table th", has_text="OAE pp").click()  # numbers sort high to low first
    page.wait_for_function("() => location.search.includes('sort=oae%3Adesc')", timeout=30_000)
    _wait_models(page, ["model-alpha", "model-beta", "model-gamma"])  # OAE 5.9, −10.0, −11.5
    assert "▼" in page.locator("#sf-table th", has_text="OAE pp").inner_text()
    page.locator("#sf-table th", has_text="OAE pp").click()
    _wait_models(page, ["model-gamma", "model-beta", "model-alpha"])
    href = page.evaluate("() => location.href")  # history.replaceState: not a navigation
    assert "min_cond=5" in href and "sort=oae%3Aasc" in href

    box = page.locator("#sf-f-model textarea, #sf-f-model input").first
    box.click()
    page.keyboard.type("gam")  # no Enter: the table follows the typing
    _wait_models(page, ["model-gamma"])
    box.fill("")
    page.keyboard.insert_text("BETA")  # a paste is one input event
    _wait_models(page, ["model-beta"])
    page.wait_for_function("() => location.search.includes('model=BETA')", timeout=30_000)
    shared = page.evaluate("() => location.href")
    page.close()

    again = _open(browser, shared)  # a shared link restores the view
    _wait_models(again, ["model-beta"])
    assert again.locator("#sf-f-mincond input[value='5']").is_checked()
    assert again.locator("#sf-f-model textarea, #sf-f-model input").first.input_value() == "BETA"
    again.close()


def test_row_click_opens_drill_down_harmful_first_with_traces_side_by_side(browser, app_url):
    page = _open(browser, app_url)
    page.locator(ROWS, has_text="model-beta").click()
    page.locator("#sf-matrices").get_by_text("b = 2").first.wait_for(timeout=30_000)
    page.wait_for_function("() => location.search.includes('cell=cellB')", timeout=30_000)
    flips = page.locator("#sf-flips tbody tr")
    kinds = [flips.nth(i).get_attribute("data-flip") for i in range(flips.count())]
    assert kinds == ["harmful"] * 8 + ["helpful"] * 4  # c_all 8, b_all 4
    assert page.locator("#sf-tally tbody tr").first.get_attribute("data-skill") == "binary-search"
    page.locator("#sf-flips button", has_text="Mbpp/2").click()  # the traced helpful flip
    se, sd = page.locator(".sf-arm-se"), page.locator(".sf-arm-sd")
    se.get_by_text("SE_ANSWER").first.wait_for(timeout=30_000)
    a, b = se.bounding_box(), sd.bounding_box()
    assert a and b and abs(a["y"] - b["y"]) < 5 and b["x"] > a["x"] + a["width"] - 5  # side by side
    assert not page.locator(".sf-arm-se details pre").first.is_visible()  # system prompt collapsed
    page.screenshot(path=str(ARTIFACTS / "drilldown-1440.png"), full_page=True)
    page.close()


def test_plot_point_and_shared_cell_link_open_the_drill_down(browser, app_url):
    page = _open(browser, app_url)
    # the hover text is sent once, in the first plot; the third plot's point borrows it
    third = page.locator('#sf-plots figure').nth(2).locator('.sf-pt[data-sf-cell^="cellA@"]')
    assert third.locator("title").count() == 0
    third.hover()
    title = third.locator("title")
    title.wait_for(state="attached", timeout=10_000)
    assert "model-alpha" in title.text_content() and "RAE +35.0" in title.text_content()
    page.locator('#sf-plots .sf-pt[data-sf-cell^="cellA@"]').first.click()
    page.locator("#sf-matrices").get_by_text("b = 9").first.wait_for(timeout=60_000)
    page.close()
    # the link opens the drill-down tab: waiting for the board's rows raced that switch
    page = _open(browser, app_url, query="?cell=cellB&min_cond=5", ready="#sf-matrices")
    page.locator("#sf-matrices").get_by_text("c = 6").first.wait_for(timeout=60_000)
    page.close()


def test_dark_mode_banner_and_plots_are_readable(browser, app_url):
    page = _open(browser, app_url, query="?__theme=dark")
    page.wait_for_function("() => document.querySelector('.dark') !== null", timeout=30_000)
    colours = page.locator("#sf-warnings .sf-warn").first.evaluate(
        "e => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]"
    )
    assert _contrast(*colours) >= 4.5, colours
    text = page.locator("#sf-plots figcaption").first.evaluate("e => getComputedStyle(e).color")
    assert _luminance(text) > 0.5  # light text on the dark page, not plotly's white canvas
    page.screenshot(path=str(ARTIFACTS / "board-dark.png"), full_page=True)
    page.close()


def test_phone_width_keeps_useful_columns_and_whole_labels(browser, app_url):
    page = _open(browser, app_url, width=390, height=844)
    visible = [
        h.strip(" ▲▼")
        for h in page.eval_on_selector_all(
            "#sf-table th",
            "els => els.filter(e => e.getClientRects().length).map(e => e.innerText)",
        )
    ]
    assert {"Model", "n_cond / n", "RAE pp [95% CI]", "Agg lift pp"} <= set(visible)
    wrap = page.locator(".sf-table-wrap").first
    assert wrap.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
    for label in page.locator("#sf-f-show label").all():
        assert label.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), label.inner_text()
    page.screenshot(path=str(ARTIFACTS / "board-390.png"), full_page=True)
    page.close()


def _rgb(css: str) -> tuple[float, ...]:
    return tuple(float(v) for v in re.findall(r"[\d.]+", css)[:3])


def _luminance(css: str) -> float:
    def channel(v: float) -> float:
        v /= 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(v) for v in _rgb(css))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(fg: str, bg: str) -> float:
    hi, lo = sorted((_luminance(fg), _luminance(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)

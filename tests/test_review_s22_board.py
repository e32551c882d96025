"""Session 22 review of the board's new string rules (ee41f7b, d45bbb7, 42ba9a1): honest text
in scripts that need joiners is drawn as written, look-alikes still are not, and only a Hub
id gets a model-card link."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._fixtures_hub import CELL_A, write_run_dir
from tests.test_board_attacks_s22 import (  # noqa: F401 - the hostile board's fixtures
    ROWS,
    _no_side_effects,
    _page,
    _Tracker,
    app,
    browser,
    payload,
    tracker,
)

#: Honest strings whose ZWNJ/ZWJ (or emoji tags) change what is drawn: a Persian name, Hindi
#: and Sinhala conjuncts, emoji ZWJ sequences with a skin tone and a presentation selector,
#: a subdivision flag.
HONEST = {
    "persian": "\u0639\u0644\u06cc\u200c\u0631\u0636\u0627",  # علی‌رضا
    "hindi": "\u0915\u094d\u200d\u0937 \u0915\u094d\u200c\u0937",  # क्‍ष क्‌ष
    "sinhala": "\u0dc1\u0dca\u200d\u0dbb\u0dd3",  # ශ්‍රී
    "emoji": "\U0001f468\u200d\U0001f4bb \U0001f469\U0001f3fd\u200d\U0001f4bb",  # 👨‍💻 👩🏽‍💻
    "rainbow": "\U0001f3f3\ufe0f\u200d\U0001f308",  # 🏳️‍🌈
    "england": "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f",
}

#: The same characters where they draw nothing: still escapes.
SPOOFS = {
    "org/vic\u200dtim": "org/vic\\u200dtim",
    "org/vic\u200ctim": "org/vic\\u200ctim",
    "org/victim\u200d": "org/victim\\u200d",
    "\u0915\u094d\u200d\u200d\u0937": "\u0915\u094d\u200d\\u200d\u0937",  # one joiner is enough
    "org/victim\U000e0067\U000e007f": "org/victim\\U000e0067\\U000e007f",  # tags, no flag
}


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_text_with_joiners_is_drawn_as_written(name):
    """Before: every ZWNJ/ZWJ and tag character was written as its escape, so a Persian
    annotator, a Hindi skill name or a 👨‍💻 condition read `علی\\u200cرضا`, `क्\\u200dष`,
    `👨\\u200d💻`. Where the joiner shapes what is drawn it is now kept."""
    from hf_skillfollow.space_app._shown import capped

    assert capped(HONEST[name]) == HONEST[name]


@pytest.mark.parametrize("raw", sorted(SPOOFS))
def test_joiners_that_draw_nothing_are_still_escapes(raw):
    from hf_skillfollow.space_app._shown import capped

    assert capped(raw) == SPOOFS[raw]


def test_honest_model_names_with_joiners_read_as_written_on_the_page(tmp_path: Path):
    """Through a real board over local sources: the table and the Models tab draw the
    Persian and emoji names whole, and `org/vic<ZWJ>tim` as its escape."""
    from hf_skillfollow.space_app import _models
    from hf_skillfollow.space_app import _table as T
    from hf_skillfollow.space_app._board import load_board
    from hf_skillfollow.space_app._ui import render_view

    models = {"fa": HONEST["persian"], "emoji": HONEST["emoji"], "zwj": "org/vic\u200dtim"}
    roots = []
    for name, model in models.items():
        write_run_dir(tmp_path / name, f"run-{name}", CELL_A, cell_id=f"cell-{name}", model=model)
        roots.append(str(tmp_path / name))
    board = load_board(roots, resamples=200, discover=False, use_cache=False)
    view = render_view(board, T.ViewState(T.Filters(show_nonreportable=True)))
    page = _models.models_html(_models.models_frame(board.cells()))
    for html in (view.table, page):
        assert HONEST["persian"] in html and HONEST["emoji"] in html
        # drawn as its escape (the Models tab's data-model key keeps the value, not drawn)
        assert ">org/vic\\u200dtim<" in html and ">org/vic\u200dtim<" not in html


def test_a_name_with_a_trailing_line_break_gets_no_model_card_link():
    """Before: the Hub-id rule ended in `$`, which also matches before a final newline, so
    `org/victim<LF>` (another name, shown as `org/victim\\n`) got a ↗ link to
    `https://huggingface.co/org/victim<LF>`, which a browser opens as org/victim's card."""
    from hf_skillfollow.space_app._labels import card_url

    assert card_url("org/victim\n") == ""
    assert card_url("org/victim") == "https://huggingface.co/org/victim"


def test_a_judge_record_with_a_repeat_that_did_not_parse_is_shown():
    """Before (9d49944): the drill-down's shape check wanted every repeat's `verdicts` to be a
    list, but the toolkit writes `"verdicts": null` for a repeat whose judge reply did not
    parse (judge._grade.summarise), so an honest record with one failed repeat of three was
    replaced by 'judge record not shown: ... (not a record hf-skillfollow writes)'. Now
    such a repeat casts no vote and the expectations are listed from the others."""
    import json

    from hf_skillfollow._structured import Reply
    from hf_skillfollow.judge._grade import JudgeSettings, summarise
    from hf_skillfollow.space_app._drill import _judge_html

    replies = [
        Reply([(True, "greets"), (False, "no farewell")], "{}", 1, None),
        Reply(None, "not json", 3, "not JSON"),
        Reply([(True, "says hi"), (False, "none")], "{}", 1, None),
    ]
    judged = summarise(replies, 2, JudgeSettings(model="judge-m", backend="openai", repeats=3))
    assert judged.record["repeats"][1]["verdicts"] is None  # what the toolkit writes
    html = "".join(_judge_html({"judge_verdicts": json.dumps(judged.record)}))
    assert "judge record not shown" not in html
    assert "e1: <b>met</b> (✓✓)" in html and "e2: <b>not met</b> (✗✗)" in html
    assert "greets | says hi" in html


def _board_page(chrome, url: str, requests: list[str]):
    page = _page(chrome, requests)
    page.goto(url + "?nonreportable=1")
    page.locator(ROWS).first.wait_for(timeout=90_000)
    page.wait_for_load_state("networkidle")  # the page's events are wired
    return page


@pytest.mark.browser
@pytest.mark.parametrize("box", ["partition", "benchmark"])
def test_markup_typed_into_a_filter_is_text(browser, app, tracker, box):  # noqa: F811
    """Guard for 678aa51 (the dropdowns allow custom values): markup typed into a filter in
    Chromium is a value, not markup: a chip showing it as text, no fetch, no script, no
    error toast."""
    _Tracker.hits.clear()
    requests: list[str] = []
    page = _board_page(browser, app, requests)
    field = page.locator(f"#sf-f-{box} input").first
    field.click()
    field.fill(payload(tracker, "typed"))
    field.press("Enter")
    page.locator(f"#sf-f-{box}", has_text="typed.png").wait_for(timeout=30_000)  # the chip
    page.wait_for_timeout(1_500)
    assert page.locator(f"#sf-f-{box} img, #sf-f-{box} svg[onload]").count() == 0
    texts = page.locator("[data-testid='toast-body']").all_inner_texts()
    assert [t for t in texts if t.startswith("Error")] == []
    assert _Tracker.hits == []
    _no_side_effects(page, requests, app)
    page.close()

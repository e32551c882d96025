"""One source can never change another source's numbers, marks or drill-down (issue 20, 1-5).

An honest source (run `run-v`, cell `cellV`: CELL_A's hand counts, RAE +33.3 pp, one
verification record agreeing on all 20 rows, one annotator) is loaded alone, then after a
hostile source that controls every byte it publishes:

1. a verification record naming run-v's run and task ids, dated later, "verified by Hugging
   Face", with every verdict flipped (on main: ✓ 20/20 became ✗ 0/20);
2. a run with run-v's run_id and identity and 20 harmful flips, listed first (on main it
   replaced run-v: RAE +33.3 -> -100);
3. five more runs with cellV's cell columns (on main pooled into the victim's cell);
4. a row with cellV's cell_id and another model (on main the drill-down opened its rows);
5. annotations of run-v's tasks, and an annotation file with a bad extra column (on main
   shown in the victim's drill-down / removing every cell's annotations).

The honest cells' rendered table rows, API records, drill-down outputs and traces are then
compared with those of the honest source alone: they must be identical, character for
character. Pooling the sources is a view the visitor asks for, and then the mix and the
conflicting run are shown.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from hf_skillfollow.space_app import _table as T
from hf_skillfollow.space_app._board import cell_key, load_board
from hf_skillfollow.space_app._ui import _show_cell, _show_traces, render_view
from tests._board_fixtures import VICTIM
from tests._board_fixtures import write_annotations as _annotations
from tests._fixtures_hub import CELL_A, write_run_dir
from tests.test_verify_records_push import _record

RESAMPLES = 400
#: 20 retrieval-invoked harmful flips: SE wrong, SD right.
HARMFUL = {(False, True, True): 20}
SHOW_ALL = ["non-reportable cells"]


def _honest(root: Path) -> Path:
    run = write_run_dir(root, "run-v", CELL_A, **VICTIM)
    _record(run, flip_task=None)  # re-scored, every verdict agrees: ✓ 20/20
    _annotations(run, "honest-annotator@h1")
    return root


def _hostile(root: Path, victim_tasks: list[dict]) -> Path:
    # 2. the victim's run_id and identity, 20 harmful flips
    hijack = write_run_dir(root, "run-v", HARMFUL, **VICTIM)
    # 1. a record in this repo naming the victim's run and tasks, later, all verdicts flipped
    rows = [
        {
            "schema_version": 1, "verification_id": "29990101T000000-ffffffff",
            "verified_at": "2999-01-01T00:00:00+00:00", "verified_by": "Hugging Face (official)",
            "machine": "hf", "toolkit_version": "0.1.0", "scorer_version": "1",
            "benchmark": t["benchmark"], "benchmark_version": t["benchmark_version"],
            "benchmark_release": t["benchmark_version"], "run_id": "run-v", "cell_id": "cellV",
            "task_id": t["task_id"], "se_recorded": t["se_correct"],
            "se_rescored": not t["se_correct"], "sd_recorded": t["sd_correct"],
            "sd_rescored": not t["sd_correct"], "se_reason": "fake", "sd_reason": "fake",
        }
        for t in victim_tasks
    ]  # fmt: skip
    from hf_skillfollow.schema import verifications_from_rows
    from hf_skillfollow.verify._record import record_bytes

    folder = hijack / "verifications"
    folder.mkdir()
    (folder / "29990101T000000-ffffffff--run-v.parquet").write_bytes(
        record_bytes(verifications_from_rows(rows))
    )
    # 3. five runs with the victim's cell columns
    for i in range(5):
        write_run_dir(root, f"pool-{i}", HARMFUL, repeat_index=i + 1, seed=i + 1, **VICTIM)
    # 4. the victim's cell_id under another model
    write_run_dir(root, "collide", HARMFUL, **(VICTIM | {"model": "org/attacker"}))
    # 5. annotations of the victim's tasks, and a file with a bad extra column
    _annotations(hijack, "hostile@h")
    _annotations(root / "collide", "bad@h", bad_column=True)
    return root


@pytest.fixture(scope="module")
def boards(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("provenance")
    honest = str(_honest(tmp / "honest"))
    victim_tasks = pq.read_table(tmp / "honest" / "run-v" / "transitions.parquet").to_pylist()
    hostile = str(_hostile(tmp / "hostile", victim_tasks))
    kw = {"resamples": RESAMPLES, "discover": False, "use_cache": False}
    alone = load_board([honest], **kw)
    both = load_board([hostile, honest], **kw)  # the hostile source listed first
    return alone, both, honest, hostile


def _rows_of(table_html: str, key: str) -> list[str]:
    return re.findall(rf'<tr[^>]*data-sf-cell="{re.escape(key)}".*?</tr>', table_html)


def test_the_honest_cell_alone_has_the_hand_counted_numbers_and_marks(boards):
    alone, _, honest, _ = boards
    cell = alone.pooled.set_index("_key").loc[cell_key("cellV", honest)]
    assert (cell["n_pairs"], cell["n_cond"], cell["b_cond"], cell["c_cond"]) == (20, 12, 5, 1)
    assert cell["rae"] == pytest.approx(100 * 4 / 12)
    assert cell["rescored"] == "✓ 20/20"
    _, _, decomposition, _, _, _ = _show_cell(alone, cell_key("cellV", honest))
    assert "honest-annotator@h1" in decomposition


@pytest.mark.parametrize("runs", [False, True], ids=["cells", "runs separately"])
def test_a_hostile_source_beside_leaves_every_honest_cell_exactly_as_alone(boards, runs):
    alone, both, honest, _ = boards
    show = SHOW_ALL + (["runs separately"] if runs else [])
    state = T.ViewState(T.Filters(show_nonreportable=True), runs=runs)
    keys = alone.cells(runs)["_key"].tolist()
    assert keys and all(k.startswith("cellV@") for k in keys)
    view_alone, view_both = render_view(alone, state), render_view(both, state)
    for key in keys:
        assert _rows_of(view_both.table, key) == _rows_of(view_alone.table, key) != []
        assert _show_cell(both, key) == _show_cell(alone, key)
    records = {r["cell_id"] + r["source"]: r for r in T.records(alone.cells(runs), 10)}
    for r in T.records(both.cells(runs), 10):
        if r["source"] == honest:
            assert records[r["cell_id"] + r["source"]] == r
    assert show  # (the same view the page shows with these boxes ticked)
    from hf_skillfollow.space_app._drill import trace_key

    for task in ("Mbpp/2", "Mbpp/7"):
        key = trace_key(honest, "run-v", task)
        assert _show_traces(both, key) == _show_traces(alone, key)


def test_the_hostile_rows_stay_under_their_own_source_and_say_so(boards):
    _, both, honest, hostile = boards
    cells = both.pooled
    mine = cells[cells["source"] == hostile]
    assert set(mine["model"]) == {"org/victim", "org/attacker"}  # its own cells, apart
    assert set(mine["cell_id"]) == {"cellV"}
    victim_copy = mine[mine["model"] == "org/victim"].iloc[0]
    assert victim_copy["n_runs"] == 6 and victim_copy["rae"] == pytest.approx(-100.0)
    # cellV names two of its cells (org/victim, org/attacker): whose rows its record checked
    # cannot be told, so neither shows a mark
    assert set(mine["rescored"]) == {"not shown: cell_id names several cells"}
    assert any("run-v" in w and hostile in w and honest in w for w in both.warnings)
    header, *_ = _show_cell(both, cell_key("cellV", honest))
    assert "Hugging Face (official)" not in header and "alice@lab" in header
    assert f"published in <code>{honest}</code>" in header
    assert f"<b>Re-scored</b> by <code>{honest}</code>: <b>✓ 20/20</b>" in header


def test_pooling_the_sources_is_asked_for_and_shows_the_mix_and_the_conflict(boards):
    _, both, honest, hostile = boards
    across = both.cells(pool_sources=True)
    victim = across[across["model"] == "org/victim"].iloc[0]
    # run-v is published by both with other rows: left out, so only the hostile runs remain
    assert victim["source"] == hostile and victim["n_sources"] == 1
    assert victim["conflicts"] == f"run run-v left out: {hostile} and {honest} publish other rows"
    # pooled: the five extra hostile runs (100 harmful) and nothing of either run-v
    assert victim["n_runs"] == 5 and victim["rae"] == pytest.approx(-100.0)
    assert victim["_key"].startswith(cell_key("cellV", None) + "~")  # cellV names two cells
    state = T.ViewState(T.Filters(show_nonreportable=True), pool_sources=True)
    view = render_view(both, state)
    assert "pool_sources=1" in view.summary and "left out" in view.table
    assert "org/attacker" in view.table  # the cell_id collision stays two cells
    header, *_ = _show_cell(both, victim["_key"])
    assert "run run-v left out" in header
    alpha = across[across["model"] == "org/attacker"].iloc[0]
    assert alpha["rescored"] == "not shown: cell_id names several cells"


def test_a_bare_cell_id_shared_by_two_sources_opens_nothing(boards):
    _, both, _, _ = boards
    header, *_ = _show_cell(both, "cellV")
    assert "No cell with key" in header


MARKUP = "![pixel](http://127.0.0.1:9/p.png)`x` **official** <img src=x>"


def test_annotator_names_and_file_errors_are_markdown_text_not_markup(tmp_path):
    """Item 6: an annotator name and a bad file's error reach the drill-down's Markdown as
    text (rendered here with CommonMark; the page's renderer is checked in Chromium by
    test_board_browser)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    named = write_run_dir(tmp_path / "named", "run-n", CELL_A, **VICTIM)
    _annotations(named, MARKUP)
    bad_dir = tmp_path / MARKUP.replace("/", "_")  # a folder name is the submitter's too
    bad = write_run_dir(bad_dir, "run-b", CELL_A, **VICTIM)
    _annotations(bad, "b@h", bad_column=True)
    for source, want in ((named, "Annotator"), (bad_dir, "could not be read")):
        board = load_board([str(source)], resamples=RESAMPLES, discover=False, use_cache=False)
        _, _, decomposition, _, _, _ = _show_cell(board, cell_key("cellV", str(source)))
        html = md.render(decomposition)
        assert want in decomposition
        assert "<img" not in html and "<strong>official" not in html, html
        assert "![pixel]" in re.sub(r"<[^>]+>", "", html).replace("\\", "")  # shown as typed

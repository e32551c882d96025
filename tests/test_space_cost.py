"""The drill-down header's cost and judge figures, checked against values computed by hand
from fixture rows (a real board over real run folders, no browser: `_ui._show_cell` is what
the Space's `/cell` endpoint returns)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from hf_skillfollow.schema import transitions_from_rows
from hf_skillfollow.space_app._board import cell_key, load_board
from hf_skillfollow.space_app._ui import _show_cell
from tests._cost_fixtures import two_sources
from tests._rows import transition_row


def test_header_shows_cost_judge_noise_and_addressing_by_hand(tmp_path: Path) -> None:
    first, second = two_sources(tmp_path)
    board = load_board([first, second], resamples=100, discover=False)
    header = _show_cell(board, cell_key("cellK", first))[0]
    # tokens per task: SE (120 + 120) / 2 = 120, SD (60 + 60) / 2 = 60; seconds 2.5 and 0.75
    assert "tokens SE 120 · SD 60 · Δ +60" in header
    assert "seconds SE 2.50 · SD 0.75 · Δ +1.75" in header
    assert "(over 2 SE and 2 SD traces)" in header
    # 8 items with two valid repeats, 2 disagreeing: 25 %; b flip t1 has a fragile SE answer
    assert "self-disagreement 25.0 % of 8 repeated items · ties 1 · grading failures 0" in header
    assert "<b>b 1/1</b>, <b>c 0/1</b>" in header  # not every flip: no indistinguishable badge
    assert "not distinguishable" not in header
    assert "answers addressing a grader</b> SE 1 · SD 0" in header


def test_benchmark_cell_shows_cost_only_and_other_sources_stay_apart(tmp_path: Path) -> None:
    first, second = two_sources(tmp_path)
    board = load_board([first, second], resamples=100, discover=False)
    header = _show_cell(board, cell_key("cellZ", second))[0]
    assert "tokens SE 10,000 · SD 10,000 · Δ +0" in header
    assert "seconds SE 99.00 · SD 99.00 · Δ +0.00" in header
    assert "(over 3 SE and 3 SD traces)" in header
    assert "self-disagreement" not in header and "addressing a grader" not in header


def test_cell_without_traces_has_no_cost_line(tmp_path: Path) -> None:
    run_dir = tmp_path / "bare" / "r9"
    run_dir.mkdir(parents=True)
    rows = [transition_row(run_id="r9", cell_id="cellB", task_id="t")]
    pq.write_table(transitions_from_rows(rows), run_dir / "transitions.parquet")
    source = str(tmp_path / "bare")
    board = load_board([source], resamples=100, discover=False)
    header = _show_cell(board, cell_key("cellB", source))[0]
    assert "cellB" in header and "cost per task" not in header


def test_malformed_judge_records_leave_the_judge_figures_out_not_the_page(tmp_path: Path) -> None:
    from tests._cost_fixtures import trace, write_run

    rows = [trace("r5", "cellM", "t1", a, 10, 0, 1.0, "{not json", False) for a in ("se", "sd")]
    source = write_run(tmp_path / "bad", "r5", "cellM", "m", rows)
    board = load_board([source], resamples=100, discover=False)
    header = _show_cell(board, cell_key("cellM", source))[0]
    assert "tokens SE 10 · SD 10 · Δ +0" in header
    assert "judge figures left out: a judge_verdicts value is not a judge record" in header

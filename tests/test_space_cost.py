"""The drill-down header's cost and judge figures, checked against values computed by hand
from fixture rows (a real board over real run folders, no browser: `_ui._show_cell` is what
the Space's `/cell` endpoint returns)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from hf_skillfollow.schema import traces_from_rows, transitions_from_rows
from hf_skillfollow.space_app._board import cell_key, load_board
from hf_skillfollow.space_app._ui import _show_cell
from tests._rows import transition_row

# (task, se_correct, sd_correct): t1 a helpful flip (b), t2 a harmful one (c), t3 concordant.
TASKS = [("t1", True, False), ("t2", False, True), ("t3", True, True)]


def _record(majority, unanimous, *, ties=0, fragile=False) -> str:
    return json.dumps({"judge": "judge-double@h", "majority": majority, "unanimous": unanimous,
                       "n_valid": 2, "ties": ties, "fragile": fragile, "grading_failure": False})  # fmt: skip


def _trace(run: str, cell: str, task: str, arm: str, prompt: int, completion: int, seconds: float,
           verdicts: str | None = None, addresses: bool | None = None) -> dict:  # fmt: skip
    return {"schema_version": 1, "run_id": run, "cell_id": cell, "task_id": task, "arm": arm,
            "messages": [], "final_answer": "x", "extracted": "x", "correct": False,
            "scorer_details": "{}", "error": None, "n_calls": 0, "latency_s": seconds,
            "prompt_tokens": prompt, "completion_tokens": completion,
            "grader": "expectations" if verdicts else None, "judge": "judge-double@h" if verdicts else None,
            "judge_verdicts": verdicts, "addresses_grader": addresses}  # fmt: skip


def _write(root: Path, run: str, cell: str, model: str, traces: list[dict]) -> str:
    run_dir = root / run
    run_dir.mkdir(parents=True)
    rows = [transition_row(run_id=run, cell_id=cell, model=model, task_id=t, se_correct=se,
                           sd_correct=sd, invoked=True, returned=True, n_calls=1,
                           skills_returned=["s"]) for t, se, sd in TASKS]  # fmt: skip
    pq.write_table(transitions_from_rows(rows), run_dir / "transitions.parquet")
    pq.write_table(traces_from_rows(traces), run_dir / "traces.parquet")
    (run_dir / "manifest.json").write_text(json.dumps({"run_id": run}))
    return str(root)


def _sources(tmp: Path) -> tuple[str, str]:
    judged = [
        _trace(
            "r1",
            "cellK",
            "t1",
            "se",
            100,
            20,
            2.0,
            _record([True, True], [True, False], fragile=True),
            True,
        ),
        _trace(
            "r1",
            "cellK",
            "t1",
            "sd",
            50,
            10,
            1.0,
            _record([False, False], [True, True], ties=1),
            False,
        ),
        _trace(
            "r1", "cellK", "t2", "se", 80, 40, 3.0, _record([False, False], [True, True]), False
        ),
        _trace("r1", "cellK", "t2", "sd", 40, 20, 0.5, _record([True, True], [False, True]), False),
    ]  # t3 has no traces: the means are over the traced tasks
    first = _write(tmp / "first", "r1", "cellK", "m-first", judged)
    # Another source publishes the same run id with costly traces: they must not count.
    costly = [
        _trace("r1", "cellZ", t, a, 10_000, 0, 99.0) for t, _, _ in TASKS for a in ("se", "sd")
    ]
    second = _write(tmp / "second", "r1", "cellZ", "m-second", costly)
    return first, second


def test_header_shows_cost_judge_noise_and_addressing_by_hand(tmp_path: Path) -> None:
    first, second = _sources(tmp_path)
    board = load_board([first, second], resamples=100, discover=False)
    header = _show_cell(board, cell_key("cellK", first))[0]
    # tokens per task: SE (120 + 120) / 2 = 120, SD (60 + 60) / 2 = 60; seconds 2.5 and 0.75
    assert "tokens SE 120 · SD 60 · Δ +60" in header
    assert "seconds SE 2.50 · SD 0.75 · Δ +1.75" in header
    assert "(over 2 SE and 2 SD traces)" in header
    # 8 items with two valid repeats, 2 disagreeing: 25 %; b flip t1 has a fragile SE answer
    assert "self-disagreement 25.0 % of 8 repeated items · ties 1 · grading failures 0" in header
    assert "b 1/1, c 0/1" in header
    assert "answers addressing a grader</b> SE 1 · SD 0" in header


def test_benchmark_cell_shows_cost_only_and_other_sources_stay_apart(tmp_path: Path) -> None:
    first, second = _sources(tmp_path)
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

"""The Space's cell drill-down shows the annotation summary of the cell (no browser needed:
the drill-down's Markdown is built from a real board over a real annotated run directory)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from hf_skillfollow.cli import cli
from hf_skillfollow.space_app._board import load_board
from hf_skillfollow.space_app._drill import decomposition_markdown, find_cell
from tests._annotation_fixtures import ScriptedAnnotatorDouble, label_json, write_annotation_run

LABELS = {
    "Mbpp/2": "appropriate adherence",
    "Mbpp/3": "appropriate adherence",
    "Mbpp/4": "ignored/independent",
    "Mbpp/5": "misapplied/overapplied",
}  # Mbpp/6 (harmful) left unannotated: the gap must show


def test_drill_down_shows_labels_reconciliation_and_group_rae(tmp_path: Path) -> None:
    run_dir = write_annotation_run(tmp_path / "runs")
    script = {t: [label_json(lab)] for t, lab in LABELS.items()} | {"Mbpp/6": ["not json"]}
    with ScriptedAnnotatorDouble(script) as server:
        args = ["--backend", "openai", "--base-url", server.url, "--model", "annotator-double"]
        result = CliRunner().invoke(cli, ["annotate", str(run_dir), *args, "--max-attempts", "1"])
        assert result.exit_code == 0, result.output
    board = load_board([str(run_dir)], resamples=100, discover=False)
    cell, per_run = find_cell(board, "cellANN00000000")
    assert cell is not None and not per_run
    text = decomposition_markdown(cell)
    assert text.startswith("**Decomposition.**")
    assert "**Why did it help or hurt? (blinded LLM annotations)**" in text
    assert "| appropriate adherence | 2 | 0 |" in text and "| failed | 0 | 1 |" in text
    assert "labelled b 3/3, c 1/2 (gap: b_cond − labelled = 0, c_cond − labelled = 1)" in text
    assert "| problematic | 0 | 1 | 1 | -100.0 pp |" in text
    assert "never redefine RAE" in text


def test_drill_down_without_annotations_is_unchanged(tmp_path: Path) -> None:
    run_dir = write_annotation_run(tmp_path / "runs")
    board = load_board([str(run_dir)], resamples=100, discover=False)
    cell, _ = find_cell(board, "cellANN00000000")
    assert "Why did it help" not in decomposition_markdown(cell)

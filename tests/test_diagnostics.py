"""Annotation diagnostics, stage diagnostics and `report --annotations`, checked against
numbers computed by hand from the fixture's counts (tests/_annotation_fixtures.py).

Fixture S_call: helpful b = Mbpp/2, 3, 4; harmful c = Mbpp/5, 6; concordant a = Mbpp/7,
d = Mbpp/8 (n_cond = 7); skip: Mbpp/9 (b), Mbpp/10 (c); n = 9. The lexical adherence proxy
is true on Mbpp/2, 4, 6, 8 (every other S_call row).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from hf_skillfollow.cli import cli
from hf_skillfollow.metrics import compute_cells
from hf_skillfollow.metrics._diagnostics import annotation_summary, stage_diagnostics
from tests._annotation_fixtures import ScriptedAnnotatorDouble, label_json, write_annotation_run

LABELS_BY_TASK = {
    "Mbpp/2": "appropriate adherence",
    "Mbpp/3": "appropriate adherence",
    "Mbpp/4": "ignored/independent",
    "Mbpp/5": "misapplied/overapplied",
    "Mbpp/6": "format/interface failure",
    "Mbpp/7": "appropriate adherence",
    "Mbpp/8": "unclear",
}


def _annotation_rows(labels: dict[str, str | None], annotator: str = "m@h") -> list[dict]:
    return [
        {"run_id": "run-ann", "task_id": t, "annotator": annotator, "label": lab}
        for t, lab in labels.items()
    ]


@pytest.fixture()
def transitions(tmp_path: Path):
    return pq.read_table(write_annotation_run(tmp_path) / "transitions.parquet").to_pandas()


def _summary(transitions, labels: dict[str, str | None]) -> dict:
    import pandas as pd

    out = annotation_summary(transitions, pd.DataFrame(_annotation_rows(labels)), ["cell_id"])
    assert len(out) == 1
    return out.iloc[0].to_dict()


def test_flips_only_group_rae_by_hand(transitions) -> None:
    flips_only = {t: lab for t, lab in LABELS_BY_TASK.items() if t not in ("Mbpp/7", "Mbpp/8")}
    r = _summary(transitions, flips_only)
    assert (r["n_cond"], r["b_cond"], r["c_cond"]) == (7, 3, 2)
    assert r["helpful_appropriate_adherence"] == 2 and r["helpful_ignored_independent"] == 1
    assert r["harmful_misapplied_overapplied"] == 1 and r["harmful_format_interface_failure"] == 1
    assert (r["labelled_b"], r["labelled_c"], r["gap_b"], r["gap_c"], r["reconciled"]) == (
        3,
        2,
        0,
        0,
        True,
    )
    # appropriate: b 2, c 0, n 2 -> +100; problematic: b 0, c 2, n 2 -> -100;
    # no clear adherence: b 1, c 0, n 1 -> +100.
    assert (r["b_appropriate"], r["c_appropriate"], r["n_appropriate"], r["rae_appropriate"]) == (
        2,
        0,
        2,
        100.0,
    )
    assert (r["b_problematic"], r["c_problematic"], r["n_problematic"], r["rae_problematic"]) == (
        0,
        2,
        2,
        -100.0,
    )
    assert (r["b_no_clear_adherence"], r["n_no_clear_adherence"], r["rae_no_clear_adherence"]) == (
        1,
        1,
        100.0,
    )


def test_all_units_group_rae_by_hand(transitions) -> None:
    r = _summary(transitions, LABELS_BY_TASK)
    # appropriate gains Mbpp/7 (a): b 2, c 0, n 3 -> 200/3; no clear gains Mbpp/8 (d): 100/2.
    assert r["n_appropriate"] == 3 and r["rae_appropriate"] == pytest.approx(200 / 3)
    assert r["n_no_clear_adherence"] == 2 and r["rae_no_clear_adherence"] == pytest.approx(50.0)
    assert r["rae_problematic"] == -100.0


def test_failure_and_missing_flip_show_as_a_gap(transitions) -> None:
    labels = {
        "Mbpp/2": "appropriate adherence",
        "Mbpp/3": "appropriate adherence",
        "Mbpp/5": None,
        "Mbpp/6": "unclear",
    }
    r = _summary(transitions, labels)
    assert (r["labelled_b"], r["gap_b"], r["helpful_failed"], r["helpful_missing"]) == (2, 1, 0, 1)
    assert (r["labelled_c"], r["gap_c"], r["harmful_failed"], r["harmful_missing"]) == (1, 1, 1, 0)
    assert r["reconciled"] is False or r["reconciled"] == 0
    assert math.isnan(r["rae_problematic"]) and r["n_problematic"] == 0  # nothing labelled there
    assert r["rae_no_clear_adherence"] == -100.0  # Mbpp/6: c 1, n 1


def test_skip_tasks_never_count_even_when_annotated(transitions) -> None:
    r = _summary(transitions, {"Mbpp/9": "appropriate adherence", "Mbpp/2": "unclear"})
    assert r["labelled_b"] == 1 and r["n_appropriate"] == 0


def test_stage_diagnostics_by_hand(transitions) -> None:
    cells = compute_cells(transitions, resamples=200)
    s = stage_diagnostics(cells).iloc[0]
    assert s["invocation_pct"] == pytest.approx(700 / 9)  # 7 of 9 invoked
    assert s["retrieval_pct"] == pytest.approx(700 / 9)
    assert s["adherence_proxy_pct"] == pytest.approx(400 / 7)  # Mbpp/2, 4, 6, 8 of n_cond 7
    assert s["effective_pct"] == pytest.approx(200 / 7)  # adherent and SE-correct: Mbpp/2, 4
    assert s["rae"] == pytest.approx(100 / 7)  # (3 - 2) / 7


def test_report_annotations_json_and_markdown_from_the_cli(tmp_path: Path) -> None:
    run_dir = write_annotation_run(tmp_path)
    script = {t: [label_json(lab)] for t, lab in LABELS_BY_TASK.items()}
    with ScriptedAnnotatorDouble(script) as server:
        args = ["--backend", "openai", "--base-url", server.url, "--model", "annotator-double"]
        result = CliRunner().invoke(cli, ["annotate", str(run_dir), *args])
        assert result.exit_code == 0, result.output
    out = CliRunner().invoke(
        cli, ["report", str(run_dir), "--annotations", "--format", "json", "--resamples", "200"]
    )
    assert out.exit_code == 0, out.output
    (cell,) = json.loads(out.output)
    assert cell["stages"]["effective_pct"] == pytest.approx(200 / 7)
    (ann,) = cell["annotations"]
    assert ann["annotator"].startswith("annotator-double@")
    assert (ann["b_problematic"], ann["c_problematic"], ann["rae_problematic"]) == (0, 2, -100.0)
    assert ann["reconciled"] is True
    assert "never redefine RAE" in cell["annotations_note"]
    md = CliRunner().invoke(
        cli, ["report", str(run_dir), "--annotations", "--format", "markdown", "--resamples", "200"]
    )
    assert md.exit_code == 0, md.output
    assert "**RAE per label group (describes, never redefines RAE)**" in md.output
    assert "| problematic | 0 | 2 | 2 | -100.0 |" in md.output
    assert "| 3 / 3 | 2 / 2 | yes |" in md.output
    csv = CliRunner().invoke(
        cli, ["report", str(run_dir), "--annotations", "--format", "csv", "--resamples", "200"]
    )
    assert csv.exit_code == 0 and "rae_problematic" in csv.output.splitlines()[0]
    table = CliRunner().invoke(cli, ["report", str(run_dir), "--annotations", "--resamples", "200"])
    assert "Stage diagnostics per cell" in table.output and "never redefine RAE" in table.output

"""Human audit: agreement figures (Krippendorff's α checked on a published example) and the
audit-sheet / agreement commands on real files."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from hf_skillfollow.annotate._agreement import agreement, strict_majority
from hf_skillfollow.annotate._audit import stratified_sample
from hf_skillfollow.annotate._labels import LABELS
from hf_skillfollow.cli import cli
from tests._annotation_fixtures import ScriptedAnnotatorDouble, label_json, write_annotation_run

# Krippendorff, "Computing Krippendorff's Alpha-Reliability" (2011), the example of 4 observers,
# 12 units, values 1-5 and missing data: nominal α = 0.743 (the value the `krippendorff`
# package's own documentation reproduces from page 8 of that paper). None = missing.
PUBLISHED = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]
PUBLISHED_NOMINAL_ALPHA = 0.743


def _as_labels(matrix: list[list[int | None]]) -> dict[str, dict[str, str]]:
    """Observer x unit values 1-5 as the five labels (nominal α ignores what the codes mean)."""
    human: dict[str, dict[str, str]] = {}
    for i, row in enumerate(matrix):
        for j, value in enumerate(row):
            if value is not None:
                human.setdefault(f"u{j}", {})[f"h{i}"] = LABELS[value - 1]
    return human


def test_five_way_alpha_reproduces_the_published_example() -> None:
    human = _as_labels(PUBLISHED)
    result = agreement(human, {})
    assert round(result.alpha_five, 3) == PUBLISHED_NOMINAL_ALPHA
    assert result.n_units == 12 and result.n_humans == 4


def test_majorities_binary_and_rates_by_hand() -> None:
    a, i, m, f, u = LABELS  # appropriate, ignored, misapplied, format failure, unclear
    human = {
        "x1": {"h1": a, "h2": a, "h3": m},  # majority a; binary: all engaged
        "x2": {"h1": i, "h2": u, "h3": f},  # no majority; binary: all not engaged -> False
        "x3": {"h1": a, "h2": i},  # no strict majority (1 of 2); binary split
        "x4": {"h1": m, "h2": m, "h3": m},  # majority m
    }
    llm = {"x1": a, "x2": u, "x3": a, "x4": a}
    r = agreement(human, llm)
    assert (r.n_majority, r.n_no_majority) == (2, 2)
    assert r.majority_vs_llm == 50.0  # x1 agrees, x4 does not
    # Binary majorities: x1 engaged (LLM engaged), x2 not engaged (LLM unclear: not engaged),
    # x3 no majority, x4 engaged (LLM appropriate: engaged) -> 3 of 3 agree.
    assert (r.n_binary_majority, r.n_binary_no_majority, r.binary_majority_vs_llm) == (3, 1, 100.0)
    # Human pairs on engaged: x1 3/3, x2 3/3, x3 0/1, x4 3/3 -> 9 of 10.
    assert r.binary_human_pairs == 90.0
    assert r.appropriate_rate_human == pytest.approx(100 * 3 / 11)  # 3 of 11 human labels
    assert r.appropriate_rate_llm == 75.0


def test_strict_majority_needs_more_than_half() -> None:
    assert strict_majority(["a", "a", "b"]) == "a"
    assert strict_majority(["a", "b"]) is None
    assert strict_majority([]) is None


def test_alpha_is_undefined_with_one_human() -> None:
    assert math.isnan(agreement({"x": {"h1": LABELS[0]}}, {}).alpha_five)


def test_stratified_sample_covers_every_stratum_and_is_seeded() -> None:
    rows = [
        {"run_id": "r", "task_id": f"t{k}", "label": lab, "flip": flip}
        for k, (lab, flip) in enumerate(
            [(LABELS[0], "helpful")] * 10
            + [(LABELS[2], "harmful")] * 2
            + [(LABELS[4], "helpful")] * 1
        )
    ]
    sample = stratified_sample(rows, 6, seed=3)
    strata = [(r["label"], r["flip"]) for r in sample]
    assert len(sample) == 6
    assert strata.count((LABELS[2], "harmful")) == 2 and strata.count((LABELS[4], "helpful")) == 1
    assert sample == stratified_sample(rows, 6, seed=3)
    assert [r["task_id"] for r in sample] != [
        r["task_id"] for r in stratified_sample(rows, 6, seed=4)
    ]


def _fill(sheet: Path, labels: dict[str, str]) -> None:
    lines = sheet.read_text().splitlines(keepends=True)
    header, body = lines[0], list(csv.DictReader(lines[1:]))
    for row in body:
        row["label"] = labels[row["unit_id"].split("|")[1]]
        row["confidence"] = "high"
    with sheet.open("w", newline="") as fh:
        fh.write(header)
        writer = csv.DictWriter(fh, fieldnames=list(body[0]))
        writer.writeheader()
        writer.writerows(body)


def test_audit_sheet_then_agreement_from_the_cli(tmp_path: Path) -> None:
    run_dir = write_annotation_run(tmp_path / "runs")
    llm = {
        "Mbpp/2": LABELS[0],
        "Mbpp/3": LABELS[0],
        "Mbpp/4": LABELS[1],
        "Mbpp/5": LABELS[2],
        "Mbpp/6": LABELS[3],
    }
    with ScriptedAnnotatorDouble({t: [label_json(lab)] for t, lab in llm.items()}) as server:
        args = ["--backend", "openai", "--base-url", server.url, "--model", "annotator-double"]
        assert CliRunner().invoke(cli, ["annotate", str(run_dir), *args]).exit_code == 0
    out = tmp_path / "audit"
    result = CliRunner().invoke(
        cli, ["annotate", "audit-sheet", str(run_dir), "-n", "5", "--humans", "2", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    sheets = [out / "audit-1.csv", out / "audit-2.csv"]
    for sheet in sheets:
        text = sheet.read_text()
        assert text.startswith("# Audit sheet for hf-skillfollow annotations.")
        assert "SD-SECRET" not in text and "misapplied/overapplied" in text.splitlines()[0]
        rows = list(csv.DictReader(text.splitlines()[1:]))
        assert len(rows) == 5 and all(r["label"] == "" and r["confidence"] == "" for r in rows)
        assert all(
            llm[r["unit_id"].split("|")[1]] not in (r["se_answer"], r["tool_results"]) for r in rows
        )
    key = list(csv.DictReader((out / "audit-key.csv").read_text().splitlines()))
    assert {r["task_id"]: r["llm_label"] for r in key} == llm
    _fill(sheets[0], llm)  # human 1 agrees with the LLM everywhere
    _fill(sheets[1], llm | {"Mbpp/4": LABELS[4]})  # human 2 differs on one unit
    res = CliRunner().invoke(cli, ["annotate", "agreement", *map(str, sheets), "--format", "json"])
    assert res.exit_code == 0, res.output
    figures = json.loads(res.output)
    assert figures["n_units"] == 5 and figures["n_humans"] == 2
    assert (figures["n_majority"], figures["n_no_majority"], figures["majority_vs_llm"]) == (
        4,
        1,
        100.0,
    )
    # ignored vs unclear are both "not engaged": humans agree on all 5 binary pairs.
    assert figures["binary_human_pairs"] == 100.0 and figures["n_binary_majority"] == 5
    text = CliRunner().invoke(cli, ["annotate", "agreement", *map(str, sheets)]).output
    assert "Krippendorff's α (nominal, five labels, humans)" in text


def test_unknown_label_in_a_sheet_names_file_row_and_unit(tmp_path: Path) -> None:
    (tmp_path / "audit-key.csv").write_text(
        "unit_id,run_id,task_id,repeat_index,flip,annotator,llm_label\nr|t,r,t,0,helpful,m@h,unclear\n"
    )
    sheet = tmp_path / "audit-1.csv"
    sheet.write_text("# header\nunit_id,label,confidence\nr|t,Helpful,high\n")
    res = CliRunner().invoke(cli, ["annotate", "agreement", str(sheet)])
    assert res.exit_code != 0
    assert "audit-1.csv: row 2 (unit r|t): label 'Helpful' is not one of" in res.output

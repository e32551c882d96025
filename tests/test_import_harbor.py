"""`hf-skillfollow import harbor` on hand-labelled Claude Code and Terminus trial folders.

Every expected count below was written by hand from the scenario docstrings in
tests/_trial_fixtures.py, not produced by the code under test.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from click.testing import CliRunner  # noqa: E402

from hf_skillfollow.cli import cli  # noqa: E402
from hf_skillfollow.importers import ImportInputError, ImportOptions, import_runs  # noqa: E402
from tests._trial_fixtures import (  # noqa: E402
    build_claude_code,
    build_terminus,
    write_pool,
    write_tasks,
)


@pytest.fixture
def cc(tmp_path: Path) -> dict[str, Path]:
    se, sd = build_claude_code(tmp_path / "cc")
    return {"se": se, "sd": sd, "pool": write_pool(tmp_path / "pool"),
            "tasks": write_tasks(tmp_path / "tasks", {"task-a": ["pdf-tools"], "task-b": ["pdf-tools"]}),
            "out": tmp_path / "runs"}  # fmt: skip


def _rows(run_dir: Path) -> dict[str, dict]:
    table = pq.read_table(run_dir / "transitions.parquet")
    return {r["task_id"]: r for r in table.to_pylist()}


def test_claude_code_rows_match_the_hand_labels(cc: dict[str, Path]) -> None:
    result = import_runs("harbor", [cc["se"]], [cc["sd"]],
                         ImportOptions(skills=cc["pool"], tasks=cc["tasks"]), output_dir=cc["out"])  # fmt: skip
    assert result.n_pairs == 9
    assert result.dropped == {"task-g": ("se", 1)}
    assert result.n_checksum_differs == 1
    assert len(result.violations) == 1 and result.violations[0].startswith("task-i")
    assert len(result.run_dirs) == 1
    rows = _rows(result.run_dirs[0])
    outcome = {t: (r["se_correct"], r["sd_correct"]) for t, r in rows.items()}
    assert outcome == {
        "task-a": (True, False), "task-b": (False, True), "task-c": (True, True),
        "task-d": (True, False), "task-e": (True, False), "task-f": (False, True),
        "task-g": (True, True), "task-h": (False, False), "task-i": (True, True),
    }  # fmt: skip
    assert {t for t, r in rows.items() if r["returned"]} == {"task-a", "task-b", "task-d", "task-i"}
    assert {t for t, r in rows.items() if r["invoked"]} == {
        "task-a",
        "task-b",
        "task-c",
        "task-d",
        "task-i",
    }
    assert rows["task-a"]["skills_returned"] == ["pdf-tools"]
    assert rows["task-d"]["skills_returned"] == ["csv-clean"]
    assert rows["task-c"]["skills_returned"] == []  # "Unknown skill": invoked, not returned
    assert (rows["task-a"]["trigger_kind"], rows["task-b"]["trigger_kind"],
            rows["task-d"]["trigger_kind"]) == ("instructions", "instructions", "resource")  # fmt: skip
    assert rows["task-e"]["detector"] == "none"
    assert {r["detector"] for t, r in rows.items() if t != "task-e"} == {"claude-code"}
    assert rows["task-f"]["se_error"].startswith("AgentTimeoutError")
    assert rows["task-i"]["arm_integrity"].startswith("violation")
    assert {r["arm_integrity"] for t, r in rows.items() if t != "task-i"} == {"ok"}
    assert rows["task-a"]["intended_skills"] == ["pdf-tools"]
    assert rows["task-c"]["intended_skills"] is None
    first = rows["task-a"]
    assert (first["provenance"], first["harness"], first["agent"], first["access"]) == (
        "imported:harbor",
        "harbor",
        "claude-code@2.0.1",
        "on-demand",
    )
    assert first["model"] == "anthropic/claude-opus-4-5"


def test_arm_comes_from_the_flags_not_the_job_names(cc: dict[str, Path]) -> None:
    # swapping the flags swaps the arms: the folder names ("no-skills", "with-skills") are ignored
    result = import_runs("harbor", [cc["sd"]], [cc["se"]], ImportOptions(skills=cc["pool"]),
                         output_dir=cc["out"])  # fmt: skip
    rows = _rows(result.run_dirs[0])
    assert (rows["task-a"]["se_correct"], rows["task-a"]["sd_correct"]) == (False, True)
    assert result.dropped == {"task-g": ("sd", 1)}


def test_reimport_adds_no_rows_and_resumes(cc: dict[str, Path]) -> None:
    opts = ImportOptions(skills=cc["pool"])
    first = import_runs("harbor", [cc["se"]], [cc["sd"]], opts, output_dir=cc["out"])
    records = first.run_dirs[0] / "records.jsonl"
    lines = records.read_bytes().splitlines(keepends=True)
    # an interrupted import: three records and a torn fourth line
    records.write_bytes(b"".join(lines[:3]) + lines[3][:20])
    again = import_runs("harbor", [cc["se"]], [cc["sd"]], opts, output_dir=cc["out"])
    assert again.run_dirs == first.run_dirs
    assert (again.n_already, again.n_written) == (3, 6)
    # recorded pairs are not read again: a transcript spoiled since then changes nothing
    (cc["se"] / "a__1" / "agent" / "claude-code.txt").write_text("[" * 5000 + "]" * 5000)
    third = import_runs("harbor", [cc["se"]], [cc["sd"]], opts, output_dir=cc["out"])
    assert (third.n_already, third.n_written) == (9, 0)
    assert len(third.violations) == 1 and third.violations[0].startswith("task-i")
    assert len(records.read_text().splitlines()) == 9
    assert pq.read_table(first.run_dirs[0] / "transitions.parquet").num_rows == 9


def test_two_versions_of_a_task_in_one_arm_is_one_error(cc: dict[str, Path]) -> None:
    result = json.loads((cc["se"] / "g__3" / "result.json").read_text())
    result["task_checksum"] = "another-version"
    (cc["se"] / "g__3" / "result.json").write_text(json.dumps(result))
    with pytest.raises(ImportInputError, match=r"task 'task-g' has 2 versions .*--with-skills"):
        import_runs("harbor", [cc["se"]], [cc["sd"]], output_dir=cc["out"])


def test_terminus_repeats_and_noise_floor(tmp_path: Path) -> None:
    se, sd = build_terminus(tmp_path / "tm")
    result = import_runs("harbor", [se], [sd], ImportOptions(skills=write_pool(tmp_path / "pool")),
                         output_dir=tmp_path / "runs")  # fmt: skip
    assert len(result.run_dirs) == 2 and result.n_pairs == 4 and not result.dropped
    r0, r1 = (_rows(d) for d in sorted(result.run_dirs))
    assert set(r0) == {"task-x", "task-y", "task-z"} and set(r1) == {"task-x"}
    assert (r0["task-x"]["se_correct"], r1["task-x"]["se_correct"]) == (
        True,
        False,
    )  # by start time
    assert {t for t, r in r0.items() if r["returned"]} == {"task-x", "task-z"}
    assert r0["task-y"]["invoked"] is False  # `ls` of the skills folder is no activation
    assert r0["task-x"]["detector"] == "atif" and r1["task-x"]["repeat_index"] == 1
    assert r0["task-x"]["agent"] == "terminus-2@2.0.0"
    out = CliRunner().invoke(cli, ["report", str(tmp_path / "runs"), "--resamples", "200",
                                   "--format", "json"])  # fmt: skip
    assert out.exit_code == 0, out.output
    (cell,) = json.loads(out.output)
    assert (cell["n_pairs"], cell["n_cond"], cell["b_cond"], cell["c_cond"]) == (4, 3, 1, 0)
    assert cell["oae"] == pytest.approx(25.0) and cell["rae"] == pytest.approx(100 / 3)
    imported = cell["imported"]
    assert (imported["aa_flip_rate_se"], imported["aa_flip_rate_sd"]) == (100.0, 0.0)
    assert imported["aa_explainable_flips"] == 1
    assert imported["detectors"] == {"atif": 4}


def test_report_of_claude_code_import(cc: dict[str, Path]) -> None:
    runner = CliRunner()
    done = runner.invoke(cli, ["import", "harbor", "--with-skills", str(cc["se"]), "--without-skills",
                               str(cc["sd"]), "--skills", str(cc["pool"]), "--tasks", str(cc["tasks"]),
                               "-o", str(cc["out"])])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "9 pair(s) in 1 run folder(s)" in done.output
    assert (
        "1 unpaired trial(s) dropped" in done.output
        and "1 arm-integrity violation(s)" in done.output
    )
    base = ["report", str(cc["out"]), "--resamples", "200", "--format", "json"]
    (cell,) = json.loads(runner.invoke(cli, base).output)
    # task-i (violation) left out: 8 pairs; b_all a,d,e = 3, c_all b,f = 2
    assert (cell["n_pairs"], cell["b_all"], cell["c_all"]) == (8, 3, 2)
    assert cell["oae"] == pytest.approx(12.5)
    assert cell["rae"] is None and cell["rae_reason"].startswith("activation unknown: 1 of 8")
    imp = cell["imported"]
    assert (imp["n_arm_violations"], imp["n_no_transcript"], imp["n_known"]) == (1, 1, 7)
    assert (imp["n_cond_known"], imp["b_cond_known"], imp["c_cond_known"]) == (3, 2, 1)
    assert imp["coverage_instructions"] == pytest.approx(200 / 7)
    assert imp["coverage_resource"] == pytest.approx(100 / 7)
    assert (imp["precision_hits"], imp["precision_activations"]) == (1, 2)
    assert imp["detectors"] == {"claude-code": 7, "none": 1}
    assert {s["skill"]: (s["n"], s["b"], s["c"]) for s in imp["skills"]} == {
        "csv-clean": (2, 1, 1),
        "pdf-tools": (1, 1, 0),
    }
    # the text's arm-integrity line as data: every without-skills trial has a transcript
    # (9 checked), task-i's violates and is left out
    assert (cell["n_arm_checked"], cell["n_arm_violations"], cell["n_arm_left_out"]) == (9, 1, 1)
    (both,) = json.loads(runner.invoke(cli, [*base, "--include-arm-violations"]).output)
    assert (both["n_pairs"], both["a_all"]) == (9, 3)
    assert (both["n_arm_checked"], both["n_arm_violations"], both["n_arm_left_out"]) == (9, 1, 0)
    csv_out = runner.invoke(cli, [*base[:-1], "csv", "--repeats"])
    assert csv_out.exit_code == 0, csv_out.output
    (row,) = csv.DictReader(io.StringIO(csv_out.output))
    assert (row["n_arm_checked"], row["n_arm_violations"], row["n_arm_left_out"]) == ("9", "1", "1")
    assert row["n_pairs"] == "8" and "oae_run_mean" in row
    (instr,) = json.loads(runner.invoke(cli, [*base, "--trigger", "instructions"]).output)
    assert (
        instr["imported"]["n_cond_known"],
        instr["imported"]["b_cond_known"],
        instr["imported"]["c_cond_known"],
    ) == (2, 1, 1)  # task-d (resource only) leaves S_call
    md = runner.invoke(
        cli, ["report", str(cc["out"]), "--resamples", "200", "--format", "markdown"]
    )
    assert md.exit_code == 0
    assert "**Imported cells**" in md.output and "n/a (activation unknown" in md.output
    assert "**Per skill (imported cells)**" in md.output
    assert "1 pair(s) with an arm-integrity violation" in md.output and "left out" in md.output


def test_imported_and_run_cells_never_pool(cc: dict[str, Path]) -> None:
    from hf_skillfollow.columns import CELL_COLUMNS

    assert {"provenance", "harness", "agent"} <= set(CELL_COLUMNS)
    result = import_runs("harbor", [cc["se"]], [cc["sd"]], output_dir=cc["out"])
    manifest = json.loads((result.run_dirs[0] / "manifest.json").read_text())
    assert manifest["provenance"] == "imported:harbor"
    # without --skills the skills offered are the names the transcripts list
    assert manifest["skill_pool"] == "listed" and manifest["skill_pool_hash"].startswith("names-")


def test_push_and_verify_see_imported_runs(cc: dict[str, Path], tmp_path: Path) -> None:
    result = import_runs("harbor", [cc["se"]], [cc["sd"]], ImportOptions(skills=cc["pool"]),
                         output_dir=cc["out"])  # fmt: skip
    runner = CliRunner()
    pushed = runner.invoke(cli, ["push", *map(str, result.run_dirs), "--repo", "org/imported",
                                 "--dry-run", str(tmp_path / "repo")])  # fmt: skip
    assert pushed.exit_code == 0, pushed.output
    (cell,) = json.loads(runner.invoke(cli, ["report", str(tmp_path / "repo"), "--resamples", "100",
                                             "--format", "json"]).output)  # fmt: skip
    assert (cell["provenance"], cell["n_pairs"], cell["imported"]["n_arm_violations"]) == (
        "imported:harbor",
        8,
        1,
    )
    checked = runner.invoke(cli, ["verify", str(result.run_dirs[0]), "--no-record"])
    assert checked.exit_code == 2
    assert "9 row(s) are imported:harbor" in checked.output and "cannot re-score" in checked.output


def test_noise_floor_and_precision_by_hand() -> None:
    from hf_skillfollow.metrics import imported_summary

    def row(task: str, se: bool, sd: bool, skills: list[str], intended: list[str] | None = None):
        return {"provenance": "imported:harbor", "cell_id": "c", "task_id": task, "agent": "a",
                "model": "m", "se_correct": se, "sd_correct": sd, "returned": bool(skills),
                "skills_returned": skills, "detector": "claude-code",
                "trigger_kind": "instructions" if skills else None, "intended_skills": intended}  # fmt: skip

    rows = [
        # t1: SE 1, 0, 1 over three repeats (2 of its 3 trial pairs disagree), SD 0, 0, 0
        row("t1", True, False, ["x"], ["x"]), row("t1", False, False, ["x"], ["x"]),
        row("t1", True, False, ["y"], ["x"]),
        # t2: one trial per arm: no A/A information
        row("t2", False, True, ["x", "y"], ["y"]),
        # a chat-loop row is no imported cell
        {**row("t3", True, True, []), "provenance": "run", "cell_id": "other"},
    ]  # fmt: skip
    (s,) = imported_summary(rows, {"c": 2})
    assert (s["n_pairs"], s["n_arm_violations"]) == (4, 2)
    assert s["aa_tasks_se"] == 1 and s["aa_flip_rate_se"] == pytest.approx(200 / 3)
    assert (s["aa_tasks_sd"], s["aa_flip_rate_sd"]) == (1, 0.0)
    # b flips in S_call on t1 (unstable in SE): two; the c flip on t2 is on a task seen once
    assert s["aa_explainable_flips"] == 2
    # activations of an intended skill: x, x, (y no), (x no), y -> 3 of 5
    assert (s["precision_hits"], s["precision_activations"]) == (3, 5)
    assert s["rae_known"] == pytest.approx(100 * (2 - 1) / 4)

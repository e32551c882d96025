"""The importer's `provenance` argument (`run --harness harbor` passes `run:harbor`) and the
`inject` loading mode (every with-skills trial received the skills: S_call is every task).

Fixtures: the hand-labelled Claude Code scenario of tests/_trial_fixtures.py
(`build_claude_code`); every expected count below is worked out by hand from its docstring.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pandas")
pq = pytest.importorskip("pyarrow.parquet")

from click.testing import CliRunner  # noqa: E402

from hf_skillfollow.cli import cli  # noqa: E402
from hf_skillfollow.importers import ImportInputError, ImportOptions, import_runs  # noqa: E402
from hf_skillfollow.space_app._labels import protocol  # noqa: E402
from tests._trial_fixtures import POOL, build_claude_code, write_pool  # noqa: E402


@pytest.fixture
def cc(tmp_path: Path) -> dict[str, Path]:
    se, sd = build_claude_code(tmp_path / "cc")
    return {"se": se, "sd": sd, "pool": write_pool(tmp_path / "pool"), "out": tmp_path / "runs"}


def _rows(run_dir: Path) -> dict[str, dict]:
    return {r["task_id"]: r for r in pq.read_table(run_dir / "transitions.parquet").to_pylist()}


def _report(out: Path, fmt: str) -> str:
    done = CliRunner().invoke(cli, ["report", str(out), "--resamples", "200", "--format", fmt])
    assert done.exit_code == 0, done.output
    return done.output


def test_harness_runs_are_not_labelled_imported(cc: dict[str, Path]) -> None:
    opts = ImportOptions(skills=cc["pool"])
    ran = import_runs("harbor", [cc["se"]], [cc["sd"]], opts, output_dir=cc["out"] / "ran",
                      provenance="run:harbor")  # fmt: skip
    imported = import_runs("harbor", [cc["se"]], [cc["sd"]], opts, output_dir=cc["out"] / "imp")
    (ran_dir,), (imp_dir,) = ran.run_dirs, imported.run_dirs
    assert ran_dir.name.startswith("run-harbor-") and imp_dir.name.startswith("imported-")
    ran_rows, imp_rows = _rows(ran_dir), _rows(imp_dir)
    assert {r["provenance"] for r in ran_rows.values()} == {"run:harbor"}
    assert {r["provenance"] for r in imp_rows.values()} == {"imported:harbor"}
    # the provenance is a cell column: the same trials as an import are another cell
    assert ran_rows["task-a"]["cell_id"] != imp_rows["task-a"]["cell_id"]
    # the board's protocol label (space_app._labels.protocol, applied per row by add_labels)
    assert protocol(ran_rows["task-a"]) == (
        "on-demand loading, run through harbor, agent claude-code@2.0.1"
    )
    assert protocol(imp_rows["task-a"]) == (
        "on-demand loading, imported from harbor, agent claude-code@2.0.1"
    )
    # the report names the section by what the cells are; activation columns as for an import
    md = _report(cc["out"] / "ran", "markdown")
    assert "**Harness-run cells**" in md and "**Imported cells**" not in md
    assert "run:harbor" in md
    both = _report(cc["out"], "markdown")
    assert "**Imported and harness-run cells**" in both
    (cell,) = json.loads(_report(cc["out"] / "ran", "json"))
    # as test_import_harbor's hand labels: task-i (violation) left out, 8 pairs, 7 with a
    # transcript, S_call a, b, d with flips b, c, b
    assert cell["provenance"] == "run:harbor"
    assert (cell["imported"]["n_known"], cell["imported"]["n_cond_known"]) == (7, 3)
    assert (cell["imported"]["b_cond_known"], cell["imported"]["c_cond_known"]) == (2, 1)


def test_bad_provenance_is_one_error(cc: dict[str, Path]) -> None:
    for bad in ("run", "imported:", "hand:made", "run:Harbor;rm"):
        with pytest.raises(ImportInputError, match="provenance"):
            import_runs("harbor", [cc["se"]], [cc["sd"]], output_dir=cc["out"], provenance=bad)
    assert not cc["out"].exists()


def test_inject_puts_every_task_in_s_call(cc: dict[str, Path]) -> None:
    result = import_runs("harbor", [cc["se"]], [cc["sd"]],
                         ImportOptions(skills=cc["pool"], loading="inject"), output_dir=cc["out"])  # fmt: skip
    rows = _rows(result.run_dirs[0])
    assert len(rows) == 9
    for task, row in rows.items():
        # the transcript's own events no longer decide: task-c's "Unknown skill", task-e with
        # no transcript and task-h with no call all received the bodies in the instruction
        assert (row["returned"], row["invoked"], row["detector"], row["trigger_kind"]) == (
            True, True, "inject", "instructions"), task  # fmt: skip
        assert sorted(row["skills_returned"]) == sorted(POOL), task
        assert row["access"] == "inject"
    # the arm-integrity check still reads the without-skills transcript
    assert rows["task-i"]["arm_integrity"].startswith("violation")
    assert {r["arm_integrity"] for t, r in rows.items() if t != "task-i"} == {"ok"}
    (cell,) = json.loads(_report(cc["out"], "json"))
    # task-i left out: 8 pairs, b = a, d, e (3), c = b, f (2): OAE = 1/8; S_call = all 8 pairs
    assert (cell["n_pairs"], cell["b_all"], cell["c_all"]) == (8, 3, 2)
    assert cell["oae"] == pytest.approx(12.5)
    assert cell["rae"] == pytest.approx(12.5)  # RAE = OAE: every pair is in S_call
    imp = cell["imported"]
    assert (imp["n_no_transcript"], imp["n_cond_known"], imp["detectors"]) == (0, 8, {"inject": 8})
    assert imp["coverage_instructions"] == pytest.approx(100.0)
    md = _report(cc["out"], "markdown")
    assert "(inject loading): the skill bodies were in the instruction" in md
    assert "every task is in S_call and RAE = OAE" in md


def test_on_demand_report_says_nothing_of_inject(cc: dict[str, Path]) -> None:
    import_runs("harbor", [cc["se"]], [cc["sd"]], ImportOptions(skills=cc["pool"]),
                output_dir=cc["out"])  # fmt: skip
    assert "RAE = OAE" not in _report(cc["out"], "markdown")


def test_run_harness_report_applies_the_transcript_rules(
    cc: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report `run --harness harbor` prints (cli._run._print_report) shows the same
    section and leaves out the violating pair, as `report` does."""
    from hf_skillfollow.cli._run import _print_report

    monkeypatch.setenv("COLUMNS", "250")
    ran = import_runs("harbor", [cc["se"]], [cc["sd"]], ImportOptions(skills=cc["pool"]),
                      output_dir=cc["out"], provenance="run:harbor")  # fmt: skip
    _print_report(ran.run_dirs, 200, transcripts=True)
    out = capsys.readouterr().out
    assert "Harness-run cells" in out and "claude-code 88%, none 12%" in out  # 7 and 1 of 8
    assert "(2/1 of 3)" in out  # S_call b/c over the pairs with a transcript
    # coverage is undefined for the cell (task-e has no transcript), as `report` says; without
    # the rules the row would read 9 pairs and coverage 44.4% (4 of 9)
    assert "n/a (activation unknown)" in out and "│ 8 │" in out and "44.4%" not in out

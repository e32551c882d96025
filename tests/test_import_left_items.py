"""Import's left items (brief H4): skill-creator runs without timing.json, trials counted in
two cells of one output folder, a cancelled Harbor trial that was rerun.

Real trial folders in the shapes the harnesses write (tests/_trial_fixtures.py); every
expected pairing is written by hand from the folders built here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pyarrow.parquet")

from hf_skillfollow.importers import import_runs  # noqa: E402
from tests._trial_fixtures import write_grading  # noqa: E402


def _recorded_trials(
    run_dirs: list[Path], field: str = "trial_id"
) -> dict[tuple[str, int], dict[str, str]]:
    """(task, repeat) -> arm -> the recorded trial's `field` (its id, or `trial`: its folder's
    name), read from records.jsonl's traces."""
    out: dict[tuple[str, int], dict[str, str]] = {}
    for run_dir in run_dirs:
        k = json.loads((run_dir / "manifest.json").read_text())["repeat_index"]
        for line in (run_dir / "records.jsonl").read_text().splitlines():
            record = json.loads(line)
            out[(record["task_id"], k)] = {
                t["arm"]: json.loads(t["scorer_details"]).get(field) for t in record["traces"]
            }
    return out


# ------------------------------------------------------------- skill-creator without timing


def _iteration(ws: Path, name: str, se: list[bool], sd: list[bool]) -> Path:
    """Two runs per configuration of one eval, no timing.json anywhere."""
    for k in (1, 2):
        write_grading(ws / name / "eval-0" / "with_skill" / f"run-{k}", se)
        write_grading(ws / name / "eval-0" / "without_skill" / f"run-{k}", sd)
    return ws / name


def test_runs_without_timing_of_another_iteration_are_not_taken_for_the_recorded_ones(
    tmp_path: Path,
) -> None:
    # iteration-1: the skill passes, the baseline fails; iteration-2 the other way round.
    # Without timing.json both iterations' runs are `run-1`/`run-2` started "run-000001"/...,
    # the same cell (same eval names, no checksums, no pool): before, the second import was
    # "2 already there", iteration-2's runs silently taken for iteration-1's
    ws = tmp_path / "pdf-workspace"
    first = _iteration(ws, "iteration-1", [True], [False])
    second = _iteration(ws, "iteration-2", [False], [True])
    out = tmp_path / "runs"
    import_runs("skill-creator", paths=[first], output_dir=out)
    result = import_runs("skill-creator", paths=[second], output_dir=out)
    assert result.n_written == 0
    said = [n for n in result.notes if "other trials" in n]
    assert len(said) == 1
    assert "recorded pdf-workspace/iteration-1/eval-0/with_skill/run-1" in said[0]
    assert "here pdf-workspace/iteration-2/eval-0/with_skill/run-1" in said[0]
    recorded = _recorded_trials(result.run_dirs)
    assert recorded[("eval-0", 0)]["se"] == "pdf-workspace/iteration-1/eval-0/with_skill/run-1"
    # the same iteration again is a re-import: nothing new, nothing said
    again = import_runs("skill-creator", paths=[first], output_dir=out)
    assert (again.n_written, again.n_already) == (0, 2)
    assert not [n for n in again.notes if "other trials" in n]


def test_runs_of_one_configuration_with_and_without_timing_pair_by_run_number(
    tmp_path: Path,
) -> None:
    # with_skill: run-1 and run-3 have executor_start, run-2 none; without_skill all three.
    # Before, ISO times sorted before run-2's "run-000002": run-3 paired with the baseline's
    # run-2 and run-2 with its run-3
    it = tmp_path / "ws" / "iteration-1"
    ev = it / "eval-0"
    write_grading(ev / "with_skill" / "run-1", [True], start="2026-01-15T10:30:00Z")
    write_grading(ev / "with_skill" / "run-2", [False])
    write_grading(ev / "with_skill" / "run-3", [True], start="2026-01-15T10:50:00Z")
    for k, minute in ((1, 30), (2, 40), (3, 50)):
        write_grading(
            ev / "without_skill" / f"run-{k}", [False], start=f"2026-01-15T10:{minute}:00Z"
        )
    result = import_runs("skill-creator", paths=[it], output_dir=tmp_path / "runs")
    recorded = _recorded_trials(result.run_dirs, "trial")
    assert {k: (v["se"], v["sd"]) for k, v in recorded.items()} == {
        ("eval-0", 0): ("run-1", "run-1"),
        ("eval-0", 1): ("run-2", "run-2"),
        ("eval-0", 2): ("run-3", "run-3"),
    }
    assert any("3 run(s) paired in the order of their run number" in n for n in result.notes)
    # each reordered run says so in its trace's notes; the baseline (all timed) keeps its times
    line = (result.run_dirs[2] / "records.jsonl").read_text().splitlines()[0]
    traces = {t["arm"]: json.loads(t["scorer_details"]) for t in json.loads(line)["traces"]}
    assert traces["se"]["started_at"] == "run-000003"
    assert any("executor_start 2026-01-15T10:50:00Z not used" in n for n in traces["se"]["notes"])
    assert traces["sd"]["started_at"] == "2026-01-15T10:50:00Z"

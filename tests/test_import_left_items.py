"""Import's left items (brief H4): skill-creator runs without timing.json, trials counted in
two cells of one output folder, a cancelled Harbor trial that was rerun.

Real trial folders in the shapes the harnesses write (tests/_trial_fixtures.py); every
expected pairing is written by hand from the folders built here.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("pyarrow.parquet")

from click.testing import CliRunner  # noqa: E402

from hf_skillfollow.cli import cli  # noqa: E402
from hf_skillfollow.importers import ImportOptions, import_runs  # noqa: E402
from tests._trial_fixtures import (  # noqa: E402
    cc_stream,
    write_grading,
    write_job,
    write_tasks,
    write_trial,
)


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


# ------------------------------------------------- one trial in two cells of one output folder


def _two_jobs(root: Path, tasks: str = "abc") -> tuple[Path, Path]:
    """A with-skills and a without-skills Harbor job, one finished trial per task and arm."""
    se, sd = write_job(root / "with"), write_job(root / "without")
    for task in tasks:
        write_trial(se, f"{task}__se", f"task-{task}", stream=cc_stream())
        write_trial(sd, f"{task}__sd", f"task-{task}", reward=0.0, stream=cc_stream(init=False))
    return se, sd


def _cells(out: Path) -> set[str]:
    return {json.loads(p.read_text())["cell_id"] for p in out.glob("*/manifest.json")}


def _twice(notes: list[str]) -> list[str]:
    return [n for n in notes if n.startswith("the same trials of")]


def test_a_partial_import_then_the_whole_job_says_the_first_cell_holds_its_trials(
    tmp_path: Path,
) -> None:
    # task-c's without-skills trial is still running at the first import (left out, so the
    # cell holds task-a and task-b); once it finishes, the task set is three tasks: another
    # cell id, and a second cell holding task-a's and task-b's trials again. Before, nothing
    # said so: `report runs/` counted those trials in both cells
    se, sd = _two_jobs(tmp_path, "ab")
    write_trial(se, "c__se", "task-c", stream=cc_stream())
    running = {"finished_at": None}
    write_trial(sd, "c__sd", "task-c", reward=None, stream=cc_stream(init=False), extra=running)
    out = tmp_path / "runs"
    first = import_runs("harbor", [se], [sd], output_dir=out)
    assert first.n_pairs == 2 and not _twice(first.notes)
    (first_cell,) = _cells(out)
    shutil.rmtree(sd / "c__sd")
    write_trial(sd, "c__sd", "task-c", reward=0.0, stream=cc_stream(init=False))
    whole = import_runs("harbor", [se], [sd], output_dir=out)
    (said,) = _twice(whole.notes)
    assert whole.notes[0] == said  # the first note the command prints
    assert said.startswith("the same trials of 2 task(s) ('task-a', 'task-b') are also recorded")
    folder = out / f"imported-{first_cell}-r0"
    assert (
        f"in {folder}, a run folder of another cell ({first_cell}: it differs in the tasks: "
        in said
    )
    assert "2 there, 3 here)" in said
    assert f"remove that cell's run folders (imported-{first_cell}-r*)" in said
    assert "\n" not in said
    # the way out it names: the earlier cell's folders removed, the job is one cell
    shutil.rmtree(folder)
    again = import_runs("harbor", [se], [sd], output_dir=out)
    assert (again.n_written, again.n_already) == (0, 3)
    assert not _twice(again.notes) and len(_cells(out)) == 1


@pytest.mark.parametrize(
    ("options", "differs"),
    [
        ({"pass_threshold": 0.5}, "it differs in --pass-threshold)"),
        ({"trigger": "instructions"}, "it differs in --trigger)"),
        (
            {"tasks": "tasks"},
            "it differs in the task set's checksums or intended skills (--tasks))",
        ),
    ],
)
def test_the_same_trials_with_other_options_say_what_differs(
    tmp_path: Path, options: dict, differs: str
) -> None:
    se, sd = _two_jobs(tmp_path)
    out = tmp_path / "runs"
    import_runs("harbor", [se], [sd], output_dir=out)
    if "tasks" in options:
        options = {"tasks": write_tasks(tmp_path / "tasks", {"task-a": ["pdf-tools"]})}
    result = import_runs("harbor", [se], [sd], ImportOptions(**options), output_dir=out)
    (said,) = _twice(result.notes)
    assert "of 3 task(s) ('task-a', 'task-b', 'task-c')" in said and differs in said
    # through the command: the note is printed
    flags = ["--pass-threshold", "0.5"] if "pass_threshold" in options else []
    flags += ["--trigger", "instructions"] if "trigger" in options else []
    flags += ["--tasks", str(options["tasks"])] if "tasks" in options else []
    shown = CliRunner().invoke(cli, ["import", "harbor", "--with-skills", str(se),
                                     "--without-skills", str(sd), *flags, "-o", str(out)])  # fmt: skip
    assert shown.exit_code == 0, shown.output
    assert "note: the same trials of 3 task(s)" in " ".join(shown.output.split())
    # another output folder: nothing to say
    other = import_runs("harbor", [se], [sd], ImportOptions(**options), output_dir=tmp_path / "o2")
    assert other.n_written == 3 and not _twice(other.notes)


def test_other_trials_of_the_same_tasks_in_another_cell_are_not_said(tmp_path: Path) -> None:
    # two skill-creator iterations into one output folder: iteration-2 adds eval-1, so it is
    # another cell; its eval-0 runs are other runs than iteration-1's (their ids differ)
    ws = tmp_path / "pdf-workspace"
    first = _iteration(ws, "iteration-1", [True], [False])
    second = _iteration(ws, "iteration-2", [False], [True])
    write_grading(second / "eval-1" / "with_skill", [True])
    write_grading(second / "eval-1" / "without_skill", [True])
    out = tmp_path / "runs"
    import_runs("skill-creator", paths=[first], output_dir=out)
    result = import_runs("skill-creator", paths=[second], output_dir=out)
    assert result.n_written == 3 and not _twice(result.notes)
    assert len(_cells(out)) == 2


# ------------------------------------------------------------ a cancelled trial, rerun

THREE, FOUR = "2026-01-26T03:00:00", "2026-01-26T04:00:00"
CANCELLED = {"exception_type": "CancelledError", "exception_message": "",
             "exception_traceback": "...", "occurred_at": "2026-01-26T03:05:00"}  # fmt: skip


def _cancelled(job: Path, name: str, task: str, started: str = THREE) -> Path:
    """A Harbor trial stopped by a cancel (Ctrl-C): CancelledError, no verifier result."""
    return write_trial(job, name, task, reward=None, started=started, exception=CANCELLED,
                       stream=cc_stream(), extra={"finished_at": "2026-01-26T03:05:00"})  # fmt: skip


def _traces(run_dirs: list[Path], task: str) -> dict[str, dict]:
    """arm -> scorer_details of `task`'s first recorded pair."""
    for run_dir in sorted(run_dirs):
        for line in (run_dir / "records.jsonl").read_text().splitlines():
            record = json.loads(line)
            if record["task_id"] == task:
                return {t["arm"]: json.loads(t["scorer_details"]) for t in record["traces"]}
    raise AssertionError(f"{task} not recorded")


def test_a_cancelled_trial_rerun_in_its_job_is_set_aside_and_said(tmp_path: Path) -> None:
    # task-a's with-skills trial a__1 was cancelled at 03:05 and the job reran it (a__3, 04:00).
    # Before, the cancelled one (earlier) was paired, an error row "CancelledError", and the
    # rerun was dropped as an unpaired extra, nothing saying which trial was used
    se, sd = _two_jobs(tmp_path, "b")
    first = _cancelled(se, "a__1", "task-a")
    write_trial(se, "a__3", "task-a", started=FOUR, reward=1.0, stream=cc_stream())
    write_trial(sd, "a__2", "task-a", started=THREE, reward=0.0, stream=cc_stream(init=False))
    result = import_runs("harbor", [se], [sd], output_dir=tmp_path / "runs")
    assert (result.n_pairs, result.n_dropped) == (2, 0)
    assert (f"1 cancelled trial(s) (CancelledError) set aside for their rerun in the same job, "
            f"e.g. {first} (rerun: a__3); each rerun's trace notes name the trial it replaces"
            ) in result.notes  # fmt: skip
    traces = _traces(result.run_dirs, "task-a")
    assert traces["se"]["trial"] == "a__3" and traces["se"]["reward"] == 1.0
    assert ("rerun of the cancelled trial a__1 (CancelledError, ended 2026-01-26T03:05:00), "
            "which was set aside") in traces["se"]["notes"]  # fmt: skip
    rows = [json.loads(line) for d in result.run_dirs
            for line in (d / "records.jsonl").read_text().splitlines()]  # fmt: skip
    (row,) = [r["transition"] for r in rows if r["task_id"] == "task-a"]
    assert (row["se_correct"], row["se_error"], row["sd_correct"]) == (True, None, False)


def test_an_attempt_running_beside_a_cancelled_one_is_no_rerun(tmp_path: Path) -> None:
    # two attempts per task: a__2 started at 03:01, before a__1 was cancelled (03:05), so it
    # is the second attempt, not a rerun: the cancelled one stays an error row (repeat 0)
    se, sd = _two_jobs(tmp_path, "b")
    _cancelled(se, "a__1", "task-a")
    write_trial(se, "a__2", "task-a", started="2026-01-26T03:01:00", stream=cc_stream())
    write_trial(sd, "a__3", "task-a", started=THREE, reward=0.0, stream=cc_stream(init=False))
    write_trial(sd, "a__4", "task-a", started=FOUR, reward=0.0, stream=cc_stream(init=False))
    result = import_runs("harbor", [se], [sd], output_dir=tmp_path / "runs")
    assert not [n for n in result.notes if "cancelled" in n]
    assert _traces(result.run_dirs, "task-a")["se"]["trial"] == "a__1"
    assert result.n_pairs == 3


def test_a_cancelled_trial_waits_for_its_rerun_still_running(tmp_path: Path) -> None:
    # the rerun a__3 is still running at the first import: the cancelled a__1 is held back
    # with it (before, a__1 was paired as an error row, and once a__3 finished the next import
    # found the recorded pair of other trials and wrote nothing of the cell)
    se, sd = _two_jobs(tmp_path, "b")
    _cancelled(se, "a__1", "task-a")
    rerun = write_trial(se, "a__3", "task-a", started=FOUR, reward=None, stream=cc_stream(),
                        extra={"finished_at": None})  # fmt: skip
    write_trial(sd, "a__2", "task-a", started=THREE, reward=0.0, stream=cc_stream(init=False))
    out = tmp_path / "runs"
    first = import_runs("harbor", [se], [sd], output_dir=out)
    assert first.n_pairs == 1  # task-b only: task-a waits for its rerun
    assert any("1 finished trial(s) of their task and arm" in n for n in first.notes)
    shutil.rmtree(rerun)
    write_trial(se, "a__3", "task-a", started=FOUR, reward=1.0, stream=cc_stream())
    later = import_runs("harbor", [se], [sd], output_dir=out)
    # task-a joins the task set: another cell (see the note of the tests above), its pair
    # the rerun's
    assert not [n for n in later.notes if "other trials" in n]
    assert _traces(later.run_dirs, "task-a")["se"]["trial"] == "a__3"


def test_another_cells_run_folder_holding_anything_is_passed_over(tmp_path: Path) -> None:
    # a run folder of another cell beside the import's (copied, downloaded, edited) whose
    # traces are no trace objects, or whose manifest names tasks oddly: before, the first
    # stopped the import with an AttributeError traceback
    se, sd = _two_jobs(tmp_path, "a")
    out = tmp_path / "runs"
    odd = {"imported-deadbeef-r0": ({"cell_id": "deadbeef", "task_ids": ["task-a"]},
                                    [1, "x", {"scorer_details": 5}, {"scorer_details": "[1]"}]),
           "imported-deadbee2-r0": ({"cell_id": "deadbee2", "task_ids": 7}, [])}  # fmt: skip
    for name, (manifest, traces) in odd.items():
        (out / name).mkdir(parents=True)
        (out / name / "manifest.json").write_text(json.dumps(manifest))
        record = {"task_id": "task-a", "transition": {"task_id": "task-a"}, "traces": traces}
        (out / name / "records.jsonl").write_text(json.dumps(record) + "\n")
    result = import_runs("harbor", [se], [sd], output_dir=out)
    assert result.n_written == 1 and not _twice(result.notes)

"""Import again after `harbor job resume` (brief H8): the recorded pair of a trial Harbor
cancelled takes the trial's rerun.

The workflow: a Harbor job is interrupted (Ctrl-C), the user imports it (the cancelled trials
are error rows `CancelledError`), runs `harbor job resume` (Harbor 0.26 deletes the cancelled
trials' folders, `--filter-error-type CancelledError` by default, and runs them again as new
trials), then imports again. The hand-built tests build trial folders in Harbor 0.26's layout
(tests/_trial_fixtures.py) and do what the resume does to the job folder; the `harbor` test
runs real Harbor (nop agent, this toolkit's sandbox environment) and interrupts it. Every
expected pairing is written by hand from the folders built here.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

pytest.importorskip("pyarrow.parquet")

from click.testing import CliRunner  # noqa: E402

from hf_skillfollow.cli import cli  # noqa: E402
from hf_skillfollow.importers import import_runs  # noqa: E402
from tests._trial_fixtures import cc_stream, write_job, write_trial  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
THREE, FIVE = "2026-01-26T03:00:00", "2026-01-26T05:00:00"
ONE_PAST = "2026-01-26T03:01:00"  # a second attempt, started before the Ctrl-C (03:05)
CANCELLED = {"exception_type": "CancelledError", "exception_message": "",
             "exception_traceback": "...", "occurred_at": "2026-01-26T03:05:00"}  # fmt: skip


def _cancelled(job: Path, name: str, task: str, started: str = THREE) -> Path:
    """A Harbor trial stopped by Ctrl-C: CancelledError, no verifier result."""
    return write_trial(job, name, task, reward=None, started=started, exception=CANCELLED,
                       stream=cc_stream(), extra={"finished_at": "2026-01-26T03:05:00"})  # fmt: skip


def _jobs(root: Path) -> tuple[Path, Path]:
    """Two jobs (with and without skills); task-b finished in both before the interrupt."""
    se, sd = write_job(root / "with"), write_job(root / "without")
    write_trial(se, "b__se", "task-b", stream=cc_stream())
    write_trial(sd, "b__sd", "task-b", reward=0.0, stream=cc_stream(init=False))
    return se, sd


def _resume(job: Path, cancelled: str, rerun: str, task: str, started: str = FIVE) -> None:
    """What `harbor job resume` does to a job folder: the cancelled trial's folder removed,
    the trial run again as a new trial (a new name) that passes."""
    shutil.rmtree(job / cancelled)
    write_trial(job, rerun, task, started=started, reward=1.0, stream=cc_stream())


def _pairs(out: Path) -> dict[tuple[str, int], tuple[str, str, str | None]]:
    """(task, repeat) -> (se trial, sd trial, se_error) as records.jsonl holds them."""
    got = {}
    for run_dir in sorted(out.glob("imported-*")):
        k = json.loads((run_dir / "manifest.json").read_text())["repeat_index"]
        for line in (run_dir / "records.jsonl").read_text().splitlines():
            record = json.loads(line)
            arms = {t["arm"]: json.loads(t["scorer_details"])["trial"] for t in record["traces"]}
            got[(record["task_id"], k)] = (arms["se"], arms["sd"], record["transition"]["se_error"])
    return got


def _files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("records.*"))}


def test_the_import_after_a_resume_replaces_the_cancelled_trials_error_row(tmp_path: Path) -> None:
    # Before: the second import wrote 0 pairs and kept a__1's CancelledError row, with only a
    # note 'recorded a__1 and a__2, here a__3 and a__2: kept as recorded'
    se, sd = _jobs(tmp_path)
    _cancelled(se, "a__1", "task-a")
    write_trial(sd, "a__2", "task-a", started=THREE, reward=0.0, stream=cc_stream(init=False))
    out = tmp_path / "runs"
    first = import_runs("harbor", [se], [sd], output_dir=out)
    assert first.n_written == 2
    assert _pairs(out)[("task-a", 0)] == ("a__1", "a__2", "CancelledError")
    old = next(line for line in (first.run_dirs[0] / "records.jsonl").read_text().splitlines()
               if '"task-a"' in line)  # fmt: skip

    _resume(se, "a__1", "a__3", "task-a")
    second = import_runs("harbor", [se], [sd], output_dir=out)
    assert _pairs(out) == {("task-a", 0): ("a__3", "a__2", None),
                           ("task-b", 0): ("b__se", "b__sd", None)}  # fmt: skip
    assert (second.n_written, second.n_already, second.n_replaced) == (1, 1, 1)
    assert (
        "1 recorded pair(s) held a trial Harbor cancelled (CancelledError) that the job has "
        "since run again (harbor job resume): each now holds the rerun, its old record moved to "
        "records.rejected in its run folder, e.g. task 'task-a' repeat 0: a__1 replaced by a__3"
    ) in second.notes
    assert not [n for n in second.notes if "other trials" in n]
    run_dir = second.run_dirs[0]
    # nothing lost: the old record is in records.rejected, byte for byte
    assert (run_dir / "records.rejected").read_text() == old + "\n"
    rows = {r["task_id"]: r for r in _parquet(run_dir / "transitions.parquet")}
    assert (rows["task-a"]["se_correct"], rows["task-a"]["se_error"]) == (True, None)
    details = _details(run_dir, "task-a", "se")
    assert details["stands_in_for"] == {"trial": "a__1", "started_at": THREE}
    assert any(
        n.startswith("pairs in the place of the cancelled trial a__1") for n in details["notes"]
    )

    # a third import changes nothing, says nothing of other trials
    before = _files(out)
    third = import_runs("harbor", [se], [sd], output_dir=out)
    assert (third.n_written, third.n_already, third.n_replaced) == (0, 2, 0)
    assert not [n for n in third.notes if "other trials" in n or "cancelled" in n]
    assert _files(out) == before


def test_a_rerun_takes_the_cancelled_trials_repeat_not_a_finished_ones(tmp_path: Path) -> None:
    # two attempts per task: a__1 (03:00) cancelled, a__2 (03:01) finished before the Ctrl-C.
    # The resume's rerun a__5 starts at 05:00: paired by its own start it would be repeat 1
    # and push a__2 into repeat 0, replacing a finished recorded pair. It takes a__1's place.
    se, sd = _jobs(tmp_path)
    _cancelled(se, "a__1", "task-a")
    write_trial(se, "a__2", "task-a", started=ONE_PAST, reward=0.0, stream=cc_stream())
    write_trial(sd, "a__3", "task-a", started=THREE, reward=0.0, stream=cc_stream(init=False))
    write_trial(sd, "a__4", "task-a", started=ONE_PAST, reward=1.0, stream=cc_stream(init=False))
    out = tmp_path / "runs"
    import_runs("harbor", [se], [sd], output_dir=out)
    assert _pairs(out)[("task-a", 0)] == ("a__1", "a__3", "CancelledError")
    r1 = (out / _run(out, 1) / "records.jsonl").read_bytes()

    _resume(se, "a__1", "a__5", "task-a")
    second = import_runs("harbor", [se], [sd], output_dir=out)
    got = _pairs(out)
    assert got[("task-a", 0)] == ("a__5", "a__3", None)
    assert got[("task-a", 1)] == ("a__2", "a__4", None)
    assert (out / _run(out, 1) / "records.jsonl").read_bytes() == r1  # the finished pair kept
    assert second.n_replaced == 1 and second.n_written == 1
    before = _files(out)
    third = import_runs("harbor", [se], [sd], output_dir=out)
    assert (third.n_written, third.n_replaced) == (0, 0)
    assert not [n for n in third.notes if "other trials" in n]
    assert _files(out) == before


def test_a_finished_recorded_pair_is_never_replaced(tmp_path: Path) -> None:
    # a__1 ended in an agent timeout: an outcome of the agent, not a cancel. Its folder gone
    # and another trial in its place, the recorded pair is kept and said (as before)
    se, sd = _jobs(tmp_path)
    timeout = {**CANCELLED, "exception_type": "AgentTimeoutError"}
    write_trial(se, "a__1", "task-a", reward=None, exception=timeout, stream=cc_stream())
    write_trial(sd, "a__2", "task-a", reward=0.0, stream=cc_stream(init=False))
    out = tmp_path / "runs"
    import_runs("harbor", [se], [sd], output_dir=out)
    before = _files(out)
    _resume(se, "a__1", "a__3", "task-a")
    second = import_runs("harbor", [se], [sd], output_dir=out)
    assert second.n_written == 0
    assert any("recorded a__1 and a__2, here a__3 and a__2" in n for n in second.notes)
    assert _files(out) == before


def test_a_cancelled_pair_whose_other_arm_changed_is_not_replaced(tmp_path: Path) -> None:
    # the with-skills trial was cancelled and rerun, but the without-skills trial recorded
    # (finished) is gone and another is there: not the same pair, so nothing is replaced
    se, sd = _jobs(tmp_path)
    _cancelled(se, "a__1", "task-a")
    write_trial(sd, "a__2", "task-a", reward=0.0, stream=cc_stream(init=False))
    out = tmp_path / "runs"
    import_runs("harbor", [se], [sd], output_dir=out)
    before = _files(out)
    _resume(se, "a__1", "a__3", "task-a")
    shutil.rmtree(sd / "a__2")
    write_trial(sd, "a__4", "task-a", started=FIVE, reward=0.0, stream=cc_stream(init=False))
    second = import_runs("harbor", [se], [sd], output_dir=out)
    assert second.n_written == 0
    assert any("other trials" in n for n in second.notes)
    assert _files(out) == before


def test_a_cancelled_trial_kept_by_the_resume_stays_an_error_row(tmp_path: Path) -> None:
    # `harbor job resume -f SomethingElse` keeps a cancelled trial as finished and does not
    # rerun it: its folder is still there, nothing to replace it with
    se, sd = _jobs(tmp_path)
    _cancelled(se, "a__1", "task-a")
    write_trial(sd, "a__2", "task-a", reward=0.0, stream=cc_stream(init=False))
    out = tmp_path / "runs"
    import_runs("harbor", [se], [sd], output_dir=out)
    before = _files(out)
    second = import_runs("harbor", [se], [sd], output_dir=out)
    assert second.n_written == 0
    assert _files(out) == before


def test_both_arms_cancelled_are_replaced_in_one_pair(tmp_path: Path) -> None:
    se, sd = _jobs(tmp_path)
    _cancelled(se, "a__1", "task-a")
    _cancelled(sd, "a__2", "task-a")
    out = tmp_path / "runs"
    import_runs("harbor", [se], [sd], output_dir=out)
    _resume(se, "a__1", "a__3", "task-a")
    _resume(sd, "a__2", "a__4", "task-a")
    second = import_runs("harbor", [se], [sd], output_dir=out)
    assert _pairs(out)[("task-a", 0)] == ("a__3", "a__4", None)
    assert any("a__1 replaced by a__3, a__2 replaced by a__4" in n for n in second.notes)
    assert len((out / _run(out, 0) / "records.rejected").read_text().splitlines()) == 1


def test_an_import_cut_off_between_writing_the_rerun_and_setting_aside_resumes(
    tmp_path: Path,
) -> None:
    # the new pair is appended before the old one is set aside: a crash between the two leaves
    # both lines (the old one first, which is the one read); the next import sets the old one
    # aside and does not append the new one again
    se, sd = _jobs(tmp_path)
    _cancelled(se, "a__1", "task-a")
    write_trial(sd, "a__2", "task-a", reward=0.0, stream=cc_stream(init=False))
    out = tmp_path / "runs"
    import_runs("harbor", [se], [sd], output_dir=out)
    _resume(se, "a__1", "a__3", "task-a")
    import_runs("harbor", [se], [sd], output_dir=out)
    run_dir = out / _run(out, 0)
    old = (run_dir / "records.rejected").read_text()
    # the state a crash between the two steps leaves: the old line back, first
    (run_dir / "records.jsonl").write_text(old + (run_dir / "records.jsonl").read_text())
    (run_dir / "records.rejected").unlink()
    import_runs("harbor", [se], [sd], output_dir=out)
    lines = (run_dir / "records.jsonl").read_text().splitlines()
    assert [json.loads(line)["task_id"] for line in lines] == ["task-b", "task-a"]
    assert _pairs(out)[("task-a", 0)] == ("a__3", "a__2", None)
    assert (run_dir / "records.rejected").read_text() == old


def test_the_command_prints_the_replacement(tmp_path: Path) -> None:
    se, sd = _jobs(tmp_path)
    _cancelled(se, "a__1", "task-a")
    write_trial(sd, "a__2", "task-a", reward=0.0, stream=cc_stream(init=False))
    args = ["import", "harbor", "--with-skills", str(se), "--without-skills", str(sd),
            "-o", str(tmp_path / "runs")]  # fmt: skip
    assert CliRunner().invoke(cli, args).exit_code == 0
    _resume(se, "a__1", "a__3", "task-a")
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == 0, done.output
    assert "a__1 replaced by a__3" in " ".join(done.output.split())


def _run(out: Path, k: int) -> str:
    (run_dir,) = out.glob(f"imported-*-r{k}")
    return run_dir.name


def _parquet(path: Path) -> list[dict]:
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def _details(run_dir: Path, task: str, arm: str) -> dict:
    for line in (run_dir / "records.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["task_id"] == task:
            (trace,) = [t for t in record["traces"] if t["arm"] == arm]
            return json.loads(trace["scorer_details"])
    raise AssertionError(f"{task} not recorded")


# ------------------------------------------------------------------ real Harbor (marker harbor)

HARBOR = Path(os.environ.get("SKILLFOLLOW_HARBOR", ROOT / ".venv-harbor" / "bin" / "harbor"))


def _task(tasks: Path, name: str, sleep: int) -> None:
    """A task the nop agent passes: its verifier writes reward 1 after `sleep` seconds."""
    (tasks / name / "environment").mkdir(parents=True)
    (tasks / name / "tests").mkdir()
    (tasks / name / "instruction.md").write_text("Nothing to do.\n")
    (tasks / name / "task.toml").write_text(
        '[verifier]\ntimeout_sec = 120.0\n[environment]\nnetwork_mode = "no-network"\n'
        'workdir = "/app"\n'
    )
    test = tasks / name / "tests" / "test.sh"
    test.write_text(f"#!/bin/bash\nsleep {sleep}\necho 1 > /logs/verifier/reward.txt\n")
    test.chmod(0o755)


def _ctrl_c_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _harbor(*args: str, cwd: Path, interrupt: Path | None = None) -> subprocess.CompletedProcess:
    """Run Harbor; with `interrupt` (a job folder), send it SIGINT (Ctrl-C, to the process
    group it was started in) once that job's quick trial has finished and its slow one has not."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HARBOR_TELEMETRY": "0"}
    if interrupt is None:
        return subprocess.run([str(HARBOR), *args], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=300)  # fmt: skip
    # Ctrl-C's default: a test run in the background (nohup, `cmd &` in a script) inherits
    # SIGINT ignored, and Harbor started so never saw the interrupt (seen in CI step 4).
    proc = subprocess.Popen([str(HARBOR), *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=_ctrl_c_default)  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        quick = list(interrupt.glob("quick__*/result.json"))
        slow = list(interrupt.glob("slow__*/config.json"))
        if quick and slow and not (slow[0].parent / "result.json").exists():
            time.sleep(1)  # the slow trial's verifier is sleeping
            os.killpg(proc.pid, signal.SIGINT)
            break
        time.sleep(0.2)
    out, _ = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, "")


@pytest.mark.harbor
@pytest.mark.timeout(600)
def test_real_harbor_interrupt_import_resume_import(tmp_path: Path) -> None:
    if not HARBOR.is_file():
        pytest.fail("Harbor is not installed: run .ci/setup-harbor (the harbor marker needs it)")
    _task(tmp_path / "tasks", "quick", 0)
    _task(tmp_path / "tasks", "slow", 10)
    for arm in ("se", "sd"):
        job = {
            "job_name": arm, "jobs_dir": str(tmp_path / "jobs"), "n_attempts": 1, "quiet": True,
            "environment": {"import_path": "hf_skillfollow.harness._env:SandboxEnvironment",
                            "kwargs": {}},
            "agents": [{"name": "nop"}], "datasets": [{"path": str(tmp_path / "tasks")}],
        }  # fmt: skip
        (tmp_path / f"{arm}.json").write_text(json.dumps(job))
    se, sd, out = tmp_path / "jobs" / "se", tmp_path / "jobs" / "sd", tmp_path / "runs"
    # the with-skills job interrupted by Ctrl-C while its slow trial is being verified
    _harbor("run", "-c", str(tmp_path / "se.json"), "-y", cwd=tmp_path, interrupt=se)
    (cancelled,) = se.glob("slow__*/result.json")
    info = json.loads(cancelled.read_text())["exception_info"]
    assert info["exception_type"] == "CancelledError"
    done = _harbor("run", "-c", str(tmp_path / "sd.json"), "-y", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    first = import_runs("harbor", [se], [sd], output_dir=out)
    assert first.n_written == 2
    assert _pairs(out)[("slow", 0)][2] == "CancelledError"

    done = _harbor("job", "resume", "-p", str(se), cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert not cancelled.parent.exists()  # Harbor deleted the cancelled trial's folder
    (rerun,) = se.glob("slow__*/result.json")
    second = import_runs("harbor", [se], [sd], output_dir=out)
    assert _pairs(out)[("slow", 0)][::2] == (rerun.parent.name, None)
    assert (second.n_written, second.n_replaced) == (1, 1)
    assert any(f"{cancelled.parent.name} replaced by {rerun.parent.name}" in n
               for n in second.notes)  # fmt: skip
    (rejected,) = out.glob("imported-*-r0/records.rejected")
    assert cancelled.parent.name in rejected.read_text()
    before = _files(out)
    third = import_runs("harbor", [se], [sd], output_dir=out)
    assert (third.n_written, third.n_already) == (0, 2)
    assert _files(out) == before


def test_a_cancelled_trial_still_there_beside_its_rerun_is_replaced_too(tmp_path: Path) -> None:
    # trials copied together (not Harbor 0.26's own layout): the cancelled a__1 is still in
    # the job folder, its rerun a__3 beside it; the in-job rule sets a__1 aside, and the pair
    # recorded before the rerun was there takes the rerun
    se, sd = _jobs(tmp_path)
    _cancelled(se, "a__1", "task-a")
    write_trial(sd, "a__2", "task-a", reward=0.0, stream=cc_stream(init=False))
    out = tmp_path / "runs"
    import_runs("harbor", [se], [sd], output_dir=out)
    write_trial(se, "a__3", "task-a", started=FIVE, reward=1.0, stream=cc_stream())
    second = import_runs("harbor", [se], [sd], output_dir=out)
    assert _pairs(out)[("task-a", 0)] == ("a__3", "a__2", None)
    assert any("a__1 replaced by a__3" in n for n in second.notes)
    before = _files(out)
    assert import_runs("harbor", [se], [sd], output_dir=out).n_written == 0
    assert _files(out) == before

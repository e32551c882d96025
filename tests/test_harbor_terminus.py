"""`run --harness harbor` end to end: real Harbor, real Terminus-2, the sandbox environment.

Needs `.ci/setup-harbor` (Harbor in .venv-harbor); marker `harbor`. The model is the scripted
double of tests/_harbor_double.py over 127.0.0.1; every expected count below was written by
hand from its SCRIPTS table, not produced by the code under test.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pq = pytest.importorskip("pyarrow.parquet")

from click.testing import CliRunner  # noqa: E402

from hf_skillfollow.cli import cli  # noqa: E402
from tests._harbor_double import TerminusModelDouble  # noqa: E402

pytestmark = [pytest.mark.harbor, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "toolkit" / "hf_skillfollow" / "_data" / "harbor_tasks"
TASKS, SKILLS = DATA / "tasks", DATA / "skills"
#: by hand from the double's SCRIPTS: (se_correct, sd_correct, skills activated in SE)
EXPECTED = {
    "sum-sales": (True, False, ["ledger-totals"]),
    "write-report": (True, False, ["status-report"]),
    "count-lines": (True, True, []),
    "make-slug": (True, True, ["house-slugs"]),
}
#: model requests per trial: one per scripted turn, then task_complete and its confirmation
PER_TRIAL = {("sum-sales", "se"): 4, ("sum-sales", "sd"): 3, ("write-report", "se"): 4,
             ("write-report", "sd"): 3, ("count-lines", "se"): 3, ("count-lines", "sd"): 3,
             ("make-slug", "se"): 4, ("make-slug", "sd"): 3}  # fmt: skip


@pytest.fixture(scope="module")
def harbor() -> Path:
    path = Path(os.environ.get("SKILLFOLLOW_HARBOR", ROOT / ".venv-harbor" / "bin" / "harbor"))
    if not path.is_file():
        pytest.fail("Harbor is not installed: run .ci/setup-harbor (the harbor marker needs it)")
    return path


def _args(url: str, out: Path, trials: int = 2) -> list[str]:
    return ["run", "--harness", "harbor", "--model", "openai/double-model", "--base-url", url,
            "--api-key-env", "DOUBLE_API_KEY", "--tasks", str(TASKS), "--skills", str(SKILLS),
            "--trials", str(trials), "--concurrency", "4", "-o", str(out), "--no-report"]  # fmt: skip


def _rows(runs: Path) -> list[dict]:
    rows = []
    for run in sorted(runs.glob("run-harbor-*")):
        rows += pq.read_table(run / "transitions.parquet").to_pylist()
    return rows


def _finished_trials(work: Path) -> dict[str, float]:
    """trial folder -> mtime of its result.json, for every finished trial of the job(s)."""
    return {
        str(p.parent.relative_to(work)): p.stat().st_mtime
        for p in work.glob("harbor-*/jobs/*/*/result.json")
    }


def _sandboxes() -> list[int]:
    """Pids of live sandbox environments (their init and its helper) on this machine."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes()
            state = (proc / "stat").read_text().split()[2]
        except (OSError, IndexError):
            continue
        if b"hf_skillfollow.harness._nsinit" in cmdline and state != "Z":
            found.append(int(proc.name))
    return found


def _parent(pid: int) -> int | None:
    try:
        return int((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _descends(pid: int, ancestors: set[int]) -> bool:
    for _ in range(16):
        parent = _parent(pid)
        if parent is None or parent <= 1:
            return False
        if parent in ancestors:
            return True
        pid = parent
    return False


def _alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_sigterm_stops_the_harbor_job_and_its_sandboxes(tmp_path: Path, harbor: Path) -> None:
    """SIGTERM to the run alone (as a service manager or `timeout` sends it): before, the run
    died at once and its `harbor run` jobs went on, orphaned, with their sandboxes, running
    trials into the work folder."""
    env = {**os.environ, "SKILLFOLLOW_HARBOR": str(harbor), "DOUBLE_API_KEY": "double-key"}
    with TerminusModelDouble(TASKS) as model:
        argv = [sys.executable, "-m", "hf_skillfollow.cli", *_args(model.url, tmp_path, trials=3)]
        proc = subprocess.Popen(argv, env=env, cwd=ROOT, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            deadline, ours = time.monotonic() + 300, []
            while time.monotonic() < deadline and len(ours) < 2:
                time.sleep(0.2)
                ours = [pid for pid in _sandboxes() if _descends(pid, {proc.pid})]
            jobs = [int(p.name) for p in Path("/proc").iterdir()
                    if p.name.isdigit() and _parent(int(p.name)) == proc.pid]  # fmt: skip
            # one Harbor job runs both arms (on-demand loading, tasks without their own skills)
            assert len(ours) >= 2 and len(jobs) == 1, "the job should be running trials"
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=60) == -signal.SIGTERM  # it still ends by the signal
            deadline = time.monotonic() + 20
            while any(map(_alive, jobs + ours)) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not [pid for pid in jobs if _alive(pid)], "a Harbor job outlived the run"
            assert not [pid for pid in ours if _alive(pid)], "a sandbox outlived the run"
        finally:  # whatever of the run's process group is left (the jobs, when it fails)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_terminus_paired_run(tmp_path: Path, harbor: Path, monkeypatch) -> None:
    monkeypatch.setenv("SKILLFOLLOW_HARBOR", str(harbor))
    monkeypatch.setenv("DOUBLE_API_KEY", "double-key")
    runs = tmp_path / "runs"
    with TerminusModelDouble(TASKS) as model:
        out = CliRunner().invoke(cli, _args(model.url, runs))
        assert out.exit_code == 0, out.output
        assert model.unknown == 0
        assert dict(model.requests) == {k: 2 * n for k, n in PER_TRIAL.items()}
        # one job of both arms: its two agent entries, with and without the pool
        (work,) = runs.glob("harbor-*")
        assert sorted(p.name for p in (work / "jobs").iterdir() if p.is_dir()) == ["both"]
        agents = json.loads((work / "both.json").read_text())["agents"]
        assert [len(a["skills"]) for a in agents] == [3, 0]
        # The same command again: the job resumes with nothing left, the import adds nothing.
        again = CliRunner().invoke(cli, _args(model.url, runs))
        assert again.exit_code == 0, again.output
        assert dict(model.requests) == {k: 2 * n for k, n in PER_TRIAL.items()}
    assert "imported 8 pair(s) (0 new, 8 already recorded)" in again.output

    rows = _rows(runs)
    assert len(rows) == 8 and {r["repeat_index"] for r in rows} == {0, 1}
    for row in rows:
        se, sd, skills = EXPECTED[row["task_id"]]
        assert (row["se_correct"], row["sd_correct"]) == (se, sd), row["task_id"]
        assert list(row["skills_returned"]) == skills, row["task_id"]
        assert row["returned"] is bool(skills)
        assert row["detector"] == "atif" and row["arm_integrity"] == "ok"
        assert row["provenance"] == "run:harbor" and row["access"] == "on-demand"
        if skills:
            assert row["trigger_kind"] == "instructions"
    # The skill's script ran in the sandbox: its exact output is what the verifier passed.
    sum_sales = [r for r in rows if r["task_id"] == "sum-sales"]
    assert all(r["se_correct"] and not r["sd_correct"] for r in sum_sales)

    report = CliRunner().invoke(cli, ["report", str(runs), "--resamples", "200", "--format", "json"])
    assert report.exit_code == 0, report.output
    (cell,) = json.loads(report.output)
    assert (cell["n_pairs"], cell["n_cond"], cell["b_cond"], cell["c_cond"]) == (8, 6, 4, 0)
    assert cell["rae"] == pytest.approx(400 / 6) and cell["oae"] == pytest.approx(50.0)


def test_killed_run_resumes_without_redoing_or_duplicating(tmp_path: Path, harbor: Path) -> None:
    runs = tmp_path / "runs"
    env = {**os.environ, "SKILLFOLLOW_HARBOR": str(harbor), "DOUBLE_API_KEY": "double-key"}
    argv = [sys.executable, "-m", "hf_skillfollow.cli", *_args("URL", runs)]
    with TerminusModelDouble(TASKS) as model:
        argv[argv.index("URL")] = model.url
        proc = subprocess.Popen(argv, env=env, cwd=ROOT, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        deadline = time.monotonic() + 300
        while len(_finished_trials(runs)) < 4 and time.monotonic() < deadline:
            time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGKILL)  # the whole run: ours and Harbor's process
        proc.wait()
        before = _finished_trials(runs)
        assert 4 <= len(before) < 16, "the kill should land mid-run"
        # The trials in flight die with Harbor: no sandbox outlives the run that started it.
        deadline = time.monotonic() + 10
        while _sandboxes() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _sandboxes() == []
        done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
    after = _finished_trials(runs)
    # Every trial finished before the kill is kept as it was (not rerun), none is doubled.
    assert all(after.get(trial) == mtime for trial, mtime in before.items())
    per_task: dict[tuple[str, str], int] = {}
    for trial in after:
        agent = json.loads((runs / trial / "config.json").read_text())["agent"]
        key = (Path(trial).name.split("__")[0], "se" if agent["skills"] else "sd")
        per_task[key] = per_task.get(key, 0) + 1
    assert per_task == {k: 2 for k in PER_TRIAL}
    rows = _rows(runs)
    assert len(rows) == 8
    assert len({(r["task_id"], r["repeat_index"]) for r in rows}) == 8


def test_a_run_begun_as_two_jobs_resumes_as_two(tmp_path: Path, harbor: Path, monkeypatch) -> None:
    """A work folder of the two-job layout (jobs/se, jobs/sd: every run before 5 Dec 2026, made
    here by forcing the old choice) resumes as two jobs: Harbor resumes a job only with the
    job file it began with. A trial left unfinished (its result.json gone, as after a kill)
    is redone, nothing else, and no row is added twice."""
    from hf_skillfollow.harness import _harbor

    monkeypatch.setenv("SKILLFOLLOW_HARBOR", str(harbor))
    monkeypatch.setenv("DOUBLE_API_KEY", "double-key")
    runs = tmp_path / "runs"
    with TerminusModelDouble(TASKS) as model:
        with monkeypatch.context() as forced:
            forced.setattr(_harbor, "_two_jobs_because", lambda *a: "as before 5 Dec 2026")
            out = CliRunner().invoke(cli, _args(model.url, runs, trials=1))
        assert out.exit_code == 0, out.output
        (work,) = runs.glob("harbor-*")
        assert sorted(p.name for p in (work / "jobs").iterdir() if p.is_dir()) == ["sd", "se"]
        (unfinished,) = (work / "jobs" / "sd").glob("sum-sales__*/result.json")
        unfinished.unlink()
        before = sum(model.requests.values())
        again = CliRunner().invoke(cli, _args(model.url, runs, trials=1))
        assert again.exit_code == 0, again.output
        redone = sum(model.requests.values()) - before
    assert "this work folder was begun with two jobs" in again.output
    assert not (work / "jobs" / "both").exists()
    assert redone == PER_TRIAL[("sum-sales", "sd")]
    assert "imported 4 pair(s) (0 new, 4 already recorded)" in again.output
    assert len(_rows(runs)) == 4

"""One Harbor job that ran both arms: its trials split by each trial's recorded agent.

`run --harness harbor` runs the two arms as two agent entries of one job (the same agent, with
and without `skills`), and `import harbor --job PATH` takes such a job. No Harbor needed: the
trial folders are hand-built in the shapes Harbor writes (tests/_trial_fixtures.py), and every
expected count below is written by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hf_skillfollow.cli import cli
from tests._trial_fixtures import atif, write_pool, write_trial

SKILLS = ["/work/skills/pdf-tools", "/work/skills/csv-clean"]
AGENT = {"name": "terminus-2", "model_name": "openai/m", "base_url": "http://127.0.0.1:1/v1",
         "model_api_key_name": "K", "kwargs": {}}  # fmt: skip
COMMON = {"agent": "terminus-2", "version": "2.0.0", "model": "openai/m"}


def _agent(skills: list[str]) -> dict:
    return {**AGENT, "skills": skills}


def _trial(job: Path, name: str, task: str, skills: list[str], reward: float, loads: bool) -> Path:
    """A trial whose config.json and result.json record `skills` (as Harbor's do); `loads`: its
    ATIF transcript reads pdf-tools' SKILL.md."""
    keys = ["cat /runtime/skills/pdf-tools/SKILL.md\n"] if loads else ["ls\n"]
    folder = write_trial(job, name, task, reward=reward, started=f"2026-01-26T03:00:0{name[-1]}",
                         atif=atif(keys, listed=("pdf-tools", "csv-clean") if skills else ()),
                         **COMMON)  # fmt: skip
    config = {"trial_name": name, "agent": _agent(skills)}
    (folder / "config.json").write_text(json.dumps(config))
    result = json.loads((folder / "result.json").read_text())
    (folder / "result.json").write_text(json.dumps({**result, "config": config}))
    return folder


def _job(root: Path) -> Path:
    """Two tasks, SE and SD side by side as Harbor's `for task: for agent` runs them:
    task-a: SE loads pdf-tools and passes, SD fails; task-b: both pass, nothing loaded."""
    job = root / "jobs" / "both"
    job.mkdir(parents=True)
    (job / "config.json").write_text(json.dumps(
        {"job_name": "both", "agents": [_agent(SKILLS), _agent([])]}))  # fmt: skip
    (job / "result.json").write_text(json.dumps({"id": "job", "n_total_trials": 4, "stats": {}}))
    _trial(job, "task-a__1", "task-a", SKILLS, 1.0, loads=True)
    _trial(job, "task-a__2", "task-a", [], 0.0, loads=False)
    _trial(job, "task-b__3", "task-b", SKILLS, 1.0, loads=False)
    _trial(job, "task-b__4", "task-b", [], 1.0, loads=False)
    return job


def _rows(runs: Path) -> dict[str, dict]:
    pq = pytest.importorskip("pyarrow.parquet")
    (run,) = sorted(runs.glob("imported-*"))
    return {r["task_id"]: r for r in pq.read_table(run / "transitions.parquet").to_pylist()}


def _cli(*args: str) -> tuple[int, str]:
    out = CliRunner().invoke(cli, ["import", "harbor", *args])
    return out.exit_code, out.output


def test_one_job_splits_into_arms_by_each_trials_recorded_skills(tmp_path: Path) -> None:
    job, pool = _job(tmp_path), write_pool(tmp_path / "pool")
    code, output = _cli("--job", str(job), "--skills", str(pool), "-o", str(tmp_path / "runs"))
    assert code == 0, output
    assert "2 pair(s) in 1 run folder(s) (2 written, 0 already there); 0 unpaired" in output
    rows = _rows(tmp_path / "runs")
    assert {t: (r["se_correct"], r["sd_correct"]) for t, r in rows.items()} == {
        "task-a": (True, False), "task-b": (True, True)}  # fmt: skip
    assert list(rows["task-a"]["skills_returned"]) == ["pdf-tools"]
    assert {r["arm_integrity"] for r in rows.values()} == {"ok"}
    # the same job again adds no row
    code, output = _cli("--job", str(job), "--skills", str(pool), "-o", str(tmp_path / "runs"))
    assert code == 0 and "(0 written, 2 already there)" in output


def test_each_trials_result_json_is_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trial and its arm come from one read of its result.json (the importers' bounded
    reader of every trial-folder file is counted, per path)."""
    from collections import Counter

    from hf_skillfollow.transcripts import _reader

    job, pool = _job(tmp_path), write_pool(tmp_path / "pool")
    reads: Counter[Path] = Counter()
    real = _reader.read_bounded

    def counted(file: Path, root: Path, max_bytes: int, name: str) -> bytes:
        reads[Path(file)] += 1
        return real(file, root, max_bytes, name)

    monkeypatch.setattr(_reader, "read_bounded", counted)
    code, output = _cli("--job", str(job), "--skills", str(pool), "-o", str(tmp_path / "runs"))
    assert code == 0, output
    results = {path: n for path, n in reads.items() if path.name == "result.json"}
    trials = ["task-a__1", "task-a__2", "task-b__3", "task-b__4"]
    assert results == {job / "result.json": 1, **{job / t / "result.json": 1 for t in trials}}


def test_a_trial_recording_its_arm_two_ways_is_one_line(tmp_path: Path) -> None:
    """A forged config.json claiming the without-skills arm for a trial whose result.json
    records the skills it ran with."""
    job = _job(tmp_path)
    forged = job / "task-a__1" / "config.json"
    forged.write_text(json.dumps({"trial_name": "task-a__1", "agent": _agent([])}))
    code, output = _cli("--job", str(job), "-o", str(tmp_path / "runs"))
    assert code == 1 and len(output.strip().splitlines()) == 1
    assert output.strip() == (
        f"Error: {job / 'task-a__1' / 'result.json'}: field 'config.agent.skills' differs from "
        f"{forged}'s 'agent.skills': the trial's arm is recorded two ways"
    )


def test_a_trial_forged_whole_as_without_skills_is_an_arm_violation(tmp_path: Path) -> None:
    """Both records claim no skills, but the transcript loads one: the arm-integrity check of
    the transcript shows it, as for two jobs."""
    job, pool = _job(tmp_path), write_pool(tmp_path / "pool")
    folder = job / "task-b__4"
    for name in ("config.json", "result.json"):
        data = json.loads((folder / name).read_text())
        (data["config"] if name == "result.json" else data)["agent"]["skills"] = []
        (folder / name).write_text(json.dumps(data))
    trajectory = atif(["cat /runtime/skills/pdf-tools/SKILL.md\n"], listed=())
    (folder / "agent" / "trajectory.json").write_text(json.dumps(trajectory))
    code, output = _cli("--job", str(job), "--skills", str(pool), "-o", str(tmp_path / "runs"))
    assert code == 0, output
    assert "1 arm-integrity violation(s)" in output
    rows = _rows(tmp_path / "runs")
    assert rows["task-a"]["arm_integrity"] == "ok"
    assert rows["task-b"]["arm_integrity"].startswith("violation: ")
    assert "pdf-tools" in rows["task-b"]["arm_integrity"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        # the job's own agents differ beyond the skills
        (lambda job: (job / "config.json").write_text(json.dumps({"agents": [
            _agent(SKILLS), {**_agent([]), "model_name": "openai/other"}]})),
         "config.json: field 'agents': the job's agents differ beyond their skills"),
        # a trial whose agent is none of its job's
        (lambda job: (job / "task-b__3" / "config.json").write_text(json.dumps(
            {"agent": {**_agent(SKILLS), "kwargs": {"temperature": 2}}})),
         "task-b__3/config.json: field 'agent' is none of the agents of its job"),
    ],
)  # fmt: skip
def test_arms_of_a_job_that_differ_beyond_the_skills_are_refused(
    tmp_path: Path, change, expected: str
) -> None:
    job = _job(tmp_path)
    change(job)
    code, output = _cli("--job", str(job), "-o", str(tmp_path / "runs"))
    assert code == 1 and len(output.strip().splitlines()) == 1
    assert expected in output, output


def test_trials_without_their_jobs_config_still_differ_only_in_skills(tmp_path: Path) -> None:
    """Trial folders given without the job's config.json: every trial's agent is compared with
    the first one's, and the with-skills trials must share one list of skills."""
    job = _job(tmp_path)
    (job / "config.json").unlink()
    other = json.loads((job / "task-b__3" / "config.json").read_text())
    other["agent"]["skills"] = SKILLS[:1]
    (job / "task-b__3" / "config.json").write_text(json.dumps(other))
    result = json.loads((job / "task-b__3" / "result.json").read_text())
    result["config"] = other
    (job / "task-b__3" / "result.json").write_text(json.dumps(result))
    code, output = _cli("--job", str(job), "-o", str(tmp_path / "runs"))
    assert code == 1 and "the with-skills trials of a job must have the same skills" in output
    assert f"{job / 'task-b__3' / 'config.json'}: field 'agent.skills' differs" in output


def test_flags_of_the_job_import(tmp_path: Path) -> None:
    job = _job(tmp_path)
    code, output = _cli("-o", str(tmp_path / "runs"))
    assert code == 1 and output.strip() == (
        "Error: give the trials of both arms: --with-skills PATH... and --without-skills "
        "PATH..., or --job PATH... (a job that ran both)"
    )
    code, output = _cli("--job", str(job), "--with-skills", str(job / "task-a__1"),
                        "-o", str(tmp_path / "runs"))  # fmt: skip
    assert code == 1
    assert (
        f"{job / 'task-a__1' / 'result.json'}: given under both --with-skills and --job" in output
    )
    # a trial folder without its config.json has no recorded agent: one line
    (job / "task-a__2" / "config.json").unlink()
    code, output = _cli("--job", str(job), "-o", str(tmp_path / "runs"))
    assert code == 1 and output.strip() == (
        f"Error: {job / 'task-a__2'}: no config.json, so no recorded agent to tell its arm"
    )
    # benchflow records no agent entries: no --job
    code = CliRunner().invoke(cli, ["import", "benchflow", "--job", str(job)]).exit_code
    assert code == 2

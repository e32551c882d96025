"""`run --harness harbor` before Harbor runs: staging, the job file(s), the flags.

No Harbor needed (default suite): these check what the harness hands Harbor.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from hf_skillfollow.cli import cli
from hf_skillfollow.harness import _stage
from hf_skillfollow.harness._env_recipe import read_dockerfile
from hf_skillfollow.harness._errors import HarnessError
from hf_skillfollow.harness._harbor import (
    BOTH,
    INJECT,
    NUDGE,
    HarborOptions,
    _stage_jobs,
    arm_differences,
    job_config,
)
from hf_skillfollow.skills import load_pool

DATA = Path(__file__).resolve().parents[1] / "toolkit" / "hf_skillfollow" / "_data" / "harbor_tasks"


def _task(root: Path, name: str, *, own_skills: bool) -> Path:
    task = root / name
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "instruction.md").write_text("do it\n")
    (task / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    toml = '[environment]\nworkdir = "/app"\n'
    if own_skills:
        toml += 'skills_dir = "/root/.claude/skills"\n'
        (task / "environment" / "skills" / "helper").mkdir(parents=True)
        (task / "environment" / "skills" / "helper" / "SKILL.md").write_text(
            "---\nname: helper\n---\n"
        )
        (task / "environment" / "Dockerfile").write_text(
            "FROM ubuntu:24.04\nWORKDIR /app\nCOPY skills /root/.claude/skills\nCOPY data.txt /app/\n"
        )
        (task / "environment" / "data.txt").write_text("x")
    (task / "task.toml").write_text(toml)
    return task


def test_without_skills_copy_loses_the_tasks_own_skills(tmp_path: Path) -> None:
    _task(tmp_path / "in", "plain", own_skills=False)
    _task(tmp_path / "in", "ships", own_skills=True)
    (tmp_path / "secret").write_text("host file")
    os.symlink(tmp_path / "secret", tmp_path / "in" / "plain" / "environment" / "link")
    tasks = _stage.find_tasks(tmp_path / "in")
    staged = _stage.stage_tasks(tasks, tmp_path / "se", tmp_path / "sd")
    assert staged.names == ["plain", "ships"] and staged.own_skills == ["ships"]
    se, sd = tmp_path / "se" / "ships", tmp_path / "sd" / "ships"
    assert (se / "environment" / "skills" / "helper" / "SKILL.md").is_file()
    assert not (sd / "environment" / "skills").exists()
    assert "COPY skills" in (se / "environment" / "Dockerfile").read_text()
    assert (sd / "environment" / "Dockerfile").read_text() == (
        "FROM ubuntu:24.04\nWORKDIR /app\nCOPY data.txt /app/\n"
    )
    assert "skills_dir" in (se / "task.toml").read_text()
    assert "skills_dir" not in (sd / "task.toml").read_text()
    # links are not copied: a task folder cannot hand a host file to the trial
    assert not (tmp_path / "se" / "plain" / "environment" / "link").exists()


def test_bad_tasks_folder_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(_stage.StageError, match="no task folder"):
        _stage.find_tasks(tmp_path / "empty")
    with pytest.raises(_stage.StageError, match="not a folder"):
        _stage.find_tasks(tmp_path / "missing")


def test_staged_pool_is_what_the_loader_accepted(tmp_path: Path) -> None:
    pool = load_pool(DATA / "skills")
    folders = _stage.stage_pool(pool, tmp_path / "skills")
    assert sorted(f.name for f in folders) == ["house-slugs", "ledger-totals", "status-report"]
    script = tmp_path / "skills" / "ledger-totals" / "scripts" / "ledger_total.py"
    assert script.read_text() == (DATA / "skills/ledger-totals/scripts/ledger_total.py").read_text()
    assert os.access(script, os.X_OK)  # the agent runs it
    assert load_pool(tmp_path / "skills").content_hash == pool.content_hash


@pytest.mark.parametrize("loading", ["on-demand", "nudge", "inject"])
def test_job_files_differ_only_in_the_skills(tmp_path: Path, loading: str) -> None:
    options = HarborOptions(model="openai/m", base_url="http://127.0.0.1:1/v1", tasks=str(DATA / "tasks"),
                            skills=DATA / "skills", trials=2, loading=loading)  # type: ignore[arg-type]  # fmt: skip
    folders = [tmp_path / "skills" / "a"]
    se = job_config(options, "se", tmp_path, folders, "## Skill: a\n\nbody")
    sd = job_config(options, "sd", tmp_path, folders, "## Skill: a\n\nbody")
    assert arm_differences({"se": se, "sd": sd}) == []
    assert se["agents"][0]["skills"] == [str(folders[0])] and sd["agents"][0]["skills"] == []
    assert sd["extra_instructions"] == []
    expected = {"on-demand": [], "nudge": [NUDGE.format(skills_dir="/runtime/skills")],
                "inject": [INJECT.format(bodies="## Skill: a\n\nbody")]}[loading]  # fmt: skip
    assert se["extra_instructions"] == expected
    assert se["environment"] == {
        "import_path": "hf_skillfollow.harness._env:SandboxEnvironment",
        "delete": True,
    }
    assert (se["n_attempts"], se["datasets"][0]["path"]) == (2, str(tmp_path / "tasks" / "se"))
    # Terminus types from Harbor's process: no port of the host is opened to the trial; an
    # agent running inside gets the endpoint's port through the relay, and nothing else
    assert "kwargs" not in se["environment"]
    inside = job_config(
        HarborOptions(**{**options.__dict__, "agent": "claude-code"}), "se", tmp_path, folders, ""
    )
    assert inside["environment"]["kwargs"] == {"loopback_ports": [1]}
    # any other difference is caught
    sd["agents"][0]["model_name"] = "openai/other"
    sd["n_concurrent_trials"] = 9
    assert arm_differences({"se": se, "sd": sd}) == ["agents", "n_concurrent_trials"]


def test_dockerfile_subset(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(
        "FROM ubuntu:24.04\nWORKDIR /work\nENV A=1 B=two\nCOPY data.txt /work/\n"
    )
    recipe = read_dockerfile(tmp_path)
    assert (recipe.workdir, recipe.env, recipe.copies) == (
        "/work",
        {"A": "1", "B": "two"},
        [("data.txt", "/work/")],
    )
    (tmp_path / "Dockerfile").write_text("FROM ubuntu\nRUN apt-get install -y jq\n")
    with pytest.raises(ValueError, match=r"Dockerfile:2: RUN needs an image build"):
        read_dockerfile(tmp_path)


def _run(*args: str) -> tuple[int, str]:
    out = CliRunner().invoke(cli, ["run", *args])
    return out.exit_code, out.output


def test_harness_flags(tmp_path: Path) -> None:
    code, output = _run("--agent", "terminus-2")
    assert code == 2 and "--agent: only with --harness" in output
    code, output = _run("--harness", "harbor", "--top-k", "3", "--tasks", str(tmp_path))
    assert code == 2 and "--top-k: not used with --harness harbor" in output
    code, output = _run("--harness", "harbor", "--model", "openai/m", "--tasks", str(DATA / "tasks"),
                        "--skills", str(tmp_path / "nope"), "-o", str(tmp_path / "runs"))  # fmt: skip
    assert code == 1 and "--skills" in output and len(output.strip().splitlines()) == 1
    code, output = _run("--harness", "harbor", "--model", "openai/m", "--tasks", str(DATA / "tasks"),
                        "--skills", str(DATA / "skills"), "--trials", "0")  # fmt: skip
    assert code == 1 and "--trials 0: at least 1" in output


def test_example_tasks_are_harbor_tasks() -> None:
    tasks = _stage.find_tasks(DATA / "tasks")
    assert [t.name for t in tasks] == ["count-lines", "make-slug", "sum-sales", "write-report"]
    for task in tasks:
        assert 'network_mode = "no-network"' in (task / "task.toml").read_text()
        assert os.access(task / "tests" / "test.sh", os.X_OK)
    assert (
        json.dumps(load_pool(DATA / "skills").names)
        == '["house-slugs", "ledger-totals", "status-report"]'
    )


def test_resume_carries_a_new_endpoint_into_finished_trials(tmp_path: Path) -> None:
    """The embedded server's port is new on every run: Harbor resumes only when the job file,
    its lock and each finished trial's config and lock name the endpoint it plans with."""
    from hf_skillfollow.harness._harbor import _carry_endpoint

    old = {"name": "terminus-2", "base_url": "http://127.0.0.1:1/v1", "model_api_key_name": "K"}
    job = tmp_path / "jobs" / "se"
    (job / "done__1").mkdir(parents=True)
    (job / "running__2").mkdir()
    (job / "config.json").write_text(json.dumps({"agents": [old]}))
    (job / "lock.json").write_text(json.dumps({"trials": [{"agent": old}, {"agent": old}]}))
    for trial in ("done__1", "running__2"):
        (job / trial / "config.json").write_text(json.dumps({"agent": old}))
        (job / trial / "lock.json").write_text(json.dumps({"agent": old}))
    (job / "done__1" / "result.json").write_text(json.dumps({"config": {"agent": old}}))
    new = {**old, "base_url": "http://127.0.0.1:2/v1", "model_api_key_name": "NEW"}
    (tmp_path / "se.json").write_text(json.dumps({"agents": [new]}))
    _carry_endpoint(job / "config.json", tmp_path / "se.json")

    def read(*parts: str) -> dict:
        return json.loads(job.joinpath(*parts).read_text())

    assert read("config.json")["agents"] == [new]
    assert read("lock.json")["trials"] == [{"agent": new}, {"agent": new}]
    assert read("done__1", "config.json") == read("done__1", "lock.json") == {"agent": new}
    # what the finished trial used stays recorded; an unfinished trial is redone, not edited
    assert read("done__1", "result.json") == {"config": {"agent": old}}
    assert read("running__2", "config.json") == {"agent": old}


def test_resume_holds_one_job_file_at_a_time(tmp_path: Path) -> None:
    """A job of many finished trials is rewritten one file at a time: its parsed files are
    never all in memory at once (each may be up to the reader's 16 MiB)."""
    import tracemalloc

    from hf_skillfollow.harness._harbor import _carry_endpoint
    from hf_skillfollow.importers._walk import read_json

    old = {"name": "terminus-2", "base_url": "http://127.0.0.1:1/v1", "model_api_key_name": "K"}
    bulk = [f"line {i} of a long recorded history" for i in range(20_000)]
    job = tmp_path / "jobs" / "se"
    job.mkdir(parents=True)
    (job / "config.json").write_text(json.dumps({"agents": [old]}))
    for i in range(24):
        trial = job / f"done__{i}"
        trial.mkdir()
        (trial / "config.json").write_text(json.dumps({"agent": old, "history": bulk}))
        (trial / "result.json").write_text("{}")
    (tmp_path / "se.json").write_text(json.dumps({"agents": [{**old, "base_url": "x"}]}))
    tracemalloc.start()
    try:
        # one file's share: read the way the resume reads it, then written back
        one_file = job / "done__0" / "config.json"
        json.dumps(read_json(one_file, job), indent=2)
        one = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        _carry_endpoint(job / "config.json", tmp_path / "se.json")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # one file at a time: about one file's peak; all at once: that and 23 more parsed files
    assert peak < 1.5 * one, (peak, one)
    assert json.loads((job / "done__23" / "config.json").read_text())["agent"]["base_url"] == "x"


def test_resume_refuses_an_oversized_or_malformed_job_file_naming_it(tmp_path: Path) -> None:
    """The job folder's files are Harbor's (third-party): read bounded, and a bad one stops the
    resume with one line naming the file, before anything is rewritten."""
    from hf_skillfollow.harness._harbor import _carry_endpoint
    from hf_skillfollow.importers._walk import MAX_JSON_BYTES

    old = {"name": "terminus-2", "base_url": "http://127.0.0.1:1/v1", "model_api_key_name": "K"}
    job = tmp_path / "jobs" / "se"
    (job / "done__1").mkdir(parents=True)
    (job / "config.json").write_text(json.dumps({"agents": [old]}))
    (job / "done__1" / "result.json").write_text("{}")
    (tmp_path / "se.json").write_text(json.dumps({"agents": [{**old, "base_url": "x"}]}))
    trial_config = job / "done__1" / "config.json"
    bad = {
        "{not json": "not JSON",
        "[" * 100 + "]" * 100: "nested 100 deep",
        " " * (MAX_JSON_BYTES + 1): f"{MAX_JSON_BYTES + 1} bytes (limit {MAX_JSON_BYTES})",
    }
    for text, why in bad.items():
        trial_config.write_text(text)
        with pytest.raises(HarnessError) as caught:
            _carry_endpoint(job / "config.json", tmp_path / "se.json")
        message = str(caught.value)
        assert str(trial_config) in message and why in message and "\n" not in message
        assert message.startswith(f"cannot resume the job in {job}: ")
        # nothing rewritten, the job's own file (read before the bad one) included
        assert trial_config.read_text() == text
        assert json.loads((job / "config.json").read_text()) == {"agents": [old]}


def test_harbor_runs_without_its_telemetry_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Harbor reports to PostHog by default: the harness turns it off, a user's own setting wins."""
    from hf_skillfollow.harness._harbor import harbor_env

    monkeypatch.delenv("HARBOR_TELEMETRY", raising=False)
    assert harbor_env()["HARBOR_TELEMETRY"] == "0"
    monkeypatch.setenv("HARBOR_TELEMETRY", "1")
    assert harbor_env()["HARBOR_TELEMETRY"] == "1"


def _options(**changes: object) -> HarborOptions:
    return HarborOptions(**{"model": "openai/m", "base_url": "http://127.0.0.1:1/v1",
                            "tasks": str(DATA / "tasks"), "skills": DATA / "skills", "trials": 2,
                            "concurrency": 8, **changes})  # type: ignore[arg-type]  # fmt: skip


def test_one_job_of_both_arms_differs_only_in_the_skills(tmp_path: Path) -> None:
    """On-demand loading over tasks without their own skills: one Harbor job whose two agent
    entries are the arms (SE's first), one task copy, every trial slot shared."""
    folders = [tmp_path / "skills" / "a", tmp_path / "skills" / "b"]
    job = job_config(_options(), BOTH, tmp_path, folders, "")
    assert arm_differences({BOTH: job}) == []
    se, sd = job["agents"]
    assert se["skills"] == [str(f) for f in folders] and sd["skills"] == []
    assert {k: v for k, v in se.items() if k != "skills"} == {
        "name": "terminus-2", "model_name": "openai/m", "base_url": "http://127.0.0.1:1/v1",
        "model_api_key_name": None, "kwargs": {}}  # fmt: skip
    assert {k: v for k, v in sd.items() if k != "skills"} == {
        k: v for k, v in se.items() if k != "skills"}  # fmt: skip
    assert (job["job_name"], job["n_concurrent_trials"], job["extra_instructions"]) == (
        "both",
        8,
        [],
    )
    assert job["datasets"] == [{"path": str(tmp_path / "tasks" / "both")}]
    # two jobs split the slots; the one job has them all
    assert job_config(_options(), "sd", tmp_path, folders, "")["n_concurrent_trials"] == 4
    # an agent entry that differs beyond the skills, or an arm with the other's skills, is caught
    job["agents"][1] = {**sd, "kwargs": {"temperature": 0}}
    assert arm_differences({BOTH: job}) == ["agents"]
    job["agents"] = [sd, se]
    assert arm_differences({BOTH: job}) == ["skills"]
    job["agents"] = [se]
    assert arm_differences({BOTH: job}) == ["agents"]


def test_arms_share_a_job_only_where_harbor_allows(tmp_path: Path) -> None:
    _task(tmp_path / "plain", "a", own_skills=False)
    _task(tmp_path / "ships", "a", own_skills=False)
    _task(tmp_path / "ships", "b", own_skills=True)
    work = tmp_path / "work"
    jobs, notes = _stage_jobs(_options(tasks=str(tmp_path / "plain")), work, False)
    assert jobs == [BOTH] and notes == []
    assert sorted(p.name for p in (work / "tasks").iterdir()) == ["both"]
    # a task that ships skills: SD needs its own copy without them, so two jobs, said why
    jobs, notes = _stage_jobs(_options(tasks=str(tmp_path / "ships")), work, False)
    assert jobs == ["se", "sd"]
    assert sorted(p.name for p in (work / "tasks").iterdir()) == ["sd", "se"]
    assert not (work / "tasks" / "sd" / "b" / "environment" / "skills").exists()
    assert notes[-1] == ("note: the arms run as two Harbor jobs, each with half of --concurrency: "
                         "1 task(s) ship their own skills, which the without-skills arm's copy "
                         "of the tasks must not have")  # fmt: skip
    # a loading line is job-wide and SE's alone: two jobs
    jobs, notes = _stage_jobs(_options(tasks=str(tmp_path / "plain"), loading="nudge"),
                              tmp_path / "nudge", False)  # fmt: skip
    assert jobs == ["se", "sd"] and "--loading nudge adds a line" in notes[-1]


def test_a_work_folder_of_two_jobs_resumes_as_two(tmp_path: Path) -> None:
    """A run begun before one job existed (jobs/se, jobs/sd) keeps its layout: Harbor resumes a
    job only with the job file it began with."""
    _task(tmp_path / "plain", "a", own_skills=False)
    work = tmp_path / "work"
    (work / "jobs" / "sd").mkdir(parents=True)
    jobs, notes = _stage_jobs(_options(tasks=str(tmp_path / "plain")), work, False)
    assert jobs == ["se", "sd"] and "begun with two jobs" in notes[-1]
    # a run begun as one job whose tasks now ship skills cannot go on as either: one line
    _task(tmp_path / "now", "a", own_skills=True)
    other = tmp_path / "other"
    (other / "jobs" / BOTH).mkdir(parents=True)
    with pytest.raises(
        HarnessError, match=r"began as one job of both arms, but now 1 task\(s\) ship"
    ):
        _stage_jobs(_options(tasks=str(tmp_path / "now")), other, False)


def test_resume_carries_the_endpoint_into_both_agent_entries(tmp_path: Path) -> None:
    from hf_skillfollow.harness._harbor import _carry_endpoint

    old = {"name": "terminus-2", "base_url": "http://127.0.0.1:1/v1", "model_api_key_name": "K"}
    se_old, sd_old = {**old, "skills": ["/s/a"]}, {**old, "skills": []}
    job = tmp_path / "jobs" / BOTH
    for trial, agent in (("a__1", se_old), ("a__2", sd_old)):
        (job / trial).mkdir(parents=True)
        (job / trial / "config.json").write_text(json.dumps({"agent": agent}))
        (job / trial / "result.json").write_text(json.dumps({"config": {"agent": agent}}))
    (job / "config.json").write_text(json.dumps({"agents": [se_old, sd_old]}))
    new = {"base_url": "http://127.0.0.1:2/v1", "model_api_key_name": "NEW"}
    (tmp_path / "both.json").write_text(json.dumps(
        {"agents": [{**se_old, **new}, {**sd_old, **new}]}))  # fmt: skip
    _carry_endpoint(job / "config.json", tmp_path / "both.json")
    assert json.loads((job / "config.json").read_text())["agents"] == [
        {**se_old, **new}, {**sd_old, **new}]  # fmt: skip
    assert json.loads((job / "a__1" / "config.json").read_text()) == {"agent": {**se_old, **new}}
    assert json.loads((job / "a__2" / "config.json").read_text()) == {"agent": {**sd_old, **new}}

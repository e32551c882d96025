"""`run --harness harbor`: items left after the 5 Dec attack pass (default suite, no Harbor).

Each test failed on the code before its mend (docs/harness.md says what is done now).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hf_skillfollow.cli import cli
from tests._trial_fixtures import write_pool
from tests.test_harbor_import_job import _job


def _task(root: Path, name: str, toml: str = "[environment]\n") -> Path:
    task = root / name
    (task / "tests").mkdir(parents=True)
    (task / "instruction.md").write_text("do it\n")
    (task / "task.toml").write_text(toml)
    return task


def _harbor_standin(tmp_path: Path) -> Path:
    """A stand-in for Harbor's command (Harbor is not installed in the default suite): `run -c
    <work>/both.json` puts a job that ran both arms where Harbor writes it, its trials
    hand-built in Harbor's shapes (tests/test_harbor_import_job.py: task-a SE 1 / SD 0, task-b
    1 / 1); `job resume` finds the job finished. Everything after the job, the import of its
    trial folders into run folders, is the real code."""
    prepared = _job(tmp_path / "prepared")
    harbor = tmp_path / "harbor"
    harbor.write_text(
        f'#!/bin/sh\n[ "$1" = run ] && cp -R "{prepared}" "$(dirname "$3")/jobs/both"\nexit 0\n'
    )
    harbor.chmod(0o755)
    return harbor


def _run(tmp_path: Path, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [
        "run", "--harness", "harbor", "--model", "openai/m", "--base-url",
        "http://127.0.0.1:9/v1", "--env", "docker", "--tasks", str(tmp_path / "tasks"),
        "--skills", str(tmp_path / "pool"), "-o", str(tmp_path / "runs"), "--no-report", *extra,
    ])  # fmt: skip
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


def test_set_aside_bad_records_reaches_the_harness_runs_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The flag was dropped on the --harness path (never passed to import_runs), and a damaged
    # records.jsonl stopped every re-run with advice to "import again with
    # --set-aside-bad-records", a command this run is not: the run could not be mended.
    monkeypatch.setenv("SKILLFOLLOW_HARBOR", str(_harbor_standin(tmp_path)))
    write_pool(tmp_path / "pool")
    _task(tmp_path / "tasks", "task-a")
    _task(tmp_path / "tasks", "task-b")
    code, output = _run(tmp_path)
    assert code == 0 and "imported 2 pair(s) (2 new, 0 already recorded)" in output, output
    (run,) = (tmp_path / "runs").glob("run-harbor-*")
    records = run / "records.jsonl"
    lines = records.read_text().splitlines()
    assert len(lines) == 2
    records.write_text("not json\n" + lines[1] + "\n")  # the first pair's line damaged

    code, output = _run(tmp_path)
    assert code == 1
    error = output.strip().splitlines()[-1]
    assert error == (
        f"Error: {records}:1: not valid JSON (Expecting value at column 1); to move the bad "
        "line(s) to records.rejected and write their pairs again, give the same `run --harness "
        "harbor` command with --set-aside-bad-records"
    )
    assert records.read_text().startswith("not json\n")  # nothing moved without the flag

    code, output = _run(tmp_path, "--set-aside-bad-records")
    assert code == 0, output
    assert "imported 2 pair(s) (1 new, 1 already recorded)" in output, output
    assert (run / "records.rejected").read_text().startswith("not json")
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    assert sorted(r["task_id"] for r in rows) == ["task-a", "task-b"]
    # the flag is how to mend, not what ran: the same work folder, no second one
    assert len(list((tmp_path / "runs").glob("harbor-*"))) == 1


def _staged_run(tmp_path: Path, env: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [
        "run", "--harness", "harbor", "--model", "openai/m", "--base-url",
        "http://127.0.0.1:9/v1", "--env", env, "--tasks", str(tmp_path / "in"),
        "-o", str(tmp_path / "runs"),
    ])  # fmt: skip
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("environment", "key", "value", "why"),
    [
        ("memory_mb = {over}", "memory_mb", "{over}", "over"),
        ("storage_mb = {over}", "storage_mb", "{over}", "over"),
        ("memory_mb = -1", "memory_mb", "-1", "under"),
        ('memory = "{over_g}G"', "memory_mb (written memory = '{over_g}G')", "{over_g_mb}", "over"),
    ],
)
def test_a_task_sized_over_the_sandbox_s_ceiling_is_refused_before_harbor_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, environment: str, key: str, value: str,
    why: str,
) -> None:  # fmt: skip
    # The ceiling was checked only when each trial started inside Harbor: the run staged the
    # task, started Harbor's job(s), and every trial of both arms ended in the same refusal,
    # one job start each (seen in the harbor-marked test_safe_path_and_ceilings.py). A negative
    # size was refused at staging, but in other words than the trial's.
    from hf_skillfollow.harness._nsinit import SIZE_CEILING_FRACTION, size_ceiling_mb

    monkeypatch.setenv("SKILLFOLLOW_HARBOR", "/bin/false")  # never reached
    ceiling = size_ceiling_mb()
    over_g = ceiling // 1024 + 1
    fill = {"over": ceiling + 1, "over_g": over_g, "over_g_mb": over_g * 1024}
    toml = "[environment]\n" + environment.format(**fill) + "\n"
    task = _task(tmp_path / "in", "greedy", toml)
    _task(tmp_path / "in", "fine", "[environment]\nmemory_mb = 4096\nstorage_mb = 2048\n")
    code, output = _staged_run(tmp_path, "sandbox")
    assert code == 1
    said = key.format(**fill) + " = " + value.format(**fill)
    tail = (
        f"over the sandbox's ceiling of {ceiling} (MB, {SIZE_CEILING_FRACTION:.0%} of this "
        "host's memory)" if why == "over" else "under 0"
    )  # fmt: skip
    assert output.strip() == f"Error: {task / 'task.toml'}: [environment] {said}: {tail}"
    assert not list((tmp_path / "runs").glob("harbor-*/jobs/*"))  # no job was begun


def test_the_sandbox_s_ceiling_is_not_another_environment_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Docker and the cloud environments size a trial themselves: a task asking for more than
    # half of this host's memory is theirs to run; staging passes it and Harbor is started.
    from hf_skillfollow.harness._nsinit import size_ceiling_mb

    monkeypatch.setenv("SKILLFOLLOW_HARBOR", "/bin/false")
    _task(tmp_path / "in", "big", f"[environment]\nmemory_mb = {size_ceiling_mb() + 1}\n")
    code, output = _staged_run(tmp_path, "docker")
    assert code == 1 and "harbor (both job) exited with 1" in output, output


def _skill_md(folder: Path, name: str) -> None:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: the task's own\n---\nbody\n")


@pytest.mark.parametrize(
    ("shipped", "dockerfile", "name"),
    [
        ("skills/pdf-tools", None, "pdf-tools"),  # environment/skills/, same folder name
        ("skills/my-pdf", None, "PDF-Tools"),  # another folder, the name case-folded
        ("tools/pdf-tools", "FROM x\nCOPY tools/ /root/.claude/skills/\n", "pdf-tools"),
    ],
)
def test_a_task_skill_named_as_a_pool_skill_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shipped: str, dockerfile: str | None,
    name: str,
) -> None:  # fmt: skip
    # Staging kept the task's skill in the with-skills copy and Harbor installed the pool's
    # under the same name: Harbor writes the pool's into <skills_dir>/<name> and agents copy
    # that folder into their own with `cp -r`, so the with-skills arm had the pool's skill,
    # the task's, or the two merged, while its rows said the pool's was used. The run went on
    # to Harbor (here /bin/false: "harbor (se job) exited with 1").
    monkeypatch.setenv("SKILLFOLLOW_HARBOR", "/bin/false")
    write_pool(tmp_path / "pool")  # pdf-tools, csv-clean
    task = _task(tmp_path / "in", "clash")
    _skill_md(task / "environment" / shipped, name)
    if dockerfile:
        (task / "environment" / "Dockerfile").write_text(dockerfile)
    _task(tmp_path / "in", "plain")
    result = CliRunner().invoke(cli, [
        "run", "--harness", "harbor", "--model", "openai/m", "--base-url",
        "http://127.0.0.1:9/v1", "--env", "docker", "--tasks", str(tmp_path / "in"),
        "--skills", str(tmp_path / "pool"), "-o", str(tmp_path / "runs"),
    ])  # fmt: skip
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"Error: {task / 'environment' / shipped / 'SKILL.md'}: the task ships a skill named "
        f"'{name}', as the pool does ('pdf-tools'): the "
        "with-skills arm would get one skill of that name made of the two, and its rows could "
        "not say which it used; rename the task's skill or the pool's"
    )
    assert not list((tmp_path / "runs").glob("harbor-*/jobs/*"))  # no job was begun


def test_a_task_skill_of_another_name_is_kept_in_se_and_removed_from_sd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The documented rule for a task's own skills is unchanged when no name is shared: the
    # with-skills arm has them beside the pool's, the without-skills arm has neither.
    monkeypatch.setenv("SKILLFOLLOW_HARBOR", "/bin/false")
    write_pool(tmp_path / "pool")
    task = _task(tmp_path / "in", "own")
    _skill_md(task / "environment" / "skills" / "ledger", "ledger")
    result = CliRunner().invoke(cli, [
        "run", "--harness", "harbor", "--model", "openai/m", "--base-url",
        "http://127.0.0.1:9/v1", "--env", "docker", "--tasks", str(tmp_path / "in"),
        "--skills", str(tmp_path / "pool"), "-o", str(tmp_path / "runs"),
    ])  # fmt: skip
    assert result.exit_code == 1 and "harbor (se job) exited with 1" in result.output
    (work,) = (tmp_path / "runs").glob("harbor-*")
    assert (work / "tasks" / "se" / "own" / "environment" / "skills" / "ledger").is_dir()
    assert not (work / "tasks" / "sd" / "own" / "environment" / "skills").exists()


def _linked_harbor(tmp_path: Path, shebang: str) -> Path:
    """Harbor's console script in a venv of its own, reached through a link in another folder,
    as `pipx install harbor` or `uv tool install harbor` puts `harbor` on PATH (a link beside
    no `python`). The script and the interpreter are stand-ins (Harbor is not installed in the
    default suite); the interpreter is this one, which has no Harbor: the probe must fail."""
    import os
    import sys

    venv = tmp_path / "tools" / "harbor" / "bin"
    venv.mkdir(parents=True)
    os.symlink(sys.executable, venv / "python")
    (venv / "harbor").write_text(shebang.format(venv=venv) + "\nexit 0\n")
    (venv / "harbor").chmod(0o755)
    on_path = tmp_path / "local-bin"
    on_path.mkdir()
    os.symlink(venv / "harbor", on_path / "harbor")
    return venv


def test_the_sandbox_probe_uses_the_interpreter_of_a_linked_harbor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The probe ran `<folder of the link>/python`: with Harbor on PATH through a link there is
    # none, and the run's one line was "[Errno 2] No such file or directory: '.../python'",
    # naming neither Harbor nor what to do.
    venv = _linked_harbor(tmp_path, "#!{venv}/python")
    monkeypatch.setenv("SKILLFOLLOW_HARBOR", str(tmp_path / "local-bin" / "harbor"))
    _task(tmp_path / "in", "t")
    code, output = _staged_run(tmp_path, "sandbox")
    assert code == 1
    assert output.strip() == (
        "Error: --env sandbox: hf_skillfollow.harness._env does not import in Harbor's "
        f"interpreter ({venv / 'python'}); install this package there without dependencies: "
        f"{venv / 'python'} -m pip install --no-deps <hf-skillfollow> (.ci/setup-harbor does)"
    )


def test_a_harbor_without_an_interpreter_to_probe_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A `harbor` that is no Python console script, with no `python` beside it: one line naming
    # the interpreter looked for, not an OSError's own words.
    _linked_harbor(tmp_path, "#!/bin/sh")
    (tmp_path / "tools" / "harbor" / "bin" / "python").unlink()
    monkeypatch.setenv("SKILLFOLLOW_HARBOR", str(tmp_path / "local-bin" / "harbor"))
    _task(tmp_path / "in", "t")
    code, output = _staged_run(tmp_path, "sandbox")
    python = tmp_path / "tools" / "harbor" / "bin" / "python"
    assert code == 1
    assert output.strip() == (
        f"Error: --env sandbox: cannot run Harbor's interpreter {python} (No such file or "
        "directory) to check that the sandbox environment imports there; point "
        "$SKILLFOLLOW_HARBOR at the harbor command of the environment Harbor is installed in"
    )

"""Review of session 22's import and harness commits (brief R1): attacks on the new code.

Real files and folders in the shapes the harnesses write (tests/_trial_fixtures.py); no
double of our own code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pyarrow.parquet")

from hf_skillfollow.importers import import_runs  # noqa: E402
from tests._trial_fixtures import cc_stream, write_job, write_trial  # noqa: E402

_DEEP = "[" * 100_000  # past the JSON parser's recursion limit


def _one_task_jobs(root: Path) -> tuple[Path, Path]:
    se, sd = write_job(root / "with"), write_job(root / "without")
    write_trial(se, "a__se", "task-a", stream=cc_stream())
    write_trial(sd, "a__sd", "task-a", reward=0.0, stream=cc_stream(init=False))
    return se, sd


_MANIFEST = json.dumps({"cell_id": "deadbeef", "task_ids": ["task-a"]})
_RECORD = {"task_id": "task-a", "transition": {"task_id": "task-a"}}


@pytest.mark.parametrize(
    ("manifest", "records"),
    [
        (_DEEP, None),
        (_MANIFEST, json.dumps({**_RECORD, "traces": [{"arm": "se", "scorer_details": _DEEP}]})),
        (_MANIFEST, json.dumps(_RECORD)[:-1] + ', "traces": [], "x": ' + _DEEP),
    ],
    ids=["manifest", "scorer_details", "record"],
)
def test_another_cells_folder_nested_past_the_parser_is_passed_over(
    tmp_path: Path, manifest: str, records: str | None
) -> None:
    # 9ac292d reads every other cell's run folder of the output folder; before, one whose
    # manifest, record line or a trace's scorer_details nests past json's recursion limit
    # stopped the import with a RecursionError traceback (seen: `import harbor` on the CLI)
    se, sd = _one_task_jobs(tmp_path)
    out = tmp_path / "runs"
    odd = out / "imported-deadbeef-r0"
    odd.mkdir(parents=True)
    (odd / "manifest.json").write_text(manifest)
    if records is not None:
        (odd / "records.jsonl").write_text(records + "\n")
    result = import_runs("harbor", [se], [sd], output_dir=out)
    assert result.n_written == 1
    assert not [n for n in result.notes if n.startswith("the same trials of")]


# ---------------------------------------------- harness: a task skill COPY'd to a pool name


def _task_with_copied_skill(root: Path, dockerfile: str) -> Path:
    """A Harbor task whose environment/mine/SKILL.md (named 'mine') the Dockerfile copies."""
    task = root / "clash"
    (task / "tests").mkdir(parents=True)
    (task / "instruction.md").write_text("do it\n")
    (task / "task.toml").write_text("[environment]\n")
    (task / "environment" / "mine").mkdir(parents=True)
    (task / "environment" / "mine" / "SKILL.md").write_text(
        "---\nname: mine\ndescription: the task's own\n---\nbody\n"
    )
    (task / "environment" / "mine" / "helper.py").write_text("print('the task's')\n")
    (task / "environment" / "Dockerfile").write_text("FROM x\n" + dockerfile + "\n")
    return task


def _harness_run(tmp_path: Path) -> tuple[int, str]:
    from click.testing import CliRunner

    from hf_skillfollow.cli import cli

    result = CliRunner().invoke(cli, [
        "run", "--harness", "harbor", "--model", "openai/m", "--base-url",
        "http://127.0.0.1:9/v1", "--env", "docker", "--tasks", str(tmp_path / "in"),
        "--skills", str(tmp_path / "pool"), "-o", str(tmp_path / "runs"),
    ])  # fmt: skip
    return result.exit_code, result.output


@pytest.mark.parametrize(
    "dockerfile",
    [
        "COPY mine /root/.agents/skills/pdf-tools",
        "COPY mine/ /root/.agents/skills/pdf-tools/",
        'COPY ["mine", "/root/.agents/skills/pdf-tools"]',
        "COPY mine/SKILL.md /root/.agents/skills/pdf-tools/SKILL.md",
        "COPY mine/SKILL.md /root/.agents/skills/pdf-tools/",
    ],
)
def test_a_task_skill_copied_to_a_pool_skills_folder_name_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dockerfile: str
) -> None:
    # fe0e29f compared the source folder's name ('mine') and the `name` field only. Docker
    # copies a folder's contents into the destination, so the skill lands in
    # ~/.agents/skills/pdf-tools/, where Codex, Pi, Goose and others `cp -r <skills_dir>/*
    # $HOME/.agents/skills/` (Harbor 0.26 agents/installed/codex.py:1943): the pool's pdf-tools
    # merged file by file into the task's (its helper.py kept). Before, the run went on to
    # Harbor (here /bin/false: "harbor (se job) exited with 1").
    from tests._trial_fixtures import write_pool

    monkeypatch.setenv("SKILLFOLLOW_HARBOR", "/bin/false")
    write_pool(tmp_path / "pool")  # pdf-tools, csv-clean
    task = _task_with_copied_skill(tmp_path / "in", dockerfile)
    code, output = _harness_run(tmp_path)
    assert code == 1
    assert output.strip() == (
        f"Error: {task / 'environment' / 'mine' / 'SKILL.md'}: the task ships a skill named "
        "'pdf-tools', as the pool does ('pdf-tools'): the with-skills arm would get one skill "
        "of that name made of the two, and its rows could not say which it used; rename the "
        "task's skill or the pool's"
    )
    assert not list((tmp_path / "runs").glob("harbor-*/jobs/*"))  # no job was begun


def test_a_task_skill_copied_under_its_own_name_still_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # guard: the same copy to a folder no pool skill has is the task's own skill, kept in se
    from tests._trial_fixtures import write_pool

    monkeypatch.setenv("SKILLFOLLOW_HARBOR", "/bin/false")
    write_pool(tmp_path / "pool")
    _task_with_copied_skill(tmp_path / "in", "COPY mine /root/.agents/skills/ledger")
    code, output = _harness_run(tmp_path)
    assert code == 1 and "harbor (se job) exited with 1" in output, output


# ------------------------------------ harness: a run folder error that no set-aside mends


def test_a_harness_run_folders_broken_manifest_is_not_sent_to_set_aside_bad_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 5895fb2 rewrote every RunDirError of the harness's import as a bad records line, adding
    # "give the same `run --harness harbor` command with --set-aside-bad-records": for a run
    # folder whose manifest.json is no JSON that flag mends nothing (seen: the same error
    # again with the flag). Only the bad-lines error gets the way out; others pass as they are.
    from click.testing import CliRunner

    from hf_skillfollow.cli import cli
    from tests._trial_fixtures import write_pool
    from tests.test_harness_left_items import _harbor_standin, _task

    monkeypatch.setenv("SKILLFOLLOW_HARBOR", str(_harbor_standin(tmp_path)))
    write_pool(tmp_path / "pool")
    _task(tmp_path / "tasks", "task-a")
    _task(tmp_path / "tasks", "task-b")
    argv = [
        "run", "--harness", "harbor", "--model", "openai/m", "--base-url",
        "http://127.0.0.1:9/v1", "--env", "docker", "--tasks", str(tmp_path / "tasks"),
        "--skills", str(tmp_path / "pool"), "-o", str(tmp_path / "runs"), "--no-report",
    ]  # fmt: skip
    assert CliRunner().invoke(cli, argv).exit_code == 0
    (run,) = (tmp_path / "runs").glob("run-harbor-*")
    (run / "manifest.json").write_text("{")
    for extra in ([], ["--set-aside-bad-records"]):
        result = CliRunner().invoke(cli, [*argv, *extra])
        assert result.exit_code == 1, result.output
        error = result.output.strip().splitlines()[-1]
        assert error.startswith(f"Error: {run / 'manifest.json'}: invalid JSON"), error
        assert "set-aside-bad-records" not in error, error


# ------------------------------- harness: a task's own skills_dir not named `skills`


def _task_with_own_skills_dir(root: Path, skill: str) -> Path:
    """A task whose skills are environment/tools/<skill>/, put by its Dockerfile in its own
    `[environment] skills_dir = "/opt/tools"` (no folder named `skills` anywhere)."""
    task = root / "clash"
    (task / "tests").mkdir(parents=True)
    (task / "instruction.md").write_text("do it\n")
    (task / "task.toml").write_text('[environment]\nskills_dir = "/opt/tools"\n')
    (task / "environment" / "tools" / skill).mkdir(parents=True)
    (task / "environment" / "tools" / skill / "SKILL.md").write_text(
        f"---\nname: {skill}\ndescription: the task's own\n---\nbody\n"
    )
    (task / "environment" / "Dockerfile").write_text("FROM x\nCOPY tools /opt/tools\nRUN true\n")
    return task


def test_a_task_skill_in_its_own_skills_dir_named_as_a_pool_skill_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Harbor 0.26 installs the pool in the task's own skills_dir (trial.py:1828-1839) after
    # emptying <skills_dir>/<name> (trial.py:1852-1853): the task's pdf-tools was replaced by
    # the pool's in the with-skills arm. fe0e29f looked for `skills` and hidden folders only,
    # so the run went on to Harbor (here /bin/false).
    from tests._trial_fixtures import write_pool

    monkeypatch.setenv("SKILLFOLLOW_HARBOR", "/bin/false")
    write_pool(tmp_path / "pool")  # pdf-tools, csv-clean
    task = _task_with_own_skills_dir(tmp_path / "in", "pdf-tools")
    code, output = _harness_run(tmp_path)
    assert code == 1
    assert output.strip().startswith(
        f"Error: {task / 'environment' / 'tools' / 'pdf-tools' / 'SKILL.md'}: the task ships a "
        "skill named 'pdf-tools', as the pool does ('pdf-tools')"
    ), output


def test_the_copy_into_a_tasks_own_skills_dir_is_not_in_the_without_skills_arm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before, the without-skills copy lost `skills_dir` from task.toml but kept
    # `COPY tools /opt/tools`: its image held the task's skills (not offered, but on disk for
    # the agent to find) while the with-skills arm had them as skills. Now that COPY is
    # dropped from the sd copy, as one into a `skills` folder is; the se copy is untouched.
    from tests._trial_fixtures import write_pool

    monkeypatch.setenv("SKILLFOLLOW_HARBOR", "/bin/false")
    write_pool(tmp_path / "pool")
    _task_with_own_skills_dir(tmp_path / "in", "ledger")
    code, output = _harness_run(tmp_path)
    assert code == 1 and "harbor (se job) exited with 1" in output, output
    (work,) = (tmp_path / "runs").glob("harbor-*")
    se = work / "tasks" / "se" / "clash"
    sd = work / "tasks" / "sd" / "clash"
    assert (se / "environment" / "Dockerfile").read_text() == (
        "FROM x\nCOPY tools /opt/tools\nRUN true\n"
    )
    assert (sd / "environment" / "Dockerfile").read_text() == "FROM x\nRUN true\n"
    assert "skills_dir" not in (sd / "task.toml").read_text()

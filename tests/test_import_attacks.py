"""Hostile trial folders against `import harbor` and `report`: each gives bounded work and one
clear line, or a row that is not fooled. Expectations written by hand."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from click.testing import CliRunner  # noqa: E402

from hf_skillfollow.cli import cli  # noqa: E402
from hf_skillfollow.transcripts._skillpaths import path_ref  # noqa: E402
from tests._trial_fixtures import (  # noqa: E402
    SKILLS_DIR,
    cc_stream,
    write_job,
    write_pool,
    write_trial,
)


def _import(se: Path, sd: Path, out: Path, *extra: str):  # noqa: ANN202
    return CliRunner().invoke(cli, ["import", "harbor", "--with-skills", str(se),
                                    "--without-skills", str(sd), "-o", str(out), *extra])  # fmt: skip


def _error_line(result) -> str:  # noqa: ANN001
    assert result.exit_code == 1, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


def _row(out: Path) -> dict:
    (run,) = out.iterdir()
    (row,) = pq.read_table(run / "transitions.parquet").to_pylist()
    return row


@pytest.mark.parametrize("pool", [False, True])
def test_dotdot_out_of_a_skill_folder_is_no_activation(tmp_path: Path, pool: bool) -> None:
    # Both reads are of other-skill/SKILL.md (never offered: the init lists pdf-tools and
    # csv-clean); the first passes through pdf-tools' folder, which does not make it pdf-tools'.
    se, sd = write_job(tmp_path / "se"), write_job(tmp_path / "sd")
    reads = (("Read", {"file_path": f"{SKILLS_DIR}/pdf-tools/../../other-skill/SKILL.md"}, "---", False),
             ("Read", {"file_path": "../../other-skill/SKILL.md"}, "---", False))  # fmt: skip
    write_trial(se, "a__1", "task-a", stream=cc_stream(*reads))
    write_trial(sd, "a__2", "task-a", reward=0.0, stream=cc_stream(init=False))
    out = tmp_path / "runs"
    extra = ("--skills", str(write_pool(tmp_path / "pool"))) if pool else ()
    assert _import(se, sd, out, *extra).exit_code == 0
    row = _row(out)
    assert (row["returned"], row["invoked"], row["skills_returned"]) == (False, False, [])


def test_dotdot_paths_resolve_before_matching() -> None:
    assert path_ref(f"{SKILLS_DIR}/pdf/../xlsx/SKILL.md", ("pdf", "xlsx")) == (
        "xlsx",
        "instructions",
    )
    assert path_ref(f"{SKILLS_DIR}/pdf/../../pdf/SKILL.md", ("pdf",)) == ("pdf", "instructions")
    assert path_ref(f"{SKILLS_DIR}/pdf/scripts/../../../etc/passwd", ("pdf",)) is None


def test_the_same_folder_for_both_arms_is_one_error_line(tmp_path: Path) -> None:
    job = write_job(tmp_path / "job")
    write_trial(job, "a__1", "task-a", stream=cc_stream())
    line = _error_line(_import(job, job, tmp_path / "runs"))
    assert "a__1/result.json: given under both --with-skills and --without-skills" in line


def test_a_given_symlink_loop_is_one_error_line(tmp_path: Path) -> None:
    sd = write_job(tmp_path / "sd")
    write_trial(sd, "a__2", "task-a", stream=cc_stream())
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    line = _error_line(_import(loop, sd, tmp_path / "runs"))
    assert f"--with-skills {loop}: a symbolic link that leads nowhere" in line


def test_a_folder_without_trials_is_named_in_the_error(tmp_path: Path) -> None:
    empty, sd = tmp_path / "empty", write_job(tmp_path / "sd")
    empty.mkdir()
    write_trial(sd, "a__2", "task-a", stream=cc_stream())
    line = _error_line(_import(empty, sd, tmp_path / "runs"))
    assert line.endswith(
        f"nothing to import; --with-skills {empty}: no harbor trial (result.json) found"
    )


def test_links_inside_a_job_into_etc_and_loops_are_not_entered(tmp_path: Path) -> None:
    se, sd = write_job(tmp_path / "se"), write_job(tmp_path / "sd")
    write_trial(se, "a__1", "task-a", stream=cc_stream())
    write_trial(sd, "a__2", "task-a", reward=0.0, stream=cc_stream(init=False))
    os.symlink("/etc", se / "etc")
    os.symlink(se / "x", se / "y")
    os.symlink(se / "y", se / "x")
    os.symlink(se / "self", se / "self")
    out = tmp_path / "runs"
    assert _import(se, sd, out).exit_code == 0
    assert _row(out)["task_id"] == "task-a"


def test_more_entries_than_the_walk_bound_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hf_skillfollow.importers import _walk

    monkeypatch.setattr(_walk, "MAX_ENTRIES", 50)  # the real bound is 200,000 entries
    se, sd = write_job(tmp_path / "se"), write_job(tmp_path / "sd")
    write_trial(se, "a__1", "task-a", stream=cc_stream())
    write_trial(sd, "a__2", "task-a", stream=cc_stream())
    junk = se / "a__1" / "junk"
    junk.mkdir()
    for i in range(60):
        (junk / f"f{i}").write_bytes(b"x")
    line = _error_line(_import(se, sd, tmp_path / "runs"))
    assert f"{se}: more than 50 entries" in line


def test_a_ten_megabyte_string_is_bounded_in_the_row(tmp_path: Path) -> None:
    se, sd = write_job(tmp_path / "se"), write_job(tmp_path / "sd")
    big = {"exception_type": "AgentTimeoutError", "exception_message": "m" * 10_000_000}
    write_trial(se, "a__1", "task-a", exception=big, extra={"trial_uri": "u" * 1_000_000},
                stream=cc_stream())  # fmt: skip
    write_trial(sd, "a__2", "task-a", stream=cc_stream())
    out = tmp_path / "runs"
    assert _import(se, sd, out).exit_code == 0
    row = _row(out)
    assert row["se_error"] == "AgentTimeoutError: " + "m" * 481  # 500 characters in all
    assert row["se_correct"] is False


_HOSTILE = "\x1b[31mRED\x1b[0m [bold]rich[/] <script>x</script> |p| \x07\u202eE\r\nNL"


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json"])
def test_hostile_task_agent_and_model_names_in_every_output(tmp_path: Path, fmt: str) -> None:
    se, sd = write_job(tmp_path / "se"), write_job(tmp_path / "sd")
    who = {"agent": "claude-code", "model": "evil/\x1b[2Jm<i>[red]"}
    skill = ("Skill", {"skill": "pdf-tools"}, "Launching skill: pdf-tools", False)
    write_trial(se, "e\x1b[2J__1", _HOSTILE, stream=cc_stream(skill), **who)
    write_trial(sd, "e\x1b[2J__2", _HOSTILE, reward=0.0, stream=cc_stream(skill), **who)
    write_trial(se, "u__3", _HOSTILE, started="2026-01-27T00:00:00", stream=cc_stream(), **who)
    out = tmp_path / "runs"
    imported = _import(se, sd, out)
    assert imported.exit_code == 0, imported.output
    # one pair (a violation: the SD trial listed and loaded pdf-tools), one unpaired trial
    assert "\x1b" not in imported.output and "\x07" not in imported.output
    assert sum("arm-integrity violation: RED" in ln for ln in imported.output.splitlines()) == 1
    assert sum("unpaired: RED" in ln for ln in imported.output.splitlines()) == 1
    report = CliRunner().invoke(cli, ["report", str(out), "--format", fmt, "--resamples", "100",
                                      "--include-arm-violations"])  # fmt: skip
    assert report.exit_code == 0, report.output
    assert "\x1b" not in report.output and "\x07" not in report.output
    if fmt == "json":
        (cell,) = json.loads(report.output)
        assert cell["model"] == who["model"]  # the data is kept, escaped by JSON


@pytest.mark.parametrize("copy_to", ["sd", "se"])
def test_a_copy_of_a_trial_in_another_folder_is_one_error_line(
    tmp_path: Path, copy_to: str
) -> None:
    # SkillsBench's archive holds some trials twice (minimax-traj/ and minimax-m2.1+claude-code/).
    import shutil

    se, sd = write_job(tmp_path / "se"), write_job(tmp_path / "sd")
    write_trial(se, "a__1", "task-a", stream=cc_stream())
    write_trial(sd, "a__2", "task-a", stream=cc_stream(init=False))
    target = {"se": se, "sd": sd}[copy_to] / "copy"
    shutil.copytree(se / "a__1", target / "a__1")
    line = _error_line(_import(se, sd, tmp_path / "runs"))
    where = (
        "under both --with-skills and --without-skills"
        if copy_to == "sd"
        else "twice under --with-skills"
    )
    assert "trial 'a__1' is also at" in line and f"({where}); give each trial once" in line


def test_a_hostile_skill_name_is_never_a_skill_without_a_pool(tmp_path: Path) -> None:
    # Without --skills, a name is a skill only if it is a plain name ([A-Za-z0-9._-]): markup,
    # escapes and paths in a Skill call or the init listing never reach a row or an output.
    from tests._trial_fixtures import cc_call, cc_result

    evil = "pdf[/]\x1b]8;;http://x\x07<b>"
    stream = [{"type": "system", "subtype": "init", "session_id": "s", "tools": ["Skill"],
               "skills": [evil, "ok-skill"], "slash_commands": []},
              cc_call("t1", "Skill", {"skill": evil}), cc_result("t1", f"Launching skill: {evil}")]  # fmt: skip
    se, sd = write_job(tmp_path / "se"), write_job(tmp_path / "sd")
    write_trial(se, "a__1", "task-a", stream=stream)
    write_trial(sd, "a__2", "task-a", stream=cc_stream(init=False))
    out = tmp_path / "runs"
    assert _import(se, sd, out).exit_code == 0
    row = _row(out)
    assert (row["returned"], row["invoked"], row["skills_returned"]) == (False, False, [])
    (run,) = out.iterdir()
    traces = pq.read_table(run / "traces.parquet").to_pylist()
    se_trace = next(t for t in traces if t["arm"] == "se")
    assert json.loads(se_trace["scorer_details"])["listed"] == ["ok-skill"]

"""`import skill-creator`, `import benchflow` in their published schemas, and hostile folders.

Expected counts are written by hand from the fixtures' docstrings (tests/_trial_fixtures.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pq = pytest.importorskip("pyarrow.parquet")

from click.testing import CliRunner  # noqa: E402

from hf_skillfollow.cli import cli  # noqa: E402
from hf_skillfollow.importers import ImportInputError, ImportOptions, import_runs  # noqa: E402
from tests._trial_fixtures import (  # noqa: E402
    acp_skill_call,
    build_skill_creator,
    cc_stream,
    write_job,
    write_pool,
    write_rollout,
    write_trial,
)


def _rows(run_dirs: list[Path]) -> list[dict]:
    return [
        r for d in sorted(run_dirs) for r in pq.read_table(d / "transitions.parquet").to_pylist()
    ]


def test_skill_creator_latest_iteration_and_cross_check(tmp_path: Path) -> None:
    ws = build_skill_creator(tmp_path)
    result = import_runs("skill-creator", paths=[ws], output_dir=tmp_path / "runs",
                         options=ImportOptions(loading="nudge"))  # fmt: skip
    rows = {(r["task_id"], r["repeat_index"]): r for r in _rows(result.run_dirs)}
    assert {k: (r["se_correct"], r["sd_correct"]) for k, r in rows.items()} == {
        ("eval-0-ocean", 0): (True, False), ("eval-0-ocean", 1): (False, True),
        ("eval-1-forms", 0): (True, False), ("eval-2-empty", 0): (False, True),
    }  # fmt: skip
    assert rows[("eval-2-empty", 0)]["se_error"] == "no grading.json"
    assert {r["detector"] for r in rows.values()} == {"none"}  # no transcript: activation unknown
    assert {r["model"] for r in rows.values()} == {"claude-sonnet-4-20250514"}
    assert {r["access"] for r in rows.values()} == {"nudge"}
    disagreements = [n for n in result.notes if "says" in n]
    assert len(disagreements) == 1
    assert (
        "eval-1-forms" in disagreements[0]
        and "1/2" in disagreements[0]
        and "2/2" in disagreements[0]
    )


def test_skill_creator_pass_rate_threshold(tmp_path: Path) -> None:
    ws = build_skill_creator(tmp_path)
    result = import_runs("skill-creator", paths=[ws], output_dir=tmp_path / "runs",
                         options=ImportOptions(pass_rate_threshold=0.6))  # fmt: skip
    rows = {(r["task_id"], r["repeat_index"]): r for r in _rows(result.run_dirs)}
    # ocean run-2 with_skill 2/3 >= 0.6 now passes; without_skill run-1 1/3 still fails
    assert (rows[("eval-0-ocean", 1)]["se_correct"], rows[("eval-0-ocean", 0)]["sd_correct"]) == (
        True,
        False,
    )


def test_skill_creator_both_baselines_need_a_choice(tmp_path: Path) -> None:
    ws = build_skill_creator(tmp_path)
    (ws / "iteration-2" / "eval-1-forms" / "old_skill").mkdir()
    with pytest.raises(ImportInputError, match="--baseline"):
        import_runs("skill-creator", paths=[ws], output_dir=tmp_path / "runs")


def test_benchflow_rollouts(tmp_path: Path) -> None:
    se, sd = tmp_path / "bf-a", tmp_path / "bf-b"
    # t1: no transcript, BenchFlow counted 2 invocations -> S_call by its record (kind `record`)
    write_rollout(se, "t1__a", "t1", invocations=2)
    # t2: no transcript, counted 0 -> not in S_call
    write_rollout(se, "t2__a", "t2", invocations=0)
    # t3: the ACP trajectory shows a skill call that BenchFlow's count missed: the transcript decides
    write_rollout(se, "t3__a", "t3", reward=0.0, invocations=0, acp=[acp_skill_call("pdf-tools")])
    # t4: the agent errored: an error row, scored incorrect
    write_rollout(se, "t4__a", "t4", reward=None, error="agent timed out after 900s")
    # t5: an older BenchFlow job in Harbor's trial shape, with a Claude Code stream
    write_job(se / "legacy")
    skill = ("Skill", {"skill": "pdf-tools"}, "Launching skill: pdf-tools", False)
    same = {"agent": "claude-agent-acp", "version": "unknown", "model": "claude-sonnet-4-5"}
    write_trial(se / "legacy", "t5__a", "t5", reward=1.0, extra={"n_skill_invocations": 0},
                stream=cc_stream(skill), **same)  # fmt: skip
    for task in ("t1", "t2", "t3", "t4"):
        write_rollout(sd, f"{task}__b", task, reward=0.0, acp=[])
    write_job(sd / "legacy")
    write_trial(sd / "legacy", "t5__b", "t5", reward=0.0, stream=cc_stream(init=False), **same)
    result = import_runs("benchflow", [se], [sd], ImportOptions(skills=write_pool(tmp_path / "pool")),
                         output_dir=tmp_path / "runs")  # fmt: skip
    rows = {r["task_id"]: r for r in _rows(result.run_dirs)}
    got = {t: (r["returned"], r["detector"], r["trigger_kind"]) for t, r in rows.items()}
    assert got == {
        "t1": (True, "harness-record", "record"),
        "t2": (False, "harness-record", None),
        "t3": (True, "acp", "instructions"),
        "t4": (False, "harness-record", None),
        "t5": (True, "claude-code", "instructions"),
    }
    assert rows["t3"]["skills_returned"] == ["pdf-tools"] and rows["t3"]["se_correct"] is False
    assert rows["t4"]["se_error"] == "error: agent timed out after 900s"
    assert rows["t1"]["provenance"] == "imported:benchflow"
    assert {(r["agent"], r["model"]) for r in rows.values()} == {
        ("claude-agent-acp@unknown", "claude-sonnet-4-5")
    }


def test_verifier_reward_against_the_threshold(tmp_path: Path) -> None:
    se, sd = write_job(tmp_path / "a"), write_job(tmp_path / "b")
    write_trial(se, "p__1", "p", reward=0.5, stream=cc_stream())
    write_trial(sd, "p__2", "p", reward=0.4, stream=cc_stream(init=False))
    default = _rows(import_runs("harbor", [se], [sd], output_dir=tmp_path / "r1").run_dirs)
    assert (default[0]["se_correct"], default[0]["sd_correct"]) == (False, False)
    half = _rows(import_runs("harbor", [se], [sd], ImportOptions(pass_threshold=0.5),
                             output_dir=tmp_path / "r2").run_dirs)  # fmt: skip
    assert (half[0]["se_correct"], half[0]["sd_correct"]) == (True, False)


# ------------------------------------------------------------------ hostile folders


def _one_pair(tmp_path: Path) -> tuple[Path, Path]:
    se, sd = write_job(tmp_path / "se"), write_job(tmp_path / "sd")
    write_trial(se, "a__1", "task-a", stream=cc_stream())
    write_trial(sd, "a__2", "task-a", stream=cc_stream(init=False))
    return se, sd


def _cli_error(se: Path, sd: Path, out: Path) -> str:
    result = CliRunner().invoke(cli, ["import", "harbor", "--with-skills", str(se),
                                      "--without-skills", str(sd), "-o", str(out)])  # fmt: skip
    assert result.exit_code == 1, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


def test_symlink_out_of_the_folder_is_not_read(tmp_path: Path) -> None:
    se, sd = _one_pair(tmp_path)
    outside = tmp_path / "secret"
    write_trial(outside, "s__1", "task-secret", stream=cc_stream())
    (se / "linked").mkdir()
    os.symlink(outside / "s__1" / "result.json", se / "linked" / "result.json")
    result = import_runs("harbor", [se], [sd], output_dir=tmp_path / "runs")
    assert {r["task_id"] for r in _rows(result.run_dirs)} == {"task-a"}


def test_transcript_symlink_out_is_not_read(tmp_path: Path) -> None:
    se, sd = _one_pair(tmp_path)
    target = tmp_path / "elsewhere.txt"
    skill = ("Skill", {"skill": "pdf-tools"}, "Launching skill: pdf-tools", False)
    target.write_text("".join(json.dumps(e) + "\n" for e in cc_stream(skill)))
    (se / "a__1" / "agent" / "claude-code.txt").unlink()
    os.symlink(target, se / "a__1" / "agent" / "claude-code.txt")
    (row,) = _rows(import_runs("harbor", [se], [sd], output_dir=tmp_path / "runs").run_dirs)
    assert (row["detector"], row["returned"]) == ("none", False)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_result_is_one_error_line(tmp_path: Path) -> None:
    se, sd = _one_pair(tmp_path)
    (se / "f__1").mkdir()
    os.mkfifo(se / "f__1" / "result.json")
    line = _cli_error(se, sd, tmp_path / "runs")
    assert "f__1/result.json" in line and "not a regular file" in line


def test_deep_json_is_one_error_line(tmp_path: Path) -> None:
    se, sd = _one_pair(tmp_path)
    (se / "a__1" / "result.json").write_text("[" * 5000 + "]" * 5000)
    line = _cli_error(se, sd, tmp_path / "runs")
    assert "a__1/result.json" in line and "nested" in line


def test_huge_json_is_one_error_line(tmp_path: Path) -> None:
    se, sd = _one_pair(tmp_path)
    with open(se / "a__1" / "result.json", "wb") as fh:
        fh.truncate(17 * 1024 * 1024)
    line = _cli_error(se, sd, tmp_path / "runs")
    assert "a__1/result.json" in line and "limit" in line


def test_bad_field_is_named(tmp_path: Path) -> None:
    se, sd = _one_pair(tmp_path)
    data = json.loads((se / "a__1" / "result.json").read_text())
    data["verifier_result"] = {"rewards": {"reward": "1.0"}}
    (se / "a__1" / "result.json").write_text(json.dumps(data))
    line = _cli_error(se, sd, tmp_path / "runs")
    assert "a__1/result.json" in line and "verifier_result.rewards.reward" in line


def test_hostile_names_are_escaped_in_the_import_and_the_report(tmp_path: Path) -> None:
    from tests._payloads import ESCAPE_SEQUENCES, MARKDOWN

    se, sd = write_job(tmp_path / "se"), write_job(tmp_path / "sd")
    agent = "agent" + ESCAPE_SEQUENCES[3]
    write_trial(se, "a__1", MARKDOWN[1], agent=agent, reward=1.0, stream=cc_stream())
    write_trial(sd, "a__2", MARKDOWN[1], agent=agent, reward=0.0, stream=cc_stream(init=False))
    write_trial(se, "b__1", "task-b", agent=agent, reward=1.0, stream=cc_stream())  # unpaired
    out = tmp_path / "runs"
    result = CliRunner().invoke(cli, ["import", "harbor", "--with-skills", str(se),
                                      "--without-skills", str(sd), "-o", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "unpaired: task-b" in result.output
    (row,) = _rows(list(out.iterdir()))
    assert row["task_id"] == MARKDOWN[1] and row["agent"].startswith(agent)  # data keeps the text
    md = CliRunner().invoke(cli, ["report", str(out), "--resamples", "100", "--format", "markdown"])
    assert md.exit_code == 0
    assert "\x1b" not in md.output and "\x07" not in md.output
    section = md.output.split("**Imported cells**", 1)[1]
    assert "\n| injected | row |" not in section


def test_without_a_pool_the_offered_skills_are_what_the_with_skills_trial_listed(
    tmp_path: Path,
) -> None:
    se, sd = write_job(tmp_path / "se"), write_job(tmp_path / "sd")
    mine = ("Read", {"file_path": "/root/.claude/skills/notes/SKILL.md"}, "---\nname: notes", False)
    # a: the SD agent reads a skill the SE arm was never offered: no violation
    write_trial(se, "a__1", "task-a", stream=cc_stream())
    write_trial(sd, "a__2", "task-a", stream=cc_stream(mine, init=False))
    # b: the SD agent reads one of the skills the SE arm listed (pdf-tools): a violation
    read = (
        "Read",
        {"file_path": "/root/.claude/skills/pdf-tools/SKILL.md"},
        "---\nname: pdf-tools",
        False,
    )
    write_trial(se, "b__1", "task-b", stream=cc_stream())
    write_trial(sd, "b__2", "task-b", stream=cc_stream(read, init=False))
    result = import_runs("harbor", [se], [sd], output_dir=tmp_path / "runs")
    rows = {r["task_id"]: r["arm_integrity"] for r in _rows(result.run_dirs)}
    assert rows["task-a"] == "ok"
    assert rows["task-b"].startswith("violation: instructions of pdf-tools")


def test_skill_creator_old_skill_baseline(tmp_path: Path) -> None:
    import shutil

    ws = build_skill_creator(tmp_path)
    it = ws / "iteration-2"
    for eval_dir in it.iterdir():
        if (eval_dir / "without_skill").is_dir():
            shutil.move(eval_dir / "without_skill", eval_dir / "old_skill")
    result = import_runs("skill-creator", paths=[ws], output_dir=tmp_path / "runs")
    rows = _rows(result.run_dirs)
    assert len(rows) == 4
    assert {r["arm_integrity"] for r in rows} == {
        "unchecked: the baseline runs the previous version of the skill"
    }
    manifest = json.loads((result.run_dirs[0] / "manifest.json").read_text())
    assert manifest["import"]["baseline"] == "old_skill"
    # the other baseline is another cell
    other = import_runs("skill-creator", paths=[build_skill_creator(tmp_path / "b")],
                        output_dir=tmp_path / "runs")  # fmt: skip
    assert _rows(other.run_dirs)[0]["cell_id"] != rows[0]["cell_id"]


def test_skill_creator_through_the_command(tmp_path: Path) -> None:
    ws = build_skill_creator(tmp_path)
    out = CliRunner().invoke(
        cli, ["import", "skill-creator", str(ws), "-o", str(tmp_path / "runs")]
    )
    assert out.exit_code == 0, out.output
    assert "4 pair(s) in 2 run folder(s)" in out.output
    assert "iteration-2: without_skill is the without-skills arm" in out.output
    assert "says 1/2 expectations passed, its grading.json 2/2" in out.output
    created = {
        json.loads((d / "manifest.json").read_text())["created_at"]
        for d in (tmp_path / "runs").iterdir()
    }
    # repeat 0 is dated by its first executor_start; a run without timing.json is not dated
    # by its folder name
    assert "2026-01-15T10:30:00Z" in created and not any(c.startswith("run-") for c in created)


def test_benchmark_name_from_the_registry_dataset(tmp_path: Path) -> None:
    se, sd = write_job(tmp_path / "se"), write_job(tmp_path / "sd")
    write_trial(se, "a__1", "task-a", stream=cc_stream(), extra={"source": "terminal-bench@2.0"})
    write_trial(
        sd, "a__2", "task-a", stream=cc_stream(init=False), extra={"source": "terminal-bench@2.0"}
    )
    (row,) = _rows(import_runs("harbor", [se], [sd], output_dir=tmp_path / "r1").run_dirs)
    assert row["benchmark"] == "terminal-bench@2.0"
    named = import_runs(
        "harbor", [se], [sd], ImportOptions(benchmark="tb2"), output_dir=tmp_path / "r2"
    )
    assert _rows(named.run_dirs)[0]["benchmark"] == "tb2"


def test_deep_folders_are_one_error_line(tmp_path: Path) -> None:
    se, sd = _one_pair(tmp_path)
    deep = se
    for i in range(14):
        deep = deep / f"d{i}"
    deep.mkdir(parents=True)
    line = _cli_error(se, sd, tmp_path / "runs")
    assert "nested more than 12 levels deep" in line


def test_oversized_transcript_leaves_activation_unknown_with_one_note(tmp_path: Path) -> None:
    se, sd = _one_pair(tmp_path)
    with open(se / "a__1" / "agent" / "claude-code.txt", "r+b") as fh:
        fh.truncate(65 * 1024 * 1024)  # sparse: nothing is written
    out = tmp_path / "runs"
    result = CliRunner().invoke(cli, ["import", "harbor", "--with-skills", str(se),
                                      "--without-skills", str(sd), "-o", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    notes = [ln for ln in result.output.splitlines() if ln.startswith("note:")]
    assert len(notes) == 1 and "a__1/claude-code.txt" in notes[0] and "limit" in notes[0]
    (row,) = _rows(sorted(out.iterdir()))
    assert (row["detector"], row["returned"]) == ("none", False)


def test_a_trial_still_running_is_left_out_until_it_finishes(tmp_path: Path) -> None:
    se, sd = _one_pair(tmp_path)
    running = write_trial(se, "b__1", "task-b", reward=None, stream=cc_stream())
    write_trial(sd, "b__2", "task-b", reward=0.0, stream=cc_stream(init=False))
    data = json.loads((running / "result.json").read_text())
    data["finished_at"] = None
    (running / "result.json").write_text(json.dumps(data))
    first = import_runs("harbor", [se], [sd], output_dir=tmp_path / "runs")
    assert {r["task_id"] for r in _rows(first.run_dirs)} == {"task-a"}
    assert any("1 trial(s) still running" in n for n in first.notes)
    assert first.dropped == {"task-b": ("sd", 1)}
    data.update(finished_at="2026-01-26T04:00:00", verifier_result={"rewards": {"reward": 1.0}})
    (running / "result.json").write_text(json.dumps(data))
    later = import_runs("harbor", [se], [sd], output_dir=tmp_path / "runs")
    # the task set grew: a new cell with both tasks
    assert {(r["task_id"], r["se_correct"]) for r in _rows(later.run_dirs)} == {
        ("task-a", True),
        ("task-b", True),
    }

"""`import harbor` on the shapes found in SkillsBench's real trial folders (read file by file from
`benchflow-ai/skillsbench-trajectories`; synthetic content here, no copied data):

- Gemini CLI trials hold `agent/gemini-cli.txt` as the CLI's plain text, where a printed line
  can parse as JSON on its own, and their transcript in `agent/trajectory.json` (ATIF);
- a trial whose only candidate is plain text has unknown activation, never a failed import;
- the report's "Cost per task" RAE follows the report's rule for such cells (undefined);
- SkillsBench's skill-loading Terminus offers skills as an `available_skills:` JSON list.

Every expectation was written by hand from the scenario below.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from click.testing import CliRunner  # noqa: E402

from hf_skillfollow.cli import cli  # noqa: E402
from tests._trial_fixtures import (  # noqa: E402
    SKILLS_DIR,
    episodes_offer,
    gemini_atif,
    gemini_log,
    write_job,
    write_pool,
    write_trial,
)

_GEMINI = {"agent": "gemini-cli", "version": "unknown", "model": "google/gemini-3-flash"}


def _gemini_trial(job: Path, name: str, task: str, reward: float, log: str,
                  atif: dict | None) -> None:  # fmt: skip
    folder = write_trial(job, name, task, reward=reward, **_GEMINI)
    (folder / "agent" / "gemini-cli.txt").write_text(log)
    if atif is not None:
        (folder / "agent" / "trajectory.json").write_text(json.dumps(atif, indent=2))


def _gemini_arms(root: Path) -> tuple[Path, Path]:
    """task-g: SE log has lines that parse as JSON scalars ("...", [ is not, 42 is), its ATIF
    trajectory activates pdf-tools (activate_skill, success) and runs one of its scripts; SE
    passes, SD (plain log, ATIF with a read of the task file only) fails.
    task-h: both trials left only a plain-text log (SE's has a JSON-scalar line): unknown; both
    fail. Four gemini-cli.txt files are passed over."""
    se, sd = write_job(root / "se", "gemini-cli"), write_job(root / "sd", "gemini-cli")
    read = ("read_file", {"file_path": "/root/input.txt"}, "the task input", "success")
    activate = ("activate_skill", {"name": "pdf-tools"}, '<activated_skill name="pdf-tools">…',
                "success")  # fmt: skip
    script = ("run_shell_command", {"command": f"python3 {SKILLS_DIR}/pdf-tools/scripts/fill.py"},
              "Exit Code: 0", "success")  # fmt: skip
    _gemini_trial(se, "g__1", "task-g", 1.0,
                  gemini_log('"Quarterly Report Title"', "[", "42"), gemini_atif(read, activate, script))  # fmt: skip
    _gemini_trial(sd, "g__2", "task-g", 0.0, gemini_log(), gemini_atif(read))
    _gemini_trial(se, "h__1", "task-h", 0.0, gemini_log('"A Title"'), None)
    _gemini_trial(sd, "h__2", "task-h", 0.0, gemini_log(), None)
    return se, sd


def _import(se: Path, sd: Path, out: Path, *extra: str) -> list[str]:
    result = CliRunner().invoke(cli, ["import", "harbor", "--with-skills", str(se),
                                      "--without-skills", str(sd), "-o", str(out), *extra])  # fmt: skip
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def _rows(out: Path) -> dict[str, dict]:
    return {r["task_id"]: r for d in sorted(out.iterdir())
            for r in pq.read_table(d / "transitions.parquet").to_pylist()}  # fmt: skip


def test_plain_text_log_falls_through_to_the_atif_trajectory(tmp_path: Path) -> None:
    se, sd = _gemini_arms(tmp_path)
    out = tmp_path / "runs"
    lines = _import(se, sd, out, "--skills", str(write_pool(tmp_path / "pool")))
    notes = [ln for ln in lines if ln.startswith("note:")]
    assert len(notes) == 1 and notes[0].startswith("note: 4 transcript file(s) passed over")
    rows = _rows(out)
    g, h = rows["task-g"], rows["task-h"]
    assert (g["detector"], g["returned"], g["skills_returned"], g["trigger_kind"]) == (
        "atif", True, ["pdf-tools"], "instructions")  # fmt: skip
    assert (g["se_correct"], g["sd_correct"], g["arm_integrity"]) == (True, False, "ok")
    assert (h["detector"], h["returned"], h["arm_integrity"]) == ("none", False, "unchecked")
    traces = pq.read_table(sorted(out.iterdir())[0] / "traces.parquet").to_pylist()
    transcript = {(t["task_id"], t["arm"]): json.loads(t["scorer_details"])["transcript"]
                  for t in traces}  # fmt: skip
    assert transcript == {("task-g", "se"): "trajectory.json", ("task-g", "sd"): "trajectory.json",
                          ("task-h", "se"): None, ("task-h", "sd"): None}  # fmt: skip


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_cost_table_rae_is_undefined_where_activation_is_unknown(tmp_path: Path, fmt: str) -> None:
    # Counting every pair, task-g alone is in S_call with a b flip: RAE +100.0. task-h has no
    # with-skills transcript, so the cell's RAE is undefined, in the cost table as in the cells.
    se, sd = _gemini_arms(tmp_path)
    out = tmp_path / "runs"
    _import(se, sd, out, "--skills", str(write_pool(tmp_path / "pool")))
    cell = json.loads(next(out.iterdir()).joinpath("manifest.json").read_text())["cell_id"][:8]
    result = CliRunner().invoke(cli, ["report", str(out), "--format", fmt])
    assert result.exit_code == 0, result.output
    text = result.output.split("Cost per task", 1)[1]
    row = next(ln for ln in text.splitlines() if cell in ln)
    cells = [c.strip() for c in row.strip("| ").split("|")] if fmt == "markdown" else row.split()
    assert cells[:2] == [cell, "—"], row
    assert "+100.0" not in row


def test_json_listing_in_a_without_skills_episode_list_is_an_arm_violation(tmp_path: Path) -> None:
    """task-t: SE's first prompt offers pdf-tools and csv-clean and loads pdf-tools; SD's first
    prompt offers them too (the skills were not removed): a violation listed at start-up."""
    se, sd = write_job(tmp_path / "se", "terminus-2"), write_job(tmp_path / "sd", "terminus-2")
    load = [{"episode": 0, "prompt": episodes_offer(("pdf-tools", "csv-clean")),
             "response": '{"load_skill": "pdf-tools"}'},
            {"episode": 0, "prompt": "Loaded skill: pdf-tools\n---\n…", "response": "{}"}]  # fmt: skip
    plain = [{"episode": 0, "prompt": episodes_offer(("pdf-tools", "csv-clean")),
              "response": '{"analysis": "a", "plan": "p", "commands": []}'}]  # fmt: skip
    for job, name, episodes in ((se, "t__1", load), (sd, "t__2", plain)):
        folder = write_trial(job, name, "task-t", agent="terminus-2", version="2.0.0")
        (folder / "agent" / "trajectory.json").write_text(json.dumps(episodes))
    out = tmp_path / "runs"
    _import(se, sd, out)
    (row,) = _rows(out).values()
    assert row["returned"] is True and row["skills_returned"] == ["pdf-tools"]
    assert row["arm_integrity"] == "violation: listed at start-up: csv-clean, pdf-tools"


def test_a_gemini_trial_with_only_its_chat_recording(tmp_path: Path) -> None:
    """Some SkillsBench Gemini CLI trials hold agent/gemini-cli.trajectory.json (the CLI's chat
    recording) and no agent/trajectory.json. task-r: SE's recording activates pdf-tools
    (activate_skill, success); SD's recording has no tool call."""
    from tests._transcript_fixtures import gemini_recording

    recording = gemini_recording()
    recording["messages"][1]["toolCalls"][0]["args"] = {"name": "pdf-tools"}
    del recording["messages"][2]  # the failed xlsx read
    quiet = {**recording, "messages": recording["messages"][:1]}
    se, sd = write_job(tmp_path / "se", "gemini-cli"), write_job(tmp_path / "sd", "gemini-cli")
    for job, name, reward, doc in ((se, "r__1", 1.0, recording), (sd, "r__2", 0.0, quiet)):
        folder = write_trial(job, name, "task-r", reward=reward, **_GEMINI)
        (folder / "agent" / "gemini-cli.txt").write_text(gemini_log())
        (folder / "agent" / "gemini-cli.trajectory.json").write_text(json.dumps(doc))
    out = tmp_path / "runs"
    _import(se, sd, out, "--skills", str(write_pool(tmp_path / "pool")))
    row = _rows(out)["task-r"]
    assert (row["detector"], row["returned"], row["skills_returned"]) == (
        "gemini-cli",
        True,
        ["pdf-tools"],
    )
    assert row["arm_integrity"] == "ok"

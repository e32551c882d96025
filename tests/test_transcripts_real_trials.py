"""Activation read from shapes found in REAL SkillsBench trial folders
(`benchflow-ai/skillsbench-trajectories`, read file by file; docs/detectors.md names each file
in its "where the shape was checked" table). The content here is synthetic and only keeps the
shape: which fields exist, where the path or the skill name sits, what a listing looks like.
Every expectation is written by hand from the docstrings, never computed by the code under test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hf_skillfollow.transcripts import detect

pq = pytest.importorskip("pyarrow.parquet")

from hf_skillfollow.importers import ImportOptions, import_runs  # noqa: E402

OPENCODE_SKILLS = "/home/agent/.opencode/skills"


def _acp_text(call_id: str, kind: str, title: str, text: str, status: str = "completed") -> dict:
    """One call as BenchFlow 0.3 records OpenCode's ACP updates: no `rawInput`, no
    `locations`, the title is the tool's bare name, the result is text content."""
    return {"type": "tool_call", "tool_call_id": call_id, "kind": kind, "title": title,
            "status": status,
            "content": [{"type": "content", "content": {"type": "text", "text": text}}]}  # fmt: skip


def _skill_envelope(name: str) -> str:
    return (f'<skill_content name="{name}">\n# Skill: {name}\n\nsynthetic body\n\n'
            f"Base directory for this skill: file://{OPENCODE_SKILLS}/{name}\n"
            f"<skill_files>\n<file>{OPENCODE_SKILLS}/{name}/scripts/tool.py</file>\n"
            "</skill_files>\n</skill_content>")  # fmt: skip


def _write_bf_rollout(arm: Path, trial: str, task: str, reward: float,
                      events: list[dict[str, Any]]) -> Path:  # fmt: skip
    """A BenchFlow rollout as the 2026-05 SkillsBench OpenCode run wrote it
    (`yimin/opencode-gemini3flash-daytona-87x2/{withskills,without}-opencode/<task>__<id>/`):
    `result.json` names the trial `trial_name` (not `rollout_name`), has BenchFlow's
    `rewards.reward`, `agent`/`agent_name`, `model`, `error`, `verifier_error`,
    `trajectory_source`, and no Harbor field (`verifier_result`, `agent_info`,
    `exception_info`); `config.json` is BenchFlow's (`task_path`, `skills_dir`); the transcript
    is `trajectory/acp_trajectory.jsonl` and nothing is under `agent/`."""
    folder = arm / trial
    (folder / "trajectory").mkdir(parents=True)
    result = {"task_name": task, "trial_name": trial, "rewards": {"reward": reward},
              "agent": "opencode", "agent_name": "OpenCode", "model": "google/gemini-3-flash",
              "n_tool_calls": len(events), "n_prompts": 1, "error": None, "verifier_error": None,
              "partial_trajectory": False, "trajectory_source": "acp",
              "started_at": "2026-05-02 15:38:32.303677",
              "finished_at": "2026-05-02 15:40:40.144961",
              "timing": {"environment_setup": 7.4, "agent_setup": 5.9, "agent_execution": 60.0,
                         "verifier": 5.7, "total": 127.8}}  # fmt: skip
    (folder / "result.json").write_text(json.dumps(result, indent=2))
    (folder / "config.json").write_text(json.dumps({
        "task_path": f"/work/tasks/{task}", "agent": "opencode", "model": "google/gemini-3-flash",
        "environment": "daytona", "skills_dir": None, "timeout_sec": 900}))  # fmt: skip
    lines = [{"type": "user_message", "text": f"Solve {task}."}, *events]
    (folder / "trajectory" / "acp_trajectory.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in lines)
    )
    return folder


def test_benchflow_rollout_named_by_trial_name_is_read_as_a_benchflow_rollout(
    tmp_path: Path,
) -> None:
    """task-a: the with-skills rollout loads `mesh-tools` through OpenCode's skill tool (kind
    other, title `skill`, `<skill_content name="mesh-tools">`) and passes (reward 1.0); the
    without-skills rollout reads a task file only and fails (0.0). By hand: SE passed, SD
    failed, S_call holds the pair, skill mesh-tools, kind instructions, arm integrity ok,
    agent OpenCode, model google/gemini-3-flash. (Before: read as a Harbor trial, both arms
    were "no verifier result", the agent unknown@unknown and no transcript was read.)"""
    se, sd = tmp_path / "withskills-opencode", tmp_path / "without-opencode"
    _write_bf_rollout(se, "task-a__1f", "task-a", 1.0,
                      [_acp_text("c1", "other", "skill", _skill_envelope("mesh-tools"))])  # fmt: skip
    _write_bf_rollout(sd, "task-a__2e", "task-a", 0.0, [_acp_text(
        "c1", "read", "read", "<path>/root/table.md</path>\n<type>file</type>\n<content>\n1: x")])  # fmt: skip
    result = import_runs("benchflow", [se], [sd], ImportOptions(), output_dir=tmp_path / "runs")
    (run,) = result.run_dirs
    (row,) = pq.read_table(run / "transitions.parquet").to_pylist()
    got = {k: row[k] for k in ("se_correct", "sd_correct", "se_error", "sd_error", "returned",
                               "skills_returned", "trigger_kind", "detector", "arm_integrity",
                               "agent", "model")}  # fmt: skip
    assert got == {
        "se_correct": True, "sd_correct": False, "se_error": None, "sd_error": None,
        "returned": True, "skills_returned": ["mesh-tools"], "trigger_kind": "instructions",
        "detector": "acp", "arm_integrity": "ok", "agent": "OpenCode@unknown",
        "model": "google/gemini-3-flash",
    }  # fmt: skip


def test_opencode_read_over_acp_names_its_file_only_in_the_result() -> None:
    """OpenCode's `read` as BenchFlow records it (seen in
    `withskills-opencode/3d-scan-calc__720ed855`: a read of the skill's `scripts/` file) has
    the title `read` and no `rawInput`: the path is only in the result's leading
    `<path>…</path>`, followed by `<type>file</type>` or `<type>directory</type>`. Hand labels
    (empty pool: any skill name counts), by call:
    c1 read of pdf-kit's SKILL.md, completed -> pdf-kit, instructions
    c2 read of sheet-kit's scripts/tool.py, completed -> sheet-kit, resource
    c3 read of the skills folder of doc-kit, a directory -> a listing, nothing
    c4 read of a task file -> nothing
    c5 the agent quotes a `<path>` of table-kit's SKILL.md in an edit's result -> nothing"""
    events = [
        _acp_text("c1", "read", "read",
                  f"<path>{OPENCODE_SKILLS}/pdf-kit/SKILL.md</path>\n<type>file</type>\n"
                  "<content>\n1: ---\n2: name: pdf-kit\n</content>"),
        _acp_text("c2", "read", "read",
                  f"<path>{OPENCODE_SKILLS}/sheet-kit/scripts/tool.py</path>\n<type>file</type>\n"
                  "<content>\n1: import sys\n\n(End of file - total 1 lines)\n</content>"),
        _acp_text("c3", "read", "read",
                  f"<path>{OPENCODE_SKILLS}/doc-kit</path>\n<type>directory</type>\n"
                  "<entries>\nSKILL.md\nscripts/\n</entries>"),
        _acp_text("c4", "read", "read", "<path>/root/table.md</path>\n<type>file</type>\n"),
        _acp_text("c5", "edit", "write",
                  f"<path>{OPENCODE_SKILLS}/table-kit/SKILL.md</path>\n<type>file</type>\n"),
    ]  # fmt: skip
    d = detect([{"type": "user_message", "text": "Solve it."}, *events], pool=(), format="acp")
    assert d.kinds() == {"pdf-kit": "instructions", "sheet-kit": "resource"}
    assert [(e.skill, e.event_index, e.succeeded) for e in d.events] == [
        ("pdf-kit", 1, True),
        ("sheet-kit", 2, True),
    ]

"""Hand-built trial folders in the shapes real harnesses write (no copied data).

Harbor: `<job>/<trial>/result.json` (TrialResult: task_name, trial_name, task_checksum,
agent_info, agent_result, verifier_result.rewards.reward, exception_info, started_at),
`<trial>/config.json`, `<trial>/agent/claude-code.txt` (Claude Code stream-json) or
`<trial>/agent/trajectory.json` (ATIF, as Terminus-2 writes it), and the job's own
result.json/config.json beside its trials. skill-creator: `iteration-N/eval-*/{with_skill,
without_skill}/[run-K/]grading.json` and `iteration-N/benchmark.json` as in its schemas.md.
Each scenario's expected counts are written by hand in the tests, never computed here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

POOL = ("pdf-tools", "csv-clean")
SKILLS_DIR = "/root/.claude/skills"


def write_pool(root: Path) -> Path:
    """A two-skill pool (Agent Skills folders) for --skills."""
    for name in POOL:
        folder = root / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: Use when working with {name.split('-')[0]} files.\n"
            f"---\n# {name}\n\nSteps for {name}.\n"
        )
    return root


def write_job(folder: Path, agent: str = "claude-code") -> Path:
    """A Harbor job folder's own files (its result.json is no trial)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(
        json.dumps({"job_name": folder.name, "agents": [{"name": agent}]})
    )
    (folder / "result.json").write_text(json.dumps({"id": "job", "n_total_trials": 0, "stats": {}}))
    return folder


def write_trial(
    job: Path,
    name: str,
    task: str,
    *,
    reward: float | None = 1.0,
    started: str = "2026-01-26T03:00:00",
    checksum: str = "c0ffee",
    agent: str = "claude-code",
    version: str = "2.0.1",
    model: str = "anthropic/claude-opus-4-5",
    exception: dict[str, Any] | None = None,
    stream: list[dict[str, Any]] | None = None,
    atif: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """One Harbor trial folder; `stream` -> agent/claude-code.txt, `atif` -> agent/trajectory.json."""
    folder = job / name
    (folder / "agent").mkdir(parents=True)
    config = {"trial_name": name, "agent": {"name": agent, "model_name": model, "kwargs": {}}}
    (folder / "config.json").write_text(json.dumps(config))
    result = {
        "id": f"id-{name}", "task_name": task, "trial_name": name,
        "trial_uri": f"file:///jobs/{job.name}/{name}", "task_checksum": checksum,
        "config": config,
        "agent_info": {"name": agent, "version": version,
                       "model_info": {"name": model.split("/")[-1], "provider": "anthropic"}},
        "agent_result": {"n_input_tokens": 1000, "n_output_tokens": 200, "metadata": None},
        "verifier_result": None if reward is None else {"rewards": {"reward": reward}},
        "exception_info": exception, "started_at": started, "finished_at": started,
        "agent_execution": {"started_at": "2026-01-26T03:00:00", "finished_at": "2026-01-26T03:01:30"},
        **(extra or {}),
    }  # fmt: skip
    (folder / "result.json").write_text(json.dumps(result, indent=2))
    if stream is not None:
        (folder / "agent" / "claude-code.txt").write_text(
            "".join(json.dumps(e) + "\n" for e in stream)
        )
    if atif is not None:
        (folder / "agent" / "trajectory.json").write_text(json.dumps(atif, indent=2))
    return folder


# ----------------------------------------------------------- Claude Code stream-json


def cc_init(skills: tuple[str, ...] = POOL) -> dict[str, Any]:
    return {"type": "system", "subtype": "init", "session_id": "s", "tools": ["Bash", "Read", "Skill"],
            "skills": list(skills), "slash_commands": []}  # fmt: skip


def cc_call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": call_id, "name": name, "input": args}]}}  # fmt: skip


def cc_result(call_id: str, text: str, error: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": text}
    if error:
        block["is_error"] = True
    return {"type": "user", "message": {"role": "user", "content": [block]}}


class Call(NamedTuple):
    """One Claude Code tool call for `cc_stream`: the tool, its input, the result text, and
    whether the result is an error."""

    tool: str
    args: dict[str, Any]
    text: str
    error: bool = False


def cc_stream(
    *calls: tuple[str, dict[str, Any], str, bool], init: bool = True
) -> list[dict[str, Any]]:
    """An init event (skills listed), then each (tool, input, result text, error) call and result."""
    events = [cc_init()] if init else []
    for i, (tool, args, text, error) in enumerate(calls):
        events += [cc_call(f"toolu_{i}", tool, args), cc_result(f"toolu_{i}", text, error)]
    events.append({"type": "result", "subtype": "success", "is_error": False, "result": "done"})
    return events


# ----------------------------------------------------------------- Terminus ATIF


def atif(keystrokes: list[str], *, listed: tuple[str, ...] = POOL) -> dict[str, Any]:
    """An ATIF trajectory of Terminus-2: a user step offering skills, one step per command."""
    offer = "".join(f"<skill><name>{n}</name><description>d</description></skill>" for n in listed)
    steps: list[dict[str, Any]] = [
        {"step_id": 1, "source": "user",
         "message": f"Solve the task.\n<available_skills>{offer}</available_skills>"},
    ]  # fmt: skip
    for i, keys in enumerate(keystrokes):
        steps.append({
            "step_id": i + 2, "source": "agent", "message": "running",
            "tool_calls": [{"tool_call_id": f"call_{i}", "function_name": "bash_command",
                            "arguments": {"keystrokes": keys, "duration": 1.0}}],
            "observation": {"results": [{"source_call_id": None, "content": "ok\n$ "}]},
        })  # fmt: skip
    return {"schema_version": "ATIF-v1.2", "session_id": "t",
            "agent": {"name": "terminus-2", "version": "2.0.0", "model_name": "anthropic/claude-opus-4-5"},
            "steps": steps}  # fmt: skip


def build_claude_code(root: Path) -> tuple[Path, Path]:
    """The hand-labelled Claude Code scenario of tests/test_import_harbor.py; (with, without).

    The with-skills job is named like an ablation and the without-skills job like a skills
    run: the arm must come from the flags. task labels (SE, SD, S_call):
      a: Skill pdf-tools loads; SE 1, SD 0; S_call (instructions)   -> b
      b: Read csv-clean/SKILL.md; SE 0, SD 1; S_call (instructions) -> c
      c: Skill pdf-tools fails "Unknown skill"; SE 1, SD 1; invoked, not returned -> a
      d: Bash runs csv-clean/scripts/clean.py only; SE 1, SD 0; S_call (resource) -> b
      e: SE has no transcript; SE 1, SD 0; activation unknown -> b
      f: SE exception (no verifier result); SE 0 (error), SD 1; no call -> c
      g: SE two trials (the earlier pairs, `ls` of the skills folder only), SD one; SE 1, SD 1 -> a, 1 dropped
      h: checksum differs between the arms; SE 0, SD 0; no call -> d
      i: SD reads pdf-tools/SKILL.md: arm-integrity violation; SE Skill pdf-tools 1, SD 1 -> a
    """
    se = write_job(root / "claude-code-opus-no-skills-ablation")
    sd = write_job(root / "claude-code-opus-with-skills-v2")
    skill = Call("Skill", {"skill": "pdf-tools"}, "Launching skill: pdf-tools")
    write_trial(se, "a__1", "task-a", reward=1.0, stream=cc_stream(skill))
    write_trial(sd, "a__2", "task-a", reward=0.0, stream=cc_stream(init=False))
    read = Call("Read", {"file_path": f"{SKILLS_DIR}/csv-clean/SKILL.md"}, "---\nname: csv-clean")
    write_trial(se, "b__1", "task-b", reward=0.0, stream=cc_stream(read))
    write_trial(sd, "b__2", "task-b", reward=1.0, stream=cc_stream(init=False))
    refused = "<tool_use_error>Unknown skill: pdf-tools</tool_use_error>"
    unknown = Call("Skill", {"skill": "pdf-tools"}, refused, error=True)
    write_trial(se, "c__1", "task-c", reward=1.0, stream=cc_stream(unknown))
    write_trial(sd, "c__2", "task-c", reward=1.0, stream=cc_stream(init=False))
    script = Call(
        "Bash", {"command": f"python {SKILLS_DIR}/csv-clean/scripts/clean.py in.csv"}, "cleaned"
    )
    write_trial(se, "d__1", "task-d", reward=1.0, stream=cc_stream(script))
    write_trial(sd, "d__2", "task-d", reward=0.0, stream=cc_stream(init=False))
    write_trial(se, "e__1", "task-e", reward=1.0)  # no transcript
    write_trial(sd, "e__2", "task-e", reward=0.0, stream=cc_stream(init=False))
    timeout = {"exception_type": "AgentTimeoutError", "exception_message": "Agent timed out after 900s",
               "exception_traceback": "...", "occurred_at": "2026-01-26T03:15:00"}  # fmt: skip
    write_trial(se, "f__1", "task-f", reward=None, exception=timeout, stream=cc_stream())
    write_trial(sd, "f__2", "task-f", reward=1.0, stream=cc_stream(init=False))
    listing = Call("Bash", {"command": f"ls {SKILLS_DIR}/"}, "csv-clean\npdf-tools")
    write_trial(
        se, "g__1", "task-g", reward=1.0, started="2026-01-26T03:00:00", stream=cc_stream(listing)
    )
    write_trial(
        se, "g__3", "task-g", reward=0.0, started="2026-01-26T05:00:00", stream=cc_stream(skill)
    )
    write_trial(sd, "g__2", "task-g", reward=1.0, stream=cc_stream(init=False))
    write_trial(se, "h__1", "task-h", reward=0.0, checksum="with-skills-copy", stream=cc_stream())
    write_trial(
        sd, "h__2", "task-h", reward=0.0, checksum="no-skills-copy", stream=cc_stream(init=False)
    )
    sd_read = Call(
        "Read", {"file_path": f"{SKILLS_DIR}/pdf-tools/SKILL.md"}, "---\nname: pdf-tools"
    )
    write_trial(se, "i__1", "task-i", reward=1.0, stream=cc_stream(skill))
    write_trial(sd, "i__2", "task-i", reward=1.0, stream=cc_stream(sd_read, init=False))
    return se, sd


def build_terminus(root: Path) -> tuple[Path, Path]:
    """The hand-labelled Terminus-2 (ATIF) scenario, with repeats; (with, without).

    x: two trials per arm; SE reads pdf-tools/SKILL.md both times, passes the first (03:00)
       and fails the second (04:00); SD fails both -> repeat 0: b (S_call), repeat 1: d (S_call)
    y: `ls` of the skills folder only; SE 1, SD 1 -> a (skip)
    z: SE runs `cat .../csv-clean/SKILL.md`; SE 1, SD 1 -> a (S_call)
    """
    se = write_job(root / "terminus-jobs-a", agent="terminus-2")
    sd = write_job(root / "terminus-jobs-b", agent="terminus-2")
    kw: dict[str, Any] = {"agent": "terminus-2", "version": "2.0.0"}
    three, four = "2026-01-26T03:00:00", "2026-01-26T04:00:00"
    read_pdf = atif(["cat /root/.agents/skills/pdf-tools/SKILL.md\n", "python solve.py\n"])
    write_trial(se, "x__1", "task-x", reward=1.0, started=three, atif=read_pdf, **kw)
    write_trial(se, "x__2", "task-x", reward=0.0, started=four, atif=read_pdf, **kw)
    plain = atif(["python solve.py\n"], listed=())
    write_trial(sd, "x__3", "task-x", reward=0.0, started=three, atif=plain, **kw)
    write_trial(sd, "x__4", "task-x", reward=0.0, started=four, atif=plain, **kw)
    write_trial(se, "y__1", "task-y", reward=1.0, atif=atif(["ls /root/.agents/skills/\n"]), **kw)
    write_trial(sd, "y__2", "task-y", reward=1.0, atif=plain, **kw)
    read_csv = atif(["cat /root/.agents/skills/csv-clean/SKILL.md\n"])
    write_trial(se, "z__1", "task-z", reward=1.0, atif=read_csv, **kw)
    write_trial(sd, "z__2", "task-z", reward=1.0, atif=plain, **kw)
    return se, sd


def write_tasks(root: Path, intended: dict[str, list[str]]) -> Path:
    """A Harbor tasks folder whose tasks ship their intended skills in environment/skills/."""
    for task, skills in intended.items():
        for skill in skills:
            (root / task / "environment" / "skills" / skill).mkdir(parents=True)
            (root / task / "environment" / "skills" / skill / "SKILL.md").write_text(
                f"---\nname: {skill}\n---\n"
            )
        (root / task / "instruction.md").write_text("Do it.\n")
    return root


# ------------------------------------------------------------------ skill-creator


def write_grading(run: Path, passed: list[bool], *, start: str = "") -> None:
    run.mkdir(parents=True, exist_ok=True)
    (run / "outputs").mkdir(exist_ok=True)
    expectations = [
        {"text": f"check {i}", "passed": p, "evidence": "seen"} for i, p in enumerate(passed)
    ]
    n = sum(passed)
    (run / "grading.json").write_text(json.dumps({
        "expectations": expectations,
        "summary": {"passed": n, "failed": len(passed) - n, "total": len(passed),
                    "pass_rate": round(n / len(passed), 2) if passed else 0.0},
    }))  # fmt: skip
    if start:
        (run / "timing.json").write_text(
            json.dumps({"executor_start": start, "executor_duration_seconds": 12.0})
        )


def build_skill_creator(root: Path) -> Path:
    """A skill-creator workspace; iteration-2 is the latest (iteration-1 must be ignored).

      eval-0-ocean: with_skill run-1 3/3, run-2 2/3; without_skill run-1 1/3, run-2 3/3
      eval-1-forms: with_skill 2/2 (no run folders); without_skill 0/2
      eval-2-empty: with_skill has no grading.json (error row); without_skill 1/1
    benchmark.json agrees except for eval-1's with_skill run, which it says passed 1/2.
    """
    ws = root / "pdf-workspace"
    write_grading(ws / "iteration-1" / "eval-0-ocean" / "with_skill", [False])
    write_grading(ws / "iteration-1" / "eval-0-ocean" / "without_skill", [False])
    it = ws / "iteration-2"
    write_grading(
        it / "eval-0-ocean" / "with_skill" / "run-1",
        [True, True, True],
        start="2026-01-15T10:30:00Z",
    )
    write_grading(
        it / "eval-0-ocean" / "with_skill" / "run-2",
        [True, False, True],
        start="2026-01-15T10:40:00Z",
    )
    write_grading(
        it / "eval-0-ocean" / "without_skill" / "run-1",
        [True, False, False],
        start="2026-01-15T10:30:00Z",
    )
    write_grading(
        it / "eval-0-ocean" / "without_skill" / "run-2",
        [True, True, True],
        start="2026-01-15T10:40:00Z",
    )
    write_grading(it / "eval-1-forms" / "with_skill", [True, True])
    write_grading(it / "eval-1-forms" / "without_skill", [False, False])
    (it / "eval-2-empty" / "with_skill" / "outputs").mkdir(parents=True)
    write_grading(it / "eval-2-empty" / "without_skill", [True])
    for eval_dir in ("eval-0-ocean", "eval-1-forms"):
        (it / eval_dir / "eval_metadata.json").write_text(
            json.dumps({"eval_id": int(eval_dir[5]), "eval_name": eval_dir[7:]})
        )

    def run(
        eval_id: int, name: str, config: str, number: int, passed: int, total: int
    ) -> dict[str, Any]:
        return {"eval_id": eval_id, "eval_name": name, "configuration": config, "run_number": number,
                "result": {"pass_rate": passed / total, "passed": passed, "failed": total - passed,
                           "total": total, "time_seconds": 1.0, "tokens": 10, "tool_calls": 1, "errors": 0},
                "expectations": [], "notes": []}  # fmt: skip

    (it / "benchmark.json").write_text(json.dumps({
        "metadata": {"skill_name": "pdf", "executor_model": "claude-sonnet-4-20250514",
                     "timestamp": "2026-01-15T10:30:00Z", "evals_run": [0, 1], "runs_per_configuration": 2},
        "runs": [run(0, "ocean", "with_skill", 1, 3, 3), run(0, "ocean", "with_skill", 2, 2, 3),
                 run(0, "ocean", "without_skill", 1, 1, 3), run(0, "ocean", "without_skill", 2, 3, 3),
                 run(1, "forms", "with_skill", 1, 1, 2), run(1, "forms", "without_skill", 1, 0, 2)],
        "run_summary": {}, "notes": [],
    }))  # fmt: skip
    return ws


# ------------------------------------------------------------------ BenchFlow


def write_rollout(
    job: Path,
    name: str,
    task: str,
    *,
    reward: float | None = 1.0,
    invocations: int | None = 0,
    acp: list[dict[str, Any]] | None = None,
    error: str | None = None,
    file_hashes: dict[str, str] | None = None,
) -> Path:
    """A BenchFlow rollout folder: result.json, timing.json, trajectory/acp_trajectory.jsonl."""
    folder = job / "2026-06-15__00-00-00" / name
    (folder / "trajectory").mkdir(parents=True)
    result: dict[str, Any] = {
        "task_name": task, "rollout_name": name,
        "rewards": None if reward is None else {"reward": reward},
        "error": error, "error_category": None, "verifier_error": None, "export_error": None,
        "agent": "claude-agent-acp", "agent_name": "claude-agent-acp", "model": "claude-sonnet-4-5",
        "n_tool_calls": 3,
        "agent_result": {"n_tool_calls": 3, "n_input_tokens": 900, "n_output_tokens": 100},
        "partial_trajectory": False, "trajectory_source": "acp" if acp else None,
        "source": {"type": "github", "repo": "benchflow-ai/skillsbench", "path": f"tasks/{task}",
                   "file_hashes": file_hashes or {"task.toml": "sha256:" + "0" * 64}},
    }  # fmt: skip
    if invocations is not None:
        result["n_skill_invocations"] = invocations
        result["agent_result"]["n_skill_invocations"] = invocations
    (folder / "result.json").write_text(json.dumps(result, indent=2))
    (folder / "timing.json").write_text(json.dumps({"agent_execution": 42.0, "total": 60.0}))
    if acp is not None:
        (folder / "trajectory" / "acp_trajectory.jsonl").write_text(
            "".join(json.dumps(e) + "\n" for e in acp)
        )
    return folder


def acp_skill_call(
    skill: str, call_id: str = "call_1", status: str = "completed"
) -> dict[str, Any]:
    """One ACP tool call of kind `skill`, as BenchFlow records it."""
    return {"type": "tool_call", "tool_call_id": call_id, "kind": "skill", "title": skill,
            "status": status, "rawInput": {"skill": skill}, "content": []}  # fmt: skip


# ------------------------------------------- Gemini CLI as SkillsBench's Harbor trials hold it


def gemini_log(*lines: str) -> str:
    """`agent/gemini-cli.txt`: the CLI's plain-text output (synthetic lines in its shape). A line
    the agent printed may parse as JSON on its own (a quoted title, a bracket, a number)."""
    head = ["YOLO mode is enabled. All tool calls will be automatically approved.",
            "I will read the input file to see what is needed."]  # fmt: skip
    return "\n".join([*head, *lines, "Done: the answer is written."]) + "\n"


def gemini_atif(*calls: tuple[str, dict[str, Any], str, str]) -> dict[str, Any]:
    """`agent/trajectory.json` as Harbor converts a Gemini CLI session to ATIF: a user step, then
    one agent step per (function, arguments, result content, status) call."""
    steps: list[dict[str, Any]] = [{"step_id": 1, "source": "user", "message": "Do the task."}]
    for i, (fn, args, content, status) in enumerate(calls):
        result: dict[str, Any] = {"source_call_id": f"{fn}-{i}", "content": content}
        if status != "success":
            result["extra"] = {"status": status}
        steps.append({
            "step_id": i + 2, "source": "agent", "message": f"I will call {fn}.",
            "tool_calls": [{"tool_call_id": f"{fn}-{i}", "function_name": fn, "arguments": args}],
            "observation": {"results": [result]},
        })  # fmt: skip
    return {"schema_version": "ATIF-v1.2", "session_id": "g",
            "agent": {"name": "gemini-cli", "version": "unknown", "model_name": "gemini-3-flash"},
            "steps": steps}  # fmt: skip


# ------------------- SkillsBench's skill-loading Terminus: the offer as an `available_skills:` list


def episodes_offer(names: tuple[str, ...]) -> str:
    """The first prompt's skill section: a JSON list after `available_skills:` (each entry name,
    description, location), then `LOADED SKILLS:`. An empty offer has no list at all."""
    listing = json.dumps(
        [{"name": n, "description": f'Use for {n}; not "name": "decoy"', "location": f"{SKILLS_DIR}/{n}"}
         for n in names], indent=2,
    )  # fmt: skip
    offer = f"available_skills:\n{listing}\n" if names else ""
    return (
        "You are an AI assistant...\n---\nSKILL SYSTEM:\nIf skills are available (shown in "
        f'"available_skills"), check them first.\n\nSkill context:\n{offer}LOADED SKILLS:\n'
        'No skills loaded.\n\nTo load a skill, respond with ONLY this JSON:\n{"load_skill": '
        '"skill-name"}\n---\n\nTask Description:\nDo the task.\n'
    )

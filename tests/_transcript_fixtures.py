"""Transcripts built in the shapes of real harness output, for the detector tests.

Each builder writes the fields real files have (read from SkillsBench's archived Harbor trial
folders ``benchflow-ai/skillsbench-trajectories``: Claude Code ``agent/claude-code.txt``
stream-json and ``agent/trajectory.json`` ATIF; Harbor 0.25's own ATIF model and Terminus-2
``bash_command`` calls; codex ``exec_events.rs``; gemini-cli ``output/types.ts``; Harbor's
OpenCode parser) with made-up content: nothing here is copied from those files. The expected
detections are written by hand in the tests, never computed by the code under test.
"""

from __future__ import annotations

import json
from itertools import count
from pathlib import Path
from typing import Any

SESSION = "0b1c2d3e-0000-4000-8000-000000000001"
_ids = count(1)


def write_jsonl(path: Path, events: list[Any], *, raw_lines: dict[int, str] | None = None) -> Path:
    """`events` one per line; `raw_lines` puts a raw (possibly broken) line at an index."""
    lines = [json.dumps(e) for e in events]
    for index, text in sorted((raw_lines or {}).items()):
        lines.insert(index, text)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_json(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path


# --- Claude Code stream-json (`claude -p --output-format stream-json --verbose`) -----------


def cc_init(skills: list[str], slash_commands: list[str]) -> dict:
    return {
        "type": "system",
        "subtype": "init",
        "cwd": "/root",
        "session_id": SESSION,
        "tools": ["Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write", "Skill"],
        "mcp_servers": [],
        "model": "us.anthropic.claude-opus-4-5-20251101-v1:0",
        "permissionMode": "default",
        "slash_commands": slash_commands,
        "apiKeySource": "none",
        "claude_code_version": "2.1.19",
        "output_style": "default",
        "agents": ["Bash", "general-purpose", "Explore", "Plan"],
        "skills": skills,
        "plugins": [],
        "uuid": f"uuid-{next(_ids)}",
    }


def cc_tool_use(call_id: str, name: str, tool_input: dict) -> dict:
    return {
        "type": "assistant",
        "message": {
            "model": "claude-opus-4-5-20251101",
            "id": f"msg_bdrk_{next(_ids)}",
            "type": "message",
            "role": "assistant",
            "content": [{"type": "tool_use", "id": call_id, "name": name, "input": tool_input}],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
            "context_management": None,
        },
        "parent_tool_use_id": None,
        "session_id": SESSION,
        "uuid": f"uuid-{next(_ids)}",
    }


def cc_tool_result(call_id: str, content: str, *, is_error: bool = False) -> dict:
    block: dict[str, Any] = {"tool_use_id": call_id, "type": "tool_result", "content": content}
    if is_error:
        block["is_error"] = True
    return {
        "type": "user",
        "message": {"role": "user", "content": [block]},
        "parent_tool_use_id": None,
        "session_id": SESSION,
        "uuid": f"uuid-{next(_ids)}",
    }


def cc_result() -> dict:
    return {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "duration_ms": 170000,
        "num_turns": 9,
        "result": "Done.",
        "session_id": SESSION,
    }


def claude_code_trial() -> tuple[list[dict], dict[int, str]]:
    """A with-skills Claude Code trial with every event kind; `raw` holds a broken line.

    Hand labels (pool: pdf, xlsx, docx), by line:
      0 init lists pdf, xlsx, docx (skills) and pdf (slash_commands) -> listed, not activation
      1 Glob of skills/**/SKILL.md -> listing, nothing
      3 Bash `ls` of a skill folder -> listing, nothing
      5 Skill `docx-pro` -> error result "Unknown skill" -> failed load
      7 Skill `pdf` -> "Launching skill" -> pdf, instructions, loaded
      9 Bash `cat .../xlsx/SKILL.md` -> xlsx, instructions, loaded
     11 Bash runs pdf's script -> dropped: pdf's instructions were loaded
     13 Read of docx's reference, no docx SKILL.md read -> docx, resource, loaded
     15 Read of xlsx/SKILL.md with an error result -> xlsx, instructions, failed
     17 a half-written line -> skipped with a note
    """
    events = [
        cc_init(["pdf", "xlsx", "docx"], ["pdf", "compact", "context", "cost", "init"]),
        cc_tool_use("toolu_01", "Glob", {"pattern": "/root/.claude/skills/**/SKILL.md"}),
        cc_tool_result(
            "toolu_01", "/root/.claude/skills/pdf/SKILL.md\n/root/.claude/skills/xlsx/SKILL.md"
        ),
        cc_tool_use(
            "toolu_02",
            "Bash",
            {"command": "ls -la /root/.claude/skills/pdf/", "description": "List"},
        ),
        cc_tool_result("toolu_02", "SKILL.md\nscripts\n"),
        cc_tool_use("toolu_03", "Skill", {"skill": "docx-pro"}),
        cc_tool_result(
            "toolu_03", "<tool_use_error>Unknown skill: docx-pro</tool_use_error>", is_error=True
        ),
        cc_tool_use("toolu_04", "Skill", {"skill": "pdf"}),
        cc_tool_result("toolu_04", "Launching skill: pdf"),
        cc_tool_use(
            "toolu_05",
            "Bash",
            {"command": "cat /root/.claude/skills/xlsx/SKILL.md", "description": "Read"},
        ),
        cc_tool_result("toolu_05", "---\nname: xlsx\n---\n# Spreadsheets"),
        cc_tool_use(
            "toolu_06",
            "Bash",
            {"command": "python3 /root/.claude/skills/pdf/scripts/fill_form.py /root/in.pdf"},
        ),
        cc_tool_result("toolu_06", "filled 12 fields"),
        cc_tool_use(
            "toolu_07", "Read", {"file_path": "/root/.claude/skills/docx/references/ooxml.md"}
        ),
        cc_tool_result("toolu_07", "     1→# OOXML"),
        cc_tool_use("toolu_08", "Read", {"file_path": "/root/.claude/skills/xlsx/SKILL.md"}),
        cc_tool_result(
            "toolu_08", "<tool_use_error>File does not exist.</tool_use_error>", is_error=True
        ),
        cc_result(),
    ]
    return events, {17: '{"type":"assistant","message":{"content":[{"type":"tool_u'}


# --- Harbor ATIF trajectory.json --------------------------------------------------------------


def atif(agent: str, steps: list[dict]) -> dict:
    return {
        "schema_version": "ATIF-v1.2",
        "session_id": SESSION,
        "agent": {"name": agent, "version": "unknown", "model_name": "gemini-3-flash-preview"},
        "steps": [{"step_id": i + 1, **step} for i, step in enumerate(steps)],
        "final_metrics": {"total_prompt_tokens": 1000, "total_completion_tokens": 100},
    }


def atif_user(message: str) -> dict:
    return {"timestamp": "2026-01-25T18:08:26.708Z", "source": "user", "message": message}


def atif_agent(
    calls: list[tuple[str, str, dict]], results: list[tuple[str | None, str, dict | None]]
) -> dict:
    """An agent step: `calls` (id, function, arguments), `results` (source id, content, extra)."""
    step: dict[str, Any] = {
        "timestamp": "2026-01-25T18:08:28.541Z",
        "source": "agent",
        "model_name": "gemini-3-flash-preview",
        "message": "Next step.",
        "tool_calls": [
            {"tool_call_id": cid, "function_name": fn, "arguments": args} for cid, fn, args in calls
        ],
    }
    if results:
        step["observation"] = {
            "results": [
                {"source_call_id": sid, "content": content, **({"extra": extra} if extra else {})}
                for sid, content, extra in results
            ]
        }
    return step


def available_skills(entries: list[tuple[str, str]]) -> str:
    """Terminus-2's `<available_skills>` block appended to the instruction."""
    body = "".join(
        f"<skill><name>{name}</name><description>Helps with {name}.</description>"
        f"<location>{location}</location></skill>"
        for name, location in entries
    )
    return f"<available_skills>{body}</available_skills>"


def terminus_trial() -> dict:
    """A Terminus-2 trial. Hand labels (pool: pdf, xlsx), by step index:
    0 instruction offers pdf and xlsx in <available_skills> -> listed
    1 keystrokes `ls` of the skills folder -> listing, nothing
    2 keystrokes `cat .../xlsx/SKILL.md\\n` -> xlsx, instructions, loaded
    3 two commands, one runs pdf's script by full path -> pdf, resource, loaded
    4 mark_task_complete -> nothing
    """
    offer = available_skills(
        [
            ("pdf", "/root/.claude/skills/pdf/SKILL.md"),
            ("xlsx", "/root/.claude/skills/xlsx/SKILL.md"),
        ]
    )
    return atif(
        "terminus-2",
        [
            atif_user("Fill the form in /root/in.pdf.\n" + offer),
            atif_agent(
                [
                    (
                        "call_0_1",
                        "bash_command",
                        {"keystrokes": "ls -la /root/.claude/skills/\n", "duration": 0.1},
                    )
                ],
                [("call_0_1", "pdf\nxlsx\n", None)],
            ),
            atif_agent(
                [
                    (
                        "call_1_1",
                        "bash_command",
                        {"keystrokes": "cat /root/.claude/skills/xlsx/SKILL.md\n", "duration": 0.1},
                    )
                ],
                [("call_1_1", "---\nname: xlsx\n---", None)],
            ),
            atif_agent(
                [
                    ("call_2_1", "bash_command", {"keystrokes": "cd /root\n", "duration": 0.1}),
                    (
                        "call_2_2",
                        "bash_command",
                        {
                            "keystrokes": "python3 /root/.claude/skills/pdf/scripts/fill_form.py in.pdf\n",
                            "duration": 5.0,
                        },
                    ),
                ],
                [(None, "filled 12 fields", None)],
            ),
            atif_agent([("call_3_task_complete", "mark_task_complete", {})], [(None, "ok", None)]),
        ],
    )


def claude_code_atif_trial() -> dict:
    """Claude Code as Harbor converts it to ATIF. Hand labels (pool: pdf, xlsx):
    0 user instruction (no listing: Harbor drops the init event)
    1 Skill `pdf`, result flagged `tool_result_is_error` -> pdf, instructions, failed
    2 Skill `xlsx` -> xlsx, instructions, loaded
    3 Read of pdf/SKILL.md -> pdf, instructions, loaded
    """
    return atif(
        "claude-code",
        [
            atif_user("Fill the form."),
            atif_agent(
                [("toolu_1", "Skill", {"skill": "pdf"})],
                [
                    (
                        "toolu_1",
                        "<tool_use_error>Skill pdf failed</tool_use_error>",
                        {"tool_result_is_error": True},
                    )
                ],
            ),
            atif_agent(
                [("toolu_2", "Skill", {"skill": "xlsx"})],
                [("toolu_2", "Launching skill: xlsx", None)],
            ),
            atif_agent(
                [("toolu_3", "Read", {"file_path": "/root/.claude/skills/pdf/SKILL.md"})],
                [("toolu_3", "---\nname: pdf", None)],
            ),
        ],
    )


# --- Codex `exec --json` ----------------------------------------------------------------------


def codex_command(
    kind: str, item_id: str, command: str, *, exit_code: int | None, status: str
) -> dict:
    return {
        "type": kind,
        "item": {
            "id": item_id,
            "type": "command_execution",
            "command": command,
            "aggregated_output": "",
            "exit_code": exit_code,
            "status": status,
        },
    }


def codex_trial() -> list[dict]:
    """Hand labels (pool: pdf, xlsx), by line:
    3 `ls` of the skills folder (completed) -> nothing
    5 `sed -n 1,80p .../pdf/SKILL.md` (completed, exit 0) -> pdf, instructions, loaded
    7 `cat .../xlsx/SKILL.md` (failed, exit 1) -> xlsx, instructions, failed
    8 started, never completed: runs xlsx's script -> xlsx, resource, failed
    """
    return [
        {"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"},
        {"type": "turn.started"},
        {
            "type": "item.completed",
            "item": {"id": "item_0", "type": "reasoning", "text": "Look for skills."},
        },
        codex_command(
            "item.completed",
            "item_1",
            "bash -lc 'ls /root/.codex/skills'",
            exit_code=0,
            status="completed",
        ),
        codex_command(
            "item.started",
            "item_2",
            "bash -lc 'sed -n 1,80p /root/.codex/skills/pdf/SKILL.md'",
            exit_code=None,
            status="in_progress",
        ),
        codex_command(
            "item.completed",
            "item_2",
            "bash -lc 'sed -n 1,80p /root/.codex/skills/pdf/SKILL.md'",
            exit_code=0,
            status="completed",
        ),
        codex_command(
            "item.started",
            "item_3",
            "bash -lc 'cat /root/.codex/skills/xlsx/SKILL.md'",
            exit_code=None,
            status="in_progress",
        ),
        codex_command(
            "item.completed",
            "item_3",
            "bash -lc 'cat /root/.codex/skills/xlsx/SKILL.md'",
            exit_code=1,
            status="failed",
        ),
        codex_command(
            "item.started",
            "item_4",
            "bash -lc 'python /root/.codex/skills/xlsx/scripts/recalc.py out.xlsx'",
            exit_code=None,
            status="in_progress",
        ),
    ]


# --- Gemini CLI stream-json -------------------------------------------------------------------


def gemini_trial() -> list[dict]:
    """Hand labels (pool: pdf, xlsx), by line:
    1 activate_skill `pdf`, success -> pdf, instructions, loaded
    3 activate_skill `docx`, error "not found" -> docx, instructions, failed
    5 list_directory of skills -> nothing
    7 run_shell_command `cat .../xlsx/SKILL.md`, success -> xlsx, instructions, loaded
    """
    ts = "2026-01-25T18:08:28.541Z"

    def call(n: int, name: str, params: dict, status: str, output: str) -> list[dict]:
        """Tool call `n` and its result, as the stream holds them (the id is `<name>-<n>`)."""
        tid = f"{name}-{n}"
        return [
            dict(type="tool_use", timestamp=ts, tool_name=name, tool_id=tid, parameters=params),
            dict(type="tool_result", timestamp=ts, tool_id=tid, status=status, output=output),
        ]

    missing = 'Error: Skill "docx" not found. Available skills are: pdf, xlsx'
    return [
        {"type": "init", "timestamp": ts, "session_id": SESSION, "model": "gemini-3-flash-preview"},
        *call(1, "activate_skill", {"name": "pdf"}, "success", '<activated_skill name="pdf">'),
        *call(2, "activate_skill", {"name": "docx"}, "error", missing),
        *call(3, "list_directory", {"dir_path": "/root/.gemini/skills/pdf"}, "success", "SKILL.md"),
        *call(
            4,
            "run_shell_command",
            {"command": "cat /root/.gemini/skills/xlsx/SKILL.md"},
            "success",
            "---\nname: xlsx",
        ),
        {"type": "result", "timestamp": ts, "status": "success", "stats": {"total_tokens": 10}},
    ]


# --- OpenCode `run --format json` -------------------------------------------------------------


def opencode_tool(tool: str, call_id: str, tool_input: dict, status: str) -> dict:
    return {
        "type": "tool_use",
        "timestamp": 1769364508527,
        "sessionID": "ses_01",
        "part": {
            "id": f"prt_{call_id}",
            "sessionID": "ses_01",
            "messageID": "msg_01",
            "type": "tool",
            "callID": call_id,
            "tool": tool,
            "state": {"status": status, "input": tool_input, "output": "...", "title": tool},
        },
    }


def opencode_trial() -> list[dict]:
    """Hand labels (pool: pdf, xlsx), by line:
    1 skill `pdf` completed -> pdf, instructions, loaded
    2 glob over skills -> nothing
    3 read of xlsx's reference, no xlsx SKILL.md -> xlsx, resource, loaded
    4 skill `xlsx` with status error -> xlsx, instructions, failed (xlsx stays resource)
    """
    step = {
        "type": "step_start",
        "timestamp": 1769364508000,
        "sessionID": "ses_01",
        "part": {"type": "step-start"},
    }
    return [
        step,
        opencode_tool("skill", "call_1", {"name": "pdf"}, "completed"),
        opencode_tool(
            "glob",
            "call_2",
            {"pattern": "**/SKILL.md", "path": "/root/.config/opencode/skills"},
            "completed",
        ),
        opencode_tool(
            "read",
            "call_3",
            {"filePath": "/root/.config/opencode/skills/xlsx/references/formulas.md"},
            "completed",
        ),
        opencode_tool("skill", "call_4", {"name": "xlsx"}, "error"),
    ]


# --- OpenHands V1 SDK events ------------------------------------------------------------------


def openhands_trial() -> list[dict]:
    """Hand labels (pool: pdf, xlsx), by list index:
    0 invoke_skill `pdf` -> pdf, instructions, loaded
    2 terminal `find` for SKILL.md -> listing, nothing
    4 terminal `cat .../xlsx/SKILL.md`, observation is_error -> xlsx, instructions, failed
    6 invoke_skill `docx` -> "Unknown skill 'docx'" (is_error) -> docx, instructions, failed
    8 terminal runs pdf's script -> AgentErrorEvent -> dropped anyway: pdf's instructions loaded
    10 terminal `head` of xlsx's reference -> AgentErrorEvent -> xlsx, resource, failed
    """

    def action(call_id: str, tool: str, act: dict) -> dict:
        return {
            "kind": "ActionEvent",
            "source": "agent",
            "tool_name": tool,
            "tool_call_id": call_id,
            "action": act,
        }

    def observation(call_id: str, tool: str, *, error: bool = False) -> dict:
        return {
            "kind": "ObservationEvent",
            "source": "environment",
            "tool_name": tool,
            "tool_call_id": call_id,
            "observation": {"content": [{"type": "text", "text": "..."}], "is_error": error},
        }

    def agent_error(call_id: str, tool: str) -> dict:
        return {
            "kind": "AgentErrorEvent",
            "source": "agent",
            "tool_name": tool,
            "tool_call_id": call_id,
            "error": "Tool call timed out",
        }

    return [
        action("c1", "invoke_skill", {"kind": "InvokeSkillAction", "name": "pdf"}),
        observation("c1", "invoke_skill"),
        action("c2", "terminal", {"command": "find / -name SKILL.md"}),
        observation("c2", "terminal"),
        action("c3", "terminal", {"command": "cat /root/.openhands/skills/xlsx/SKILL.md"}),
        observation("c3", "terminal", error=True),
        action("c4", "invoke_skill", {"kind": "InvokeSkillAction", "name": "docx"}),
        observation("c4", "invoke_skill", error=True),
        action(
            "c5", "terminal", {"command": "python3 /root/.openhands/skills/pdf/scripts/fill.py"}
        ),
        agent_error("c5", "terminal"),
        action(
            "c6", "terminal", {"command": "head -40 /root/.openhands/skills/xlsx/references/api.md"}
        ),
        agent_error("c6", "terminal"),
    ]


# --- A transcript of no known format ----------------------------------------------------------


def generic_trial() -> list[dict]:
    """OpenAI-style chat messages. Hand labels (pool: pdf, xlsx), by line:
    0 read_file of pdf/SKILL.md (arguments as a JSON string) -> pdf, instructions
    1 glob for SKILL.md files -> nothing
    2 read of xlsx's script only -> nothing (generic counts SKILL.md only)
    """

    def call(name: str, args: dict, *, as_string: bool) -> dict:
        arguments = json.dumps(args) if as_string else args
        return {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": f"c{next(_ids)}",
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            ],
        }

    return [
        call("read_file", {"path": "/workspace/skills/pdf/SKILL.md"}, as_string=True),
        call("glob", {"pattern": "/workspace/skills/*/SKILL.md"}, as_string=False),
        call("read_file", {"path": "/workspace/skills/xlsx/scripts/recalc.py"}, as_string=False),
    ]


# --- SkillsBench's skill-loading Terminus: agent/trajectory.json as a list of episodes --------


def terminus_episodes_trial() -> list[dict]:
    """Raw replies with embedded command JSON. Hand labels (pool: pdf, xlsx), by episode:
    0 first prompt offers pdf, xlsx; reply asks `load_skill` `pdf-tools` -> next prompt says
      "Skill not found" -> pdf-tools, instructions, failed
    1 reply asks `load_skill` `pdf` -> loaded (no "not found" after it)
    2 keystrokes write a note into xlsx's folder with a here-document (a write, nothing) and
      `cat` xlsx's SKILL.md -> xlsx, instructions
    """

    def reply(body: dict) -> str:
        return "Analysis first.\n\n```json\n" + json.dumps(body, indent=2) + "\n```"

    offer = available_skills(
        [
            ("pdf", "/root/.terminus/skills/pdf/SKILL.md"),
            ("xlsx", "/root/.terminus/skills/xlsx/SKILL.md"),
        ]
    )
    write = "cat > /root/.terminus/skills/xlsx/notes.md << 'EOF'\npython /root/.terminus/skills/pdf/scripts/x.py\nEOF\n"
    return [
        {
            "episode": 0,
            "prompt": "You are an AI assistant...\n" + offer + "\nTask Description: ...",
            "response": reply({"load_skill": "pdf-tools"}),
        },
        {
            "episode": 0,
            "prompt": "Skill not found: pdf-tools\n\nCurrent Terminal Screen:\n",
            "response": reply({"load_skill": "pdf"}),
        },
        {
            "episode": 1,
            "prompt": "Loaded skill: pdf\n...",
            "response": reply(
                {
                    "analysis": "Read the xlsx skill.",
                    "plan": "cat it",
                    "commands": [
                        {"keystrokes": write, "duration": 0.1},
                        {
                            "keystrokes": "cat /root/.terminus/skills/xlsx/SKILL.md\n",
                            "duration": 0.1,
                        },
                    ],
                }
            ),
        },
    ]


# --- BenchFlow trajectory/acp_trajectory.jsonl --------------------------------------------------


def acp_call(call_id: str, kind: str, title: str, status: str, text: str | None = None) -> dict:
    content = [{"type": "content", "content": {"type": "text", "text": text}}] if text else []
    return {
        "type": "tool_call",
        "tool_call_id": call_id,
        "kind": kind,
        "title": title,
        "status": status,
        "content": content,
    }


def acp_trial() -> list[dict]:
    """BenchFlow's recorded ACP events. Hand labels (pool: pdf, xlsx, docx), by line:
    1 OpenHands legacy invoke_skill (kind other, `Tool: invoke_skill` + `[skill: pdf]`) -> pdf
    2 execute `cat .../xlsx/SKILL.md` completed -> xlsx, instructions
    3 read of docx's reference, failed -> dropped: docx's instructions load later
    4 search for SKILL.md -> nothing
    5 OpenCode skill (`<skill_content name="docx">`) completed -> docx, instructions
    6 kind skill, failed, names no skill -> a note, no event
    7 round outcome with skills preloaded -> a note, not activation
    """
    return [
        {"type": "user_message", "text": "Extract the totals."},
        acp_call(
            "c1", "other", "invoke_skill", "completed", "Tool: invoke_skill\n[skill: pdf]\n# PDF"
        ),
        acp_call("c2", "execute", "cat /root/.agents/skills/xlsx/SKILL.md", "completed", "---"),
        acp_call("c3", "read", "Read /root/.agents/skills/docx/references/a.md", "failed"),
        acp_call("c4", "search", "find / -name SKILL.md", "completed", "..."),
        acp_call("c5", "other", "skill", "completed", '<skill_content name="docx">\n# DOCX'),
        acp_call("c6", "skill", "Skill", "failed"),
        {
            "type": "agent_iteration_outcome",
            "stop_reason": "end_turn",
            "skill_context_preloaded": True,
            "preloaded_skill_count": 5,
        },
    ]


def codex_session_log() -> list[dict]:
    """Codex's ~/.codex/sessions JSONL. Hand labels (pool: pdf, xlsx), by line:
    1 shell `cat .../pdf/SKILL.md`, output exit_code 0 -> pdf, instructions, loaded
    3 exec_command (`cmd`) `ls` of skills -> nothing
    5 shell `python .../xlsx/scripts/recalc.py`, exit_code 1 -> xlsx, resource, failed
    """
    ts = "2026-01-25T18:08:28.541Z"

    def call(call_id: str, name: str, args: dict) -> dict:
        payload = {
            "type": "function_call",
            "name": name,
            "arguments": json.dumps(args),
            "call_id": call_id,
        }
        return {"timestamp": ts, "type": "response_item", "payload": payload}

    def output(call_id: str, exit_code: int) -> dict:
        blob = json.dumps(
            {"output": "...", "metadata": {"exit_code": exit_code, "duration_seconds": 0.1}}
        )
        payload = {"type": "function_call_output", "call_id": call_id, "output": blob}
        return {"timestamp": ts, "type": "response_item", "payload": payload}

    return [
        {"timestamp": ts, "type": "session_meta", "payload": {"id": SESSION, "cwd": "/root"}},
        call(
            "call_1", "shell", {"command": ["bash", "-lc", "cat /root/.codex/skills/pdf/SKILL.md"]}
        ),
        output("call_1", 0),
        call("call_2", "exec_command", {"cmd": "ls -R /root/.codex/skills"}),
        output("call_2", 0),
        call(
            "call_3",
            "shell",
            {"command": ["bash", "-lc", "python /root/.codex/skills/xlsx/scripts/recalc.py"]},
        ),
        output("call_3", 1),
    ]


def gemini_recording() -> dict:
    """Gemini CLI's chat recording (gemini-cli.trajectory.json). Hand labels (pool: pdf, xlsx),
    by message index:
    1 activate_skill `pdf`, status success -> pdf, instructions, loaded
    2 read_file of xlsx/SKILL.md, no status, response error -> xlsx, instructions, failed
    """

    def call(call_id: str, name: str, args: dict, response: dict, status: str | None) -> dict:
        entry = {
            "id": call_id,
            "name": name,
            "args": args,
            "result": [{"functionResponse": {"id": call_id, "name": name, "response": response}}],
        }
        if status is not None:
            entry["status"] = status
        return entry

    def gemini(calls: list[dict]) -> dict:
        return {"id": f"m{next(_ids)}", "timestamp": "2026-01-25T18:08:28.541Z", "type": "gemini",
                "content": "Next.", "thoughts": [], "model": "gemini-3-flash-preview", "toolCalls": calls}  # fmt: skip

    return {
        "sessionId": SESSION,
        "projectHash": "94a6b4",
        "startTime": "2026-01-25T18:08:26.708Z",
        "messages": [
            {
                "id": "m0",
                "timestamp": "2026-01-25T18:08:26.708Z",
                "type": "user",
                "content": "Task.",
            },
            gemini(
                [
                    call(
                        "activate_skill-1",
                        "activate_skill",
                        {"name": "pdf"},
                        {"output": "<activated_skill>"},
                        "success",
                    )
                ]
            ),
            gemini(
                [
                    call(
                        "read_file-2",
                        "read_file",
                        {"file_path": "/root/.gemini/skills/xlsx/SKILL.md"},
                        {"error": "File not found."},
                        None,
                    )
                ]
            ),
        ],
    }

"""Session 22 attacks on the transcript detectors: shell syntax that forged or hid a skill
read, a shell tool's working folder, forged calls outside the agent's turns, and bounded
reading. Every transcript is a real file read back with `read_transcript`; the expected
activations are written by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hf_skillfollow.transcripts import TranscriptError, detect, read_transcript, sniff_format
from tests import _transcript_fixtures as fx

POOL = ("pdf", "xlsx")
PDF = "/root/.claude/skills/pdf/SKILL.md"


def _claude_bash(tmp_path: Path, command: str) -> tuple[str, ...]:
    """A Claude Code stream with one successful Bash call running `command`: what it
    activated."""
    path = fx.write_jsonl(
        tmp_path / "claude-code.txt",
        [
            fx.cc_init([], []),
            fx.cc_tool_use("toolu_01", "Bash", {"command": command}),
            fx.cc_tool_result("toolu_01", "ok"),
        ],
    )
    transcript = read_transcript(path)
    assert sniff_format(transcript) == "claude-code"
    return detect(transcript, POOL).activated()


# Shell syntax around a command that only tests, lists, counts or checksums a SKILL.md: the
# compound-command word (`if`, `(`, `{`, `!`, `do`) was taken for the program, so the `ls` or
# `[` behind it read as a program reading the file.
@pytest.mark.parametrize(
    "command",
    [
        f"if [ -f {PDF} ]; then echo found; fi",
        f"if test -f {PDF}; then echo found; fi",
        f"[[ -f {PDF} ]] && echo found",
        f"(ls {PDF})",
        f"{{ ls -l {PDF}; }}",
        f"! ls {PDF}",
        f"while true; do ls {PDF}; break; done",
        f"for f in {PDF}; do echo $f; done",
        f"sha256sum {PDF}",
        f"grep -l name {PDF}",
        f"grep -rc name {PDF}",
        f"grep -q name {PDF} && echo yes",
        f"rg --files-with-matches name {PDF}",
        f"cat notes.txt &>{PDF}",
    ],
)
def test_shell_syntax_that_only_tests_or_lists_a_skill_md_is_not_activation(
    tmp_path: Path, command: str
) -> None:
    assert _claude_bash(tmp_path, command) == ()


# A read inside command substitution (`$(...)`, backquotes, `<(...)`) was missed: the outer
# program (`echo`, `diff`) was the only one looked at. A read whose output is redirected
# (`cat f>/dev/null`) was taken as a resource of `pdf` named `SKILL.md>`.
@pytest.mark.parametrize(
    "command",
    [
        f'echo "$(cat {PDF})"',
        f"echo `head -n 40 {PDF}`",
        f"diff <(cat {PDF}) /tmp/other.md",
        "cd /root/.claude/skills/pdf && echo \"$(sed -n '1,80p' SKILL.md)\"",
        f"grep -n fill {PDF}",
        f"if [ -f {PDF} ]; then cat {PDF}; fi",
    ],
)
def test_a_skill_md_read_inside_substitution_or_a_compound_command_is_found(
    tmp_path: Path, command: str
) -> None:
    assert _claude_bash(tmp_path, command) == ("pdf",)


def test_a_read_whose_output_is_redirected_is_an_instructions_read(tmp_path: Path) -> None:
    path = fx.write_jsonl(
        tmp_path / "claude-code.txt",
        [
            fx.cc_tool_use("toolu_01", "Bash", {"command": f"cat {PDF}>/dev/null"}),
            fx.cc_tool_result("toolu_01", ""),
        ],
    )
    detection = detect(read_transcript(path), POOL)
    assert detection.kinds() == {"pdf": "instructions"}


def _codex_shell(args: dict) -> list[dict]:
    """A Codex session log with one `shell` call of `args` that exited 0."""
    ts = "2026-01-25T18:08:28.541Z"
    call = {"type": "function_call", "name": "shell", "arguments": json.dumps(args)}
    blob = json.dumps({"output": "---\nname: pdf", "metadata": {"exit_code": 0}})
    return [
        {"timestamp": ts, "type": "session_meta", "payload": {"id": fx.SESSION, "cwd": "/root"}},
        {"timestamp": ts, "type": "response_item", "payload": {**call, "call_id": "call_1"}},
        {
            "timestamp": ts,
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "call_1", "output": blob},
        },
    ]


def _gemini_shell(params: dict) -> list[dict]:
    ts = "2026-01-25T18:08:28.541Z"
    tid = "run_shell_command-1"
    return [
        {"type": "init", "timestamp": ts, "session_id": fx.SESSION, "model": "gemini-3-flash"},
        dict(
            type="tool_use",
            timestamp=ts,
            tool_name="run_shell_command",
            tool_id=tid,
            parameters=params,
        ),
        dict(type="tool_result", timestamp=ts, tool_id=tid, status="success", output="name: pdf"),
    ]


# A shell tool's own working-folder argument was ignored, so `cat SKILL.md` run in a skill's
# folder (Codex `workdir`, Gemini CLI `directory`/`dir_path`, OpenCode `workdir`) was missed,
# while the same read written `cd <folder> && cat SKILL.md` was found.
_INSTRUCTIONS = {"pdf": "instructions"}


@pytest.mark.parametrize(
    ("fmt", "events", "kinds"),
    [
        (
            "codex",
            _codex_shell(
                {"command": ["bash", "-lc", "cat SKILL.md"], "workdir": "/root/.codex/skills/pdf"}
            ),
            _INSTRUCTIONS,
        ),
        (
            "codex",
            _codex_shell(
                {"command": ["python3", "pdf/scripts/fill.py"], "workdir": "/root/.codex/skills"}
            ),
            {"pdf": "resource"},
        ),
        (
            "gemini-cli",
            _gemini_shell({"command": "cat SKILL.md", "directory": ".gemini/skills/pdf"}),
            _INSTRUCTIONS,
        ),
        (
            "gemini-cli",
            _gemini_shell({"command": "head SKILL.md", "dir_path": ".agents/skills/pdf"}),
            _INSTRUCTIONS,
        ),
        (
            "opencode",
            [
                fx.opencode_tool(
                    "bash",
                    "call_1",
                    {"command": "cat SKILL.md", "workdir": "/home/agent/.opencode/skills/pdf"},
                    "completed",
                )
            ],
            _INSTRUCTIONS,
        ),
    ],
)
def test_a_shell_call_run_in_a_skill_folder_by_its_workdir_argument_is_found(
    tmp_path: Path, fmt: str, events: list[dict], kinds: dict[str, str]
) -> None:
    transcript = read_transcript(fx.write_jsonl(tmp_path / "transcript.jsonl", events))
    assert sniff_format(transcript) == fmt
    assert detect(transcript, POOL).kinds() == kinds


def test_a_workdir_alone_names_no_skill_file(tmp_path: Path) -> None:
    # Running `ls` or `pytest` in a skill's folder reads none of its files.
    events = _codex_shell(
        {"command": ["bash", "-lc", "ls -la"], "workdir": "/root/.codex/skills/pdf"}
    )
    transcript = read_transcript(fx.write_jsonl(tmp_path / "rollout.jsonl", events))
    assert detect(transcript, POOL).events == ()


# A call or result id that is a JSON list or object (a hostile or corrupted transcript) was
# used as a dict key: every detector that pairs calls with results raised TypeError
# ("unhashable type: 'list'"), a traceback through `import` instead of a detection. Now such
# an id pairs with nothing: the call is kept, as not returned where a result decides.
_LIST_ID = ["toolu_01"]
_SKILL_MD = "/root/.agents/skills/pdf/SKILL.md"


@pytest.mark.parametrize(
    ("name", "data", "fmt", "events"),
    [
        (
            "claude-code.txt",
            [
                fx.cc_tool_use(_LIST_ID, "Skill", {"skill": "pdf"}),  # type: ignore[arg-type]
                fx.cc_tool_result("toolu_01", "Launching skill: pdf"),
            ],
            "claude-code",
            [("pdf", False)],
        ),
        (
            "codex.jsonl",
            [
                {
                    "type": "item.started",
                    "item": {"id": _LIST_ID, "type": "command_execution", "command": "ls"},
                },
                {
                    "type": "item.completed",
                    "item": {
                        "id": _LIST_ID,
                        "type": "command_execution",
                        "command": f"cat {_SKILL_MD}",
                        "exit_code": 0,
                        "status": "completed",
                    },
                },
            ],
            "codex",
            [("pdf", True)],
        ),
        (
            "rollout.jsonl",
            [
                {"type": "session_meta", "payload": {"id": fx.SESSION}},
                {
                    "type": "response_item",
                    "payload": {"type": ["function_call_output"], "call_id": {"a": 1}},
                },
                {
                    "type": "response_item",
                    "payload": {
                        "type": "function_call",
                        "name": "shell",
                        "arguments": json.dumps({"command": ["cat", _SKILL_MD]}),
                        "call_id": _LIST_ID,
                    },
                },
            ],
            "codex",
            [("pdf", False)],
        ),
        (
            "gemini.jsonl",
            [
                {"type": "init", "session_id": fx.SESSION},
                {
                    "type": "tool_use",
                    "tool_name": "activate_skill",
                    "tool_id": _LIST_ID,
                    "parameters": {"name": "pdf"},
                },
                {"type": "tool_result", "tool_id": _LIST_ID, "status": "success"},
            ],
            "gemini-cli",
            [("pdf", False)],
        ),
        (
            "acp_trajectory.jsonl",
            [
                {
                    "type": "tool_call",
                    "tool_call_id": _LIST_ID,
                    "kind": "read",
                    "title": f"Read {_SKILL_MD}",
                    "status": "completed",
                }
            ],
            "acp",
            [("pdf", True)],
        ),
        (
            "events.jsonl",
            [
                {
                    "kind": "ObservationEvent",
                    "source": "environment",
                    "tool_call_id": _LIST_ID,
                    "observation": {"is_error": True},
                },
                {
                    "kind": "ActionEvent",
                    "source": "agent",
                    "tool_name": "invoke_skill",
                    "tool_call_id": _LIST_ID,
                    "action": {"name": "pdf"},
                },
            ],
            "openhands",
            [("pdf", True)],
        ),
        (
            "trajectory.json",
            fx.atif(
                "terminus-2",
                [
                    {
                        "source": "agent",
                        "tool_calls": [
                            {
                                "tool_call_id": _LIST_ID,
                                "function_name": "Skill",
                                "arguments": {"skill": "pdf"},
                            }
                        ],
                        "observation": {
                            "results": [{"source_call_id": {"id": 1}, "content": "ok"}]
                        },
                    }
                ],
            ),
            "atif",
            [("pdf", False)],
        ),
    ],
)
def test_an_id_that_is_a_list_or_object_is_one_unpaired_call_not_a_traceback(
    tmp_path: Path, name: str, data: object, fmt: str, events: list[tuple[str, bool]]
) -> None:
    path = tmp_path / name
    (fx.write_json if name.endswith(".json") else fx.write_jsonl)(path, data)  # type: ignore[operator]
    transcript = read_transcript(path)
    assert sniff_format(transcript) == fmt
    detection = detect(transcript, POOL)
    assert detection.transcript_found
    assert [(e.skill, e.succeeded) for e in detection.events] == events


# Calls the agent never made, written where only other parties write: a user or system step
# of an ATIF trajectory, a user message of a Gemini CLI chat recording, an unclassified ACP
# tool (an MCP file reader) whose output opens with OpenCode's `<skill_content>` envelope, and,
# in a generic transcript, a user or tool turn or a tool's result holding a call-shaped
# object (a file the agent read can contain one). Each counted as the skill loaded.
def _atif_skill_step(source: str) -> dict:
    return {
        "source": source,
        "message": "Use the pdf skill.",
        "tool_calls": [
            {"tool_call_id": "c1", "function_name": "Skill", "arguments": {"skill": "pdf"}}
        ],
        "observation": {"results": [{"source_call_id": "c1", "content": "Launching skill: pdf"}]},
    }


def _acp_other(title: str) -> list[dict]:
    text = '<skill_content name="pdf">\n# PDF\n</skill_content>'
    return [fx.acp_call("c1", "other", title, "completed", text)]


def _chat(*messages: dict) -> dict:
    return {"model": "some-model", "messages": list(messages)}


_ASSISTANT_READ = {
    "role": "assistant",
    "tool_calls": [
        {
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": _SKILL_MD})},
        }
    ],
}
_CALL_SHAPED = {"name": "read_file", "arguments": {"path": _SKILL_MD}}


@pytest.mark.parametrize(
    ("name", "data", "fmt", "activated"),
    [
        ("trajectory.json", fx.atif("t", [_atif_skill_step("user")]), "atif", ()),
        ("trajectory.json", fx.atif("t", [_atif_skill_step("system")]), "atif", ()),
        ("trajectory.json", fx.atif("t", [_atif_skill_step("agent")]), "atif", ("pdf",)),
        (
            "gemini-cli.trajectory.json",
            {
                "sessionId": fx.SESSION,
                "messages": [
                    {
                        "type": "user",
                        "content": "x",
                        "toolCalls": [
                            {"name": "activate_skill", "args": {"name": "pdf"}, "status": "success"}
                        ],
                    },
                    {"type": "gemini", "content": "Done.", "toolCalls": []},
                ],
            },
            "gemini-cli",
            (),
        ),
        ("acp_trajectory.jsonl", _acp_other("mcp__files__read_file"), "acp", ()),
        ("acp_trajectory.jsonl", _acp_other("task"), "acp", ()),
        ("acp_trajectory.jsonl", _acp_other(""), "acp", ("pdf",)),
        ("acp_trajectory.jsonl", _acp_other("skill"), "acp", ("pdf",)),
        (
            "chat.json",
            _chat(
                {"role": "user", "content": [{"type": "tool_use", **_CALL_SHAPED}]},
                {"role": "assistant", "content": "Done."},
            ),
            "generic",
            (),
        ),
        (
            "chat.json",
            _chat(
                {"role": "assistant", "tool_calls": []},
                {"role": "tool", "content": _CALL_SHAPED},
            ),
            "generic",
            (),
        ),
        (
            "chat.json",
            _chat({"role": "assistant", "content": [{"type": "tool_result", "c": _CALL_SHAPED}]}),
            "generic",
            (),
        ),
        (
            "chat.json",
            _chat({"role": "assistant", "observation": _CALL_SHAPED}),
            "generic",
            (),
        ),
        ("chat.json", _chat(_ASSISTANT_READ), "generic", ("pdf",)),
    ],
)
def test_a_call_written_outside_the_agent_s_own_calls_is_not_activation(
    tmp_path: Path, name: str, data: object, fmt: str, activated: tuple[str, ...]
) -> None:
    path = tmp_path / name
    (fx.write_json if name.endswith(".json") else fx.write_jsonl)(path, data)  # type: ignore[operator]
    transcript = read_transcript(path)
    assert sniff_format(transcript) == fmt
    assert detect(transcript, POOL).activated() == activated


# Bounded memory: a transcript under the 64 MiB size cap made of tiny values was parsed or
# split whole before a count refused it: 64 MiB of `{}` lines became 22 million strings
# (14 s, 1.7 GB peak here) before "over 200000 lines"; a `[{},{},...]` document became 22
# million dicts (16 s, 1.9 GB) before "22369619 events". Each now reads in a subprocess held
# to 700 MB of address space and is refused in one line.
_SIZE = 60 * 1024 * 1024
_READ = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (700 * 1024 * 1024, 700 * 1024 * 1024))
from hf_skillfollow.transcripts import TranscriptError, read_transcript
try:
    read_transcript(sys.argv[1])
except TranscriptError as exc:
    print("refused:", exc)
"""


@pytest.mark.parametrize(
    ("shape", "refusal"),
    [
        ("lines", "over 200000 lines (limit 200000)"),
        ("document", "over 8000000 JSON values (limit 8000000)"),
        ("values", "over 8000000 JSON values in the transcript (limit 8000000)"),
    ],
)
def test_a_transcript_of_tiny_values_is_refused_before_it_is_parsed(
    tmp_path: Path, shape: str, refusal: str
) -> None:
    import subprocess
    import sys

    path = tmp_path / "claude-code.txt"
    with path.open("w", encoding="utf-8") as out:
        if shape == "lines":
            out.write("{}\n" * (_SIZE // 3))
        elif shape == "document":
            out.write("[" + "{}," * (_SIZE // 3) + "{}]")
        else:  # 150,000 event lines of 100 values each: under the line cap, over the values cap
            out.write(('{"type": "x", "v": [' + "{}," * 100 + "{}]}\n") * 150_000)
    done = subprocess.run(
        [sys.executable, "-c", _READ, str(path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.strip().startswith(f"refused: {path}")
    assert refusal in done.stdout


def test_commands_naming_thousands_of_skill_files_are_read_in_linear_time(tmp_path: Path) -> None:
    # With an empty pool (an import without --skills) every `skills/<name>/` path counts. The
    # refs of a call were kept in a list and checked with `in`: a command naming 8,000 files
    # cost about a second, so a 57 MB Codex stream of 400 such commands took 385 s here.
    import time

    command = "cat " + " ".join(f"/s/skills/k{i}/r" for i in range(5_000))  # < 100,000 chars
    events = [
        fx.codex_command("item.completed", f"item_{n}", command, exit_code=0, status="completed")
        for n in range(60)
    ]
    transcript = read_transcript(fx.write_jsonl(tmp_path / "codex.jsonl", events))
    started = time.monotonic()
    detection = detect(transcript, ())
    elapsed = time.monotonic() - started
    assert len(detection.activated()) == 5_000
    assert set(detection.kinds().values()) == {"resource"}
    assert elapsed < 10, f"{elapsed:.1f} s"


# Guards for the judgement calls docs/detectors.md writes down (these passed before too).
def test_prose_user_messages_and_tool_output_quoting_a_skill_call_are_not_activation(
    tmp_path: Path,
) -> None:
    quoted = json.dumps({"type": "tool_use", "name": "Skill", "input": {"skill": "pdf"}})
    says = {
        "type": "assistant",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "Loaded skill pdf"}]},
    }
    user = {"type": "user", "message": {"role": "user", "content": f"cat {PDF}\n{quoted}"}}
    events = [
        fx.cc_init(["pdf"], ["pdf"]),
        user,
        says,
        fx.cc_tool_use("toolu_01", "Bash", {"command": "cat task/notes.json"}),
        fx.cc_tool_result("toolu_01", f"{quoted}\nLaunching skill: pdf\n{PDF}"),
        fx.cc_tool_use(
            "toolu_02", "Grep", {"pattern": "name", "path": PDF, "output_mode": "content"}
        ),
        fx.cc_tool_result("toolu_02", "name: pdf"),
    ]
    detection = detect(read_transcript(fx.write_jsonl(tmp_path / "claude-code.txt", events)), POOL)
    assert detection.events == ()
    assert detection.listed == ("pdf",)


@pytest.mark.parametrize(
    "skill_dir",
    ["PDF", "p\u0440f", "pdf\u200b", "pdf.bak"],  # upper case, Cyrillic er, zero-width space
)
def test_a_folder_that_only_looks_like_a_pool_skill_is_not_it(
    tmp_path: Path, skill_dir: str
) -> None:
    assert _claude_bash(tmp_path, f"cat /root/.claude/skills/{skill_dir}/SKILL.md") == ()


# A here-document's body was taken for text whenever its line held a `>` anywhere, so a
# script fed to python with its output redirected (`python3 - <<'EOF' 2>&1`, a habit of
# agents) hid the SKILL.md it reads; and a note printed with `cat <<'EOF'` was scanned as
# commands, so a path in it read as a script run. Now the program the body is fed to decides:
# `cat`/`tee` not piped on is text, anything else is code.
_PY_READ = f"print(open('{PDF}').read())"


@pytest.mark.parametrize(
    ("command", "activated"),
    [
        (f"python3 - <<'EOF' 2>&1\n{_PY_READ}\nEOF", ("pdf",)),
        (f"python3 - <<EOF > out.log\n{_PY_READ}\nEOF", ("pdf",)),
        (f"cd /app && python3 <<EOF 2>/dev/null\n{_PY_READ}\nEOF", ("pdf",)),
        (f"cat <<'EOF'\nPlan: read {PDF} next\nEOF", ()),
        # guards: unchanged before and after
        (f"cat <<'EOF' | python3\n{_PY_READ}\nEOF", ("pdf",)),
        (f"sudo tee -a notes.md >/dev/null <<EOF\nsee {PDF}\nEOF", ()),
        (f"cat > run.py <<'EOF'\n{_PY_READ}\nEOF\npython3 run.py", ()),
    ],
)
def test_a_here_document_is_code_or_text_by_the_program_it_is_fed_to(
    tmp_path: Path, command: str, activated: tuple[str, ...]
) -> None:
    assert _claude_bash(tmp_path, command) == activated


# A `cd` in one call of a persistent shell (Claude Code's Bash, Terminus's tmux session,
# OpenHands' terminal) was forgotten at the next call, so `cd <skill folder>` then
# `cat SKILL.md` in two calls was missed. Harnesses that start each command afresh (Codex,
# Gemini CLI, OpenCode, and an ATIF trajectory of one of them) do not carry it.
_CD = "cd /root/.claude/skills/pdf"


def _cc_calls(*commands: tuple[str, bool]) -> list[dict]:
    events: list[dict] = []
    for n, (command, error) in enumerate(commands):
        events.append(fx.cc_tool_use(f"toolu_{n}", "Bash", {"command": command}))
        events.append(fx.cc_tool_result(f"toolu_{n}", "", is_error=error))
    return events


def _atif_keystrokes(agent: str) -> dict:
    return fx.atif(
        agent,
        [
            fx.atif_agent(
                [("call_1", "bash_command", {"keystrokes": f"{_CD}\n", "duration": 0.1})],
                [(None, "$", None)],
            ),
            fx.atif_agent(
                [("call_2", "bash_command", {"keystrokes": "cat SKILL.md\n", "duration": 0.1})],
                [(None, "---\nname: pdf", None)],
            ),
        ],
    )


def _episodes() -> list[dict]:
    def reply(keystrokes: str) -> str:
        return json.dumps({"analysis": "", "commands": [{"keystrokes": keystrokes}]})

    return [
        {"episode": 0, "prompt": "Task: ...", "response": reply(f"{_CD}\n")},
        {"episode": 1, "prompt": "$", "response": reply("sed -n 1,40p SKILL.md\n")},
    ]


def _openhands_terminal() -> list[dict]:
    def action(call_id: str, command: str) -> dict:
        return {
            "kind": "ActionEvent",
            "source": "agent",
            "tool_name": "terminal",
            "tool_call_id": call_id,
            "action": {"kind": "TerminalAction", "command": command},
        }

    return [action("c1", _CD), action("c2", "head -n 50 SKILL.md")]


@pytest.mark.parametrize(
    ("name", "data", "fmt", "activated"),
    [
        (
            "claude-code.txt",
            _cc_calls((_CD, False), ("cat SKILL.md", False)),
            "claude-code",
            ("pdf",),
        ),
        (
            "claude-code.txt",
            _cc_calls(("cd /root/.claude/skills", False), ("python3 pdf/scripts/fill.py", False)),
            "claude-code",
            ("pdf",),
        ),
        ("trajectory.json", _atif_keystrokes("terminus-2"), "atif", ("pdf",)),
        ("trajectory.json", _episodes(), "atif", ("pdf",)),
        ("events.jsonl", _openhands_terminal(), "openhands", ("pdf",)),
        # guards: a failed cd moves nothing; fresh-shell harnesses carry nothing
        ("claude-code.txt", _cc_calls((_CD, True), ("cat SKILL.md", False)), "claude-code", ()),
        (
            "claude-code.txt",
            _cc_calls((_CD, False), ("cd /app", False), ("cat SKILL.md", False)),
            "claude-code",
            (),
        ),
        ("trajectory.json", _atif_keystrokes("codex"), "atif", ()),
        (
            "codex.jsonl",
            [
                fx.codex_command(
                    "item.completed", "i1", f"bash -lc '{_CD}'", exit_code=0, status="completed"
                ),
                fx.codex_command(
                    "item.completed",
                    "i2",
                    "bash -lc 'cat SKILL.md'",
                    exit_code=0,
                    status="completed",
                ),
            ],
            "codex",
            (),
        ),
    ],
)
def test_a_cd_in_an_earlier_call_of_a_persistent_shell_holds_for_the_next_call(
    tmp_path: Path, name: str, data: object, fmt: str, activated: tuple[str, ...]
) -> None:
    path = tmp_path / name
    (fx.write_json if name.endswith(".json") else fx.write_jsonl)(path, data)  # type: ignore[operator]
    transcript = read_transcript(path)
    assert sniff_format(transcript) == fmt
    assert detect(transcript, POOL).activated() == activated


# A UTF-8 byte-order mark at the start of a transcript (Windows tools write one) was read as
# text: an ATIF document was refused ("no line is JSON") and a Claude Code stream lost its
# first event (the init listing the arm-integrity check uses) as "line 1: not JSON, skipped".
def test_a_byte_order_mark_is_not_part_of_the_transcript(tmp_path: Path) -> None:
    bom = b"\xef\xbb\xbf"
    document = tmp_path / "trajectory.json"
    document.write_bytes(bom + json.dumps(_atif_keystrokes("terminus-2")).encode())
    assert detect(read_transcript(document), POOL).activated() == ("pdf",)
    stream = tmp_path / "claude-code.txt"
    events = [fx.cc_init(["pdf"], []), *_cc_calls((f"cat {PDF}", False))]
    stream.write_bytes(bom + "\n".join(json.dumps(e) for e in events).encode() + b"\n")
    transcript = read_transcript(stream)
    assert transcript.notes == ()
    detection = detect(transcript, POOL)
    assert (detection.listed, detection.activated()) == (("pdf",), ("pdf",))
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(bom + b'{"a": "\xff"}\n')
    with pytest.raises(TranscriptError, match=r"not UTF-8 text \(byte 10\)"):
        read_transcript(broken)

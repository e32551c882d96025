"""Transcript detectors against hand-labelled fixtures in each harness's real shapes, and the
bounded reader against hostile files. Every expected detection below is written by hand from
the labels in tests/_transcript_fixtures.py."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from hf_skillfollow import registries
from hf_skillfollow.transcripts import (
    ActivationEvent,
    TranscriptError,
    _reader,
    detect,
    read_transcript,
    sniff_format,
)
from tests import _transcript_fixtures as fx

POOL = ("pdf", "xlsx", "docx")


def _summary(detection) -> list[tuple[str, str, int, bool]]:
    return [(e.skill, e.kind, e.event_index, e.succeeded) for e in detection.events]


def _detect_file(path: Path, data: object, fmt: str, pool):
    """Write `data` as a real file (one JSON document when `path` ends in .json, else JSONL
    lines), read it back bounded, check that its content names the format `fmt`, and detect
    against `pool`."""
    (fx.write_json if path.suffix == ".json" else fx.write_jsonl)(path, data)
    transcript = read_transcript(path)
    assert sniff_format(transcript) == fmt
    return detect(transcript, pool)


def test_claude_code_stream_json_every_event_kind(tmp_path: Path) -> None:
    events, raw = fx.claude_code_trial()
    path = fx.write_jsonl(tmp_path / "claude-code.txt", events, raw_lines=raw)
    transcript = read_transcript(path)
    assert sniff_format(transcript) == "claude-code"
    found = detect(transcript, POOL)
    assert found.detector == "claude-code"
    assert _summary(found) == [
        ("docx-pro", "instructions", 5, False),
        ("pdf", "instructions", 7, True),
        ("xlsx", "instructions", 9, True),
        ("docx", "resource", 13, True),
        ("xlsx", "instructions", 15, False),
    ]
    assert found.listed == ("pdf", "xlsx", "docx")
    assert found.activated() == ("docx", "pdf", "xlsx")
    assert found.activated("instructions") == ("pdf", "xlsx")
    assert found.kinds() == {"pdf": "instructions", "xlsx": "instructions", "docx": "resource"}
    assert found.invoked and found.called() and found.called("instructions")
    assert found.notes == ("line 18: not JSON, skipped",)
    assert found.events[1].evidence == '{"name": "Skill", "input": {"skill": "pdf"}}'


def test_claude_code_listing_alone_is_not_activation() -> None:
    """A without-skills arm whose harness still listed a pool skill: listed, never activated."""
    events = [
        fx.cc_init(["pdf"], ["pdf", "compact"]),
        fx.cc_tool_use("t1", "Bash", {"command": "find / -name SKILL.md 2>/dev/null | head"}),
        fx.cc_tool_result("t1", "/root/.claude/skills/pdf/SKILL.md"),
        fx.cc_tool_use(
            "t2", "Grep", {"pattern": "name:", "path": "/root/.claude/skills/pdf/SKILL.md"}
        ),
        fx.cc_tool_result("t2", "name: pdf"),
        fx.cc_result(),
    ]
    found = detect(events, ["pdf"])
    assert found.events == ()
    assert found.listed == ("pdf",)
    assert not found.invoked and not found.called()


def test_claude_code_skill_call_without_result_did_not_return() -> None:
    events = [fx.cc_tool_use("t1", "Skill", {"skill": "pdf"})]
    found = detect(events, ["pdf"], format="claude-code")
    assert _summary(found) == [("pdf", "instructions", 0, False)]
    assert found.activated() == ()
    assert found.invoked


def test_terminus_atif_keystrokes(tmp_path: Path) -> None:
    found = _detect_file(tmp_path / "trajectory.json", fx.terminus_trial(), "atif", ["pdf", "xlsx"])
    assert _summary(found) == [("xlsx", "instructions", 2, True), ("pdf", "resource", 3, True)]
    assert found.listed == ("pdf", "xlsx")
    assert found.events[0].evidence == (
        '{"function_name": "bash_command", "arguments": '
        '{"keystrokes": "cat /root/.claude/skills/xlsx/SKILL.md\\n", "duration": 0.1}}'
    )
    assert found.activated("instructions") == ("xlsx",)


def test_claude_code_converted_to_atif(tmp_path: Path) -> None:
    found = _detect_file(
        tmp_path / "trajectory.json", fx.claude_code_atif_trial(), "atif", ["pdf", "xlsx"]
    )
    assert _summary(found) == [
        ("pdf", "instructions", 1, False),
        ("xlsx", "instructions", 2, True),
        ("pdf", "instructions", 3, True),
    ]
    assert found.listed == ()
    assert found.activated() == ("pdf", "xlsx")


def test_codex_exec_json(tmp_path: Path) -> None:
    found = _detect_file(tmp_path / "codex.txt", fx.codex_trial(), "codex", ["pdf", "xlsx"])
    assert _summary(found) == [
        ("pdf", "instructions", 5, True),
        ("xlsx", "instructions", 7, False),
        ("xlsx", "resource", 8, False),
    ]
    assert found.events[0].evidence == "bash -lc 'sed -n 1,80p /root/.codex/skills/pdf/SKILL.md'"
    assert found.activated() == ("pdf",)


def test_gemini_cli_stream_json(tmp_path: Path) -> None:
    found = _detect_file(
        tmp_path / "gemini-cli.txt", fx.gemini_trial(), "gemini-cli", ["pdf", "xlsx"]
    )
    assert _summary(found) == [
        ("pdf", "instructions", 1, True),
        ("docx", "instructions", 3, False),
        ("xlsx", "instructions", 7, True),
    ]
    assert found.activated() == ("pdf", "xlsx")


def test_opencode_json_events(tmp_path: Path) -> None:
    found = _detect_file(
        tmp_path / "opencode.txt", fx.opencode_trial(), "opencode", ["pdf", "xlsx"]
    )
    assert _summary(found) == [
        ("pdf", "instructions", 1, True),
        ("xlsx", "resource", 3, True),
        ("xlsx", "instructions", 4, False),
    ]
    assert found.kinds() == {"pdf": "instructions", "xlsx": "resource"}
    assert found.activated("instructions") == ("pdf",)


def test_opencode_export_document() -> None:
    parts = [e["part"] for e in fx.opencode_trial()[1:]]
    export = {
        "info": {"id": "ses_01"},
        "messages": [{"info": {"role": "assistant"}, "parts": parts}],
    }
    assert sniff_format(export) == "opencode"
    found = detect(export, ["pdf", "xlsx"])
    assert _summary(found) == [
        ("pdf", "instructions", 0, True),
        ("xlsx", "resource", 0, True),
        ("xlsx", "instructions", 0, False),
    ]


def test_openhands_events() -> None:
    events = fx.openhands_trial()
    assert sniff_format(events) == "openhands"
    found = detect(events, ["pdf", "xlsx"])
    assert _summary(found) == [
        ("pdf", "instructions", 0, True),
        ("xlsx", "instructions", 4, False),
        ("docx", "instructions", 6, False),
        ("xlsx", "resource", 10, False),
    ]
    assert found.activated() == ("pdf",)


def test_generic_fallback_counts_skill_md_only(tmp_path: Path) -> None:
    found = _detect_file(tmp_path / "log.jsonl", fx.generic_trial(), "generic", ["pdf", "xlsx"])
    assert _summary(found) == [("pdf", "instructions", 0, True)]


def test_generic_reads_a_claude_stream_like_its_own_detector_for_skill_md() -> None:
    events, _ = fx.claude_code_trial()
    found = detect(events, POOL, format="generic")
    # Skill-tool loads and SKILL.md reads, success unknown to it; no resource, no listing.
    assert [(s, k, i) for s, k, i, _ in _summary(found)] == [
        ("pdf", "instructions", 7),
        ("xlsx", "instructions", 9),
        ("xlsx", "instructions", 15),
    ]
    assert found.listed == ()


def test_empty_pool_accepts_any_skill_name_but_not_globs() -> None:
    events = [
        fx.cc_tool_use("t1", "Bash", {"command": "cat /root/.claude/skills/*/SKILL.md"}),
        fx.cc_tool_result("t1", "..."),
        fx.cc_tool_use(
            "t2", "Bash", {"command": "head -50 /root/.claude/skills/my-skill/SKILL.md"}
        ),
        fx.cc_tool_result("t2", "..."),
    ]
    assert _summary(detect(events, ())) == [("my-skill", "instructions", 2, True)]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("cat /s/skills/pdf/SKILL.md", [("pdf", "instructions")]),
        ("bash -lc 'head -n 40 /s/skills/pdf/SKILL.md'", [("pdf", "instructions")]),
        (
            "cd /s/skills/pdf && cat SKILL.md && python scripts/a.py",
            [("pdf", "instructions"), ("pdf", "resource")],
        ),
        ("sudo timeout 10 python3 /s/skills/xlsx/scripts/recalc.py", [("xlsx", "resource")]),
        ("/s/skills/xlsx/scripts/run.sh --fast", [("xlsx", "resource")]),
        ("ls /s/skills/pdf/SKILL.md", []),
        ("bash -lc 'ls -R /s/skills/pdf'", []),
        ("find /s/skills -name SKILL.md", []),
        ("cp -r /s/skills/pdf /tmp/pdf", []),
        ("cat > /s/skills/pdf/SKILL.md <<EOF", []),
        ("echo hi >> /s/skills/pdf/notes.md", []),
        ("grep -n fill /s/skills/pdf/SKILL.md | head", [("pdf", "instructions")]),
        ("cat /s/skills/other/SKILL.md", []),
        ("cat /s/pdf/SKILL.md", [("pdf", "instructions")]),
    ],
)
def test_shell_command_rules(command: str, expected: list[tuple[str, str]]) -> None:
    from hf_skillfollow.transcripts._skillpaths import command_refs

    assert command_refs(command, {"pdf", "xlsx"}) == expected


def test_harness_record_names_and_counts() -> None:
    record = {"agent_result": {"metadata": {"skills_loaded": ["pdf", "other"]}}}
    found = detect(record, ["pdf"], format="harness-record")
    assert [(e.skill, e.kind, e.succeeded) for e in found.events] == [("pdf", "instructions", True)]
    assert found.record_invocations is None
    benchflow = {"n_skill_invocations": 3, "agent_result": {}}
    counted = detect(benchflow, ["pdf"], format="harness-record")
    assert counted.events == () and counted.record_invocations == 3
    assert counted.called() and not counted.called("instructions")
    nested = detect({"agent_result": {"n_skill_invocations": 0}}, ["pdf"], format="harness-record")
    assert nested.transcript_found and not nested.invoked
    missing = detect({"agent_result": {"metadata": None}}, ["pdf"], format="harness-record")
    assert not missing.transcript_found


def test_registry_names_every_detector_and_unknown_is_an_error() -> None:
    assert set(registries.DETECTORS) == {
        "claude-code",
        "codex",
        "opencode",
        "gemini-cli",
        "openhands",
        "atif",
        "acp",
        "generic",
        "harness-record",
    }
    for name in registries.DETECTORS:
        assert callable(registries.DETECTORS[name])
    with pytest.raises(ValueError, match="unknown transcript detector 'nope'"):
        detect([], ["pdf"], format="nope")


def test_non_atif_document_is_not_found_for_atif() -> None:
    found = detect({"foo": 1}, ["pdf"], format="atif")
    assert not found.transcript_found and found.events == ()


def test_kind_rule_drops_resources_of_a_loaded_skill_only() -> None:
    from hf_skillfollow.transcripts._common import apply_kind_rule

    events = [
        ActivationEvent("pdf", "resource", 1, "run", True),
        ActivationEvent("pdf", "instructions", 4, "cat", True),
        ActivationEvent("xlsx", "resource", 5, "run", True),
        ActivationEvent("xlsx", "instructions", 6, "cat", False),
    ]
    assert apply_kind_rule(events) == (events[1], events[2], events[3])


def test_evidence_is_bounded() -> None:
    long = "cat /s/skills/pdf/SKILL.md " + "x" * 5000
    events = [fx.cc_tool_use("t1", "Bash", {"command": long}), fx.cc_tool_result("t1", "...")]
    (event,) = detect(events, ["pdf"]).events
    assert len(event.evidence) == 500 and event.evidence.endswith("…")


# --- hostile input: one TranscriptError line naming the file and the place -----------------


def _error(path: Path, **kwargs) -> str:
    with pytest.raises(TranscriptError) as caught:
        read_transcript(path, **kwargs)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message
    return message


def test_deep_json_document_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "trajectory.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert "nested 100000 deep (limit 64)" in _error(path)


def test_deep_json_line_named(tmp_path: Path) -> None:
    path = tmp_path / "claude-code.txt"
    path.write_text('{"type":"system"}\n' + '{"a":' * 70 + "1" + "}" * 70 + "\n")
    assert "line 2: JSON nested 70 deep" in _error(path)


def test_huge_line_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_reader, "MAX_LINE_CHARS", 1000)
    path = tmp_path / "codex.txt"
    path.write_text('{"type":"turn.started"}\n{"x":"' + "a" * 5000 + '"}\n')
    assert "line 2: 5008 characters (limit 1000)" in _error(path)


def test_oversize_file_refused(tmp_path: Path) -> None:
    path = fx.write_jsonl(tmp_path / "big.jsonl", [{"type": "turn.started"}] * 100)
    assert "(limit 500)" in _error(path, max_bytes=500)


def test_too_many_events_refused(tmp_path: Path) -> None:
    path = fx.write_jsonl(tmp_path / "many.jsonl", [{"type": "turn.started"}] * 50)
    assert "limit 10" in _error(path, max_events=10)


def test_fifo_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "claude-code.txt"
    os.mkfifo(path)
    assert "not a regular file" in _error(path)


def test_device_refused(tmp_path: Path) -> None:
    link = tmp_path / "zero.jsonl"
    link.symlink_to("/dev/zero")
    # /dev/zero is outside the root; with the root widened it is still not a regular file.
    assert "symlink leads out of" in _error(link)
    assert "not a regular file" in _error(link, root="/")


def test_symlink_out_of_root_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.jsonl"
    outside.write_text('{"type":"turn.started"}\n')
    trial = tmp_path / "trial" / "agent"
    trial.mkdir(parents=True)
    link = trial / "claude-code.txt"
    link.symlink_to(outside)
    assert "symlink leads out of" in _error(link, root=tmp_path / "trial")
    inside = trial / "copy.jsonl"
    inside.symlink_to(trial / "claude-code.txt")
    assert read_transcript(outside).events == ({"type": "turn.started"},)
    assert "symlink leads out of" in _error(inside, root=tmp_path / "trial")
    assert read_transcript(inside, root=tmp_path).events == ({"type": "turn.started"},)
    assert read_transcript(link, root=tmp_path).events == ({"type": "turn.started"},)


def test_binary_garbage_refused(tmp_path: Path) -> None:
    path = tmp_path / "trajectory.json"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    assert "binary data (NUL byte at 8)" in _error(path)
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"a": "caf\xe9"}\n')
    assert "not UTF-8 text (byte 10)" in _error(latin)


def test_no_json_line_refused_but_broken_lines_skipped(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text("hello\nworld\n")
    assert "no line is JSON" in _error(path)
    many = tmp_path / "many.jsonl"
    many.write_text('{"type":"turn.started"}\n' + 'garbage\n{"type":"turn.started"}\n' * 30)
    transcript = read_transcript(many)
    assert len(transcript.notes) == 21 and transcript.notes[-1] == "10 more lines skipped"
    mostly_text = tmp_path / "mostly.jsonl"  # 1 event among 30 text lines: a text log
    mostly_text.write_text('{"type":"turn.started"}\n' + "garbage\n" * 30)
    assert "30 of 31 lines are not JSON events" in _error(mostly_text)


def test_broken_json_document_named(tmp_path: Path) -> None:
    path = tmp_path / "trajectory.json"
    path.write_text('{\n  "steps": [\n    {"step_id": 1,\n')
    assert "not JSON" in _error(path)


def test_missing_file_named(tmp_path: Path) -> None:
    assert "cannot read" in _error(tmp_path / "nope.json")


def test_pathological_command_is_fast() -> None:
    from hf_skillfollow.transcripts._skillpaths import command_refs

    hostile = ("a" * 50 + "/" + "'\"" * 20 + " skills/" + "\\" * 30) * 3000
    start = time.perf_counter()
    command_refs(hostile, {"pdf"})
    detect(
        [{"type": "x", "input": {"command": hostile}, "name": "bash"}], ["pdf"], format="generic"
    )
    assert time.perf_counter() - start < 2.0


def test_one_line_json_event_is_a_stream(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(fx.cc_init(["pdf"], [])) + "\n")
    transcript = read_transcript(path)
    assert len(transcript.events) == 1 and sniff_format(transcript) == "claude-code"
    assert detect(transcript, ["pdf"]).listed == ("pdf",)
    compact = tmp_path / "trajectory.json"
    compact.write_text(json.dumps(fx.terminus_trial()))
    one = read_transcript(compact)
    assert sniff_format(one) == "atif"
    assert [e.skill for e in detect(one, ["pdf", "xlsx"]).events] == ["xlsx", "pdf"]


def test_empty_pool_lists_skills_but_not_built_in_slash_commands() -> None:
    init = fx.cc_init(["citation-management"], ["citation-management", "compact", "review"])
    assert detect([init], ()).listed == ("citation-management",)
    assert detect([init], ["review"]).listed == ("review",)


def test_gemini_cli_converted_to_atif() -> None:
    """Harbor's Gemini CLI ATIF: `activate_skill` with `arguments.name`, the skill body in an
    `<activated_skill>` observation; then the skill's script run by full path."""
    script = "python3 /root/.gemini/skills/citation-management/scripts/validate_citations.py /root/test.bib"
    trajectory = fx.atif(
        "gemini-cli",
        [
            fx.atif_user("Verify the citations in /root/test.bib."),
            fx.atif_agent(
                [
                    (
                        "activate_skill-1769364517853-d7d0ba59dfaa7",
                        "activate_skill",
                        {"name": "citation-management"},
                    )
                ],
                [
                    (
                        "activate_skill-1769364517853-d7d0ba59dfaa7",
                        '<activated_skill name="citation-management">\n  <instructions>…',
                        None,
                    )
                ],
            ),
            fx.atif_agent(
                [("run_shell_command-1", "run_shell_command", {"command": script})],
                [("run_shell_command-1", "3 suspicious entries", None)],
            ),
            fx.atif_agent(
                [("activate_skill-2", "activate_skill", {"name": "pdf"})],
                [
                    (
                        "activate_skill-2",
                        'Error: Skill "pdf" not found. Available skills are: citation-management',
                        None,
                    )
                ],
            ),
        ],
    )
    found = detect(trajectory, ["citation-management", "pdf"])
    assert _summary(found) == [
        ("citation-management", "instructions", 1, True),
        ("pdf", "instructions", 3, False),
    ]


def test_skillsbench_terminus_episode_list(tmp_path: Path) -> None:
    found = _detect_file(
        tmp_path / "trajectory.json", fx.terminus_episodes_trial(), "atif", ["pdf", "xlsx"]
    )
    assert _summary(found) == [
        ("pdf-tools", "instructions", 0, False),
        ("pdf", "instructions", 1, True),
        ("xlsx", "instructions", 2, True),
    ]
    assert found.listed == ("pdf", "xlsx")
    assert found.events[1].evidence == '"load_skill": "pdf"'
    assert found.events[2].evidence == "cat /root/.terminus/skills/xlsx/SKILL.md\n"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("cat > /s/notes.md <<'EOF'\ncat /s/skills/pdf/SKILL.md\nEOF\nls", []),
        ("cat <<EOF > /s/notes.md\npython /s/skills/pdf/scripts/a.py\nEOF", []),
        (
            "python3 - <<EOF\nprint(open('/s/skills/pdf/SKILL.md').read())\nEOF",
            [("pdf", "instructions")],
        ),
    ],
)
def test_here_documents(command: str, expected: list[tuple[str, str]]) -> None:
    from hf_skillfollow.transcripts._skillpaths import command_refs

    assert command_refs(command, {"pdf"}) == expected


def test_claude_code_skill_outcome_beside_the_block() -> None:
    """Real streams put `tool_use_result` on the user event; `success: false` is a failed load
    even without `is_error`, and the skill's scripts run afterwards stay under its load."""
    ok = fx.cc_tool_result("t1", "Launching skill: citation-management")
    ok["tool_use_result"] = {"success": True, "commandName": "citation-management"}
    refused = fx.cc_tool_result("t2", "Launching skill: xlsx")
    refused["tool_use_result"] = {"success": False, "commandName": "xlsx"}
    script = "python /logs/agent/sessions/skills/citation-management/scripts/validate.py a.bib"
    events = [
        fx.cc_tool_use("t1", "Skill", {"skill": "citation-management"}),
        ok,
        fx.cc_tool_use("t2", "Skill", {"skill": "xlsx"}),
        refused,
        fx.cc_tool_use("t3", "Bash", {"command": script}),
        fx.cc_tool_result("t3", "ok"),
    ]
    found = detect(events, ["citation-management", "xlsx"])
    assert _summary(found) == [
        ("citation-management", "instructions", 0, True),
        ("xlsx", "instructions", 2, False),
    ]


def test_benchflow_acp_trajectory(tmp_path: Path) -> None:
    found = _detect_file(tmp_path / "acp_trajectory.jsonl", fx.acp_trial(), "acp", POOL)
    assert _summary(found) == [
        ("pdf", "instructions", 1, True),
        ("xlsx", "instructions", 2, True),
        ("docx", "instructions", 5, True),
    ]
    assert found.notes == (
        "event 6: a skill call that names no skill",
        "skills preloaded into the context by the harness (5), not counted",
    )


def test_raw_acp_updates_merge_by_call_id() -> None:
    """A raw `session/update` stream: the call's final status comes from its last update."""
    events = [
        {"sessionUpdate": "tool_call", "toolCallId": "t1", "kind": "execute", "status": "pending",
         "title": "Run", "rawInput": {"command": "head -30 /s/skills/pdf/SKILL.md"}},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"},
        {"sessionUpdate": "tool_call", "toolCallId": "t2", "kind": "execute", "status": "pending",
         "title": "Run", "rawInput": {"command": "python /s/skills/xlsx/scripts/a.py"}},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t2", "status": "failed"},
        {"sessionUpdate": "tool_call", "toolCallId": "t3", "kind": "read", "status": "completed",
         "title": "Read file", "locations": [{"path": "/s/skills/xlsx/SKILL.md", "line": 1}]},
    ]  # fmt: skip
    assert sniff_format(events) == "acp"
    assert _summary(detect(events, ["pdf", "xlsx"])) == [
        ("pdf", "instructions", 0, True),
        ("xlsx", "instructions", 4, True),
    ]


def test_event_cap_keeps_the_first_of_each_skill_kind_and_outcome() -> None:
    events = []
    for i in range(1200):
        events += [
            fx.cc_tool_use(f"t{i}", "Bash", {"command": "python /s/skills/pdf/scripts/a.py"}),
            fx.cc_tool_result(f"t{i}", "ok"),
        ]
    events += [
        fx.cc_tool_use("late", "Read", {"file_path": "/s/skills/xlsx/SKILL.md"}),
        fx.cc_tool_result("late", "---"),
    ]
    found = detect(events, ["pdf", "xlsx"])
    assert len(found.events) == 1001
    last = found.events[-1]
    assert (last.skill, last.kind, last.event_index, last.evidence) == (
        "xlsx",
        "instructions",
        2400,
        '{"name": "Read", "input": {"file_path": "/s/skills/xlsx/SKILL.md"}}',
    )
    assert found.activated() == ("pdf", "xlsx")
    assert found.notes == ("200 more trigger events not kept",)


def test_claude_code_skill_tool_older_command_argument() -> None:
    """Claude Code 2.0-era streams call the Skill tool with `command`, sometimes qualified."""
    events = [
        fx.cc_tool_use("t1", "Skill", {"command": "pdf"}),
        fx.cc_tool_result("t1", "Launching skill: pdf"),
        fx.cc_tool_use("t2", "Skill", {"command": "/anthropic-skills:xlsx"}),
        fx.cc_tool_result("t2", "Launching skill: xlsx"),
    ]
    assert _summary(detect(events, ["pdf", "xlsx"])) == [
        ("pdf", "instructions", 0, True),
        ("xlsx", "instructions", 2, True),
    ]


def test_control_characters_in_the_path_stay_on_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "trial\n\x1b[31mred"
    folder.mkdir()
    path = folder / "claude-code.txt"
    path.write_text("not json\n")
    with pytest.raises(TranscriptError) as caught:
        read_transcript(path)
    message = str(caught.value)
    assert "\n" not in message and "\x1b" not in message
    assert message.endswith("trial\\n\\x1b[31mred/claude-code.txt: no line is JSON")


def test_codex_session_log(tmp_path: Path) -> None:
    found = _detect_file(
        tmp_path / "rollout.jsonl", fx.codex_session_log(), "codex", ["pdf", "xlsx"]
    )
    assert _summary(found) == [
        ("pdf", "instructions", 1, True),
        ("xlsx", "resource", 5, False),
    ]


def test_gemini_cli_chat_recording(tmp_path: Path) -> None:
    found = _detect_file(
        tmp_path / "gemini-cli.trajectory.json",
        fx.gemini_recording(),
        "gemini-cli",
        ["pdf", "xlsx"],
    )
    assert _summary(found) == [
        ("pdf", "instructions", 1, True),
        ("xlsx", "instructions", 2, False),
    ]


def test_nested_shells_do_not_recurse() -> None:
    from hf_skillfollow.transcripts._skillpaths import command_refs

    nested = "bash -c " * 13_000 + "cat /s/skills/pdf/SKILL.md"
    assert command_refs(nested, {"pdf"}) == []  # past the 100,000-character scan limit
    assert command_refs("bash -c " * 5_000 + "cat /s/skills/pdf/SKILL.md", {"pdf"}) == [
        ("pdf", "instructions")
    ]


def test_unclosed_offer_blocks_cost_one_scan() -> None:
    hostile = "<available_skills><skill><name>pdf" * 50_000
    trajectory = fx.atif("terminus-2", [fx.atif_user(hostile)])
    start = time.perf_counter()
    found = detect(trajectory, ["pdf"])
    assert time.perf_counter() - start < 2.0
    assert found.listed == ()


def test_generic_says_when_it_saw_no_tool_call() -> None:
    found = detect([{"role": "user", "content": "hi"}, {"text": "done"}], ["pdf"])
    assert found.detector == "generic" and found.events == ()
    assert found.notes == ("no tool call found: this format may not record skill use",)

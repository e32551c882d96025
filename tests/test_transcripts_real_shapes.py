"""Transcript reading and detection on shapes met in SkillsBench's real trial folders (synthetic
content): a plain-text agent log with lines that parse as JSON, and the skill-loading Terminus
episode list that offers skills as an `available_skills:` JSON list. Expectations by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hf_skillfollow.transcripts import TranscriptError, as_transcript, detect, read_transcript
from tests._trial_fixtures import episodes_offer, gemini_log


def test_plain_text_with_json_scalar_lines_is_not_a_transcript(tmp_path: Path) -> None:
    # 7 non-blank lines, none a JSON event: '"Quarterly Report Title"' and '42' parse as JSON
    # scalars, '[' does not parse.
    log = tmp_path / "gemini-cli.txt"
    log.write_text(gemini_log('"Quarterly Report Title"', "[", "42", '{"answer": 1}'))
    with pytest.raises(TranscriptError, match="6 of 7 lines are not JSON events: plain text"):
        read_transcript(log)


def test_a_stream_with_a_torn_last_line_still_reads(tmp_path: Path) -> None:
    stream = tmp_path / "claude-code.txt"
    events = [{"type": "system", "subtype": "init", "skills": ["pdf"]},
              {"type": "assistant", "message": {"content": []}}]  # fmt: skip
    stream.write_text("".join(json.dumps(e) + "\n" for e in events) + '{"type": "assis')
    transcript = read_transcript(stream)
    assert transcript.events[:2] == tuple(events) and transcript.events[2] is None
    assert transcript.notes == ("line 3: not JSON, skipped",)


def test_available_skills_json_list_is_the_offer_not_activation() -> None:
    episodes = [{"episode": 0, "prompt": episodes_offer(("pdf", "xlsx", "csv-clean")),
                 "response": '{"analysis": "a", "commands": []}'}]  # fmt: skip
    anything = detect(as_transcript(episodes), ())
    assert anything.detector == "atif"
    assert anything.listed == ("pdf", "xlsx", "csv-clean")  # "decoy" sits in a description
    assert anything.events == ()
    assert detect(as_transcript(episodes), ("xlsx",)).listed == ("xlsx",)


def test_the_preamble_word_available_skills_lists_nothing() -> None:
    # A without-skills copy of the task keeps the instruction text but has no list.
    episodes = [{"episode": 0, "prompt": episodes_offer(()), "response": "{}"}]
    assert detect(as_transcript(episodes), ()).listed == ()


def test_unterminated_escaped_quotes_are_counted_in_linear_time(tmp_path: Path) -> None:
    import time

    # Before: every later quote re-scanned the rest of the line (20,000 pairs: ~13 s; these 30,000 well over 3 s).
    line = tmp_path / "stream.jsonl"
    line.write_text('{"type": "x"}\n' * 3 + '"' + '\\"' * 30_000 + "\n")
    start = time.perf_counter()
    transcript = read_transcript(line)
    assert time.perf_counter() - start < 3.0
    assert transcript.notes == ("line 4: not JSON, skipped",)


def test_a_command_naming_thousands_of_skill_files_is_fast() -> None:
    import time

    # Before: the whole call (2 MB) was serialised again for each of its 2,000 skill files.
    paths = " ".join(f"/root/.claude/skills/s{i}/SKILL.md" for i in range(2_000))
    command = f"cat {paths}; echo {'x' * 2_000_000}"  # a long tail past the scanned part
    events = [{"type": "assistant", "message": {"content": [
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": command}}]}},
        {"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "…"}]}}]  # fmt: skip
    start = time.perf_counter()
    found = detect(as_transcript(events), ())
    assert time.perf_counter() - start < 3.0
    assert len(found.activated()) == 2_000

"""Session 22 review of the transcript-detector commits: cases the new rules got wrong on real
agent behaviour. Every transcript is a real file read back with `read_transcript`; the expected
activations are written by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_skillfollow.transcripts import detect, read_transcript, sniff_format
from tests import _transcript_fixtures as fx

POOL = ("pdf", "xlsx")
# Where SkillsBench's Claude Code 2.1.19 trials find their skills (cwd /root, outside it).
SKILLS = "/logs/agent/sessions/skills/pdf"
# Claude Code ends the output of a call whose `cd` left the project folder with this line
# (seen in real streams: `cd /tmp && ...` then "Shell cwd was reset to /app"): the next call
# runs in the project folder again, not where the `cd` went.
RESET = "Shell cwd was reset to /root"


def _claude(tmp_path: Path, first_output: str) -> tuple[str, ...]:
    """`cd` into the skill folder, then a relative `cat SKILL.md` in the next Bash call."""
    path = fx.write_jsonl(
        tmp_path / "claude-code.txt",
        [
            fx.cc_init(["pdf"], ["pdf"]),
            fx.cc_tool_use("toolu_01", "Bash", {"command": f"cd {SKILLS} && ls"}),
            fx.cc_tool_result("toolu_01", first_output),
            fx.cc_tool_use("toolu_02", "Bash", {"command": "cat SKILL.md 2>&1; ls"}),
            fx.cc_tool_result("toolu_02", "cat: SKILL.md: No such file or directory\nin.pdf"),
        ],
    )
    return detect(read_transcript(path), POOL).activated()


def test_a_cd_the_claude_code_shell_reset_is_not_carried_to_the_next_call(
    tmp_path: Path,
) -> None:
    assert _claude(tmp_path, f"SKILL.md\nforms.md\n{RESET}") == ()


def test_a_cd_claude_code_kept_is_still_carried(tmp_path: Path) -> None:
    assert _claude(tmp_path, "SKILL.md\nforms.md") == ("pdf",)


@pytest.mark.parametrize(
    ("output", "expected"), [(f"SKILL.md\n{RESET}", ()), ("SKILL.md", ("pdf",))]
)
def test_a_cd_an_atif_claude_code_shell_reset_is_not_carried(
    tmp_path: Path, output: str, expected: tuple[str, ...]
) -> None:
    document = fx.atif(
        "claude-code",
        [
            fx.atif_agent(
                [("c1", "Bash", {"command": f"cd {SKILLS} && ls"})], [("c1", output, None)]
            ),
            fx.atif_agent(
                [("c2", "Bash", {"command": "cat SKILL.md; ls"})], [("c2", "in.pdf", None)]
            ),
        ],
    )
    path = fx.write_json(tmp_path / "trajectory.json", document)
    assert detect(read_transcript(path), POOL).activated() == expected


def _cwd_scans(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> list[bool]:
    """`find_refs` of each scan `cwd_after` made to follow the shell's folder, detecting 50
    Bash calls of `command` in a Claude Code ATIF trajectory (a shell that persists)."""
    from hf_skillfollow.transcripts import _common

    scans: list[bool] = []
    real = _common.scan_command

    def counting(*args: object, find_refs: bool = True) -> object:
        scans.append(find_refs)
        return real(*args, find_refs=find_refs)  # type: ignore[arg-type]

    monkeypatch.setattr(_common, "scan_command", counting)
    steps = [
        fx.atif_agent([(f"c{i}", "Bash", {"command": command})], [(f"c{i}", "ok", None)])
        for i in range(50)
    ]
    path = fx.write_json(tmp_path / "claude.json", fx.atif("claude-code", steps))
    assert detect(read_transcript(path), POOL).activated() == ()
    return scans


def test_following_the_cd_of_a_persistent_shell_does_not_read_each_command_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Following the `cd`s scanned every command a second time, paths and all (6782972): twice
    # detect's CPU on a 60 MB Claude Code stream. Counted, not timed: a command with no `cd`
    # is not scanned again, and one with a `cd` only for its folder, not its paths.
    files = " ".join(f"/root/data/f{j}.csv" for j in range(200))
    assert _cwd_scans(tmp_path, monkeypatch, f"cat {files}") == []
    assert _cwd_scans(tmp_path, monkeypatch, f"cd /root/w && cat {files}") == [False] * 50


# BenchFlow's own tests (issue #507) record OpenHands' invoke_skill over ACP as kind `other`
# titled with the model's summary, the result opening with the `Tool: invoke_skill` header.
@pytest.mark.parametrize(
    ("title", "text", "expected"),
    [
        (
            "Load PDF skill for processing",
            "Tool: invoke_skill\nResult:\n[skill: pdf]\n# PDF",
            ("pdf",),
        ),
        ("Read the notes", "Tool: invoke_skill\nResult:\nno marker here", ()),
        ("cat prior_trajectory.txt", "log\nTool: invoke_skill\nResult:\n[skill: pdf]", ()),
    ],
)
def test_an_openhands_invoke_skill_over_acp_counts_whatever_its_title(
    tmp_path: Path, title: str, text: str, expected: tuple[str, ...]
) -> None:
    path = fx.write_jsonl(
        tmp_path / "acp_trajectory.jsonl", [fx.acp_call("tc_1", "other", title, "completed", text)]
    )
    transcript = read_transcript(path)
    assert sniff_format(transcript) == "acp"
    assert detect(transcript, POOL).activated() == expected

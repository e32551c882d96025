"""Session 22 review of the transcript-detector commits: cases the new rules got wrong on real
agent behaviour. Every transcript is a real file read back with `read_transcript`; the expected
activations are written by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_skillfollow.transcripts import detect, read_transcript
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

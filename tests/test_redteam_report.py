"""Red team: submitter text (skill names, cell ids) in the report's own-task tables."""

from __future__ import annotations

import re

from hf_skillfollow.report_own import sections

SKILL = "x|y<img src=q onerror=alert(1)>"
CELL = "c|[red]\x1b]8;;http://e/\x07"


def _rows() -> tuple[list[dict], list[dict]]:
    transition = {"run_id": "r", "cell_id": CELL, "task_id": f"{SKILL}/1",
                  "benchmark": "skill-evals", "se_correct": True, "sd_correct": False,
                  "returned": True, "skills_returned": [SKILL]}  # fmt: skip
    trace = {"run_id": "r", "cell_id": CELL, "task_id": f"{SKILL}/1", "arm": "se",
             "prompt_tokens": 1, "completion_tokens": 1, "latency_s": 1.0,
             "judge_verdicts": None, "addresses_grader": False}  # fmt: skip
    return [transition], [trace]


def test_markdown_tables_keep_their_columns() -> None:
    # before: a '|' in a skill name or cell id split the row; raw HTML reached the Markdown
    text = sections(*_rows(), "markdown")
    skill_rows = [line for line in text.splitlines() if "onerror" in line]
    assert skill_rows
    for line in skill_rows:
        header = next(h for h in text.splitlines() if h.startswith("| cell | skill"))
        assert line.replace("\\|", "").count("|") == header.count("|")
        assert re.search(r"(?<!\\)<", line) is None  # '<' only backslash-escaped


def test_terminal_tables_carry_no_escape_sequence() -> None:
    text = sections(*_rows(), "table")
    assert "\x1b" not in text and "\x07" not in text

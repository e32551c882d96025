"""Red team: hostile tool-call arguments in model output end one call, never the run.

`json.loads` raises RecursionError on deeply nested arrays and a bare ValueError (not a
JSONDecodeError) on integers of over 4,300 digits; before `loads_untrusted` both escaped the
argument parsers of both access protocols and the emulated tool mode and ended the run.
"""

from __future__ import annotations

import json

import pytest

from hf_skillfollow.access._catalog import _arguments
from hf_skillfollow.access._search import parse_arguments
from hf_skillfollow.annotate._labels import parse_label
from hf_skillfollow.backends._emulated import format_tool_call, parse_tool_calls

DEEP = "[" * 100_000
HUGE_INT = '{"name": 1' + "0" * 5000 + "}"
HOSTILE = [DEEP, HUGE_INT, '{"query": ' + DEEP + "}"]


@pytest.mark.parametrize("raw", HOSTILE)
def test_catalog_arguments_are_an_invalid_call(raw: str) -> None:
    args, problem = _arguments(raw, ["pdf"], "read_skill_file")
    assert args == {}
    assert problem == "arguments are not valid JSON"


@pytest.mark.parametrize("raw", HOSTILE)
def test_search_arguments_are_an_invalid_call(raw: str) -> None:
    assert parse_arguments(raw) == ("", None, "arguments are not valid JSON")


@pytest.mark.parametrize("raw", HOSTILE)
def test_emulated_tool_call_block_is_kept_as_an_invalid_call(raw: str) -> None:
    text, calls = parse_tool_calls(f"thinking <tool_call>{raw}</tool_call>")
    assert len(calls) == 1
    assert calls[0].arguments == raw  # kept raw, so the agent counts it invalid
    # replaying the call into the text history must not crash either
    assert format_tool_call("search_skills", raw).startswith("<tool_call>")


def test_emulated_nested_arguments_replay() -> None:
    raw = json.dumps({"name": "activate_skill", "arguments": {"name": "[" * 50_000}})
    _, calls = parse_tool_calls(f"<tool_call>{raw}</tool_call>")
    assert calls[0].name == "activate_skill"


@pytest.mark.parametrize("raw", HOSTILE)
def test_annotator_label_is_invalid_output_to_retry(raw: str) -> None:
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_label(raw)

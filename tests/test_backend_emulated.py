"""Emulated tool calling: the `<tool_call>` text protocol, formatting and parsing round-trips
on real strings, and the wrapper end to end over HTTP (provider double at the HTTP boundary)."""

from __future__ import annotations

import asyncio
import json

from hf_skillfollow.backends._base import ChatRequest
from hf_skillfollow.backends._emulated import (
    EmulatedToolsBackend,
    describe_tools,
    format_tool_call,
    history_as_text,
    parse_tool_calls,
)
from tests.test_backend_openai_retries import ProviderDouble, Reply, completion_body, make_backend

SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search_skills",
        "description": "Search the skill library.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    },
}


def test_parse_valid_call_and_strip_it_from_content() -> None:
    reply = 'Let me look.\n<tool_call>{"name": "search_skills", "arguments": {"query": "prefix sum"}}</tool_call>'
    content, calls = parse_tool_calls(reply)
    assert content == "Let me look."
    assert len(calls) == 1
    assert calls[0].name == "search_skills"
    assert json.loads(calls[0].arguments) == {"query": "prefix sum"}


def test_parse_several_calls_in_order_with_distinct_ids() -> None:
    reply = (
        '<tool_call>{"name": "search_skills", "arguments": {"query": "a"}}</tool_call>\n'
        '<tool_call> {"name": "other", "arguments": {"x": 1}} </tool_call>'
    )
    content, calls = parse_tool_calls(reply, id_prefix="call_2")
    assert content == ""
    assert [(c.id, c.name, json.loads(c.arguments)) for c in calls] == [
        ("call_2_0", "search_skills", {"query": "a"}),
        ("call_2_1", "other", {"x": 1}),
    ]


def test_malformed_json_keeps_raw_text_as_invalid_arguments() -> None:
    raw = '{"name": "search_skills", "arguments": {"query": "two pointers"'
    content, calls = parse_tool_calls(f"<tool_call>{raw}</tool_call> tail")
    assert content == "tail"
    assert calls[0].name == "search_skills"
    assert calls[0].arguments == raw
    try:
        json.loads(calls[0].arguments)
    except ValueError:
        pass
    else:
        raise AssertionError("malformed arguments must stay unparseable")


def test_unterminated_block_at_end_is_still_a_call() -> None:
    content, calls = parse_tool_calls(
        'Answer soon <tool_call>{"name": "search_skills", "arguments": {"query": "dp"}}'
    )
    assert content == "Answer soon"
    assert json.loads(calls[0].arguments) == {"query": "dp"}


def test_string_arguments_are_passed_through() -> None:
    _, calls = parse_tool_calls(
        '<tool_call>{"name": "search_skills", "arguments": "{\\"query\\": \\"x\\"}"}</tool_call>'
    )
    assert json.loads(calls[0].arguments) == {"query": "x"}


def test_text_without_calls_is_unchanged() -> None:
    text = "```python\ndef f(x):\n    return x\n```"
    assert parse_tool_calls(text) == (text, [])


def test_history_round_trip_calls_and_tool_results() -> None:
    history = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "task"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c0",
                    "type": "function",
                    "function": {"name": "search_skills", "arguments": '{"query": "rotate list"}'},
                },
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "search_skills", "arguments": "{bad"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c0", "content": "SKILL rotate-left"},
        {"role": "tool", "tool_call_id": "c1", "content": "not executed"},
        {"role": "user", "content": "final answer please"},
    ]
    text = history_as_text(history)
    assert [m["role"] for m in text] == ["system", "user", "assistant", "user", "user"]
    assert all("tool_calls" not in m and "tool_call_id" not in m for m in text)
    _, calls = parse_tool_calls(text[2]["content"])
    assert [(c.name, c.arguments) for c in calls] == [
        ("search_skills", json.dumps({"query": "rotate list"})),
        ("search_skills", "{bad"),  # an invalid call stays invalid when replayed
    ]
    assert text[3]["content"] == (
        "<tool_response>\nSKILL rotate-left\n</tool_response>\n<tool_response>\nnot executed\n</tool_response>"
    )
    assert history[2]["content"] is None  # the caller's messages are not modified


def test_format_then_parse_is_identity_for_valid_json() -> None:
    args = json.dumps({"query": "knapsack", "types": ["procedure"]})
    _, calls = parse_tool_calls(format_tool_call("search_skills", args))
    assert (calls[0].name, json.loads(calls[0].arguments)) == ("search_skills", json.loads(args))


def test_describe_tools_lists_name_description_schema_and_protocol() -> None:
    text = describe_tools([SEARCH_TOOL])
    assert "- search_skills: Search the skill library." in text
    assert json.dumps(SEARCH_TOOL["function"]["parameters"], sort_keys=True) in text
    assert (
        '<tool_call>{"name": "<tool name>", "arguments": {<arguments as a JSON object>}}</tool_call>'
        in text
    )


def test_wrapper_over_http_sends_no_tools_and_parses_the_reply() -> None:
    """Real OpenAIBackend inside the wrapper; the HTTP server is a provider double."""
    reply = completion_body(
        '<tool_call>{"name": "search_skills", "arguments": {"query": "gcd"}}</tool_call>'
    )
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Write gcd."},
    ]

    async def go():
        backend = make_backend(double.url)
        try:
            wrapped = EmulatedToolsBackend(backend)
            return await wrapped.chat(
                ChatRequest(
                    messages,
                    seed=3,
                    temperature=0.7,
                    max_tokens=64,
                    tools=[SEARCH_TOOL],
                    tool_choice={"type": "function", "function": {"name": "search_skills"}},
                )
            )
        finally:
            await backend.aclose()

    with ProviderDouble([Reply(200, body=reply)]) as double:
        result = asyncio.run(go())
    sent = double.bodies[0]
    assert "tools" not in sent and "tool_choice" not in sent
    system = sent["messages"][0]["content"]
    assert system.startswith("You are helpful.\n\n# Tools")
    assert "must consist only of one <tool_call> block calling `search_skills`" in system
    assert result.content == ""
    assert result.finish_reason == "tool_calls"
    assert [(c.id, c.name, json.loads(c.arguments)) for c in result.tool_calls] == [
        ("call_0_0", "search_skills", {"query": "gcd"})
    ]


def test_wrappers_expose_the_inner_backends_batching_and_usage() -> None:
    """A wrapper never forwards attributes by hand: a batching backend stays batching."""
    from hf_skillfollow.backends._vllm_server import StrictToolsBackend

    class BatchingDouble:
        name, model, batched = "double", "m", True
        usage = object()

    inner = BatchingDouble()
    for wrapped in (EmulatedToolsBackend(inner), StrictToolsBackend(inner)):  # type: ignore[arg-type]
        assert wrapped.batched is True and wrapped.usage is inner.usage
        assert wrapped.model == "m"
    assert EmulatedToolsBackend(inner).name == "double"
    assert StrictToolsBackend(inner).name == "vllm-server"  # type: ignore[arg-type]

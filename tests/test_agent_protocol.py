"""The SE/SD protocol rules (docs/design.md, "Protocol"), driven turn by turn.

`ScriptedModelDouble` stands in for the model: no real model available here can be made to
emit parallel calls, invalid arguments or a fourth call on demand, and these rules are about
what the toolkit does with such turns. Everything else is real: the shipped coding pool, the
bm25s retriever and the rendered skill text. The real-model path is covered by test_run_e2e.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from hf_skillfollow.access import make_access
from hf_skillfollow.access._search import SearchAccess, parse_arguments
from hf_skillfollow.agent import NOT_EXECUTED, Decoding, run_sd, run_se
from hf_skillfollow.backends._base import ChatRequest, ChatResult, ToolCall
from hf_skillfollow.config import RunConfig
from hf_skillfollow.prompts import system_prompt, tool_schema
from hf_skillfollow.skills import load_pool

DECODING = Decoding(seed=7, temperature=0.7, max_tokens=64)


class ScriptedModelDouble:
    """Replays scripted assistant turns and records every request it receives."""

    name, model = "scripted", "scripted"

    def __init__(self, turns: list[ChatResult]) -> None:
        self.turns, self.requests = list(turns), []

    async def chat(self, request: ChatRequest) -> ChatResult:
        self.requests.append(
            {
                "messages": [dict(m) for m in request.messages],
                "tools": request.tools,
                "tool_choice": request.tool_choice,
                "seed": request.seed,
                "temperature": request.temperature,
            }
        )
        return self.turns.pop(0)


def _call(i: int, args: str) -> ToolCall:
    return ToolCall(id=f"call_{i}", name="search_skills", arguments=args)


@pytest.fixture(scope="module")
def tool() -> SearchAccess:
    access = make_access(RunConfig(seed=7), load_pool("coding"))
    assert isinstance(access, SearchAccess)
    return access


def test_search_tool_is_the_papers_listing_1() -> None:
    """Appendix L, Listing 1 of the paper, typed in from the paper (not from the code)."""
    assert tool_schema() == {
        "type": "function",
        "function": {
            "name": "search_skills",
            "description": "Search the skill library for reusable problem-solving artifacts. Returns utility functions (callable helpers you can use directly), procedure templates (algorithm skeletons you can specialize), and guard checklists (defensive checks to add at function entry).",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Natural-language query describing the subproblem or pattern you need."},
                    "types": {"type": "array", "items": {"type": "string", "enum": ["utility", "procedure", "guard"]},
                              "description": "Optional filter. Omit for all types. Use ['utility', 'procedure'] to skip defensive-only skills."},
                },
                "required": ["query"],
            },
        },
    }  # fmt: skip


def _se(model: ScriptedModelDouble, tool: SearchAccess, **kw):
    return asyncio.run(
        run_se(
            model,
            "coding",
            "Write a function to rotate a list left by k.",
            DECODING,
            tool,
            max_calls=3,
            **kw,
        )
    )


def test_prompts_differ_only_by_the_tool_sentences() -> None:
    se, sd = (
        system_prompt("coding", skill_enabled=True),
        system_prompt("coding", skill_enabled=False),
    )
    assert "search_skills" in se and "search_skills" not in sd
    assert (
        se.replace(
            "You have a `search_skills` tool that searches a skill library. Use it if you think it could help solve the task. ",
            "",
        )
        == sd
    )


def test_only_first_parallel_call_is_executed(tool: SearchAccess) -> None:
    model = ScriptedModelDouble(
        [
            ChatResult(
                "",
                [_call(1, '{"query": "rotate list left"}'), _call(2, '{"query": "prefix sums"}')],
            ),
            ChatResult("```python\ndef f(): pass\n```"),
        ]
    )
    arm = _se(model, tool)
    tool_msgs = [m for m in arm.messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["call_1", "call_2"]
    assert tool_msgs[1]["content"] == NOT_EXECUTED
    assert "rotate-left" in tool_msgs[0]["content"]
    assert arm.n_calls == 1 and arm.queries == ["rotate list left"]
    assert arm.skills_returned[0] == "rotate-left"


def test_at_most_three_calls_then_final_answer_is_requested(tool: SearchAccess) -> None:
    turns = [ChatResult("", [_call(i, '{"query": "sliding window"}')]) for i in range(4)] + [
        ChatResult("final")
    ]
    model = ScriptedModelDouble(turns)
    arm = _se(model, tool)
    assert arm.n_calls == 3
    # The fourth turn came after the budget: its call is ignored and its text is the answer.
    assert arm.final_answer == ""
    assert model.requests[3]["tool_choice"] == "none"
    assert model.requests[3]["messages"][-1]["role"] == "user"
    assert len(model.turns) == 1  # the scripted fifth turn was never requested


def test_invalid_arguments_return_no_skill_and_continue(tool: SearchAccess) -> None:
    model = ScriptedModelDouble(
        [
            ChatResult("", [_call(1, "{")]),
            ChatResult("", [_call(2, '{"query": "x", "types": ["bogus"]}')]),
            ChatResult("the answer"),
        ]
    )
    arm = _se(model, tool)
    assert arm.n_calls == 2 and arm.queries == [] and not arm.returned
    assert all(
        m["content"].startswith("Invalid arguments") for m in arm.messages if m["role"] == "tool"
    )
    assert arm.final_answer == "the answer"


def test_forced_policy_requires_a_call_on_the_first_turn_only(tool: SearchAccess) -> None:
    model = ScriptedModelDouble(
        [ChatResult("", [_call(1, '{"query": "two pointers"}')]), ChatResult("done")]
    )
    _se(model, tool, forced=True)
    assert model.requests[0]["tool_choice"] == {
        "type": "function",
        "function": {"name": "search_skills"},
    }
    assert model.requests[1]["tool_choice"] == "auto"


def test_provider_failure_gives_empty_prediction_with_error(tool: SearchAccess) -> None:
    model = ScriptedModelDouble([ChatResult("", error="HTTP 500 after 3 retries")])
    arm = _se(model, tool)
    assert arm.final_answer == "" and arm.error == "HTTP 500 after 3 retries"


def test_sd_arm_has_no_tool_and_same_decoding() -> None:
    model = ScriptedModelDouble([ChatResult("answer", prompt_tokens=5, completion_tokens=3)])
    arm = asyncio.run(run_sd(model, "math", "1+1?", DECODING))
    req = model.requests[0]
    assert req["tools"] is None and req["seed"] == 7 and req["temperature"] == 0.7
    assert arm.final_answer == "answer" and arm.prompt_tokens == 5 and arm.completion_tokens == 3


@pytest.mark.parametrize(
    "raw,ok",
    [
        ('{"query": "a"}', True),
        ('{"query": ""}', False),
        ("[1]", False),
        ("", False),
        ('{"query": 3}', False),
        ('{"query": "a", "types": ["guard"]}', True),
    ],
)
def test_parse_arguments(raw: str, ok: bool) -> None:
    assert (parse_arguments(raw)[2] is None) is ok


def test_assistant_content_none_is_sent_as_empty_string(tool: SearchAccess) -> None:
    model = ScriptedModelDouble([ChatResult(None, [_call(1, '{"query": "q"}')]), ChatResult("ok")])  # type: ignore[arg-type]
    _se(model, tool)
    assistant = [m for m in model.requests[1]["messages"] if m["role"] == "assistant"][0]
    assert assistant["content"] == "" and json.loads(
        assistant["tool_calls"][0]["function"]["arguments"]
    ) == {"query": "q"}

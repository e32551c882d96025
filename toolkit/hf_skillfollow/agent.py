"""The SE/SD agent protocol: one conversation per arm, identical except the tool.

See docs/design.md, "Protocol".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hf_skillfollow.backends._base import ChatRequest
from hf_skillfollow.prompts import (
    FINAL_ANSWER_REQUEST,
    SKILL_TYPES,
    TOOL_NAME,
    system_prompt,
    tool_schema,
)

if TYPE_CHECKING:
    from hf_skillfollow.backends._base import ChatBackend, ChatResult, Message, ToolCall
    from hf_skillfollow.retrieval import Retriever
    from hf_skillfollow.skills import SkillPool

NOT_EXECUTED = "Not executed: only the first tool call of a turn is executed."


@dataclass
class ArmResult:
    """Everything one arm produced for one task."""

    arm: str
    messages: list[Message]
    final_answer: str = ""
    error: str | None = None
    n_calls: int = 0
    queries: list[str] = field(default_factory=list)
    skills_returned: list[str] = field(default_factory=list)
    latency_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def returned(self) -> bool:
        return bool(self.skills_returned)

    def add_usage(self, result: ChatResult) -> None:
        self.latency_s += result.latency_s
        self.prompt_tokens += result.prompt_tokens
        self.completion_tokens += result.completion_tokens


@dataclass(frozen=True)
class Decoding:
    """Sampling settings shared by both arms of a task."""

    seed: int
    temperature: float
    max_tokens: int

    def request(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
    ) -> ChatRequest:
        """One turn of an arm with these settings."""
        return ChatRequest(
            messages, self.seed, self.temperature, self.max_tokens, tools, tool_choice
        )


class SkillTool:
    """Executes `search_skills` calls: validates arguments, retrieves, renders the condition."""

    def __init__(
        self, pool: SkillPool, retriever: Retriever, *, condition: str, top_k: int, seed: int
    ) -> None:
        self.pool, self.retriever = pool, retriever
        self.condition, self.top_k, self.seed = condition, top_k, seed

    def __call__(self, arguments: str, call_index: int) -> tuple[str | None, str, list[str]]:
        """Return (query or None when invalid, tool-result text, names of the skills returned)."""
        from hf_skillfollow.skill_content import render

        query, types, problem = parse_arguments(arguments)
        if problem:
            return None, f"Invalid arguments: {problem}. No skill returned.", []
        hits = self.retriever.search(query, k=self.top_k, types=types)
        rendered = render(self.pool, hits, self.condition, rng_seed=self.seed * 1000 + call_index)
        if not rendered.names:
            return query, rendered.text or "No matching skill found.", []
        return query, rendered.text, list(rendered.names)


def parse_arguments(arguments: str) -> tuple[str, list[str] | None, str | None]:
    """Validate raw tool-call JSON: (query, types, problem); `problem` is None when valid."""
    try:
        args = json.loads(arguments) if arguments.strip() else {}
    except (json.JSONDecodeError, AttributeError):
        return "", None, "arguments are not valid JSON"
    if not isinstance(args, dict):
        return "", None, "arguments must be a JSON object"
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        return "", None, "`query` must be a non-empty string"
    types = args.get("types")
    if types is not None and (
        not isinstance(types, list) or any(t not in SKILL_TYPES for t in types)
    ):
        return "", None, f"`types` must be a list of {list(SKILL_TYPES)}"
    return query.strip(), types or None, None


def _assistant_message(result: ChatResult) -> Message:
    msg: Message = {"role": "assistant", "content": result.content or ""}
    if result.tool_calls:
        msg["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in result.tool_calls
        ]
    return msg


def _tool_message(call: ToolCall, content: str) -> Message:
    return {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content}


async def run_sd(backend: ChatBackend, domain: str, prompt: str, decoding: Decoding) -> ArmResult:
    """Skill-disabled arm: the same conversation without the tool."""
    arm = ArmResult(
        "sd",
        [
            {"role": "system", "content": system_prompt(domain, skill_enabled=False)},
            {"role": "user", "content": prompt},
        ],
    )
    result = await backend.chat(decoding.request(arm.messages))
    arm.add_usage(result)
    arm.messages.append(_assistant_message(result))
    arm.error = result.error
    arm.final_answer = final_answer(arm.messages, arm.error)
    return arm


async def run_se(
    backend: ChatBackend,
    domain: str,
    prompt: str,
    decoding: Decoding,
    tool: SkillTool,
    *,
    max_calls: int,
    forced: bool = False,
) -> ArmResult:
    """Skill-enabled arm: at most `max_calls` searches, first of parallel calls executed,
    invalid arguments return no skill, then the final answer is requested."""
    arm = ArmResult(
        "se",
        [
            {"role": "system", "content": system_prompt(domain, skill_enabled=True)},
            {"role": "user", "content": prompt},
        ],
    )
    tools = [tool_schema()]
    while True:
        calls_left = arm.n_calls < max_calls
        if not calls_left:
            arm.messages.append({"role": "user", "content": FINAL_ANSWER_REQUEST})
        result = await backend.chat(
            decoding.request(arm.messages, tools, _tool_choice(arm.n_calls, calls_left, forced))
        )
        arm.add_usage(result)
        if result.error or not (calls_left and result.tool_calls):
            result.tool_calls = []  # calls after the budget are ignored: this turn is the answer
            arm.messages.append(_assistant_message(result))
            arm.error = result.error
            arm.final_answer = final_answer(arm.messages, arm.error)
            return arm
        _execute_first_call(arm, result, tool)


def final_answer(messages: Sequence[Message], error: str | None) -> str:
    """The text an arm is scored on: its last assistant turn; nothing after an unrecoverable error.

    The runner and `hf-skillfollow verify` (re-extracting answers from published traces) both
    call this, so a verifier scores exactly what the runner scored.
    """
    if error:
        return ""
    for message in reversed(messages):
        if message.get("role") == "assistant":
            return message.get("content") or ""
    return ""


def _execute_first_call(arm: ArmResult, result: ChatResult, tool: SkillTool) -> None:
    arm.messages.append(_assistant_message(result))
    first, *rest = result.tool_calls
    arm.n_calls += 1
    if first.name != TOOL_NAME:
        text, query, names = f"Unknown tool {first.name!r}. No skill returned.", None, []
    else:
        query, text, names = tool(first.arguments, arm.n_calls)
    if query is not None:
        arm.queries.append(query)
    arm.skills_returned.extend(n for n in names if n not in arm.skills_returned)
    arm.messages.append(_tool_message(first, text))
    arm.messages.extend(_tool_message(call, NOT_EXECUTED) for call in rest)


def _tool_choice(n_calls: int, calls_left: bool, forced: bool) -> str | dict[str, Any]:
    if not calls_left:
        return "none"
    if forced and n_calls == 0:
        return {"type": "function", "function": {"name": TOOL_NAME}}
    return "auto"

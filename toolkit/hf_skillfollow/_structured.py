"""One way to ask any chat backend for schema-valid JSON: a forced tool call, validated, retried.

The annotator (`annotate`) and the expectations judge (`judge`) both go through `ask`: the
request carries one tool and a `tool_choice` naming it, so each backend constrains the reply
the way it constrains the runner's forced `search_skills` call (OpenAI-compatible servers get
`tool_choice` plus a `strict` schema, the embedded llama.cpp server a grammar, vLLM structured
outputs). A reply that still fails `parse` is retried with the next seed; after the last
attempt the caller gets a failure with every attempt's reason. Nothing is ever inferred from
invalid output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from hf_skillfollow.backends._base import ChatRequest

if TYPE_CHECKING:
    from hf_skillfollow.backends._base import ChatBackend, ChatResult

T = TypeVar("T")


@dataclass(frozen=True)
class AskSettings:
    """How a structured request is asked (the annotator's and the judge's settings extend it)."""

    model: str  # the name recorded in the data (a local path is published by its file name)
    backend: str
    temperature: float = 0.0
    max_tokens: int = 256
    seed: int = 0
    max_attempts: int = 3


@dataclass(frozen=True)
class Reply(Generic[T]):
    """The parsed value (None when every attempt failed), the last raw reply, the number of
    requests made and, on failure, why each attempt failed."""

    value: T | None
    raw: str | None
    attempts: int
    failure: str | None


def forced_tool(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """A function tool whose arguments are the answer; `strict` asks for schema-exact JSON."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": parameters,
            "strict": True,
        },
    }


def tool_choice(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name}}


def reply_text(result: ChatResult, tool_name: str) -> str:
    """The JSON the model produced: the forced call's arguments, else the plain content
    (servers that answer a forced call in text)."""
    for call in result.tool_calls:
        if call.name == tool_name:
            return call.arguments
    return result.content


async def ask(
    backend: ChatBackend,
    request: dict[str, Any],
    parse: Callable[[str], T],
    *,
    seed: int,
    temperature: float,
    max_tokens: int,
    max_attempts: int,
) -> Reply[T]:
    """Send `request` (messages, tools with one forced tool, tool_choice) until `parse`
    accepts the reply (it raises ValueError saying what is wrong), at most `max_attempts`
    times; attempt k uses `seed + k`."""
    tool_name = request["tool_choice"]["function"]["name"]
    problems: list[str] = []
    raw: str | None = None
    for attempt in range(max_attempts):
        result = await backend.chat(
            ChatRequest(
                messages=request["messages"],
                seed=seed + attempt,
                temperature=temperature,
                max_tokens=max_tokens,
                tools=request["tools"],
                tool_choice=request["tool_choice"],
            )
        )
        if result.error:
            problems.append(f"attempt {attempt + 1}: backend error: {result.error}")
            continue
        raw = reply_text(result, tool_name)
        try:
            return Reply(parse(raw), raw, attempt + 1, None)
        except ValueError as exc:
            problems.append(f"attempt {attempt + 1}: invalid output: {exc}")
    return Reply(None, raw, max_attempts, "; ".join(problems))

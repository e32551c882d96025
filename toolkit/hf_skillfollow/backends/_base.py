"""The chat interface every backend implements (OpenAI chat-completions semantics)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

Message = dict[str, Any]  # OpenAI chat message: role, content, optional tool_calls / tool_call_id


@dataclass(frozen=True)
class ToolCall:
    """One tool call emitted by the model; `arguments` is the raw JSON text as produced."""

    id: str
    name: str
    arguments: str


@dataclass
class ChatResult:
    """One assistant turn. On an unrecoverable failure `error` is set and `content` is ""."""

    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    finish_reason: str | None = None
    error: str | None = None


class ChatBackend(Protocol):
    """An open connection to a model. `chat` never raises for provider failures: after the
    retries are spent it returns a ChatResult with `error` set."""

    name: str
    model: str

    async def chat(
        self,
        messages: list[Message],
        *,
        tools: list[dict[str, Any]] | None,
        tool_choice: str | dict[str, Any] | None,
        seed: int,
        temperature: float,
        max_tokens: int,
    ) -> ChatResult: ...

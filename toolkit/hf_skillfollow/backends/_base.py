"""The chat interface every backend implements (OpenAI chat-completions semantics), the base
for backends that wrap another one, and the error a backend raises when it cannot start."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

Message = dict[str, Any]  # OpenAI chat message: role, content, optional tool_calls / tool_call_id


class BackendStartupError(RuntimeError):
    """A backend cannot start or cannot reach its endpoint; the message is meant for the user."""


@dataclass(frozen=True)
class ChatRequest:
    """One model turn: the conversation so far, the decoding, and the tools offered.

    `tool_choice` follows the chat-completions API: None/"auto", "none", "required" or
    ``{"type": "function", "function": {"name": ...}}`` to force one tool.
    """

    messages: list[Message]
    seed: int
    temperature: float
    max_tokens: int
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None


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

    async def chat(self, request: ChatRequest) -> ChatResult: ...


class BackendWrapper:
    """Base of a backend that adapts another one's requests or results (emulated tools, strict
    tool schemas, a local server's prompt format).

    Attributes the wrapper does not set itself — `name`, `model`, `batched`, `usage`, … — are
    the inner backend's, so a wrapper never forwards them by hand and a batching backend stays
    batching however it is wrapped. `chat` passes through unless overridden.
    """

    def __init__(self, inner: ChatBackend) -> None:
        self.inner = inner

    def __getattr__(self, attr: str) -> Any:
        if attr == "inner":  # not set yet (copy, unpickling): no recursion
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    async def chat(self, request: ChatRequest) -> ChatResult:
        return await self.inner.chat(request)

"""The SE/SD agent protocol: one conversation per arm, identical except what the access
protocol adds (its prompt text and tools).

The access protocol (`hf_skillfollow.access`: `search` or `catalog`) supplies the SE prompt,
the tools, the executor of a call and which calls hand back skills; this module is the one
loop for both. See docs/design.md, "Protocol", and docs/skills.md, "Access protocols".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hf_skillfollow.backends._base import ChatRequest
from hf_skillfollow.prompts import system_prompt

if TYPE_CHECKING:
    from hf_skillfollow.access import AccessProtocol, AccessSession
    from hf_skillfollow.backends._base import ChatBackend, ChatResult, Message, ToolCall

NOT_EXECUTED = "Not executed: only the first tool call of a turn is executed."
#: Parallel calls of one turn kept in the conversation; the rest are dropped. Only the first
#: runs anyway, and each kept one is answered with NOT_EXECUTED: a model (or server) emitting
#: 50,000 calls in one 4 MB answer would otherwise add 50,000 messages to every later request
#: and to the traces.
MAX_PARALLEL_CALLS = 16


@dataclass
class ArmResult:
    """Everything one arm produced for one task."""

    arm: str
    messages: list[Message]
    final_answer: str = ""
    error: str | None = None
    n_calls: int = 0
    #: what each valid call asked (search queries; `activate_skill(name)`, ...)
    queries: list[str] = field(default_factory=list)
    #: skills whose content reached the model, first occurrence order (the trigger event)
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
    """Skill-disabled arm: the same conversation without the tools, whatever the protocol."""
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
    access: AccessProtocol,
    *,
    max_calls: int,
    forced: bool = False,
) -> ArmResult:
    """Skill-enabled arm: at most `max_calls` tool calls, first of parallel calls executed,
    invalid calls return nothing, then the final answer is requested."""
    arm = ArmResult(
        "se",
        [
            {"role": "system", "content": access.system_prompt(domain)},
            {"role": "user", "content": prompt},
        ],
    )
    session = access.session()
    while True:
        calls_left = arm.n_calls < max_calls
        if not calls_left:
            arm.messages.append({"role": "user", "content": access.final_request})
        choice = _tool_choice(arm.n_calls, calls_left, access.forced_tool if forced else None)
        result = await backend.chat(decoding.request(arm.messages, access.tools, choice))
        arm.add_usage(result)
        if result.error or not (calls_left and result.tool_calls):
            result.tool_calls = []  # calls after the budget are ignored: this turn is the answer
            arm.messages.append(_assistant_message(result))
            arm.error = result.error
            arm.final_answer = final_answer(arm.messages, arm.error)
            return arm
        _execute_first_call(arm, result, session)


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


def _execute_first_call(arm: ArmResult, result: ChatResult, session: AccessSession) -> None:
    del result.tool_calls[MAX_PARALLEL_CALLS:]
    arm.messages.append(_assistant_message(result))
    first, *rest = result.tool_calls
    arm.n_calls += 1
    outcome = session.execute(first, arm.n_calls)
    if outcome.request is not None:
        arm.queries.append(outcome.request)
    arm.skills_returned.extend(n for n in outcome.skills if n not in arm.skills_returned)
    arm.messages.append(_tool_message(first, outcome.text))
    arm.messages.extend(_tool_message(call, NOT_EXECUTED) for call in rest)


def _tool_choice(n_calls: int, calls_left: bool, forced_tool: str | None) -> str | dict[str, Any]:
    if not calls_left:
        return "none"
    if forced_tool and n_calls == 0:
        return {"type": "function", "function": {"name": forced_tool}}
    return "auto"

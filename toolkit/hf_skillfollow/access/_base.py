"""What every access protocol supplies to the one SE loop (`agent.run_se`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from hf_skillfollow.backends._base import ToolCall
    from hf_skillfollow.skills import SkillPool


@dataclass(frozen=True)
class CallOutcome:
    """One executed tool call.

    `text` is the tool result the model reads. `request` is what the call asked, as recorded
    in the `queries` column (a search query, `activate_skill(name)`, ...); None for an invalid
    call. `skills` are the skills whose content this call handed back: a call with any counts
    toward the trigger event (S_call, the `returned` column) and names them in
    `skills_returned`.
    """

    text: str
    request: str | None
    skills: tuple[str, ...] = ()


class AccessSession(Protocol):
    """The tool executor of one SE conversation (it may remember what was activated)."""

    def execute(self, call: ToolCall, call_index: int) -> CallOutcome:
        """Run `call`, the `call_index`-th (from 1) executed call of the conversation."""
        ...


class AccessProtocol(Protocol):
    """A registry entry (`registries.ACCESS`): built once per run as ``cls(pool, config)``."""

    #: the tool the SE arm's first turn must call under `retrieval_policy=forced`
    forced_tool: str
    #: the user turn sent when `max_calls` calls are spent
    final_request: str
    #: the OpenAI tool definitions offered to the SE arm
    tools: list[dict[str, Any]]

    @classmethod
    def check(cls, pool: SkillPool, context_tokens: int | None = None) -> object:
        """Raise ValueError (naming the way out) if this protocol cannot serve `pool` to a
        model of `context_tokens` (None: unknown); the value is the protocol's own (the
        catalog text for `catalog`)."""
        ...

    def system_prompt(self, domain: str) -> str:
        """The SE system prompt (SD's is `prompts.system_prompt(domain, skill_enabled=False)`)."""
        ...

    def session(self) -> AccessSession:
        """A fresh executor for one SE conversation."""
        ...


def unknown_tool(call: ToolCall) -> CallOutcome:
    from hf_skillfollow._skill_findings import short

    # the name is the model's own text: echoed back bounded, as an invalid path is
    return CallOutcome(f"Unknown tool {short(call.name)}. No skill returned.", None)

"""Emulated tool calling (`tool_mode="emulated"`) for models or servers without usable native
tools: the tool is described in the system prompt and calls are parsed from the reply text.

The text protocol (also in docs/embedded-model.md):

- the system prompt gains a "# Tools" section listing each tool's name, description and JSON
  Schema, and asks for calls written as
  ``<tool_call>{"name": "<tool>", "arguments": {...}}</tool_call>``;
- earlier assistant tool calls are replayed as those blocks in the assistant's text, and tool
  results come back as a user turn made of ``<tool_response>...</tool_response>`` blocks;
- a forced `tool_choice` adds an instruction that the next reply must be only a tool call.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from hf_skillfollow._text import loads_untrusted
from hf_skillfollow.backends._base import (
    BackendWrapper,
    ChatRequest,
    ChatResult,
    Message,
    ToolCall,
)

_CALL_RE = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_NAME_RE = re.compile(r'"name"\s*:\s*"([^"]*)"')

_PROTOCOL = (
    "# Tools\n\n"
    "You may call the tools listed below. To call one, write exactly one block of this form "
    "and then stop:\n"
    '<tool_call>{{"name": "<tool name>", "arguments": {{<arguments as a JSON object>}}}}</tool_call>\n'
    "The result comes back in a <tool_response>...</tool_response> message. "
    "If you do not need a tool, answer normally without any <tool_call> block.\n\n"
    "Available tools:\n{tools}"
)
_FORCED = (
    "\n\nYour next reply must consist only of one <tool_call> block calling `{name}`, "
    "with no other text."
)


def describe_tools(tools: list[dict[str, Any]]) -> str:
    """The "# Tools" system-prompt section for OpenAI-style tool definitions."""
    lines = []
    for tool in tools:
        fn = tool.get("function", tool)
        schema = json.dumps(fn.get("parameters", {}), sort_keys=True)
        lines.append(
            f"- {fn['name']}: {fn.get('description', '').strip()}\n  parameters (JSON Schema): {schema}"
        )
    return _PROTOCOL.format(tools="\n".join(lines))


def tool_prompt(tools: list[dict[str, Any]], tool_choice: str | dict[str, Any] | None) -> str:
    """The system-prompt text for `tools`, plus the only-a-tool-call instruction when forced."""
    forced = forced_tool_name(tool_choice, tools)
    return describe_tools(tools) + (_FORCED.format(name=forced) if forced else "")


def forced_tool_name(
    tool_choice: str | dict[str, Any] | None, tools: list[dict[str, Any]]
) -> str | None:
    """The tool a `tool_choice` forces ("required" forces the first tool), else None."""
    if isinstance(tool_choice, dict):
        return str(tool_choice.get("function", {}).get("name") or "") or None
    if tool_choice == "required" and tools:
        return str(tools[0].get("function", tools[0])["name"])
    return None


def format_tool_call(name: str, arguments: str) -> str:
    """One `<tool_call>` block; arguments that are valid JSON are embedded as JSON, others as
    the raw string (so a replayed invalid call stays visibly invalid)."""
    try:
        args: Any = loads_untrusted(arguments)
    except (TypeError, ValueError):
        args = arguments
    return "<tool_call>" + json.dumps({"name": name, "arguments": args}) + "</tool_call>"


def _assistant_as_text(message: Message) -> Message:
    blocks = [
        format_tool_call(c["function"]["name"], c["function"].get("arguments") or "")
        for c in message.get("tool_calls") or []
    ]
    text = "\n".join(part for part in [message.get("content") or "", *blocks] if part)
    return {"role": "assistant", "content": text}


def history_as_text(messages: list[Message]) -> list[Message]:
    """Rewrite tool calls and tool results as plain chat turns; consecutive tool results are
    merged into one user turn so roles keep alternating."""
    out: list[Message] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            out.append(_assistant_as_text(message))
        elif role == "tool":
            block = f"<tool_response>\n{message.get('content') or ''}\n</tool_response>"
            if out and out[-1].get("_tool_turn"):
                out[-1]["content"] += "\n" + block
            else:
                out.append({"role": "user", "content": block, "_tool_turn": True})
        else:
            out.append(dict(message))
    return [{k: v for k, v in m.items() if k != "_tool_turn"} for m in out]


def with_system_text(messages: list[Message], text: str) -> list[Message]:
    """Append `text` to the system message (or add one at the front)."""
    if messages and messages[0].get("role") == "system":
        first = {**messages[0], "content": f"{messages[0].get('content') or ''}\n\n{text}".strip()}
        return [first, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


def _parse_block(raw: str, call_id: str) -> ToolCall:
    try:
        data = loads_untrusted(raw)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("name"), str) and "arguments" in data:
        args = data["arguments"]
        text = args if isinstance(args, str) else json.dumps(args)
        return ToolCall(id=call_id, name=data["name"], arguments=text)
    # Malformed: keep the raw text as arguments so the agent counts the call as invalid.
    match = _NAME_RE.search(raw)
    return ToolCall(id=call_id, name=match.group(1) if match else "", arguments=raw)


def parse_tool_calls(text: str, *, id_prefix: str = "call") -> tuple[str, list[ToolCall]]:
    """Split a reply into (text without `<tool_call>` blocks, parsed calls in order). An
    unterminated final block (the model stopped mid-call) is parsed too."""
    calls = [
        _parse_block(m.group(1).strip(), f"{id_prefix}_{i}")
        for i, m in enumerate(_CALL_RE.finditer(text))
    ]
    return _CALL_RE.sub("", text).strip(), calls


class EmulatedToolsBackend(BackendWrapper):
    """Wraps any ChatBackend; the inner backend never receives `tools`."""

    async def chat(self, request: ChatRequest) -> ChatResult:
        tools, tool_choice = request.tools, request.tool_choice
        prompt = history_as_text(request.messages)
        use_tools = bool(tools) and tool_choice != "none"
        if use_tools:
            assert tools is not None
            prompt = with_system_text(prompt, tool_prompt(tools, tool_choice))
        result = await self.inner.chat(
            replace(request, messages=prompt, tools=None, tool_choice=None)
        )
        if not use_tools or result.error:
            return result
        turn = sum(1 for m in request.messages if m.get("role") == "assistant")
        content, calls = parse_tool_calls(result.content, id_prefix=f"call_{turn}")
        result.content, result.tool_calls = content, calls
        if calls:
            result.finish_reason = "tool_calls"
        return result

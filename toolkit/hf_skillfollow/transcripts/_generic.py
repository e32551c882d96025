"""The fallback for a transcript of no known format: any tool call naming a pool SKILL.md.

It walks every JSON object (bounded) looking for a tool call's shape: a name under ``name``,
``function_name``, ``tool_name`` or ``tool`` beside arguments under ``input``, ``arguments``,
``args``, ``parameters`` or ``params`` (a JSON string of arguments is parsed, bounded). A call
counts when it is a Skill-loading tool naming a pool skill, or its path or command arguments
read a pool skill's ``SKILL.md``; resources alone do not count here, since without knowing
the harness a path under ``skills/`` is too weak a sign. A generic transcript records no
result status this detector can trust, so every event counts as loaded. User, system and
tool turns and tool results are not walked: a call-shaped object there is someone else's text.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping

from hf_skillfollow.transcripts._base import Detection
from hf_skillfollow.transcripts._common import Collector, tool_refs
from hf_skillfollow.transcripts._reader import as_transcript, link

NAME = "generic"
#: Most JSON values visited in one transcript.
MAX_NODES = 2_000_000

_NAME_KEYS = ("name", "function_name", "tool_name", "tool")
_ARG_KEYS = ("input", "arguments", "args", "parameters", "params")
_UNIT_KEYS = ("steps", "messages", "events", "history", "items")
# Where a call-shaped object is someone else's text, not a call the agent made: a user,
# system or tool turn, and a tool's result (a file the agent read can hold JSON shaped like a
# Skill call). The walk does not go into these. `output`/`result` keys are not skipped: some
# tracers keep the model's own reply, tool calls included, under `outputs`.
_NOT_AGENT = frozenset({"user", "system", "tool", "function", "developer", "environment"})
_OUTPUT_KEYS = frozenset(
    {
        "observation",
        "observations",
        "tool_result",
        "tool_results",
        "functionResponse",
        "function_response",
    }
)
_OUTPUT_TYPES = frozenset({"tool_result", "function_call_output", "function_result"})


def detect_generic(transcript: object, pool: Collection[str]) -> Detection:
    """Trigger events of any JSON transcript: tool calls naming a pool skill's SKILL.md."""
    transcript = as_transcript(transcript)
    out = Collector(NAME, pool)
    budget = [MAX_NODES]
    seen = 0
    for index, unit in _units(transcript):
        for call in _calls(unit, budget):
            seen += 1
            name = next(call[k] for k in _NAME_KEYS if isinstance(call.get(k), str))
            args = next((call[k] for k in _ARG_KEYS if k in call), None)
            refs, _ = tool_refs(name, args, pool)
            refs = [r for r in refs if r[1] == "instructions"]
            out.add_refs(refs, index, {"name": name, "arguments": args}, True)
    if budget[0] <= 0:
        out.notes.append(f"stopped after {MAX_NODES} JSON values")
    if not seen:
        out.notes.append("no tool call found: this format may not record skill use")
    return out.result(transcript)


def _units(transcript) -> Iterator[tuple[int, object]]:
    if transcript.events:
        yield from enumerate(transcript.events)
        return
    doc = transcript.document
    if isinstance(doc, Mapping):
        for key in _UNIT_KEYS:
            if isinstance(doc.get(key), list):
                yield from enumerate(doc[key])
                return
    yield 0, doc


def _calls(value: object, budget: list[int]) -> Iterator[Mapping]:
    stack = [value]
    while stack and budget[0] > 0:
        node = stack.pop()
        budget[0] -= 1
        if isinstance(node, Mapping):
            if _not_agent(node):
                continue
            if any(isinstance(node.get(k), str) for k in _NAME_KEYS) and any(
                k in node for k in _ARG_KEYS
            ):
                yield node
            stack.extend(reversed([v for k, v in node.items() if k not in _OUTPUT_KEYS]))
        elif isinstance(node, list):
            stack.extend(reversed(node))


def _not_agent(node: Mapping) -> bool:
    """A user, system or tool turn, or a tool's result block."""
    return (
        link(node.get("role")) in _NOT_AGENT
        or link(node.get("source")) in _NOT_AGENT
        or link(node.get("type")) in _OUTPUT_TYPES
    )

"""Codex `codex exec --json`: one thread event per line (``thread.started``, ``item.*``...).

Codex has no skill-loading tool: it reads a skill's ``SKILL.md`` with a shell command, so the
only trigger event is an ``item.completed`` whose ``item.type`` is ``command_execution`` and
whose ``item.command`` (typically ``bash -lc '...'``) reads or runs a pool skill's files. It
counts as loaded when ``item.status`` is ``completed`` and ``item.exit_code`` is 0. An
``item.started`` with no completion (the trial was killed) is an attempt that did not return.
MCP tool calls (``mcp_tool_call`` items) are read like any tool call. Codex lists its skills
in the model's instructions, which the JSON stream does not carry: `listed` stays empty.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from hf_skillfollow.transcripts._base import Detection
from hf_skillfollow.transcripts._common import Collector
from hf_skillfollow.transcripts._reader import as_transcript, field

NAME = "codex"


def detect_codex(transcript: object, pool: Collection[str]) -> Detection:
    """Trigger events of a `codex exec --json` stream."""
    transcript = as_transcript(transcript)
    out = Collector(NAME, pool)
    completed = {
        field(e, "item", "id") for e in transcript.events if field(e, "type") == "item.completed"
    }
    for index, event in enumerate(transcript.events):
        kind = field(event, "type")
        item = field(event, "item")
        if not isinstance(item, Mapping):
            continue
        if kind == "item.started" and item.get("id") not in completed:
            _item(out, item, index, ok=False)
        elif kind == "item.completed":
            ok = item.get("status") == "completed" and item.get("exit_code") in (0, None)
            if item.get("type") == "command_execution":
                ok = ok and item.get("exit_code") == 0
            _item(out, item, index, ok=ok)
    return out.result(transcript)


def _item(out: Collector, item: Mapping, index: int, *, ok: bool) -> None:
    if item.get("type") == "command_execution":
        command = item.get("command")
        out.add_call("shell", {"command": command}, index, command, ok)
    elif item.get("type") == "mcp_tool_call":
        call = {"tool": item.get("tool"), "arguments": item.get("arguments")}
        out.add_call(item.get("tool"), item.get("arguments"), index, call, ok)

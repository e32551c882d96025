"""Codex `codex exec --json`: one thread event per line (``thread.started``, ``item.*``...).

Codex has no skill-loading tool: it reads a skill's ``SKILL.md`` with a shell command, so the
only trigger event is an ``item.completed`` whose ``item.type`` is ``command_execution`` and
whose ``item.command`` (typically ``bash -lc '...'``) reads or runs a pool skill's files. It
counts as loaded when ``item.status`` is ``completed`` and ``item.exit_code`` is 0. An
``item.started`` with no completion (the trial was killed) is an attempt that did not return.
MCP tool calls (``mcp_tool_call`` items) are read like any tool call. Codex lists its skills
in the model's instructions, which the JSON stream does not carry: `listed` stays empty.

Codex's own session log (``~/.codex/sessions/**/*.jsonl``: ``session_meta``,
``response_item``, ``event_msg`` lines, which Harbor converts to ATIF) is read too: a
``response_item`` whose ``payload`` is a ``function_call`` (``name``, JSON-string
``arguments`` such as ``{"command": ["bash", "-lc", "..."]}``) or ``custom_tool_call``,
paired by ``call_id`` with its ``function_call_output``; loaded when that output exists and
its ``metadata.exit_code``, where given, is 0.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from hf_skillfollow.transcripts._base import Detection
from hf_skillfollow.transcripts._common import Collector
from hf_skillfollow.transcripts._reader import as_transcript, field, link, loads_bounded

NAME = "codex"
#: Leading lines looked at to tell a session log from an `exec --json` stream.
SNIFF_LINES = 50
_CALLS = frozenset({"function_call", "custom_tool_call"})
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})


def detect_codex(transcript: object, pool: Collection[str]) -> Detection:
    """Trigger events of a `codex exec --json` stream or a Codex session log."""
    transcript = as_transcript(transcript)
    out = Collector(NAME, pool)
    if any(field(e, "type") == "response_item" for e in transcript.events[:SNIFF_LINES]):
        _session_log(out, transcript.events)
        return out.result(transcript)
    completed = {
        link(field(e, "item", "id"))
        for e in transcript.events
        if field(e, "type") == "item.completed"
    }
    for index, event in enumerate(transcript.events):
        kind = field(event, "type")
        item = field(event, "item")
        if not isinstance(item, Mapping):
            continue
        if kind == "item.started" and link(item.get("id")) not in completed:
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


def _session_log(out: Collector, events: tuple) -> None:
    outputs: dict[object, bool] = {}
    for event in events:
        payload = field(event, "payload")
        if field(event, "type") == "response_item" and link(field(payload, "type")) in _OUTPUTS:
            outputs[link(payload.get("call_id"))] = _exit_ok(payload.get("output"))
    for index, event in enumerate(events):
        payload = field(event, "payload")
        if field(event, "type") != "response_item" or link(field(payload, "type")) not in _CALLS:
            continue
        args = payload.get("arguments", payload.get("input"))
        ok = outputs.get(link(payload.get("call_id")), False)
        out.add_call(
            payload.get("name"), args, index, {"name": payload.get("name"), "arguments": args}, ok
        )


def _exit_ok(output: object) -> bool:
    """A call's output counts as returned unless its metadata gives a nonzero exit code."""
    if isinstance(output, str) and output.lstrip().startswith("{") and len(output) < 1_000_000:
        try:
            output = loads_bounded(output, "function_call_output")
        except ValueError:
            return True
    code = field(output, "metadata", "exit_code")
    return code in (None, 0)

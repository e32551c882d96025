"""Claude Code `--output-format stream-json` (and its session JSONL): one event per line.

Trigger events: an assistant ``tool_use`` block named ``Skill`` (``input.skill``; older
streams ``input.command``), or a
``Read`` (``input.file_path``) / ``Bash`` (``input.command``) of a pool skill's files; each is
paired by ``id`` with the ``tool_result`` block (``tool_use_id``) of a later user event, and
counts as loaded only when that result exists, has no ``is_error: true``, and the event's
``tool_use_result`` (when present) does not say ``"success": false``. The ``system``
``init`` event's ``skills`` list (and the pool names among its ``slash_commands``, which also
hold built-in commands) is what the harness offered (`Detection.listed`), never activation.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from hf_skillfollow.transcripts._base import Detection
from hf_skillfollow.transcripts._common import Collector
from hf_skillfollow.transcripts._reader import as_transcript, field, link

NAME = "claude-code"


def detect_claude_code(transcript: object, pool: Collection[str]) -> Detection:
    """Trigger events of a Claude Code stream-json transcript."""
    transcript = as_transcript(transcript)
    # Claude Code's Bash keeps its working folder from one call to the next.
    out = Collector(NAME, pool, persistent_shell=True)
    failed: dict[str, bool] = {}
    outputs: dict[str, object] = {}  # a call's result content: where its shell was reset
    for event in transcript.events:
        # Claude Code also reports a Skill load's outcome beside the block (real streams:
        # `"tool_use_result": {"success": true, "commandName": "citation-management"}`).
        record = field(event, "tool_use_result") or field(event, "toolUseResult")
        refused = isinstance(record, Mapping) and record.get("success") is False
        for block in _blocks(event, "user"):
            if block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str):
                failed[block["tool_use_id"]] = block.get("is_error") is True or refused
                outputs[block["tool_use_id"]] = block.get("content")
    missing = 0
    for index, event in enumerate(transcript.events):
        if not isinstance(event, Mapping):
            continue
        if event.get("type") == "system" and event.get("subtype") == "init":
            out.list_names(event.get("skills"))
            # Slash commands include built-ins (`compact`, `review`...): pool names only.
            if pool:
                out.list_names(event.get("slash_commands"))
            continue
        for block in _blocks(event, "assistant"):
            if block.get("type") != "tool_use":
                continue
            call_id = block.get("id")
            ok = isinstance(call_id, str) and call_id in failed and not failed[call_id]
            missing += link(call_id) not in failed
            call = {"name": block.get("name"), "input": block.get("input")}
            output = outputs.get(call_id) if isinstance(call_id, str) else None
            out.add_call(block.get("name"), block.get("input"), index, call, ok, output)
    if missing:
        out.notes.append(f"{missing} tool calls have no result (counted as not returned)")
    return out.result(transcript)


def _blocks(event: object, role: str) -> list[Mapping]:
    if field(event, "type") != role:
        return []
    content = field(event, "message", "content")
    if not isinstance(content, list):
        return []
    return [b for b in content[:10_000] if isinstance(b, Mapping)]

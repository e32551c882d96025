"""Which detector reads a transcript, decided from its content (never its file name).

Each format has a field no other one uses on its events: Claude Code's ``type`` of
``assistant``/``user`` with a ``message``, or its ``system``/``init`` event; Codex's
``thread.started`` / ``item.*`` events; Gemini CLI's ``init`` event with ``session_id`` and its
``tool_use`` events with ``tool_name``; OpenCode's events carrying a ``part`` (``run --format
json``) or an export's ``messages`` with ``parts``; OpenHands' events with ``action`` or
``observation`` and ``source``; BenchFlow's ACP ``tool_call`` events with ``tool_call_id`` (or
raw ``sessionUpdate`` objects); ATIF's ``schema_version`` starting ``ATIF`` or a ``steps`` list
(and SkillsBench Terminus's list of ``episode``/``prompt``/``response`` records, also ``atif``).
The first events decide (up to `SNIFF_EVENTS`); anything else is ``generic``.
"""

from __future__ import annotations

from collections.abc import Mapping

from hf_skillfollow.transcripts._atif import is_episode_list
from hf_skillfollow.transcripts._reader import Transcript, as_transcript, field

#: How many leading events are looked at.
SNIFF_EVENTS = 200


def sniff_format(transcript: object) -> str:
    """The registry name of the detector for `transcript` (`generic` when none fits)."""
    transcript = as_transcript(transcript)
    doc = transcript.document
    if isinstance(doc, Mapping):
        found = _document_format(doc)
        if found != "generic" or not transcript.events:
            return found
    if is_episode_list(doc):
        return "atif"
    for event in _leading(transcript):
        found = _event_format(event)
        if found:
            return found
    return "generic"


def _document_format(doc: Mapping) -> str:
    version = doc.get("schema_version")
    if (isinstance(version, str) and version.startswith("ATIF")) or isinstance(
        doc.get("steps"), list
    ):
        return "atif"
    messages = doc.get("messages")
    if isinstance(messages, list) and any(
        isinstance(field(m, "parts"), list) for m in messages[:SNIFF_EVENTS]
    ):
        return "opencode"
    if isinstance(messages, list) and any(
        isinstance(field(m, "toolCalls"), list) or field(m, "type") == "gemini"
        for m in messages[:SNIFF_EVENTS]
    ):
        return "gemini-cli"  # Gemini CLI's own chat recording
    for key in ("events", "history"):
        items = doc.get(key)
        if isinstance(items, list) and any(_is_openhands(e) for e in items[:SNIFF_EVENTS]):
            return "openhands"
    return "generic"


def _leading(transcript: Transcript):
    seen = 0
    for event in transcript.events:
        if isinstance(event, Mapping):
            yield event
            seen += 1
            if seen >= SNIFF_EVENTS:
                return


def _event_format(event: Mapping) -> str | None:
    kind = event.get("type")
    if kind in ("assistant", "user") and isinstance(event.get("message"), Mapping):
        return "claude-code"
    if kind == "system" and event.get("subtype") == "init":
        return "claude-code"
    if isinstance(kind, str) and (kind.startswith(("thread.", "item.", "turn."))):
        return "codex"
    if kind in ("session_meta", "response_item") and isinstance(event.get("payload"), Mapping):
        return "codex"  # Codex's own session log
    if kind == "init" and "session_id" in event:
        return "gemini-cli"
    if kind in ("tool_use", "tool_result") and ("tool_name" in event or "tool_id" in event):
        return "gemini-cli"
    if isinstance(event.get("part"), Mapping) and "sessionID" in event:
        return "opencode"
    if (kind == "tool_call" and "tool_call_id" in event) or event.get("sessionUpdate") in (
        "tool_call",
        "tool_call_update",
    ):
        return "acp"
    if _is_openhands(event):
        return "openhands"
    return None


def _is_openhands(event: object) -> bool:
    if not isinstance(event, Mapping) or "source" not in event:
        return False
    return (
        "action" in event
        or "observation" in event
        or event.get("kind")
        in (
            "ActionEvent",
            "ObservationEvent",
        )
    )

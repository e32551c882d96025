"""OpenCode: `opencode run --format json` events, or an `opencode export` JSON document.

In the event stream each ``tool_use`` line carries a ``part`` of ``type: tool`` with ``tool``,
``callID`` and ``state`` (``status``, ``input``, ``output``); an export holds ``messages``,
each with ``parts`` of the same shape. Trigger events: the ``skill`` tool
(``state.input.name``), or ``read`` (``filePath``) / ``bash`` (``command``) of a pool skill's
files; loaded when ``state.status`` is ``completed`` (``error`` otherwise). The event index
is the line of the stream, or the message's position in an export. OpenCode lists skills in
the ``skill`` tool's description, which neither form records: `listed` stays empty.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping

from hf_skillfollow.transcripts._base import Detection
from hf_skillfollow.transcripts._common import Collector
from hf_skillfollow.transcripts._reader import Transcript, as_transcript, field

NAME = "opencode"


def detect_opencode(transcript: object, pool: Collection[str]) -> Detection:
    """Trigger events of an OpenCode JSON event stream or export."""
    transcript = as_transcript(transcript)
    out = Collector(NAME, pool)
    for index, part in _tool_parts(transcript):
        state = part.get("state")
        state = state if isinstance(state, Mapping) else {}
        ok = state.get("status") == "completed"
        call = {"tool": part.get("tool"), "input": state.get("input")}
        out.add_call(part.get("tool"), state.get("input"), index, call, ok)
    return out.result(transcript)


def _tool_parts(transcript: Transcript) -> Iterator[tuple[int, Mapping]]:
    messages = field(transcript.document, "messages")
    if isinstance(messages, list):
        for index, message in enumerate(messages):
            parts = field(message, "parts")
            for part in parts[:10_000] if isinstance(parts, list) else ():
                if field(part, "type") == "tool":
                    yield index, part
        return
    for index, event in enumerate(transcript.events):
        part = field(event, "part")
        if field(part, "type") == "tool":
            yield index, part

"""Gemini CLI `--output-format stream-json`: ``init``, ``message``, ``tool_use``,
``tool_result``, ``error`` and ``result`` events, one per line.

Trigger events: a ``tool_use`` whose ``tool_name`` is ``activate_skill`` (``parameters.name``),
or a ``read_file`` (``parameters.file_path`` / ``absolute_path``) or ``run_shell_command``
(``parameters.command``) of a pool skill's files. Each is paired by ``tool_id`` with its
``tool_result``; it counts as loaded when that result's ``status`` is ``success`` (an unknown
skill gives ``status: error``, "Skill ... not found"). The stream carries no skill listing.

Gemini CLI's own chat recording (``gemini-cli.trajectory.json`` in Harbor trial folders: a
``messages`` list whose ``gemini`` messages carry ``toolCalls`` with ``name``, ``args``,
``status`` and ``result[].functionResponse.response``) is read too, ``gemini`` messages only;
the event index is the message's position, and a call is loaded when its ``status`` is ``success`` (or, without a
status, its response holds no ``error``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from hf_skillfollow.transcripts._base import Detection
from hf_skillfollow.transcripts._common import Collector
from hf_skillfollow.transcripts._reader import as_transcript, field, link

NAME = "gemini-cli"


def detect_gemini_cli(transcript: object, pool: Collection[str]) -> Detection:
    """Trigger events of a Gemini CLI stream-json transcript."""
    transcript = as_transcript(transcript)
    out = Collector(NAME, pool)
    messages = field(transcript.document, "messages")
    if isinstance(messages, list):
        _recording(out, messages)
        return out.result(transcript)
    status = {
        link(e.get("tool_id")): e.get("status")
        for e in transcript.events
        if isinstance(e, Mapping) and e.get("type") == "tool_result"
    }
    for index, event in enumerate(transcript.events):
        if not isinstance(event, Mapping) or event.get("type") != "tool_use":
            continue
        ok = status.get(link(event.get("tool_id"))) == "success"
        call = {"tool_name": event.get("tool_name"), "parameters": event.get("parameters")}
        out.add_call(event.get("tool_name"), event.get("parameters"), index, call, ok)
    return out.result(transcript)


def _recording(out: Collector, messages: list) -> None:
    for index, message in enumerate(messages[:200_000]):
        # Only the model's (`gemini`) messages carry its calls; toolCalls on a user, info or
        # error message would be text someone else put there.
        if field(message, "type") not in ("gemini", None):
            continue
        calls = field(message, "toolCalls")
        for call in calls[:10_000] if isinstance(calls, list) else ():
            if not isinstance(call, Mapping):
                continue
            status = call.get("status")
            if status is None:
                results = call.get("result")
                first = results[0] if isinstance(results, list) and results else None
                ok = (
                    first is not None
                    and field(first, "functionResponse", "response", "error") is None
                )
            else:
                ok = status == "success"
            shown = {"name": call.get("name"), "args": call.get("args")}
            out.add_call(call.get("name"), call.get("args"), index, shown, ok)

"""Gemini CLI `--output-format stream-json`: ``init``, ``message``, ``tool_use``,
``tool_result``, ``error`` and ``result`` events, one per line.

Trigger events: a ``tool_use`` whose ``tool_name`` is ``activate_skill`` (``parameters.name``),
or a ``read_file`` (``parameters.file_path`` / ``absolute_path``) or ``run_shell_command``
(``parameters.command``) of a pool skill's files. Each is paired by ``tool_id`` with its
``tool_result``; it counts as loaded when that result's ``status`` is ``success`` (an unknown
skill gives ``status: error``, "Skill ... not found"). The stream carries no skill listing.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from hf_skillfollow.transcripts._base import Detection
from hf_skillfollow.transcripts._common import Collector
from hf_skillfollow.transcripts._reader import as_transcript

NAME = "gemini-cli"


def detect_gemini_cli(transcript: object, pool: Collection[str]) -> Detection:
    """Trigger events of a Gemini CLI stream-json transcript."""
    transcript = as_transcript(transcript)
    out = Collector(NAME, pool)
    status = {
        e.get("tool_id"): e.get("status")
        for e in transcript.events
        if isinstance(e, Mapping) and e.get("type") == "tool_result"
    }
    for index, event in enumerate(transcript.events):
        if not isinstance(event, Mapping) or event.get("type") != "tool_use":
            continue
        ok = status.get(event.get("tool_id")) == "success"
        call = {"tool_name": event.get("tool_name"), "parameters": event.get("parameters")}
        out.add_call(event.get("tool_name"), event.get("parameters"), index, call, ok)
    return out.result(transcript)

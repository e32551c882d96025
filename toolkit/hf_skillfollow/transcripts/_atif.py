"""Harbor's ATIF ``trajectory.json``: ``steps``, each with ``tool_calls`` and ``observation``.

Harbor converts every agent it runs to ATIF (Claude Code, Codex, Gemini CLI, OpenCode,
OpenHands...), and Terminus-2 writes it natively, representing each parsed terminal command
as a ``bash_command`` tool call whose ``arguments.keystrokes`` is what was typed. Trigger
events: a Skill-loading tool call (``Skill``, ``activate_skill``, ``skill``...), a file read of a
pool skill's files, or a shell command / keystrokes reading or running them. The event index
is the 0-based position in ``steps``.

A call counts as loaded when its step has an observation result and nothing marks it failed:
Harbor's ``extra.tool_result_is_error`` (Claude Code), ``extra.is_error``, an ``extra.status``
of ``error``/``failed``, or, for a Skill-loading tool, a result starting ``Error`` or saying
``Unknown skill``. A terminal's output does not say whether a command failed, so Terminus
keystrokes with an observation count as loaded. Listing: an ``<available_skills>`` block (how
Terminus-2 offers skills in the first user step) names the offered skills.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

from hf_skillfollow.transcripts._base import Detection
from hf_skillfollow.transcripts._common import SKILL_TOOLS, Collector, not_found
from hf_skillfollow.transcripts._reader import as_transcript, field

NAME = "atif"

_AVAILABLE = re.compile(r"<available_skills>(.{0,200000}?)</available_skills>", re.DOTALL)
_SKILL_NAME = re.compile(r"<name>([^<]{1,200})</name>")
_FAILED_STATUS = frozenset({"error", "failed", "declined"})


def detect_atif(transcript: object, pool: Collection[str]) -> Detection:
    """Trigger events of an ATIF trajectory (Harbor's trajectory.json)."""
    transcript = as_transcript(transcript)
    steps = field(transcript.document, "steps")
    if not isinstance(steps, list):
        return not_found(NAME, f"{transcript.source}: no `steps` list (not ATIF)")
    out = Collector(NAME, pool)
    for index, step in enumerate(steps[:200_000]):
        if not isinstance(step, Mapping):
            continue
        message = step.get("message")
        if step.get("source") in ("user", "system") and isinstance(message, str):
            for block in _AVAILABLE.findall(message[:2_000_000]):
                out.list_names([n.strip() for n in _SKILL_NAME.findall(block)])
        calls = step.get("tool_calls")
        if not isinstance(calls, list):
            continue
        results = _results(step)
        for call in calls[:10_000]:
            if not isinstance(call, Mapping):
                continue
            name = call.get("function_name")
            ok = _succeeded(name, call.get("tool_call_id"), results)
            shown = {"function_name": name, "arguments": call.get("arguments")}
            out.add_call(name, call.get("arguments"), index, shown, ok)
    return out.result(transcript)


def _results(step: Mapping) -> dict[object, Mapping]:
    found: dict[object, Mapping] = {}
    results = field(step, "observation", "results")
    if isinstance(results, list):
        for result in results[:10_000]:
            if isinstance(result, Mapping):
                found.setdefault(result.get("source_call_id"), result)
    return found


def _succeeded(name: object, call_id: object, results: dict[object, Mapping]) -> bool:
    # Terminus links a batch's shared terminal output to no single call (source_call_id null).
    result = results.get(call_id) or results.get(None)
    if result is None:
        return False
    extra = result.get("extra")
    if isinstance(extra, Mapping) and (
        extra.get("tool_result_is_error") is True
        or extra.get("is_error") is True
        or str(extra.get("status", "")).lower() in _FAILED_STATUS
    ):
        return False
    if isinstance(name, str) and name.lower() in SKILL_TOOLS:
        content = result.get("content")
        text = content[:2000] if isinstance(content, str) else ""
        return not (text.lstrip().startswith("Error") or "Unknown skill" in text)
    return True

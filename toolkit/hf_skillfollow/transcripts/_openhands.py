"""OpenHands event logs: the V1 SDK's ``ActionEvent`` / ``ObservationEvent`` objects and the
V0 ``action`` / ``observation`` events (a JSON list, a JSONL stream, or ``events``/``history``).

Trigger events: an ``ActionEvent`` whose ``tool_name`` is ``invoke_skill`` (the SDK's
``InvokeSkillAction`` carries the skill in ``action.name``), or a terminal command
(``command``), file view (``path``) or read reading or running a pool skill's files. An
action fails when an event linked to it by ``tool_call_id`` (V0: ``cause``) is an error: an
``ObservationEvent`` whose ``observation.is_error`` is true (an unknown skill gives
"Unknown skill '<name>'"), an ``AgentErrorEvent``, a ``UserRejectObservation``, a V0
``error`` observation or nonzero ``exit_code``. Skills OpenHands injects into the prompt by
keyword trigger leave no action: they are not detectable here.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from hf_skillfollow.transcripts._base import Detection
from hf_skillfollow.transcripts._common import Collector
from hf_skillfollow.transcripts._reader import Transcript, as_transcript, field, link

NAME = "openhands"


def detect_openhands(transcript: object, pool: Collection[str]) -> Detection:
    """Trigger events of an OpenHands event log."""
    transcript = as_transcript(transcript)
    out = Collector(NAME, pool, persistent_shell=True)  # one terminal for the whole trial
    events = _events(transcript)
    failed = {key for event in events if (key := _failed_link(event)) is not None}
    for index, event in enumerate(events):
        if not isinstance(event, Mapping) or event.get("source") not in ("agent", None):
            continue
        name, args = _call(event)
        if name is None:
            continue
        ok = link(event.get("tool_call_id") or event.get("id")) not in failed
        out.add_call(name, args, index, {"tool": name, "arguments": args}, ok)
    return out.result(transcript)


def _events(transcript: Transcript) -> list:
    if transcript.events:
        return list(transcript.events)
    for key in ("events", "history"):
        items = field(transcript.document, key)
        if isinstance(items, list):
            return items
    return []


def _call(event: Mapping) -> tuple[str | None, object]:
    kind = event.get("kind")
    if kind == "ActionEvent" or (kind is None and isinstance(event.get("action"), Mapping)):
        action = event.get("action")
        return event.get("tool_name"), action if isinstance(action, Mapping) else {}
    action = event.get("action")
    if isinstance(action, str) and isinstance(event.get("args"), Mapping):
        # V0: `run` (command), `read` (path), `invoke_skill`...; `read` maps to a file read.
        return action, event["args"]
    return None, None


def _failed_link(event: object) -> object:
    if not isinstance(event, Mapping):
        return None
    observation = event.get("observation")
    extras = event.get("extras")
    error = (
        event.get("is_error") is True
        or field(observation, "is_error") is True
        or observation == "error"
        or event.get("kind") in ("AgentErrorEvent", "UserRejectObservation")
        or (isinstance(extras, Mapping) and extras.get("exit_code") not in (None, 0))
    )
    if not error:
        return None
    return link(event.get("tool_call_id") or event.get("cause"))

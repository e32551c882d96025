"""BenchFlow's ACP trajectory (``trajectory/acp_trajectory.jsonl``): the Agent Client
Protocol tool calls BenchFlow recorded, one event per line.

Each ``{"type": "tool_call", "tool_call_id", "kind", "title", "status", "content"}`` is one
call (also raw ACP ``session/update`` objects with ``sessionUpdate: tool_call`` and their
``tool_call_update``s, merged by ``toolCallId``). Trigger events, following BenchFlow's own
classifier (``benchflow.trajectories.metrics.is_skill_invocation_event``): a call whose
``kind`` or tool name is ``skill``/``invoke_skill``/``activate_skill``, or an unclassified
call whose result opens with OpenHands' ``Tool: invoke_skill`` header and a
``[skill: <name>]`` marker (whatever its title: OpenHands titles a call with the model's own
summary) or, untitled or titled as a skill tool, with OpenCode's
``<skill_content name="<name>">`` envelope; the skill
is named by ``rawInput`` (``name``/``skill``), those markers, or the title. Other calls count
when ``rawInput``, ``locations[].path`` or, for ``read``/``execute`` calls, the title names a
pool skill's files, or when a ``read``'s result opens with OpenCode's ``<path>…</path>`` of a
file (not a directory) of a pool skill: real OpenCode records carry no ``rawInput`` and title
the call just ``read``. Loaded when the final ``status`` is ``completed``. A round's
``skill_context_preloaded`` (BenchFlow's inject mode) is noted, not counted: nothing the
agent did loaded those skills.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping

from hf_skillfollow.transcripts._base import Detection
from hf_skillfollow.transcripts._common import SKILL_TOOLS, Collector, tool_refs
from hf_skillfollow.transcripts._reader import as_transcript, field, link
from hf_skillfollow.transcripts._skillpaths import SkillRef, command_refs, in_pool, path_ref

NAME = "acp"

_HEADER = re.compile(r"\s{0,20}Tool:\s{0,20}(?:invoke_skill|activate_skill)\b", re.IGNORECASE)
_MARKER = re.compile(r"\[skill:\s{0,20}([^\]\s]{1,200})\]")
_ENVELOPE = re.compile(r"\s{0,20}<skill_content\s{1,20}name\s{0,20}=\s{0,20}\"([^\"]{1,200})\"")
# OpenCode's `read` result opens with the file it read; BenchFlow keeps no `rawInput`, so this is
# the only place the path is recorded. A directory read is a listing, not a file read.
_READ_RESULT = re.compile(
    r"\s{0,20}<path>([^<\n]{1,4096})</path>\s{0,20}(?:<type>([a-z]{1,20})</type>)?"
)
_SNIFFABLE = frozenset({"", "other", "tool"})
_LISTING_KINDS = frozenset({"search", "edit", "delete", "move", "think", "switch_mode", "fetch"})


def detect_acp(transcript: object, pool: Collection[str]) -> Detection:
    """Trigger events of a BenchFlow ACP trajectory."""
    transcript = as_transcript(transcript)
    out = Collector(NAME, pool)
    for index, call in _calls(transcript.events):
        ok = call.get("status") == "completed"
        kind = _norm(call.get("kind"))
        title = call.get("title") if isinstance(call.get("title"), str) else ""
        raw = call.get("rawInput") if isinstance(call.get("rawInput"), Mapping) else {}
        shown = {"kind": kind, "title": title[:300], "rawInput": raw or None}
        asked = _skill_asked(kind, title, raw, call.get("content"))
        if asked == "":
            if len(out.notes) < 20:
                out.notes.append(f"event {index}: a skill call that names no skill")
            continue
        if asked is not None:
            skill = in_pool(asked, pool)
            if skill or not ok:
                out.add(skill or asked[:200], "instructions", index, shown, ok)
            continue
        if kind in _LISTING_KINDS:
            continue
        refs: dict[SkillRef, None] = {}  # an ordered set: a call can name thousands of files
        locations = call.get("locations")
        for location in locations[:1000] if isinstance(locations, list) else ():
            ref = path_ref(field(location, "path"), pool)
            if ref:
                refs[ref] = None
        name = raw.get("tool") or raw.get("name") or ("shell" if kind == "execute" else kind)
        refs.update(dict.fromkeys(tool_refs(name, raw, pool)[0]))
        if kind in ("read", "execute"):
            refs.update(dict.fromkeys(command_refs(title, pool)))
        if kind == "read":
            ref = _read_result_ref(call.get("content"), pool)
            if ref:
                refs[ref] = None
        out.add_refs(list(refs), index, shown, ok)
    preloaded = [e for e in transcript.events if field(e, "skill_context_preloaded") is True]
    if preloaded:
        count = field(preloaded[0], "preloaded_skill_count")
        out.notes.append(f"skills preloaded into the context by the harness ({count}), not counted")
    return out.result(transcript)


def _calls(events: tuple) -> Iterator[tuple[int, dict]]:
    """Each tool call once, at its first event, with its last status and all its content."""
    merged: dict[object, dict] = {}
    order: list[tuple[int, object]] = []
    for index, event in enumerate(events):
        if not isinstance(event, Mapping):
            continue
        kind = event.get("type") or event.get("sessionUpdate")
        if kind not in ("tool_call", "tool_call_update"):
            continue
        key = link(event.get("tool_call_id") or event.get("toolCallId") or f"#{index}")
        if key not in merged:
            merged[key] = {"content": []}
            order.append((index, key))
        call = merged[key]
        for name, value in event.items():
            if name == "content" and isinstance(value, list):
                call["content"].extend(value[: max(0, 1000 - len(call["content"]))])
            elif value not in (None, "") and name != "content":
                call[name] = value
    for index, key in order:
        yield index, merged[key]


def _skill_asked(kind: str, title: str, raw: Mapping, content: object) -> str | None:
    """The skill a skill-invocation call asked for ("" when it names none), else None."""
    tool = _norm(raw.get("tool") or raw.get("tool_name"))
    named = next(
        (raw[k] for k in ("name", "skill", "skill_name") if isinstance(raw.get(k), str)), None
    )
    texts = list(_texts(content))
    marker = next((m.group(1) for t in texts for m in [_MARKER.search(t[:5000])] if m), None)
    envelope = next((m.group(1) for t in texts for m in [_ENVELOPE.match(t)] if m), None)
    identity = (
        kind in SKILL_TOOLS
        or tool in SKILL_TOOLS
        or _norm(title) in {"invoke_skill", "activate_skill"}
    )
    # OpenCode's envelope is sniffed only for a call titled as a skill tool or not titled at
    # all: any other unclassified tool (an MCP file reader, a sub-agent) can return a file's
    # text that opens with `<skill_content name="pdf">` without loading anything. OpenHands'
    # header is sniffed whatever the title: OpenHands titles a call with the model's own
    # summary ("Load PDF skill for processing", BenchFlow's issue #507 tests), so the title
    # cannot tell its invoke_skill apart.
    untitled = not title.strip() or _norm(title.replace(":", " ").split()[0]) in SKILL_TOOLS
    sniffed = kind in _SNIFFABLE and (
        _norm(title) in SKILL_TOOLS
        or (untitled and envelope is not None)
        or any(_HEADER.match(t) and marker for t in texts)
    )
    if not (identity or sniffed):
        return None
    words = title.replace(":", " ").split()
    return named or marker or envelope or (words[-1] if len(words) > 1 else "")


def _read_result_ref(content: object, pool: Collection[str]) -> SkillRef | None:
    """The skill file an OpenCode `read` names in its result (`<path>…</path>`, then
    `<type>file</type>`), or None (a directory, no such header)."""
    first = next(_texts(content), "")
    found = _READ_RESULT.match(first[:5000])
    if not found or found.group(2) not in (None, "file"):
        return None
    return path_ref(found.group(1).strip(), pool)


def _texts(content: object) -> Iterator[str]:
    for block in content[:1000] if isinstance(content, list) else ():
        body = field(block, "content")
        if (
            isinstance(body, Mapping)
            and body.get("type") == "text"
            and isinstance(body.get("text"), str)
        ):
            yield body["text"]
        elif field(block, "type") == "text" and isinstance(field(block, "text"), str):
            yield block["text"]


def _norm(value: object) -> str:
    return value.strip().lower().replace("-", "_") if isinstance(value, str) else ""

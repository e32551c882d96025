"""Harbor's ATIF ``trajectory.json``: ``steps``, each with ``tool_calls`` and ``observation``.

Harbor converts every agent it runs to ATIF (Claude Code, Codex, Gemini CLI, OpenCode,
OpenHands...), and Terminus-2 writes it natively, representing each parsed terminal command
as a ``bash_command`` tool call whose ``arguments.keystrokes`` is what was typed. Trigger
events: a Skill-loading tool call (``Skill``, ``activate_skill``, ``skill``...), a file read of a
pool skill's files, or a shell command / keystrokes reading or running them, in an agent step
(calls on a user or system step are someone else's text). The event index is the 0-based
position in ``steps``. Terminus, Claude Code and OpenHands keep one shell for the trial, so
for them a ``cd`` holds from one call to the next.

A call counts as loaded when its step has an observation result and nothing marks it failed:
Harbor's ``extra.tool_result_is_error`` (Claude Code), ``extra.is_error``, an ``extra.status``
of ``error``/``failed``, or, for a Skill-loading tool, a result starting ``Error`` or saying
``Unknown skill``. A terminal's output does not say whether a command failed, so Terminus
keystrokes with an observation count as loaded. Listing: an ``<available_skills>`` block (how
Terminus-2 offers skills in the first user step) names the offered skills.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping

from hf_skillfollow.transcripts._base import Detection
from hf_skillfollow.transcripts._common import SKILL_TOOLS, Collector, not_found
from hf_skillfollow.transcripts._reader import as_transcript, field, link
from hf_skillfollow.transcripts._skillpaths import in_pool, scan_command

NAME = "atif"

_SKILL_NAME = re.compile(r"<name>([^<]{1,200})</name>")
# SkillsBench's skill-loading Terminus lists the offer as JSON after `available_skills:`; a
# name inside a description would be escaped (\"name\"), so it cannot match here.
_JSON_LISTING = re.compile(r"available_skills:\s{0,20}\[")
_JSON_NAME = re.compile(r'"name"\s{0,20}:\s{0,20}"([^"\\]{1,200})"')
_FAILED_STATUS = frozenset({"error", "failed", "declined"})
# In a Terminus episode's raw reply: the JSON string of a command's keystrokes, and a skill
# load request. Both patterns are linear (disjoint alternatives, bounded classes).
_KEYSTROKES = re.compile(r'"keystrokes"\s{0,20}:\s{0,20}"((?:[^"\\]|\\.){0,100000})"')
_LOAD_SKILL = re.compile(r'"load_skill"\s{0,20}:\s{0,20}"([^"\\]{1,200})"')


def detect_atif(transcript: object, pool: Collection[str]) -> Detection:
    """Trigger events of an ATIF trajectory (Harbor's trajectory.json), or of the episode
    list SkillsBench's skill-loading Terminus wrote under the same file name."""
    transcript = as_transcript(transcript)
    if is_episode_list(transcript.document):
        return _detect_episodes(transcript, pool)
    steps = field(transcript.document, "steps")
    if not isinstance(steps, list):
        return not_found(NAME, f"{transcript.source}: no `steps` list (not ATIF)")
    # Terminus types into one tmux session, Claude Code's Bash keeps its folder; Codex, Gemini
    # CLI and OpenCode start each command afresh.
    agent = field(transcript.document, "agent", "name")
    persistent = isinstance(agent, str) and any(
        name in agent.lower() for name in ("terminus", "claude", "openhands")
    )
    out = Collector(NAME, pool, persistent_shell=persistent)
    for index, step in enumerate(steps[:200_000]):
        if not isinstance(step, Mapping):
            continue
        message = step.get("message")
        if step.get("source") in ("user", "system") and isinstance(message, str):
            _list_offered(out, message)
        calls = step.get("tool_calls")
        # Only the agent calls tools (ATIF: `tool_calls` is for agent steps); a call written in
        # a user or system step is text someone else put there, not something the agent ran.
        if not isinstance(calls, list) or step.get("source") not in ("agent", None):
            continue
        results = _results(step)
        for call in calls[:10_000]:
            if not isinstance(call, Mapping):
                continue
            name = call.get("function_name")
            ok = _succeeded(name, call.get("tool_call_id"), results)
            shown = {"function_name": name, "arguments": call.get("arguments")}
            output = (results.get(link(call.get("tool_call_id"))) or {}).get("content")
            out.add_call(name, call.get("arguments"), index, shown, ok, output)
    return out.result(transcript)


def _results(step: Mapping) -> dict[object, Mapping]:
    found: dict[object, Mapping] = {}
    results = field(step, "observation", "results")
    if isinstance(results, list):
        for result in results[:10_000]:
            if isinstance(result, Mapping):
                found.setdefault(link(result.get("source_call_id")), result)
    return found


def _succeeded(name: object, call_id: object, results: dict[object, Mapping]) -> bool:
    # Terminus links a batch's shared terminal output to no single call (source_call_id null).
    result = results.get(link(call_id)) or results.get(None)
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


def is_episode_list(document: object) -> bool:
    """A list of ``{"episode", "prompt", "response"}`` records (SkillsBench's Terminus)."""
    return (
        isinstance(document, list)
        and bool(document)
        and isinstance(document[0], Mapping)
        and {"episode", "prompt", "response"} <= document[0].keys()
    )


def _detect_episodes(transcript, pool: Collection[str]) -> Detection:
    """Each episode holds the prompt sent and the model's raw reply; a reply asks for a skill
    with ``{"load_skill": "<name>"}`` and types commands as ``"keystrokes"`` strings. The next
    episode's prompt starts ``Skill not found: <name>`` when the load failed."""
    episodes = transcript.document
    out = Collector(NAME, pool)
    cwd = ""  # one tmux session: a `cd` holds for the later keystrokes
    for index, episode in enumerate(episodes[:200_000]):
        prompt = field(episode, "prompt")
        if index == 0 and isinstance(prompt, str):
            _list_offered(out, prompt)
        reply = field(episode, "response")
        if not isinstance(reply, str):
            continue
        reply = reply[:2_000_000]
        following = field(episodes[index + 1], "prompt") if index + 1 < len(episodes) else None
        following = following[:10_000] if isinstance(following, str) else ""
        for match in _LOAD_SKILL.finditer(reply):
            asked = match.group(1)
            failed = f"Skill not found: {asked}" in following
            skill = in_pool(asked, pool)
            if skill or failed:
                out.add(skill or asked, "instructions", index, match.group(0), not failed)
        for match in _KEYSTROKES.finditer(reply):
            try:
                keystrokes = json.loads(f'"{match.group(1)}"')
            except ValueError:
                continue
            refs, cwd = scan_command(keystrokes, pool, cwd)
            out.add_refs(refs, index, keystrokes, True)
    return out.result(transcript)


def _list_offered(out: Collector, text: str) -> None:
    """The names in `<available_skills>` blocks (Terminus-2's offer), found with `str.find`
    so an unclosed block in a hostile message costs one scan, not one per opening tag; and
    those of an `available_skills:` JSON list (SkillsBench's skill-loading Terminus)."""
    listing = _JSON_LISTING.search(text, 0, 2_000_000)
    if listing is not None:
        end = text.find("\n]", listing.end(), listing.end() + 1_000_000)
        block = text[listing.end() : end if end >= 0 else listing.end() + 1_000_000]
        out.list_names([m.group(1).strip() for m in _JSON_NAME.finditer(block)][:10_000])
    start, blocks = 0, 0
    while blocks < 100:
        begin = text.find("<available_skills>", start, 2_000_000)
        end = text.find("</available_skills>", begin, begin + 1_000_000) if begin >= 0 else -1
        if begin < 0 or end < 0:
            return
        block = text[begin:end]
        out.list_names([n.strip() for n in _SKILL_NAME.findall(block)][:10_000])
        start, blocks = end, blocks + 1

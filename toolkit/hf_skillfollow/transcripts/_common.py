"""What every detector shares: reading one tool call, bounding evidence, the kind rule.

A tool call is a (name, arguments) pair whatever the harness: a Skill-loading tool names the
skill in an argument; a file-reading tool names a path; a shell tool names a command. Tools
that only list or search by name (Glob, Grep, ``list_directory``) and tools that write
(Write, Edit) never count, whatever path they name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from hf_skillfollow.transcripts._base import ActivationEvent, Detection, TriggerKind
from hf_skillfollow.transcripts._reader import Transcript, loads_bounded
from hf_skillfollow.transcripts._skillpaths import (
    SkillRef,
    command_refs,
    in_pool,
    path_ref,
    scan_command,
)

#: Longest evidence string kept (the exact tool call or command, cut here).
MAX_EVIDENCE_CHARS = 500
#: Most trigger events kept per trial; the rest are counted in a note (the first event of each
#: skill, kind and outcome is kept whatever the count).
MAX_EVENTS_KEPT = 1_000

# Lower-cased tool names, across harnesses.
SKILL_TOOLS = frozenset({"skill", "activate_skill", "invoke_skill", "load_skill", "use_skill"})
# Claude Code's Skill tool took `command` before `skill` (2.0-era streams: {"command": "pdf"}).
_SKILL_ARGS = ("skill", "name", "skill_name", "command")
_LISTING_TOOLS = frozenset(
    {
        "glob",
        "grep",
        "ls",
        "list",
        "list_directory",
        "search_file_content",
        "grep_search",
        "find",
        "codebase_search",
        "list_dir",
        "toolsearch",
    }
)
_WRITING_TOOLS = frozenset(
    {
        "write",
        "edit",
        "multiedit",
        "notebookedit",
        "write_file",
        "replace",
        "apply_patch",
        "patch",
        "todowrite",
        "create_file",
    }
)
# File editors whose `command` argument is a sub-command, not shell: only `view` reads.
_EDITOR_TOOLS = frozenset({"str_replace_editor", "file_editor", "edit_file"})
_PATH_ARGS = ("file_path", "filePath", "absolute_path", "path", "filename", "file")
_COMMAND_ARGS = ("command", "cmd", "keystrokes", "commands", "script")
# The folder a shell tool runs its command in, where the call names one: Codex's `shell` and
# `exec_command` (`workdir`), Gemini CLI's `run_shell_command` (`directory`, later
# `dir_path`), OpenCode's `bash` (`workdir`). `cat SKILL.md` run in a skill's folder reads
# that skill's SKILL.md.
_CWD_ARGS = ("workdir", "cwd", "directory", "dir_path", "working_directory")


def tool_refs(
    name: object, args: object, pool: Collection[str], cwd: str = ""
) -> tuple[list[SkillRef], str | None]:
    """The skill refs of one tool call, and the skill name a Skill-loading tool asked for
    (in the pool or not: a load of an unknown skill is still an attempt). `cwd` is where a
    persistent shell was left by earlier calls; the call's own `workdir` overrides it."""
    tool = name.lower() if isinstance(name, str) else ""
    if isinstance(args, str):
        args = _json_args(args)
    if not isinstance(args, Mapping) or tool in _LISTING_TOOLS or tool in _WRITING_TOOLS:
        return [], None
    if tool in SKILL_TOOLS:
        asked = next((args[k] for k in _SKILL_ARGS if isinstance(args.get(k), str)), None)
        skill = in_pool(asked, pool)
        return ([(skill, "instructions")] if skill else []), asked
    if tool in _EDITOR_TOOLS:
        ref = path_ref(args.get("path"), pool) if args.get("command") == "view" else None
        return ([ref] if ref else []), None
    refs: dict[SkillRef, None] = {}  # an ordered set (see command_refs)
    for key in _PATH_ARGS:
        ref = path_ref(args.get(key), pool)
        if ref:
            refs[ref] = None
    cwd = next((args[k] for k in _CWD_ARGS if isinstance(args.get(k), str)), cwd)
    for key in _COMMAND_ARGS:
        refs.update(dict.fromkeys(command_refs(args.get(key), pool, cwd)))
    return list(refs), None


# `cd` standing as a word (`cd x`, `(cd x`, `$(cd x`, `/bin/cd x`): a command without it cannot
# move the shell, so it is not scanned a second time (that scan doubled detect's time).
_CD_WORD = re.compile(r"(?<![\w.-])cd(?![\w.-])")


def _may_cd(command: object) -> bool:
    if isinstance(command, list | tuple):
        command = " ".join(c for c in command[:1000] if isinstance(c, str))
    return isinstance(command, str) and _CD_WORD.search(command) is not None


def cwd_after(name: object, args: object, cwd: str) -> str:
    """Where a persistent shell is left after this call: its command's last `cd`."""
    if isinstance(args, str):
        args = _json_args(args)
    if not isinstance(args, Mapping) or not isinstance(name, str):
        return cwd
    if name.lower() in _LISTING_TOOLS | _WRITING_TOOLS | SKILL_TOOLS | _EDITOR_TOOLS:
        return cwd
    for key in _COMMAND_ARGS:
        if _may_cd(args.get(key)):
            cwd = scan_command(args.get(key), (), cwd, find_refs=False)[1]
    return cwd


# Claude Code's Bash does not keep a folder outside the project (real streams: `cd /tmp && ...`
# then `Shell cwd was reset to /app` closing that call's output): where it says so, that folder
# is where the next call runs, not the `cd`'s.
_CWD_RESET = re.compile(r"Shell cwd was reset to ([^\r\n]+)")
#: How much of a result's end is searched for that line.
_RESET_TAIL_CHARS = 8_192


def cwd_reset(output: object) -> str | None:
    """The folder a tool result says the shell was put back in (``Shell cwd was reset to X``
    at its end), or None. `output` is a result's text or its list of content blocks."""
    if isinstance(output, list):
        texts = [b.get("text") for b in output[-10:] if isinstance(b, Mapping)]
        output = "\n".join(t for t in texts if isinstance(t, str))
    if not isinstance(output, str):
        return None
    found = _CWD_RESET.findall(output[-_RESET_TAIL_CHARS:])
    return found[-1].strip() if found and found[-1].strip() else None


def _json_args(text: str) -> object:
    """Tool arguments sent as a JSON string (OpenAI style), parsed bounded or ignored."""
    if len(text) > 1_000_000:
        return None
    try:
        return loads_bounded(text, "arguments")
    except ValueError:
        return None


def evidence(value: object) -> str:
    """The exact call or command as one bounded string (JSON for structured arguments)."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)[: MAX_EVIDENCE_CHARS * 4]
        except (TypeError, ValueError, RecursionError):
            text = repr(value)[: MAX_EVIDENCE_CHARS * 4]
    if len(text) > MAX_EVIDENCE_CHARS:
        return text[: MAX_EVIDENCE_CHARS - 1] + "…"
    return text


@dataclass
class Collector:
    """Gathers trigger events in transcript order and applies the kind rule at the end."""

    detector: str
    pool: Collection[str]
    events: list[ActivationEvent] = field(default_factory=list)
    listed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    persistent_shell: bool = False
    """The harness keeps one shell for the whole trial (Claude Code's Bash, Terminus, OpenHands):
    a `cd` in one call holds for the next ones."""
    shell_cwd: str = ""
    _dropped: int = 0
    _seen: set[tuple[str, str, bool]] = field(default_factory=set)

    def add(self, skill: str, kind: TriggerKind, index: int, call: object, ok: bool) -> None:
        # Past the cap, an event is still kept when it is the first of its skill, kind and
        # outcome, so the decision (activated, kinds) never depends on where the cap fell.
        first = (skill, kind, ok) not in self._seen
        if len(self.events) >= MAX_EVENTS_KEPT and not (first and len(self._seen) < 10_000):
            self._dropped += 1
            return
        self._seen.add((skill, kind, ok))
        self.events.append(ActivationEvent(skill, kind, index, evidence(call), ok))

    def add_refs(self, refs: list[SkillRef], index: int, call: object, ok: bool) -> None:
        # One command can name thousands of skill files: its evidence is made once, not per ref.
        shown = evidence(call) if refs else ""
        for skill, kind in refs:
            self.add(skill, kind, index, shown, ok)

    def add_call(
        self, name: object, args: object, index: int, call: object, ok: bool, output: object = None
    ) -> None:
        """One tool call: its skill refs, or a failed Skill-tool load of an unknown name.
        `output` is its result where the detector has it (a shell reset there wins)."""
        refs, asked = tool_refs(name, args, self.pool, self.shell_cwd)
        if self.persistent_shell and ok:
            self.shell_cwd = cwd_after(name, args, self.shell_cwd)
        if self.persistent_shell and (reset := cwd_reset(output)) is not None:
            self.shell_cwd = reset if len(reset) <= 4_096 else ""
        if refs:
            self.add_refs(refs, index, call, ok)
        elif asked is not None and not ok:
            self.add(asked[:200], "instructions", index, call, False)

    def list_names(self, names: object) -> None:
        """Skills the harness listed to the agent (start-up catalogue): not activation."""
        if not isinstance(names, list | tuple):
            return
        for name in names[:10_000]:
            skill = in_pool(name, self.pool)
            if skill and skill not in self.listed:
                self.listed.append(skill)

    def result(self, transcript: Transcript) -> Detection:
        notes = [*transcript.notes, *self.notes]
        if self._dropped:
            notes.append(f"{self._dropped} more trigger events not kept")
        return Detection(
            detector=self.detector,
            transcript_found=True,
            events=apply_kind_rule(self.events),
            listed=tuple(self.listed),
            notes=tuple(notes[:25]),
        )


def apply_kind_rule(events: list[ActivationEvent]) -> tuple[ActivationEvent, ...]:
    """Drop the resource events of a skill whose SKILL.md was loaded in the trial.

    `resource` means only a resource was used, with no successful load of the skill's
    instructions anywhere in the trial (before or after)."""
    loaded = {e.skill for e in events if e.kind == "instructions" and e.succeeded}
    return tuple(e for e in events if e.kind == "instructions" or e.skill not in loaded)


def not_found(detector: str, note: str) -> Detection:
    """The trial has no usable transcript: activation is unknown."""
    return Detection(detector=detector, transcript_found=False, notes=(note,))

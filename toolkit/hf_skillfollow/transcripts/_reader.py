"""Bounded reading of one transcript file: a JSONL stream or one JSON document.

A transcript is third-party data (an agent wrote it inside a container we do not control), so
reading it is bounded before anything is parsed: the file must be a regular file (a FIFO or
``/dev/zero`` would block or never end), a symlink may not lead out of the allowed root, the
size is capped, every JSON value's nesting depth is counted on the raw text before
``json.loads`` sees it (the parser recurses once per level), and the number of events is
capped. Each refusal is one `TranscriptError` whose message names the file and the line or
field. A JSONL line that does not parse is skipped with a bounded note: real streams end with
a half-written line when the agent was killed.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

from hf_skillfollow._escape import visible_controls
from hf_skillfollow._text import loads_untrusted

#: Largest transcript read, in bytes (real Claude Code streams of long trials reach tens of MB).
MAX_BYTES = 64 * 1024 * 1024
#: Most events (JSONL lines, or items of a top-level JSON array) kept from one transcript.
MAX_EVENTS = 200_000
#: Deepest nesting of arrays and objects accepted in one JSON value.
MAX_DEPTH = 64
#: Most JSON values (objects, arrays, and the items between commas) in one transcript,
#: counted on the raw text before anything is parsed: a parsed value costs 30 to 100 bytes, so
#: 64 MiB of `{},{},...` would otherwise become 22 million objects (1.9 GB) before a count
#: refused it.
MAX_VALUES = 8_000_000
#: Longest single JSONL line, in characters.
MAX_LINE_CHARS = 16 * 1024 * 1024
#: Most notes kept per transcript; the rest are counted in the last one.
MAX_NOTES = 20

# A JSON string literal (escapes included), possessive so nothing is scanned twice; an
# unterminated one runs to the end of the text (else each later quote would rescan the rest:
# quadratic on `"\"\"\"...`). The parser reads brackets past it as string text too.
_JSON_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BOM = b"\xef\xbb\xbf"


class TranscriptError(ValueError):
    """A transcript that cannot be read safely; the message names the file and the place."""


@dataclass(frozen=True)
class Transcript:
    """One parsed transcript, ready for a detector.

    A JSONL stream is `events` (index = 0-based line number; `None` for a blank or skipped
    line, so an event index always points at the line it came from) and no `document`. A JSON
    document is `document`, with `events` holding its items when it is a top-level array.
    """

    source: str
    """Where it came from, for messages (a file path or a caller's label)."""
    events: tuple[Any, ...] = ()
    document: Any = None
    notes: tuple[str, ...] = ()


def as_transcript(value: object, source: str = "<data>") -> Transcript:
    """`value` itself if a `Transcript`, else one built from already-parsed JSON data.

    For callers that hold the data (the Harbor runner's ATIF trajectory, a result.json dict):
    a list becomes the events, anything else the document. The caller bounded its reading.
    """
    if isinstance(value, Transcript):
        return value
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return Transcript(source=source, events=tuple(value), document=list(value))
    return Transcript(source=source, document=value)


def json_depth(text: str) -> int:
    """The deepest array/object nesting in JSON `text`, counted without parsing it."""
    return _depth(_JSON_STRING.sub("", text))


def _depth(skeleton: str) -> int:
    """The deepest nesting in JSON text whose string literals were removed."""
    brackets = _NOT_BRACKET.sub("", skeleton)
    if not brackets:
        return 0
    steps = (1 if c in "[{" else -1 for c in brackets)
    return max(accumulate(steps))


def _values(skeleton: str) -> int:
    """About how many values JSON text whose string literals were removed holds (its commas
    and opening brackets), counted at C speed before the depth walk or the parser runs."""
    return skeleton.count(",") + skeleton.count("[") + skeleton.count("{")


def loads_bounded(
    text: str, where: str, max_depth: int = MAX_DEPTH, max_values: int = MAX_VALUES
) -> Any:
    """`json.loads` of untrusted `text` after a value-count and a depth check; a ValueError
    naming `where`."""
    skeleton = _JSON_STRING.sub("", text)
    if _values(skeleton) > max_values:
        raise ValueError(f"{where}: over {max_values} JSON values (limit {max_values})")
    depth = _depth(skeleton)
    if depth > max_depth:
        raise ValueError(f"{where}: JSON nested {depth} deep (limit {max_depth})")
    try:
        return loads_untrusted(text)
    except ValueError as exc:
        raise ValueError(f"{where}: not JSON ({_short(str(exc))})") from None


def read_transcript(
    path: str | os.PathLike[str],
    *,
    root: str | os.PathLike[str] | None = None,
    max_bytes: int = MAX_BYTES,
    max_events: int = MAX_EVENTS,
    max_depth: int = MAX_DEPTH,
) -> Transcript:
    """Read the transcript at `path` within `root` (default: its own folder), bounded.

    A symlink is followed only when it resolves inside `root`. Raises `TranscriptError`.
    """
    file = Path(path)
    # The path is third-party (a trial folder's name): control characters are shown escaped,
    # so every message stays one line.
    name = visible_controls(str(file))
    text = _read_text(file, Path(root) if root is not None else file.parent, max_bytes, name)
    stripped = text.strip()
    if not stripped:
        return Transcript(source=name, notes=("empty transcript",))
    first_line = stripped.split("\n", 1)[0].strip()
    if stripped[0] == "[" or (
        stripped[0] == "{" and first_line != stripped and not _parses(first_line)
    ):
        return _document(name, stripped, max_events, max_depth)
    found = _jsonl(name, text, max_events, max_depth)
    if first_line == stripped and isinstance(found.events[0], Mapping):
        # One line: a one-event stream or a compact document; detectors read either field.
        return Transcript(source=found.source, events=found.events, document=found.events[0])
    return found


def read_bounded(file: Path, root: Path, max_bytes: int, name: str) -> bytes:
    """The bytes of the regular file `file`, at most `max_bytes`, read only when it resolves
    inside `root`; `TranscriptError` naming `name` otherwise. Also the importers' reader of
    trial-folder files: a FIFO, socket or device is refused before it is opened."""
    try:
        info = os.lstat(file)
    except OSError as exc:
        raise TranscriptError(f"{name}: cannot read ({exc.strerror})") from None
    # Any symlink on the way (the file itself or a folder above it) must stay inside root;
    # a symlink loop (RuntimeError on Python 3.11) leads nowhere inside it either.
    try:
        inside = file.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):
        inside = False
    if not inside:
        kind = "symlink" if stat.S_ISLNK(info.st_mode) else "path"
        raise TranscriptError(f"{name}: {kind} leads out of {visible_controls(str(root))}")
    try:
        info = os.stat(file)
    except OSError as exc:
        raise TranscriptError(f"{name}: cannot read ({exc.strerror})") from None
    _check_regular(info, max_bytes, name)
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise TranscriptError(f"{name}: cannot open ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        # fstat on the open descriptor: what was checked is what is read.
        _check_regular(os.fstat(handle.fileno()), max_bytes, name)
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise TranscriptError(f"{name}: over {max_bytes} bytes")
    return data


def _check_regular(info: os.stat_result, max_bytes: int, name: str) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise TranscriptError(f"{name}: not a regular file")
    if info.st_size > max_bytes:
        raise TranscriptError(f"{name}: {info.st_size} bytes (limit {max_bytes})")


def _read_text(file: Path, root: Path, max_bytes: int, name: str) -> str:
    data = read_bounded(file, root, max_bytes, name)
    nul = data.find(b"\x00")
    if nul >= 0:
        raise TranscriptError(f"{name}: binary data (NUL byte at {nul})")
    # A leading byte-order mark (Windows tools write one) is not part of the JSON: left in,
    # it made a document unreadable and the first JSONL event a skipped line.
    bom = len(_BOM) if data.startswith(_BOM) else 0
    try:
        return data[bom:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TranscriptError(f"{name}: not UTF-8 text (byte {bom + exc.start})") from None


def _parses(line: str) -> bool:
    if json_depth(line) > MAX_DEPTH:
        return True  # a JSONL line; the JSONL reader reports its depth
    try:
        json.loads(line)
    except (ValueError, RecursionError):
        return False
    return True


def _document(name: str, text: str, max_events: int, max_depth: int) -> Transcript:
    try:
        value = loads_bounded(text, name, max_depth)
    except ValueError as exc:
        raise TranscriptError(str(exc)) from None
    events: tuple[Any, ...] = ()
    if isinstance(value, list):
        if len(value) > max_events:
            raise TranscriptError(f"{name}: {len(value)} events (limit {max_events})")
        events = tuple(value)
    return Transcript(source=name, events=events, document=value)


def _jsonl(name: str, text: str, max_events: int, max_depth: int) -> Transcript:
    events: list[Any] = []
    notes = _Notes()
    parsed = objects = values = 0
    # Counted before splitting: 64 MiB of short lines would be 22 million strings (1.7 GB)
    # before the loop below reached its limit.
    count = text.count("\n") + (not text.endswith("\n"))
    if count > max_events:
        raise TranscriptError(f"{name}: over {max_events} lines (limit {max_events})")
    lines = text.split("\n")  # not splitlines(): U+2028 may stand raw inside a JSON string
    if lines[-1] == "":
        lines.pop()
    for index, line in enumerate(lines):
        if index >= max_events:
            raise TranscriptError(f"{name}: over {max_events} lines (limit {max_events})")
        line = line.strip()
        if not line:
            events.append(None)
            continue
        where = f"{name}: line {index + 1}"
        if len(line) > MAX_LINE_CHARS:
            raise TranscriptError(f"{where}: {len(line)} characters (limit {MAX_LINE_CHARS})")
        skeleton = _JSON_STRING.sub("", line)
        values += _values(skeleton)
        if values > MAX_VALUES:
            raise TranscriptError(
                f"{where}: over {MAX_VALUES} JSON values in the transcript (limit {MAX_VALUES})"
            )
        depth = _depth(skeleton)
        if depth > max_depth:
            raise TranscriptError(f"{where}: JSON nested {depth} deep (limit {max_depth})")
        try:
            value = loads_untrusted(line)
        except ValueError:
            events.append(None)
            notes.add(f"line {index + 1}: not JSON, skipped")
            continue
        events.append(value)
        parsed += 1
        objects += isinstance(value, Mapping | list)
    if not parsed:
        raise TranscriptError(f"{name}: no line is JSON")
    text_lines = sum(1 for line in lines if line.strip()) - objects
    if text_lines > objects:
        # A plain-text log (Gemini CLI's gemini-cli.txt) can hold a line that parses as JSON
        # (a quoted title, a number, a one-line object the agent printed): a stream whose lines
        # are mostly not JSON events is text, not a JSONL transcript. A killed agent's torn
        # last line is one line among many events.
        raise TranscriptError(
            f"{name}: {text_lines} of {objects + text_lines} lines are not JSON events: "
            "plain text, not a JSONL transcript"
        )
    return Transcript(source=name, events=tuple(events), notes=notes.result())


class _Notes:
    """At most MAX_NOTES notes, then a count of the rest."""

    def __init__(self) -> None:
        self._notes: list[str] = []
        self._dropped = 0

    def add(self, note: str) -> None:
        if len(self._notes) < MAX_NOTES:
            self._notes.append(note)
        else:
            self._dropped += 1

    def result(self) -> tuple[str, ...]:
        extra = (f"{self._dropped} more lines skipped",) if self._dropped else ()
        return (*self._notes, *extra)


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def link(value: object) -> object:
    """An id that pairs a call with its result, usable as a dict key: a string, number or
    null as is; anything else (a list or object in a hostile transcript, which cannot be a
    key) a fresh object that pairs with nothing, so that call counts as not returned."""
    return value if value is None or isinstance(value, str | int | float) else object()


def field(value: object, *keys: str) -> Any:
    """`value[k1][k2]...` through mappings, or None where any step is missing."""
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value

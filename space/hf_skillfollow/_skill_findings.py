"""What a skill pool's loader reports: errors that stop it and findings that it records.

An *error* makes a skill unusable (no front matter, no name or description, unreadable YAML, a
file the loader refuses to read); a *warning* is a spec violation that leaves the skill usable.
Both name the file and the field (docs/skills.md, "Diagnostics").
"""

from __future__ import annotations

import reprlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Severity = Literal["error", "warning"]

#: Values quoted in messages are cut to this size (a hostile value can be huge).
_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 80
_SHORT.maxlist = _SHORT.maxdict = 5
_SHORT.maxlevel = 2


def short(value: object) -> str:
    """A bounded `repr` of a value read from a skill file, for messages."""
    return _SHORT.repr(value)


def shown(name: str) -> str:
    """`ascii(name)` (every non-ASCII character as an escape, so look-alikes differ), bounded
    as `short` is: a name can be 64 KiB of front matter."""
    text = ascii(name)
    return text if len(text) <= 80 else f"{text[:76]}...{text[-1]}"


def clip(message: str, limit: int = 300) -> str:
    """`message` (one a library wrote, quoting a value whole) cut to about `limit` characters."""
    return message if len(message) <= limit else f"{message[:limit]}... ({len(message)} characters)"


class SkillPoolError(ValueError):
    """A skill pool or one of its SKILL.md files is invalid."""


class SkillFileError(SkillPoolError):
    """A file of a skill folder cannot be served: not listed, outside the folder, binary or too big."""


@dataclass(frozen=True)
class Finding:
    """One diagnostic: how bad, which file, which field (or 'front matter', 'resource', ...), what."""

    severity: Severity
    file: Path
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.field}: {self.message}"


def error(file: Path, field: str, message: str) -> Finding:
    return Finding("error", file, field, message)


def warning(file: Path, field: str, message: str) -> Finding:
    return Finding("warning", file, field, message)

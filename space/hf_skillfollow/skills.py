"""Skill pools: folders of `<skill>/SKILL.md` files with YAML front matter.

Loading is strict: every problem is a `SkillPoolError` naming the file and the field, because a
silently skipped or half-parsed skill would change what the agent can retrieve without anyone
noticing.

See docs/design.md, "Skills".
"""

from __future__ import annotations

import hashlib
import reprlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

SKILL_TYPES: tuple[str, ...] = ("utility", "procedure", "guard")
SKILL_FILE = "SKILL.md"
_FENCE = "---"
#: Front matter is a handful of short fields; a larger block is refused before YAML sees it.
MAX_FRONT_MATTER_BYTES = 64 * 1024
#: Values quoted in error messages are cut to this size (a hostile value can be huge).
_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 80
_SHORT.maxlist = _SHORT.maxdict = 5
_SHORT.maxlevel = 2


class SkillPoolError(ValueError):
    """A skill pool or one of its SKILL.md files is invalid."""


@dataclass(frozen=True)
class Skill:
    """One skill: front-matter fields, the Markdown body and the SKILL.md it came from."""

    name: str
    description: str
    signature: str
    type: str
    tags: tuple[str, ...]
    body: str
    path: Path
    #: the whole SKILL.md (front matter and body), BOM removed and line endings normalised
    text: str = field(repr=False, compare=False, default="")


@dataclass(frozen=True)
class SkillPool:
    """A named, validated set of skills, kept in name order."""

    name: str
    root: Path | None
    skills: tuple[Skill, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "skills", tuple(sorted(self.skills, key=lambda s: s.name)))
        object.__setattr__(self, "_by_name", {s.name: s for s in self.skills})

    def __len__(self) -> int:
        return len(self.skills)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.skills)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.skills]

    def get(self, name: str) -> Skill:
        try:
            return self._by_name[name]  # type: ignore[attr-defined]
        except KeyError:
            raise KeyError(
                f"no skill named {name!r} in pool {self.name!r}; skills: {self.names}"
            ) from None

    @property
    def content_hash(self) -> str:
        """sha256 over the sorted (name, normalised SKILL.md text) pairs: identifies the pool's content."""
        digest = hashlib.sha256()
        for skill in self.skills:
            digest.update(skill.name.encode("utf-8") + b"\x00")
            digest.update(skill.text.encode("utf-8") + b"\x00")
        return digest.hexdigest()


def index_text(skill: Skill) -> str:
    """The exact document BM25 indexes for a skill: description, newline, body."""
    return f"{skill.description}\n{skill.body}"


def collection_documents(pool: SkillPool) -> list[dict[str, str]]:
    """The pool as Pyserini JsonCollection documents `{"id", "contents"}`, in name order."""
    return [{"id": s.name, "contents": index_text(s)} for s in pool.skills]


def _normalise(raw: str) -> str:
    # Hash and parse the same text on every platform: no BOM, LF line endings.
    return raw.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _split_front_matter(text: str, path: Path) -> tuple[str, str]:
    lines = text.split("\n")
    if not lines or lines[0].strip() != _FENCE:
        raise SkillPoolError(f"{path}: front matter: the file must start with a '---' line")
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() == _FENCE:
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1 :])
    raise SkillPoolError(f"{path}: front matter: no closing '---' line")


class _AliasRefused(yaml.YAMLError):
    pass


class _PlainLoader(yaml.SafeLoader):
    """SafeLoader without anchors and aliases.

    Aliases let a few hundred bytes describe an exponentially large value ("billion laughs");
    plain front-matter fields never need them.
    """

    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            mark = event.start_mark
            raise _AliasRefused(f"line {mark.line + 1} column {mark.column + 1}")
        return super().compose_node(parent, index)


def _parse_yaml(block: str, path: Path) -> dict[str, object]:
    size = len(block.encode("utf-8"))
    if size > MAX_FRONT_MATTER_BYTES:
        raise SkillPoolError(
            f"{path}: front matter: {size} bytes, more than the {MAX_FRONT_MATTER_BYTES} allowed"
        )
    try:
        data = yaml.load(block, Loader=_PlainLoader)  # noqa: S506 - a SafeLoader subclass
    except _AliasRefused as exc:
        raise SkillPoolError(
            f"{path}: front matter: YAML anchors and aliases (&, *) are not allowed ({exc})"
        ) from None
    except yaml.YAMLError as exc:
        reason = " ".join(str(exc).split())
        reason = reason if len(reason) <= 300 else reason[:300] + "..."
        raise SkillPoolError(f"{path}: front matter: malformed YAML ({reason})") from None
    if not isinstance(data, dict):
        raise SkillPoolError(
            f"{path}: front matter: expected a YAML mapping of fields, got {type(data).__name__}"
        )
    return data


def _text_field(meta: dict[str, object], key: str, path: Path, *, required: bool) -> str:
    value = meta.get(key)
    if value is None:
        if required:
            raise SkillPoolError(f"{path}: field '{key}': missing")
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise SkillPoolError(
            f"{path}: field '{key}': must be a non-empty string, got {_SHORT.repr(value)}"
        )
    return value.strip()


def _tags(meta: dict[str, object], path: Path) -> tuple[str, ...]:
    tags = meta.get("tags")
    if tags is None:
        return ()
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise SkillPoolError(
            f"{path}: field 'tags': must be a list of strings, got {_SHORT.repr(tags)}"
        )
    return tuple(tags)


def _skill_type(meta: dict[str, object], path: Path) -> str:
    kind = _text_field(meta, "type", path, required=True)
    if kind not in SKILL_TYPES:
        raise SkillPoolError(
            f"{path}: field 'type': unknown type {_SHORT.repr(kind)}; allowed: {'|'.join(SKILL_TYPES)}"
        )
    return kind


def load_skill(path: Path) -> Skill:
    """Parse and validate one SKILL.md file."""
    try:
        text = _normalise(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise SkillPoolError(f"{path}: not UTF-8 text ({exc})") from None
    block, body = _split_front_matter(text, path)
    meta = _parse_yaml(block, path)
    name = _text_field(meta, "name", path, required=True)
    if any(ch.isspace() for ch in name):
        raise SkillPoolError(
            f"{path}: field 'name': must not contain whitespace, got {_SHORT.repr(name)}"
        )
    description = _text_field(meta, "description", path, required=True)
    if not body.strip():
        raise SkillPoolError(
            f"{path}: body: empty (the Markdown after the front matter has no text)"
        )
    return Skill(
        name=name,
        description=description,
        signature=_text_field(meta, "signature", path, required=False),
        type=_skill_type(meta, path),
        tags=_tags(meta, path),
        body=body.strip("\n"),
        path=path,
        text=text,
    )


def _check_unique(skills: Iterable[Skill]) -> None:
    seen: dict[str, Skill] = {}
    for skill in skills:
        if skill.name in seen:
            raise SkillPoolError(
                f"{skill.path}: field 'name': duplicate skill name {skill.name!r} (also in {seen[skill.name].path})"
            )
        seen[skill.name] = skill


def _resolve(path_or_name: str | Path) -> Path:
    path = Path(path_or_name).expanduser()
    if path.exists():
        return path
    text = str(path_or_name)
    if "/" not in text and "\\" not in text and not text.startswith("."):
        from hf_skillfollow._resources import shipped_pool

        try:
            return shipped_pool(text)
        except FileNotFoundError as exc:
            raise SkillPoolError(
                f"{text}: neither a directory nor a shipped pool ({exc})"
            ) from None
    raise SkillPoolError(f"{path}: skill pool directory does not exist")


def load_pool(path_or_name: str | Path, name: str | None = None) -> SkillPool:
    """Load a pool from a directory of `<skill>/SKILL.md` folders, or a shipped pool by name."""
    root = _resolve(path_or_name)
    if not root.is_dir():
        raise SkillPoolError(
            f"{root}: skill pool must be a directory of <skill>/{SKILL_FILE} folders"
        )
    files = sorted(p / SKILL_FILE for p in root.iterdir() if (p / SKILL_FILE).is_file())
    if not files:
        raise SkillPoolError(f"{root}: skill pool is empty (no <skill>/{SKILL_FILE} files)")
    skills = [load_skill(f) for f in files]
    _check_unique(skills)
    return SkillPool(name=name or root.resolve().name, root=root, skills=tuple(skills))


def merged_pool(pools: Sequence[SkillPool], name: str | None = None) -> SkillPool:
    """One library holding every skill of `pools`; skill names must stay unique across them."""
    if not pools:
        raise SkillPoolError("merged pool: no pools given")
    skills = [s for pool in pools for s in pool.skills]
    _check_unique(skills)
    return SkillPool(name=name or "+".join(p.name for p in pools), root=None, skills=tuple(skills))

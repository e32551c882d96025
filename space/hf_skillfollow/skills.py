"""Skill pools: Agent Skills folders (`<skill>/SKILL.md` plus any other files), read as untrusted.

The public surface (docs/skills.md; docs/design.md, "Skills"):

- `load_pool(path_or_name, name=None) -> SkillPool`: a directory the spec's client guide would
  scan (`<root>/<skill>/SKILL.md`, or a repository root holding `skills/`, `.claude/skills/` or
  `.agents/skills/`, nested a few levels), or a shipped pool by name. Lenient but diagnosed: a
  spec violation that leaves a skill usable is a warning kept on `SkillPool.findings`; anything
  that makes a skill unusable raises one `SkillPoolError` naming the file and the field, because
  a silently skipped skill would change what the agent can use without anyone noticing.
- `validate_pool(path_or_name) -> PoolReport`: every finding of every skill (severity, file,
  field, message), raising only when there is no pool to look at; what `skills validate` prints.
- `read_resource(skill, relpath) -> str`: one of `skill.resources` (UTF-8 text of at most
  `MAX_RESOURCE_BYTES`, read and hashed at load time); anything else raises `SkillFileError`.
- `catalog_prompt(pool) -> str`: the `<available_skills>` block of skills-ref's `to_prompt`,
  without its `<location>` element (no local path may enter a prompt, a hash or a trace).
- `index_text`, `collection_documents`: what BM25 indexes; `merged_pool`: one library of several.

A `Skill`'s `type` is None and its `signature` "" when the SKILL.md does not declare them (a
spec-only skill); a `types` filter in search never returns an untyped skill.
"""

from __future__ import annotations

import hashlib
import html
import posixpath
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hf_skillfollow._skill_files import (
    MAX_POOL_CHARS,
    MAX_RESOURCE_BYTES,
    SKILL_FILE,
    discover,
    read_skill_md,
    scan_resources,
)
from hf_skillfollow._skill_findings import (
    Finding,
    SkillFileError,
    SkillPoolError,
    error,
    short,
    shown,
    warning,
)
from hf_skillfollow._skill_meta import SKILL_TYPES, parse_skill
from hf_skillfollow._skill_names import skeleton

__all__ = [
    "MAX_RESOURCE_BYTES",
    "SKILL_FILE",
    "SKILL_TYPES",
    "Finding",
    "PoolReport",
    "Skill",
    "SkillFileError",
    "SkillPool",
    "SkillPoolError",
    "SkillReport",
    "catalog_prompt",
    "collection_documents",
    "index_text",
    "load_pool",
    "load_shipped_pool",
    "load_skill",
    "merged_pool",
    "read_resource",
    "validate_pool",
]


@dataclass(frozen=True)
class Skill:
    """One skill: front-matter fields, the Markdown body, its files and the SKILL.md it came from."""

    name: str
    description: str
    #: "" when the skill declares none (the spec has no such field)
    signature: str
    #: one of SKILL_TYPES, or None for an untyped (spec-only) skill
    type: str | None
    tags: tuple[str, ...]
    body: str
    path: Path
    #: the whole SKILL.md (front matter and body), BOM removed and line endings normalised
    text: str = field(repr=False, compare=False, default="")
    #: every other servable file of the folder: sorted relative POSIX paths (docs/skills.md)
    resources: tuple[str, ...] = ()
    license: str | None = None
    compatibility: str | None = None
    metadata: dict[str, str] = field(default_factory=dict, compare=False)
    allowed_tools: str | None = None
    #: the text of each of `resources`, in the same order (normalised as `text` is)
    resource_texts: tuple[str, ...] = field(default=(), repr=False, compare=False)
    #: (relative path, reason) of the folder's files that are not served
    unserved: tuple[tuple[str, str], ...] = field(default=(), repr=False, compare=False)

    @property
    def folder(self) -> Path:
        """The skill directory (the folder holding SKILL.md)."""
        return self.path.parent


@dataclass(frozen=True)
class SkillPool:
    """A named, validated set of skills, kept in name order, with the loader's warnings."""

    name: str
    root: Path | None
    skills: tuple[Skill, ...]
    findings: tuple[Finding, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "skills", tuple(sorted(self.skills, key=lambda s: s.name)))
        object.__setattr__(self, "_by_name", {s.name: s for s in self.skills})

    def __len__(self) -> int:
        return len(self.skills)

    def __iter__(self) -> Iterator[Skill]:
        return iter(self.skills)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.skills]

    def get(self, name: str) -> Skill:
        try:
            return self._by_name[name]  # type: ignore[attr-defined]
        except KeyError:
            # one short line, whatever the pool's size and the name asked for
            names = ", ".join(short(n) for n in self.names[:5])
            more = ", ..." if len(self) > 5 else ""
            raise KeyError(
                f"no skill named {short(name)} in pool {short(self.name)}; its {len(self)} "
                f"skills: {names}{more}"
            ) from None

    @property
    def content_hash(self) -> str:
        """sha256 over each skill's name, SKILL.md text and served files: the pool's content.

        Per skill, in name order: name NUL text NUL, then per resource SOH path NUL text NUL.
        Names and paths hold no control characters and texts no NUL, so the framing is
        unambiguous; a pool without resource files hashes as it did before resources counted.
        """
        digest = hashlib.sha256()
        for skill in self.skills:
            digest.update(skill.name.encode("utf-8") + b"\x00")
            digest.update(skill.text.encode("utf-8") + b"\x00")
            for rel, text in zip(skill.resources, skill.resource_texts, strict=True):
                digest.update(b"\x01" + rel.encode("utf-8") + b"\x00")
                digest.update(text.encode("utf-8") + b"\x00")
        return digest.hexdigest()


@dataclass(frozen=True)
class SkillReport:
    """One discovered SKILL.md: the skill (None when an error makes it unusable) and its findings."""

    path: Path
    skill: Skill | None
    findings: tuple[Finding, ...]


@dataclass(frozen=True)
class PoolReport:
    """Everything `validate_pool` found: per SKILL.md, and for the pool as a whole."""

    root: Path
    skills: tuple[SkillReport, ...]
    #: findings that belong to no one skill (discovery)
    findings: tuple[Finding, ...]

    @property
    def all_findings(self) -> list[Finding]:
        return [*self.findings, *(f for s in self.skills for f in s.findings)]

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.all_findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.all_findings if f.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors


def index_text(skill: Skill) -> str:
    """The exact document BM25 indexes for a skill: description, newline, body."""
    return f"{skill.description}\n{skill.body}"


def collection_documents(pool: SkillPool) -> list[dict[str, str]]:
    """The pool as Pyserini JsonCollection documents `{"id", "contents"}`, in name order."""
    return [{"id": s.name, "contents": index_text(s)} for s in pool.skills]


def catalog_prompt(pool: SkillPool) -> str:
    """The pool's `<available_skills>` block, as skills-ref's `to_prompt` writes it, minus `<location>`.

    One skill per `<skill>` element in name order, each value on its own line and escaped with
    `html.escape` exactly as `to_prompt` does, so the bytes depend only on names and descriptions.
    """
    lines = ["<available_skills>"]
    for s in pool.skills:
        lines += ["<skill>", "<name>", html.escape(s.name), "</name>"]
        lines += ["<description>", html.escape(s.description), "</description>", "</skill>"]
    lines.append("</available_skills>")
    return "\n".join(lines)


def read_resource(skill: Skill, relpath: str) -> str:
    """The text of `relpath`, one of `skill.resources`, as read (and hashed) at load time.

    Raises `SkillFileError` for anything else: a path outside the folder, one that is not a
    file of the skill, or a file that is not served (binary, over `MAX_RESOURCE_BYTES`, a
    symlink leaving the folder, ...), naming the reason.
    """
    if not isinstance(relpath, str):
        raise SkillFileError(f"skill {skill.name!r}: path must be a string, got {short(relpath)}")
    try:
        return skill.resource_texts[skill.resources.index(relpath)]
    except ValueError:
        pass
    normal = posixpath.normpath(relpath) if relpath else ""
    if relpath.startswith(("/", "\\")) or normal == ".." or normal.startswith("../"):
        reason = "outside the skill folder"
    elif relpath == SKILL_FILE:
        reason = "the SKILL.md itself (activate the skill to read it)"
    elif relpath in (unserved := dict(skill.unserved)):
        reason = f"{unserved[relpath]}; not served"
    else:
        reason = "not a file of this skill"
    raise SkillFileError(f"skill {skill.name!r}: {short(relpath)}: {reason}")


def _build(path: Path) -> SkillReport:
    """Read, parse and check one SKILL.md and its folder; every problem becomes a finding."""
    text = read_skill_md(path)
    if isinstance(text, Finding):
        return SkillReport(path, None, (text,))
    fields, findings = parse_skill(text, path)
    if fields is None:
        return SkillReport(path, None, tuple(findings))
    resources = scan_resources(path)
    findings += resources.findings
    # a folder holding SKILL.md is one skill, all below it its files: a skill nested in it is
    # not one of the pool's (a repository root with its own SKILL.md beside `skills/`)
    nested = f"a SKILL.md inside the skill folder of {short(fields.name)}: one of its files, "
    nested += "not a skill of its own (point POOL at its folder to load it)"
    findings += [
        warning(path.parent / rel, "file", nested)
        for rel in sorted([*resources.texts, *resources.unserved])
        if posixpath.basename(rel) == SKILL_FILE
    ]
    if any(f.severity == "error" for f in findings):
        return SkillReport(path, None, tuple(findings))
    rels = tuple(sorted(resources.texts))
    skill = Skill(
        name=fields.name,
        description=fields.description,
        signature=fields.signature,
        type=fields.type,
        tags=fields.tags,
        body=fields.body,
        path=path,
        text=text,
        resources=rels,
        license=fields.license,
        compatibility=fields.compatibility,
        metadata=fields.metadata,
        allowed_tools=fields.allowed_tools,
        resource_texts=tuple(resources.texts[r] for r in rels),
        unserved=tuple(sorted(resources.unserved.items())),
    )
    return SkillReport(path, skill, tuple(findings))


def load_skill(path: Path) -> Skill:
    """Parse and check one SKILL.md and its folder; the first error raises `SkillPoolError`."""
    report = _build(Path(path))
    if report.skill is None:
        raise SkillPoolError(str(next(f for f in report.findings if f.severity == "error")))
    return report.skill


def _name_key(name: str) -> str:
    # `café` composed and decomposed, or `PDF` and `pdf`, read the same to a model and to a
    # case-insensitive or normalising file system: one skill name, however it is encoded
    return unicodedata.normalize("NFKC", name).casefold()


def _with_collisions(reports: list[SkillReport]) -> list[SkillReport]:
    """Reports with a 'duplicate skill name' error on every skill whose name was taken before
    (names compared after Unicode NFKC normalisation and case folding), and a warning on each
    whose UTS #39 confusable skeleton another name has (`pdf-tool`, `pdf-t00l`).

    A name is also taken by how `<available_skills>` lists it: the catalog HTML-escapes names,
    so skill `a&b` is listed as `a&amp;b`, and a skill *named* `a&amp;b` would be the one a
    model activates when it types the first skill's name exactly as listed: it is a duplicate,
    whichever of the two comes first."""
    seen: dict[str, tuple[str, Path]] = {}
    looks: dict[str, tuple[str, Path]] = {}
    listed = {
        _name_key(html.escape(r.skill.name)): (r.skill.name, r.skill.path)
        for r in reports
        if r.skill is not None and html.escape(r.skill.name) != r.skill.name
    }
    out = []
    for report in reports:
        skill = report.skill
        key = _name_key(skill.name) if skill is not None else ""
        if skill is not None and key in listed and key not in seen:
            other, where = listed[key]
            impostor = error(
                skill.path,
                "field 'name'",
                f"skill name {short(skill.name)} is how <available_skills> lists "
                f"{short(other)} (names are HTML-escaped there; also in {where}): a model "
                "typing that skill's name as listed would activate this one",
            )
            out.append(SkillReport(report.path, None, (*report.findings, impostor)))
            continue
        look = skeleton(_name_key(skill.name)) if skill is not None else ""
        if skill is not None and key not in seen and look in looks:
            other, where = looks[look]
            alike = warning(
                skill.path,
                "field 'name'",
                f"{shown(skill.name)} looks like {shown(other)} (same Unicode confusable "
                f"skeleton, UTS #39; also in {where}): a model may not tell them apart",
            )
            report = SkillReport(report.path, skill, (*report.findings, alike))
        if skill is not None:
            looks.setdefault(look, (skill.name, skill.path))
        if skill is not None and key in seen:
            other, where = seen[key]
            same = (
                ""
                if other == skill.name
                else f" ({shown(skill.name)} is {shown(other)} after Unicode NFKC and case folding)"
            )
            clash = error(
                skill.path,
                "field 'name'",
                f"duplicate skill name {short(skill.name)}{same} (also in {where})",
            )
            report = SkillReport(report.path, None, (*report.findings, clash))
        elif skill is not None:
            seen[key] = (skill.name, skill.path)
        out.append(report)
    return out


def _resolve(path_or_name: str | Path) -> Path:
    from hf_skillfollow._resources import shipped_pool

    path = Path(path_or_name).expanduser()
    text = str(path_or_name)
    bare = bool(text) and "/" not in text and "\\" not in text and not text.startswith(".")
    if path.exists():
        if bare and path.is_dir() and _is_shipped(text) and not _is_shipped(text, path):
            # a cloned repository's `math/` must not stand in for the shipped pool unnoticed
            raise SkillPoolError(
                f"{text}: both a shipped pool and a folder here; name the folder by its path "
                f"({path.resolve()}), or run elsewhere for the shipped pool"
            )
        return path
    if bare:
        try:
            return shipped_pool(text)
        except FileNotFoundError as exc:
            raise SkillPoolError(
                f"{text}: neither a directory nor a shipped pool ({exc})"
            ) from None
    raise SkillPoolError(f"{path}: skill pool directory does not exist")


def _is_shipped(name: str, folder: Path | None = None) -> bool:
    """Whether `name` is a shipped pool (with `folder`: and `folder` is that pool itself, as in
    a source checkout whose `skills/` the wheel's data links to)."""
    from hf_skillfollow._resources import shipped_pool

    try:
        shipped = shipped_pool(name)
    except FileNotFoundError:
        return False
    return folder is None or folder.resolve() == shipped.resolve()


def load_shipped_pool(name: str) -> SkillPool:
    """The shipped pool `name` (`coding`, `math`), never a folder of the working directory."""
    from hf_skillfollow._resources import shipped_pool

    try:
        return load_pool(shipped_pool(name))
    except FileNotFoundError as exc:
        raise SkillPoolError(f"{name}: no shipped pool ({exc})") from None


def validate_pool(path_or_name: str | Path) -> PoolReport:
    """Every finding for the pool at `path_or_name`; raises only when there is no pool to check."""
    root = _resolve(path_or_name)
    if root.name == SKILL_FILE and root.is_file():
        root = root.parent  # a SKILL.md stands for its skill folder
    if not root.is_dir():
        raise SkillPoolError(
            f"{root}: skill pool must be a directory of <skill>/{SKILL_FILE} folders"
        )
    files, pool_findings = discover(root)
    if not files:
        # what discovery skipped (a skill file, a symlinked folder) is said here, or never
        skipped = "".join(f"; skipped {f}" for f in pool_findings[:1])
        more = f" (and {len(pool_findings) - 1} more)" if len(pool_findings) > 1 else ""
        raise SkillPoolError(
            f"{root}: skill pool is empty (no <skill>/{SKILL_FILE} files){skipped}{more}"
        )
    reports, held = [], 0
    for file in files:
        report = _build(file)
        if report.skill is not None:
            held += len(report.skill.text) + sum(map(len, report.skill.resource_texts))
        if held > MAX_POOL_CHARS:
            # checked per skill, so at most one skill's worth (1,000 capped files) is read past it
            raise SkillPoolError(
                f"{root}: skill pool: more than {MAX_POOL_CHARS} characters of skill text "
                "(SKILL.md files and resources); point POOL at a smaller library"
            )
        reports.append(report)
    reports = _with_collisions(reports)
    return PoolReport(root=root, skills=tuple(reports), findings=tuple(pool_findings))


def load_pool(path_or_name: str | Path, name: str | None = None) -> SkillPool:
    """Load a pool (see the module docstring); its warnings are on `SkillPool.findings`."""
    report = validate_pool(path_or_name)
    errors = report.errors
    if errors:
        more = (
            f" (and {len(errors) - 1} more; `hf-skillfollow skills validate` lists them all)"
            if len(errors) > 1
            else ""
        )
        raise SkillPoolError(f"{errors[0]}{more}")
    skills = tuple(r.skill for r in report.skills if r.skill is not None)
    return SkillPool(
        name=name or report.root.resolve().name,
        root=report.root,
        skills=skills,
        findings=tuple(report.warnings),
    )


def merged_pool(pools: Sequence[SkillPool], name: str | None = None) -> SkillPool:
    """One library holding every skill of `pools`; skill names must stay unique across them."""
    if not pools:
        raise SkillPoolError("merged pool: no pools given")
    skills = [s for pool in pools for s in pool.skills]
    clashes = [
        f
        for r in _with_collisions([SkillReport(s.path, s, ()) for s in skills])
        for f in r.findings
        if f.severity == "error"
    ]
    if clashes:
        raise SkillPoolError(str(clashes[0]))
    return SkillPool(
        name=name or "+".join(p.name for p in pools),
        root=None,
        skills=tuple(skills),
        findings=tuple(f for p in pools for f in p.findings),
    )

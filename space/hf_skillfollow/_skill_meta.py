"""A SKILL.md's front matter: parsed without aliases, read leniently, every problem a finding.

Unusable (an error): no front matter, YAML that does not parse or is not a mapping, anchors and
aliases, a block over `MAX_FRONT_MATTER_BYTES`, a missing or empty `name` or `description`, a
name with control characters. Anything else the spec or this toolkit's extensions forbid is a
warning and the skill loads (the spec's client guide, "Lenient validation"). The spec's own
rules (name charset, lengths, folder match, compatibility length) come from `skills-ref`'s
validator so they follow the reference implementation (docs/skills.md, "Diagnostics").
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from hf_skillfollow._skill_files import has_control_chars
from hf_skillfollow._skill_findings import Finding, clip, error, short, warning
from hf_skillfollow._skill_names import name_problem

#: The toolkit's own skill types (docs/design.md, "Skills").
SKILL_TYPES: tuple[str, ...] = ("utility", "procedure", "guard")
#: Front-matter keys this toolkit adds to the spec's.
EXTENSION_FIELDS: tuple[str, ...] = ("signature", "type", "tags")
#: Front matter is a handful of short fields; a larger block is refused before YAML sees it.
MAX_FRONT_MATTER_BYTES = 64 * 1024
_FENCE = "---"


@dataclass
class Fields:
    """What a SKILL.md declares, already cleaned (strings stripped, bad optional values dropped)."""

    name: str
    description: str
    body: str
    signature: str = ""
    type: str | None = None
    tags: tuple[str, ...] = ()
    license: str | None = None
    compatibility: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    allowed_tools: str | None = None


def _split(text: str, path: Path) -> tuple[str, str] | Finding:
    lines = text.split("\n")
    if lines[0].strip() != _FENCE:
        return error(path, "front matter", "the file must start with a '---' line")
    for i, line in enumerate(lines[1:], start=1):
        # at column 0, as YAML's own document markers and other front-matter readers want it:
        # an indented `---` is a line of a block scalar (`description: |`), not the fence
        if line.rstrip() == _FENCE:
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1 :])
    return error(path, "front matter", "no closing '---' line")


class YAMLAliasError(yaml.YAMLError):
    """YAML with an anchor or an alias, refused by `load_plain_yaml`."""


class _DuplicateKey(yaml.YAMLError):
    pass


def _refuse_alias(event: yaml.Event) -> None:
    # Aliases let a few hundred bytes describe an exponentially large value ("billion laughs");
    # plain front-matter fields never need them.
    if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
        mark = event.start_mark
        raise YAMLAliasError(f"line {mark.line + 1} column {mark.column + 1}")


class _ExplicitTag(yaml.YAMLError):
    pass


def _check_events(events: Iterator[yaml.Event], tags: bool = True) -> None:
    """Refuse anchors, aliases, a key repeated in one mapping and (without `tags`) an explicit
    tag (`!!python/object`, `!!int`), before anything is built.

    YAML requires unique keys, but PyYAML keeps the last of `name: a` ... `name: b` where other
    clients' parsers refuse the file or keep the first: the skill's identity would depend on
    the reader. Each open mapping keeps its scalar keys seen so far and whether a key is next.
    """
    stack: list[tuple[set[str], list[bool]] | None] = []  # None: a sequence
    for event in events:
        _refuse_alias(event)
        if not tags and getattr(event, "tag", None) is not None:
            mark = event.start_mark
            raise _ExplicitTag(f"an explicit tag {short(event.tag)} (line {mark.line + 1})")
        if isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            stack.pop()
            continue
        if not isinstance(event, yaml.ScalarEvent | yaml.CollectionStartEvent):
            continue
        top = stack[-1] if stack else None
        if top is not None:
            keys, key_next = top
            if key_next[0] and isinstance(event, yaml.ScalarEvent):
                if event.value in keys:
                    mark = event.start_mark
                    raise _DuplicateKey(f"{short(event.value)} given twice (line {mark.line + 1})")
                keys.add(event.value)
            key_next[0] = not key_next[0]
        if isinstance(event, yaml.MappingStartEvent):
            stack.append((set(), [True]))
        elif isinstance(event, yaml.SequenceStartEvent):
            stack.append(None)


def load_plain_yaml(block: str, *, strings: bool = False) -> object:
    """Safe YAML without anchors, aliases or repeated keys: the parser's events are checked
    before anything is built.

    With `strings`, every scalar is the string it is written as (`on`, `2024-02-30`, `59:59`,
    a 5,000-digit number, `!!int 5`), as skills-ref (strictyaml) reads front matter: YAML 1.1's
    implicit booleans, dates, sexagesimal and integers never apply. libyaml is ~7x faster than
    the pure-Python scanner on hostile 64 KiB blocks (0.4 s against 2.4 s for a 20,000-item
    list on this machine) and refuses deep nesting itself.
    """
    safe = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
    _check_events(yaml.parse(block, Loader=safe), tags=not strings)
    if strings:
        # the base loader resolves no tag: scalars stay str, collections list and dict
        return yaml.load(block, Loader=getattr(yaml, "CBaseLoader", None) or yaml.BaseLoader)  # noqa: S506
    return yaml.load(block, Loader=safe)  # noqa: S506 - a SafeLoader


def _parse_yaml(block: str, path: Path) -> dict[object, object] | Finding:
    size = len(block.encode("utf-8"))
    if size > MAX_FRONT_MATTER_BYTES:
        return error(
            path, "front matter", f"{size} bytes, more than the {MAX_FRONT_MATTER_BYTES} allowed"
        )
    try:
        data = load_plain_yaml(block, strings=True)
    except YAMLAliasError as exc:
        return error(
            path, "front matter", f"YAML anchors and aliases (&, *) are not allowed ({exc})"
        )
    except _DuplicateKey as exc:
        return error(path, "front matter", f"a key repeated in one mapping: {exc}")
    except (yaml.YAMLError, RecursionError) as exc:
        reason = (
            " ".join(str(exc).split()) if isinstance(exc, yaml.YAMLError) else "nested too deep"
        )
        reason = reason if len(reason) <= 300 else reason[:300] + "..."
        return error(path, "front matter", f"malformed YAML ({reason})")
    if not isinstance(data, dict):
        return error(
            path, "front matter", f"expected a YAML mapping of fields, got {type(data).__name__}"
        )
    return data


#: A top-level `key: value` line whose plain value could hide a second `: `. The value's
#: trailing blanks are stripped after the match: a lazy `.*?` before `[ \t]*$` backtracks over
#: every run of blanks, quadratic on a hostile line (60,000 spaces: ~15 s).
_PLAIN_FIELD = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*):[ \t]+([^'\"\[{|>&*!%@`#\s].*)$")


def _quote_colon_values(block: str) -> tuple[str, list[str]] | None:
    """The block with each unquoted top-level value holding ': ' single-quoted, and those keys.

    The client guide's fallback for files other clients' lenient parsers accept
    (`description: Use when: ...`); None when no line needs it.
    """
    lines, keys = [], []
    for line in block.split("\n"):
        match = _PLAIN_FIELD.match(line)
        value = match.group(2).rstrip(" \t") if match else ""
        if match and ": " in value:
            key = match.group(1)
            lines.append(f"{key}: '{value.replace(chr(39), chr(39) * 2)}'")
            keys.append(key)
        else:
            lines.append(line)
    return ("\n".join(lines), keys) if keys else None


def _parse_lenient(block: str, path: Path) -> tuple[dict[object, object] | Finding, list[Finding]]:
    """`_parse_yaml`, retried once with `_quote_colon_values` when the YAML is malformed."""
    meta = _parse_yaml(block, path)
    if not (isinstance(meta, Finding) and meta.message.startswith("malformed YAML")):
        return meta, []
    repaired = _quote_colon_values(block)
    if repaired is None:
        return meta, []
    retry = _parse_yaml(repaired[0], path)
    if isinstance(retry, Finding):
        return meta, []
    keys = ", ".join(f"'{k}'" for k in repaired[1])
    note = f"not valid YAML: the value of {keys} holds ': ' unquoted; read as if quoted"
    return retry, [warning(path, "front matter", note)]


def _required(meta: Mapping[object, object], key: str, path: Path) -> str | Finding:
    value = meta.get(key)
    if value is None:
        return error(path, f"field '{key}'", "missing")
    if not isinstance(value, str) or not value.strip():
        return error(path, f"field '{key}'", f"must be a non-empty string, got {short(value)}")
    return value.strip()


def parse_skill(text: str, path: Path) -> tuple[Fields | None, list[Finding]]:
    """The fields of the SKILL.md `text` read from `path`; None when an error makes it unusable."""
    if "\x00" in text:
        return None, [error(path, "file", "holds NUL bytes (a binary file)")]
    split = _split(text, path)
    if isinstance(split, Finding):
        return None, [split]
    block, body = split
    meta, repairs = _parse_lenient(block, path)
    if isinstance(meta, Finding):
        return None, [meta]
    name, description = _required(meta, "name", path), _required(meta, "description", path)
    errors = [v for v in (name, description) if isinstance(v, Finding)]
    if isinstance(name, str) and has_control_chars(name):
        errors.append(error(path, "field 'name'", f"holds control characters: {short(name)}"))
    elif isinstance(name, str) and (problem := name_problem(name)):
        errors.append(error(path, "field 'name'", f"{problem} (a look-alike of another name)"))
    if errors:
        return None, errors
    assert isinstance(name, str) and isinstance(description, str)
    fields = Fields(name=name, description=description, body=body.strip("\n"))
    findings = repairs + _spec_rules(meta, fields, path) + _optional_fields(meta, fields, path)
    if has_control_chars(description.replace("\n", " ").replace("\t", " ")):
        findings.append(
            warning(path, "field 'description'", "holds control characters (kept as written)")
        )
    if not fields.body.strip():
        findings.append(
            warning(path, "body", "empty (the Markdown after the front matter has no text)")
        )
    return fields, findings


def _spec_rules(meta: Mapping[object, object], fields: Fields, path: Path) -> list[Finding]:
    """The reference validator's verdicts, each a warning: the skill stays usable."""
    from skills_ref.validator import ALLOWED_FIELDS, validate_metadata

    known = set(ALLOWED_FIELDS) | set(EXTENSION_FIELDS)
    unknown = sorted(short(k) for k in meta if k not in known)
    findings = []
    if unknown:
        findings.append(
            warning(
                path,
                "front matter",
                f"unknown field(s) {', '.join(unknown[:10])}"
                f"{' ...' if len(unknown) > 10 else ''}; the spec allows {sorted(ALLOWED_FIELDS)}"
                f" and this toolkit adds {list(EXTENSION_FIELDS)}",
            )
        )
    spec = {"name": fields.name, "description": fields.description}
    if "compatibility" in meta:
        spec["compatibility"] = meta["compatibility"]  # type: ignore[assignment]
    # the folder by its own name: `skills validate .` in a skill folder gives the path '.'
    for message in validate_metadata(spec, Path(os.path.abspath(path.parent))):
        findings.append(warning(path, _field_of(message), clip(message)))
    return findings


#: skills-ref's messages name their field in their first words
_MESSAGE_FIELDS = (
    (("Skill name", "Directory name", "Field 'name'"), "field 'name'"),
    (("Description", "Field 'description'"), "field 'description'"),
    (("Compatibility", "Field 'compatibility'"), "field 'compatibility'"),
)


def _field_of(message: str) -> str:
    for prefixes, name in _MESSAGE_FIELDS:
        if message.startswith(prefixes):
            return name
    return "front matter"


def _optional_fields(meta: Mapping[object, object], fields: Fields, path: Path) -> list[Finding]:
    findings: list[Finding] = []

    def bad(key: str, expected: str) -> None:
        findings.append(
            warning(path, f"field '{key}'", f"must be {expected}, got {short(meta[key])}; ignored")
        )

    for key in ("signature", "license", "compatibility"):
        value = meta.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            setattr(fields, key, value.strip())
        elif key != "compatibility":  # skills-ref already reported a bad compatibility
            bad(key, "a string")
    kind = meta.get("type")
    if kind is not None:
        if kind in SKILL_TYPES:
            fields.type = kind  # type: ignore[assignment]
        else:
            bad("type", f"one of {'|'.join(SKILL_TYPES)} (or absent: an untyped skill)")
    tags = meta.get("tags")
    if tags is not None:
        if isinstance(tags, list) and all(isinstance(t, str) for t in tags):
            fields.tags = tuple(tags)
        else:
            bad("tags", "a list of strings")
    _metadata(meta, fields, path, findings)
    _allowed_tools(meta, fields, path, findings)
    return findings


def _metadata(
    meta: Mapping[object, object], fields: Fields, path: Path, findings: list[Finding]
) -> None:
    value = meta.get("metadata")
    if value is None:
        return
    if not isinstance(value, dict):
        findings.append(
            warning(path, "field 'metadata'", f"must be a mapping, got {short(value)}; ignored")
        )
        return
    # skills-ref turns keys and scalar values into strings; nested values have no string form
    for key, item in value.items():
        if isinstance(item, dict | list):
            findings.append(
                warning(
                    path,
                    "field 'metadata'",
                    f"value of {short(key)} must be a string, got {short(item)}; ignored",
                )
            )
        else:
            fields.metadata[str(key)] = str(item)


def _allowed_tools(
    meta: Mapping[object, object], fields: Fields, path: Path, findings: list[Finding]
) -> None:
    value = meta.get("allowed-tools")
    if value is None:
        return
    if isinstance(value, str):
        fields.allowed_tools = value.strip()
    elif isinstance(value, list) and all(isinstance(t, str) for t in value):
        fields.allowed_tools = " ".join(value)
        findings.append(
            warning(
                path,
                "field 'allowed-tools'",
                "the spec asks for a space-separated string, got a list; joined",
            )
        )
    else:
        findings.append(
            warning(
                path,
                "field 'allowed-tools'",
                f"must be a space-separated string, got {short(value)}; ignored",
            )
        )

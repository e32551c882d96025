"""`hf-skillfollow skills`: list, show, validate, search and export skill pools.

Everything printed from a skill folder (names, descriptions, file names, findings) is untrusted:
non-printable characters are shown as escapes and Rich markup is escaped, so a skill cannot
restyle or take over the terminal (docs/skills.md, "Hostile input").
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from hf_skillfollow.cli._echo import data, echo
from hf_skillfollow.registries import RETRIEVERS
from hf_skillfollow.retrieval._base import Hit
from hf_skillfollow.skills import (
    Finding,
    PoolReport,
    SkillPool,
    SkillPoolError,
    collection_documents,
    load_pool,
    validate_pool,
)

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

_POOL_HELP = (
    "POOL is a skills folder (<skill>/SKILL.md folders), a repository holding skills/, "
    ".claude/skills/ or .agents/skills/, one skill folder, or a shipped pool name (coding, math)."
)


def _plain(text: str, keep: str = "") -> str:
    """`text` with each non-printable character (ESC, CR, bidi overrides...) not in `keep` escaped."""
    return "".join(ch if ch.isprintable() or ch in keep else ascii(ch)[1:-1] for ch in text)


def _line(text: object) -> str:
    """`text` on one line, non-printable characters escaped (for a Rich `Text`, not markup)."""
    return _plain(" ".join(str(text).split()))


def _markup(text: object) -> str:
    """`text` safe to hand to Rich as markup: on one line, plain, its markup brackets escaped.

    Only where nothing follows it in the same markup string: Rich reads a backslash before a
    tag as escaping that tag, so text ending in backslashes is put in a `Text` instead."""
    from rich.markup import escape

    return escape(_line(text))


def _console(**options: object) -> Console:
    """A Rich console that adds nothing of its own: no emoji codes (`:x:`), no highlighting."""
    from rich.console import Console

    return Console(emoji=False, highlight=False, **options)  # type: ignore[arg-type]


@contextmanager
def _clear_errors() -> Iterator[None]:
    """Turn the library's validation errors into one-line CLI errors."""
    from hf_skillfollow.retrieval._jvm import PyseriniUnavailable

    try:
        yield
    except (SkillPoolError, PyseriniUnavailable) as exc:
        raise click.ClickException(_plain(str(exc))) from None
    except KeyError as exc:
        raise click.ClickException(_plain(str(exc.args[0]) if exc.args else str(exc))) from None


def _pool(source: str) -> SkillPool:
    with _clear_errors():
        return load_pool(source)


def _parse_types(
    ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> list[str] | None:
    from hf_skillfollow.retrieval._select import check_types

    types = [t.strip() for v in value for t in v.split(",") if t.strip()]
    try:
        check_types(types)
    except ValueError as exc:
        raise click.BadParameter(str(exc).removeprefix("types: "), ctx=ctx, param=param) from None
    return types or None


@click.group(help=f"List, show, validate, search and export skill pools. {_POOL_HELP}")
def skills() -> None:
    pass


#: Optional columns of `skills list`, shown when at least one skill has a value.
_OPTIONAL = {
    "tags": lambda s: ", ".join(s.tags),
    "license": lambda s: s.license or "",
    "compatibility": lambda s: s.compatibility or "",
    "allowed-tools": lambda s: s.allowed_tools or "",
    "metadata": lambda s: ", ".join(f"{k}={v}" for k, v in sorted(s.metadata.items())),
    "files": lambda s: str(len(s.resources)) if s.resources else "",
}


@skills.command(
    "list",
    help=f"Table of the skills in POOL with their optional fields and file counts. {_POOL_HELP}",
)
@click.argument("pool")
def list_cmd(pool: str) -> None:
    from rich.table import Table

    loaded = _pool(pool)
    table = Table(
        title=f"{_markup(loaded.name)}: {len(loaded)} skills (sha256 {loaded.content_hash[:12]})"
    )
    names = [_markup(n) for n in loaded.names]
    # Names are identifiers to copy into `show`: never wrap them; the description takes the rest.
    table.add_column("name", no_wrap=True, min_width=max(len(n) for n in names))
    table.add_column("type", no_wrap=True)
    table.add_column("description", overflow="fold", ratio=3)
    extra = [k for k, get in _OPTIONAL.items() if any(get(s) for s in loaded.skills)]
    for key in extra:
        table.add_column(key, overflow="fold", justify="right" if key == "files" else "left")
    for name, s in zip(names, loaded.skills, strict=True):
        cells = [_markup(_OPTIONAL[k](s)) for k in extra]
        table.add_row(name, s.type or "-", _markup(s.description), *cells)
    _console().print(table)
    if loaded.findings:
        echo(
            f"{len(loaded.findings)} warning(s): `hf-skillfollow skills validate {_plain(pool)}`"
            " prints them",
            err=True,
        )


@skills.command("show", help=f"Print the SKILL.md of skill NAME in POOL. {_POOL_HELP}")
@click.argument("pool")
@click.argument("name")
def show_cmd(pool: str, name: str) -> None:
    loaded = _pool(pool)
    with _clear_errors():
        skill = loaded.get(name)
    text = skill.text
    if sys.stdout.isatty():
        text = _plain(text, keep="\n\t")  # the exact bytes only where no terminal interprets them
    click.echo(text, nl=not text.endswith("\n"))  # exact bytes to a pipe, escaped above


def _finding_line(finding: Finding, skill_md: Path | None) -> Text:
    from rich.text import Text

    where = ""
    if finding.file != skill_md:
        inside = skill_md is not None and skill_md.parent in finding.file.parents
        rel = finding.file.relative_to(skill_md.parent).as_posix() if inside else finding.file
        where = f"{_line(rel)}: "
    colour = "red" if finding.severity == "error" else "yellow"
    # Text parts, never markup: a name or message ending in backslashes cannot escape a tag
    return Text.assemble(
        "  ", (f"{finding.severity:7}", colour), f" {where}{_line(finding.field)}: ",
        _line(finding.message),
    )  # fmt: skip


def _print_report(report: PoolReport) -> None:
    from rich.text import Text

    console = _console(soft_wrap=True)
    if report.findings:
        console.print(Text.assemble(("pool", "bold"), f" {_line(report.root)}"))
        for finding in report.findings:
            console.print(_finding_line(finding, None))
    for entry in report.skills:
        errors = sum(f.severity == "error" for f in entry.findings)
        state = (
            (f"{errors} error(s)", "red")
            if errors
            else (f"{len(entry.findings)} warning(s)", "yellow")
            if entry.findings
            else ("ok", "green")
        )
        label = (_line(entry.skill.name), "bold") if entry.skill else ("unusable", "bold red")
        files = f", {len(entry.skill.resources)} file(s)" if entry.skill else ""
        console.print(Text.assemble(label, f" {_line(entry.path)}: ", state, files))
        for finding in entry.findings:
            console.print(_finding_line(finding, entry.path))
    usable = sum(r.skill is not None for r in report.skills)
    console.print(
        Text(
            f"{len(report.skills)} skill(s), {usable} usable: "
            f"{len(report.errors)} error(s), {len(report.warnings)} warning(s)"
        )
    )


@skills.command(
    "validate",
    help=(
        "Check every skill of POOL against the Agent Skills spec and this toolkit's rules and "
        "print every finding per skill: errors make a skill unusable (exit status 1), warnings "
        f"do not. {_POOL_HELP}"
    ),
)
@click.argument("pool")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Output format (json: one object per finding).",
)
def validate_cmd(pool: str, fmt: str) -> None:
    with _clear_errors():
        report = validate_pool(pool)
    if fmt == "json":
        rows = [
            {"severity": f.severity, "file": str(f.file), "field": f.field, "message": f.message}
            for f in report.all_findings
        ]
        data(json.dumps(rows, ensure_ascii=True))
    else:
        _print_report(report)
    if not report.ok:
        raise SystemExit(1)


@skills.command(
    "search", help=f"BM25 search of POOL for QUERY (what the agent's tool runs). {_POOL_HELP}"
)
@click.argument("pool")
@click.argument("query")
@click.option(
    "-k",
    "--top-k",
    "k",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Skills to return.",
)
@click.option(
    "--types",
    multiple=True,
    callback=_parse_types,
    help="Only these types, comma-separated: utility,procedure,guard (untyped skills never match).",
)
@click.option(
    "--retriever",
    type=click.Choice(list(RETRIEVERS)),
    default="bm25s",
    show_default=True,
    help="Retrieval backend.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="Output format.",
)
def search_cmd(
    pool: str, query: str, k: int, types: list[str] | None, retriever: str, fmt: str
) -> None:
    from hf_skillfollow.retrieval import make_retriever

    loaded = _pool(pool)
    with _clear_errors():
        hits = make_retriever(retriever, loaded).search(query, k=k, types=types)
    if fmt == "json":
        data(json.dumps([{"name": h.name, "score": h.score} for h in hits]))
        return
    _print_hits(loaded, hits, query)


def _print_hits(pool: SkillPool, hits: list[Hit], query: str) -> None:
    from rich.table import Table

    table = Table(title=f"{_markup(pool.name)}: top {len(hits)} for {_markup(repr(query))}")
    for column in ("rank", "name", "type", "score"):
        table.add_column(
            column, justify="right" if column in ("rank", "score") else "left", no_wrap=True
        )
    for rank, hit in enumerate(hits, 1):
        kind = pool.get(hit.name).type or "-"
        table.add_row(str(rank), _markup(hit.name), kind, f"{hit.score:.4f}")
    console = _console()
    console.print(table if hits else "no skill matched the query")


@skills.command(
    "export",
    help=f"Write the documents BM25 indexes as JSONL {{id, contents}} (Pyserini JsonCollection). {_POOL_HELP}",
)
@click.argument("pool")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Output file (default: stdout).",
)
def export_cmd(pool: str, output: Path | None) -> None:
    lines = "".join(
        json.dumps(doc, ensure_ascii=False) + "\n" for doc in collection_documents(_pool(pool))
    )
    if output is None:
        data(lines, nl=False)
        return
    output.write_text(lines, encoding="utf-8")
    echo(f"wrote {lines.count(chr(10))} documents to {output}", err=True)

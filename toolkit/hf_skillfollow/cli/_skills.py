"""`hf-skillfollow skills`: list, show, search and export skill pools."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from hf_skillfollow.registries import RETRIEVERS
from hf_skillfollow.retrieval._base import Hit
from hf_skillfollow.skills import SkillPool, SkillPoolError, collection_documents, load_pool

_POOL_HELP = (
    "POOL is a directory of <skill>/SKILL.md folders or a shipped pool name (coding, math)."
)


@contextmanager
def _clear_errors() -> Iterator[None]:
    """Turn the library's validation errors into one-line CLI errors."""
    from hf_skillfollow.retrieval._jvm import PyseriniUnavailable

    try:
        yield
    except (SkillPoolError, PyseriniUnavailable) as exc:
        raise click.ClickException(str(exc)) from None
    except KeyError as exc:
        raise click.ClickException(str(exc.args[0]) if exc.args else str(exc)) from None


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


@click.group(help=f"List, show, search and export skill pools. {_POOL_HELP}")
def skills() -> None:
    pass


@skills.command("list", help=f"Table of the skills in POOL. {_POOL_HELP}")
@click.argument("pool")
def list_cmd(pool: str) -> None:
    from rich.console import Console
    from rich.table import Table

    loaded = _pool(pool)
    table = Table(title=f"{loaded.name}: {len(loaded)} skills (sha256 {loaded.content_hash[:12]})")
    # Names are identifiers to copy into `show`: never wrap them; the description takes the rest.
    table.add_column("name", no_wrap=True, min_width=max(len(n) for n in loaded.names))
    table.add_column("type", no_wrap=True)
    table.add_column("description", overflow="fold")
    for s in loaded.skills:
        table.add_row(s.name, s.type, s.description)
    Console().print(table)


@skills.command("show", help=f"Print the SKILL.md of skill NAME in POOL. {_POOL_HELP}")
@click.argument("pool")
@click.argument("name")
def show_cmd(pool: str, name: str) -> None:
    loaded = _pool(pool)
    with _clear_errors():
        skill = loaded.get(name)
    click.echo(skill.text, nl=not skill.text.endswith("\n"))


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
    help="Only these types, comma-separated: utility,procedure,guard.",
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
        click.echo(json.dumps([{"name": h.name, "score": h.score} for h in hits]))
        return
    _print_hits(loaded, hits, query)


def _print_hits(pool: SkillPool, hits: list[Hit], query: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{pool.name}: top {len(hits)} for {query!r}")
    for column in ("rank", "name", "type", "score"):
        table.add_column(
            column, justify="right" if column in ("rank", "score") else "left", no_wrap=True
        )
    for rank, hit in enumerate(hits, 1):
        table.add_row(str(rank), hit.name, pool.get(hit.name).type, f"{hit.score:.4f}")
    console = Console()
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
        click.echo(lines, nl=False)
        return
    output.write_text(lines, encoding="utf-8")
    click.echo(f"wrote {lines.count(chr(10))} documents to {output}", err=True)

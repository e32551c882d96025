"""The drill-down's annotation summary: why the cell's flips went the way they did.

Annotations are read once per source (run directory, repo folder or Hub id with an
`annotations` config) and only a cell's own source's annotations are joined with its rows:
another source's annotations of the same run and task ids never reach it, and a bad file
costs only its own source's summary. Summarised with `metrics._diagnostics`, the same numbers
as `hf-skillfollow report --annotations`. Everything a submitter wrote (annotator names, the
error of a bad file) is escaped for Markdown.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from hf_skillfollow.space_app._shown import capped as _capped

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from hf_skillfollow.space_app._board import Board

_CACHE: dict[str, tuple[pa.Table | None, str | None]] = {}
_LOCK = threading.Lock()
#: Characters of a bad file's error shown in the drill-down.
_PROBLEM_CHARS = 300
#: Annotators whose tables a drill-down shows: each is ~1 KB of tables, and a published file
#: may name any number of them.
SHOWN_ANNOTATORS = 10


def _annotations(source: str) -> tuple[pa.Table | None, str | None]:
    with _LOCK:
        if source not in _CACHE:
            from hf_skillfollow.annotate._read import read_annotations

            try:
                from hf_skillfollow.space_app._sources import with_source

                _check_local(source)
                _CACHE[source] = (with_source(read_annotations(source), source), None)
            except Exception as exc:  # a broken source must not break the drill-down
                text = f"{type(exc).__name__}: {exc}"[:_PROBLEM_CHARS]
                _CACHE[source] = (None, f"annotations of '{source}' could not be read ({text})")
        return _CACHE[source]


def _check_local(source: str) -> None:
    """The read budget (hub._budget) of a local source's annotation files (a Hub source's
    are checked as `hub.load_annotations` reads them)."""
    from pathlib import Path

    from hf_skillfollow.annotate._read import ANNOTATIONS_DIR
    from hf_skillfollow.annotate._store import TABLE
    from hf_skillfollow.hub._budget import check_files
    from hf_skillfollow.space_app._sources import is_local

    path = Path(source).expanduser()
    if not is_local(source) or not path.is_dir():
        return
    files = [p for p in path.rglob(TABLE) if p.is_file()]
    files += [
        p for p in path.rglob("*.parquet") if p.is_file() and f"{ANNOTATIONS_DIR}/" in p.as_posix()
    ]
    from hf_skillfollow._files import inside_all

    check_files(inside_all(files, path), "annotations", source)


def cell_markdown(board: Board, cell: pd.Series) -> str:
    """Markdown for one cell ('' when nothing is annotated)."""
    from hf_skillfollow._escape import for_markdown
    from hf_skillfollow.space_app._sources import cell_sources

    tables, problems = [], []
    for source in cell_sources(cell):
        table, problem = _annotations(source)
        if problem:
            problems.append(problem)
        elif table is not None and table.num_rows:
            tables.append(table.to_pandas())
    if problems:
        from hf_skillfollow.space_app._markdown import unlinked

        # a problem quotes the file: its column names and paths are the submitter's
        shown = (unlinked(for_markdown(_capped(p, 300))) for p in problems)
        return "**Annotations.** " + " · ".join(shown)
    if not tables:
        return ""
    rows = board.task_rows(cell)
    if rows.empty:
        return ""
    import pandas as pd

    from hf_skillfollow.metrics._diagnostics import annotation_summary

    annotations = tables[0] if len(tables) == 1 else pd.concat(tables, ignore_index=True)
    summary = annotation_summary(rows, annotations, ["cell_id"])
    return summary_markdown(summary)


def summary_markdown(summary: pd.DataFrame) -> str:
    from hf_skillfollow._escape import for_markdown_code
    from hf_skillfollow.annotate._labels import GROUPS, LABELS
    from hf_skillfollow.diagnostics_report import DESCRIBE_NOT_REDEFINE
    from hf_skillfollow.formatting import UNDEFINED, is_undefined, pp
    from hf_skillfollow.metrics._diagnostics import slug

    if summary.empty:
        return ""
    parts = ["**Why did it help or hurt? (blinded LLM annotations)**"]
    records = summary.to_dict("records")
    for r in records[:SHOWN_ANNOTATORS]:
        header = "| label | helpful (b) | harmful (c) |\n|---|---|---|"
        lines = [
            f"| {lab} | {r[f'helpful_{slug(lab)}']} | {r[f'harmful_{slug(lab)}']} |"
            for lab in LABELS
        ]
        lines.append(f"| failed | {r['helpful_failed']} | {r['harmful_failed']} |")
        lines.append(f"| not annotated | {r['helpful_missing']} | {r['harmful_missing']} |")
        groups = []
        for g in GROUPS:
            s = slug(g)
            rae = r[f"rae_{s}"]
            value = UNDEFINED if is_undefined(rae) else f"{pp(rae)} pp"
            groups.append(f"| {g} | {r[f'b_{s}']} | {r[f'c_{s}']} | {r[f'n_{s}']} | {value} |")
        reconciled = (
            "labelled flips match b_cond and c_cond"
            if r["reconciled"]
            else f"gap: b_cond − labelled = {r['gap_b']}, c_cond − labelled = {r['gap_c']}"
        )
        parts += [
            f"Annotator {for_markdown_code(_capped(r['annotator']))} · labelled b {r['labelled_b']}/{r['b_cond']}, "
            f"c {r['labelled_c']}/{r['c_cond']} ({reconciled})",
            "\n".join([header, *lines]),
            "\n".join(["| group | b | c | n | RAE |", "|---|---|---|---|---|", *groups]),
        ]
    if len(records) > SHOWN_ANNOTATORS:
        parts.append(f"… and {len(records) - SHOWN_ANNOTATORS:,} more annotators")
    parts.append(f"_{DESCRIBE_NOT_REDEFINE}_")
    return "\n\n".join(parts)

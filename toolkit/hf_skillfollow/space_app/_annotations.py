"""The drill-down's annotation summary: why the cell's flips went the way they did.

Annotations are read once per set of sources (run directories, repo folders or Hub ids with
an `annotations` config) and summarised with `metrics._diagnostics`, the same numbers as
`hf-skillfollow report --annotations`.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from hf_skillfollow.space_app._board import Board

_CACHE: dict[tuple[str, ...], tuple[pa.Table | None, str | None]] = {}
_LOCK = threading.Lock()


def _annotations(sources: tuple[str, ...]) -> tuple[pa.Table | None, str | None]:
    with _LOCK:
        if sources not in _CACHE:
            from hf_skillfollow.annotate._read import read_annotations

            try:
                _CACHE[sources] = (read_annotations(*sources), None)
            except Exception as exc:  # a broken source must not break the drill-down
                _CACHE[sources] = (None, f"annotations could not be read: {exc}")
        return _CACHE[sources]


def cell_markdown(board: Board, cell: pd.Series) -> str:
    """Markdown for one cell ('' when nothing is annotated)."""
    table, problem = _annotations(tuple(board.sources))
    if problem:
        return f"**Annotations.** {problem}"
    if table is None or table.num_rows == 0:
        return ""
    run_id = cell["run_id"] if "run_id" in cell.index else None
    rows = board.task_rows(str(cell["cell_id"]), run_id)
    if rows.empty:
        return ""
    from hf_skillfollow.metrics._diagnostics import annotation_summary

    summary = annotation_summary(rows, table.to_pandas(), ["cell_id"])
    return summary_markdown(summary)


def summary_markdown(summary: pd.DataFrame) -> str:
    from hf_skillfollow.annotate._labels import GROUPS, LABELS
    from hf_skillfollow.diagnostics_report import DESCRIBE_NOT_REDEFINE
    from hf_skillfollow.formatting import UNDEFINED, is_undefined, pp
    from hf_skillfollow.metrics._diagnostics import slug

    if summary.empty:
        return ""
    parts = ["**Why did it help or hurt? (blinded LLM annotations)**"]
    for r in summary.to_dict("records"):
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
            f"Annotator `{r['annotator']}` · labelled b {r['labelled_b']}/{r['b_cond']}, "
            f"c {r['labelled_c']}/{r['c_cond']} ({reconciled})",
            "\n".join([header, *lines]),
            "\n".join(["| group | b | c | n | RAE |", "|---|---|---|---|---|", *groups]),
        ]
    parts.append(f"_{DESCRIBE_NOT_REDEFINE}_")
    return "\n\n".join(parts)

"""Render `report --annotations` and `report --correlate` as table, JSON, CSV or Markdown.

The numbers come from `metrics._diagnostics` and `metrics._correlate`; this module only
lays them out.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hf_skillfollow._escape import for_markdown, for_terminal, frame_to_csv
from hf_skillfollow.formatting import UNDEFINED, p_value, pp
from hf_skillfollow.report import (
    _default_width,
    _label,
    _label_columns,
    _md_table,
    _plain,
    to_records,
)

if TYPE_CHECKING:
    import pandas as pd

    from hf_skillfollow.metrics._correlate import CorrelationResult

DESCRIBE_NOT_REDEFINE = (
    "Label-conditioned figures describe the cell's flips; they never redefine RAE, which stays "
    "(b_cond − c_cond) / n_cond over every retrieval-invoked task whatever the labels say."
)
STAGES_NOTE = (
    "Stages: invocation % and retrieval % over all tasks; adherence-proxy % (lexical proxy) and "
    "effective % (adherent and SE-correct) over the retrieval-invoked tasks (n_cond)."
)
GROUPS_NOTE = (
    "Groups: appropriate = appropriate adherence; problematic = misapplied/overapplied + "
    "format/interface failure; no clear adherence = ignored/independent + unclear. A group's n "
    "counts the annotated retrieval-invoked tasks in it (the flips, unless annotated with --all)."
)


def _pct(v: Any) -> str:
    return pp(v, signed=False)


def _signed(v: Any) -> str:
    return pp(v)


def _key_of(row: dict[str, Any], keys: list[str]) -> tuple[Any, ...]:
    return tuple(row[k] for k in keys)


def annotation_tables(
    cells: pd.DataFrame,
    stages: pd.DataFrame,
    summary: pd.DataFrame,
    keys: list[str],
    escape: Callable[[object], str] = str,
) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of the stage, label, reconciliation and group tables.

    Names (cells, annotators) are submitter text, written with `escape` for the output.
    """
    from hf_skillfollow.annotate._labels import GROUPS, LABELS
    from hf_skillfollow.metrics._diagnostics import slug

    labels = _label_columns(cells)
    names = {_key_of(r, keys): _label(r, labels, escape) for r in cells.to_dict("records")}
    stage_rows = [
        [_label(c, labels, escape), str(c["n_pairs"]), _pct(s["invocation_pct"]), _pct(s["retrieval_pct"]),
         _pct(s["adherence_proxy_pct"]), _pct(s["effective_pct"]), _signed(s["rae"])]
        for c, s in zip(cells.to_dict("records"), stages.to_dict("records"), strict=True)
    ]  # fmt: skip
    tables = [(
        "Stage diagnostics per cell",
        [" · ".join(labels), "n", "invocation %", "retrieval %", "adherence-proxy %", "effective %", "RAE"],
        stage_rows,
    )]  # fmt: skip
    records = summary.to_dict("records")
    dist, recon, groups = [], [], []
    for r in records:
        name = names.get(_key_of(r, keys), " · ".join(escape(r[k]) for k in keys))
        annotator = escape(r["annotator"])
        for flip in ("helpful", "harmful"):
            dist.append([name, annotator, flip,
                         *[str(r[f"{flip}_{slug(lab)}"]) for lab in LABELS],
                         str(r[f"{flip}_failed"]), str(r[f"{flip}_missing"])])  # fmt: skip
        recon.append([name, annotator, f"{r['labelled_b']} / {r['b_cond']}", f"{r['labelled_c']} / {r['c_cond']}",
                      "yes" if r["reconciled"] else f"gap b {r['gap_b']}, c {r['gap_c']}"])  # fmt: skip
        for g in GROUPS:
            s = slug(g)
            groups.append([name, annotator, g, str(r[f"b_{s}"]), str(r[f"c_{s}"]),
                           str(r[f"n_{s}"]), _signed(r[f"rae_{s}"])])  # fmt: skip
    cell_col = " · ".join(labels)
    tables += [
        ("Annotation labels over the retrieval-invoked flips",
         [cell_col, "annotator", "flip", *LABELS, "failed", "not annotated"], dist),
        ("Reconciliation: labelled flips vs the cell's b_cond / c_cond",
         [cell_col, "annotator", "labelled b / b_cond", "labelled c / c_cond", "reconciled"], recon),
        ("RAE per label group (describes, never redefines RAE)",
         [cell_col, "annotator", "group", "b", "c", "n", "RAE (pp)"], groups),
    ]  # fmt: skip
    return tables


def render_annotations(
    base: str,
    cells: pd.DataFrame,
    stages: pd.DataFrame,
    summary: pd.DataFrame,
    keys: list[str],
    fmt: str,
    width: int | None = None,
) -> str:
    """`base` is the leaderboard already rendered in `fmt` (table and Markdown forms extend it)."""
    if fmt == "json":
        return _annotations_json(base, cells, stages, summary, keys)
    if fmt == "csv":
        ids = (
            cells[keys]
            .reset_index(drop=True)
            .join(stages.drop(columns="rae"))
            .assign(rae=cells["rae"].to_numpy())
        )
        return frame_to_csv(ids.merge(summary, on=keys, how="left"))
    escape = for_markdown if fmt == "markdown" else for_terminal
    tables = annotation_tables(cells, stages, summary, keys, escape)
    notes = [STAGES_NOTE, GROUPS_NOTE, DESCRIBE_NOT_REDEFINE]
    if summary.empty:
        notes.insert(
            0, "No annotations for these cells: run `hf-skillfollow annotate` on the same sources."
        )
    if fmt == "markdown":
        parts = [base.rstrip("\n"), ""]
        for title, header, rows in tables:
            parts += [f"**{title}**", "", _md_table(header, rows), ""]
        parts += [f"{n}  " for n in notes]
        return "\n".join(parts) + "\n"
    return base + _rich(tables, notes, width)


def _annotations_json(base: str, cells: pd.DataFrame, stages: pd.DataFrame, summary: pd.DataFrame,
                      keys: list[str]) -> str:  # fmt: skip
    records = json.loads(base)
    by_cell: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in to_records(summary):
        by_cell.setdefault(_key_of(r, keys), []).append(
            {k: v for k, v in r.items() if k not in keys}
        )
    for record, cell, stage in zip(
        records, cells.to_dict("records"), to_records(stages), strict=True
    ):
        record["stages"] = {k: v for k, v in stage.items() if k != "rae"}
        record["annotations"] = by_cell.get(_key_of({k: _plain(cell[k]) for k in keys}, keys), [])
        record["annotations_note"] = DESCRIBE_NOT_REDEFINE
    return json.dumps(records, indent=2, ensure_ascii=False) + "\n"


def _rich(
    tables: list[tuple[str, list[str], list[list[str]]]], notes: list[str], width: int | None
) -> str:
    from rich.console import Console
    from rich.table import Table

    out = io.StringIO()
    console = Console(file=out, width=width or _default_width(), force_terminal=False,
                      color_system=None, highlight=False)  # fmt: skip
    for title, header, rows in tables:
        table = Table(title=title)
        for name in header:
            table.add_column(name)
        for row in rows:
            table.add_row(*row)
        console.print(table)
    for note in notes:
        console.print(note)
    return out.getvalue()


# ------------------------------------------------------------------ --correlate


CORRELATE_NOTE = (
    "Pearson r (scipy) across cells that differ only by benchmark; partial r (pingouin) controls "
    "both SD accuracies; the single-control range is the partial r controlling one SD accuracy at "
    "a time. Correlations over few cells are fragile: read n."
)


def render_correlation(result: CorrelationResult, fmt: str, width: int | None = None) -> str:
    from dataclasses import asdict

    if fmt == "json":
        data = _nan_free(asdict(result) | {"note": CORRELATE_NOTE})
        return json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"
    if fmt == "csv":
        import pandas as pd

        return frame_to_csv(pd.DataFrame(result.effects))

    def num(v: float) -> str:
        return UNDEFINED if v is None or math.isnan(v) else f"{v:.3f}"

    header = [
        "effect",
        "n",
        "Pearson r",
        "p",
        "partial r (both SD acc.)",
        "partial p",
        "single-control partial r",
        "note",
    ]
    rows = [[e["effect"], str(e["n"]), num(e["r"]), p_value(e["p"]), num(e["partial_r"]), p_value(e["partial_p"]),
             f"{num(e['single_control_min'])} … {num(e['single_control_max'])}", e["note"]] for e in result.effects]  # fmt: skip
    pair_header = ["cell A", "cell B", "n_cond A", "n_cond B", "SD acc A", "SD acc B"]
    escape = for_markdown if fmt == "markdown" else for_terminal
    pair_rows = [[escape(p["cell_a"]), escape(p["cell_b"]), str(p["n_cond_a"]), str(p["n_cond_b"]),
                  _pct(p["sd_acc_a"]), _pct(p["sd_acc_b"])] for p in result.pairs]  # fmt: skip
    excluded = [[escape(e["cells"]), escape(e["reason"])] for e in result.excluded]
    title = f"{escape(result.bench_a)} vs {escape(result.bench_b)}: {len(result.pairs)} paired cell(s) with n_cond >= {result.min_cond} on both"
    tables = [
        (title, header, rows),
        ("Paired cells", pair_header, pair_rows),
        ("Excluded cells", ["cells", "reason"], excluded),
    ]
    if fmt == "markdown":
        parts = []
        for t, h, r in tables:
            parts += [f"**{t}**", "", _md_table(h, r) if r else "_none_", ""]
        return "\n".join([*parts, CORRELATE_NOTE]) + "\n"
    return _rich(tables, [CORRELATE_NOTE], width)


def _nan_free(obj: Any) -> Any:
    """JSON has no NaN: undefined numbers become null."""
    if isinstance(obj, dict):
        return {k: _nan_free(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_nan_free(v) for v in obj]
    value = _plain(obj)
    return value

"""Render the dataset card (README.md) of a results repo from the counts of all its rows.

The card is a pure function of the rows (through their per-run counts, `_stats.py`, or the
summary kept from them, `_summary.py`, plus the repo id and licence), so it is identical on
every push that does not add data, and nobody needs to edit it by hand.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import yaml

from hf_skillfollow._escape import for_markdown, for_markdown_code
from hf_skillfollow._version import __version__
from hf_skillfollow.hub._card_cache import CARD_CELLS_PATH, CardRowCache
from hf_skillfollow.hub._columns import schema_rows
from hf_skillfollow.hub._layout import ANNOTATIONS_DIR, TRACES_DIR, TRANSITIONS_DIR
from hf_skillfollow.hub._stats import RECENT_PATH, STATS_PATH
from hf_skillfollow.hub._summary import PROTOCOL_COLUMNS, SUMMARY_PATH, CardSummary
from hf_skillfollow.schema import (
    ANNOTATIONS_SCHEMA,
    TRACES_SCHEMA,
    TRANSITIONS_SCHEMA,
)

TEMPLATE = "results_card.md.j2"


def render_card(
    stats: pa.Table | CardSummary,
    *,
    repo_id: str,
    has_traces: bool,
    license: str = "cc-by-4.0",
    tool_schemas: Mapping[str, Mapping[str, Any]] | None = None,
    space: str | None = None,
    annotations: pa.Table | None = None,
    verifications: pa.Table | None = None,
    cell_cache: CardRowCache | None = None,
    summary: CardSummary | None = None,
) -> str:
    """The full README.md text: YAML header, description, protocol, cells, loading, schema.

    `stats` are the per-(run, cell) counts of `hf_skillfollow.hub._stats.run_stats`: every
    number on the card is a function of them, so the card never needs the rows themselves.
    Without annotations and verification records, their summary (`_summary.py`) is enough;
    `summary`, when given, is that of `stats` (saves computing it again).
    `cell_cache` holds cell rows of an earlier render (`_card_cache.py`); it gains this one's.
    """
    from hf_skillfollow.hub._card_annotations import annotation_rows
    from hf_skillfollow.verify._card import rescoring_context

    has_annotations = annotations is not None and annotations.num_rows > 0
    table = stats if isinstance(stats, pa.Table) else None
    if table is None and (has_annotations or verifications is not None):
        raise ValueError("annotations and verification records need every run's counts")
    if summary is None:
        summary = stats if isinstance(stats, CardSummary) else CardSummary.of(stats, [])
    cells = cell_rows(summary, cell_cache)
    n_rows, n_cells = summary.n_rows, summary.n_cells
    rescoring = rescoring_context(table, verifications)  # table is None: there are no records
    context = {
        "front_matter": front_matter(
            repo_id,
            n_rows,
            has_traces=has_traces,
            license=license,
            has_annotations=has_annotations,
            has_verifications=verifications is not None,
        ),
        "rescoring": rescoring,
        "repo_id": repo_id,
        "pretty_name": _pretty_name(repo_id),
        "n_rows": n_rows,
        "n_runs": summary.n_runs,
        "n_cells": n_cells,
        "cell_lines": _cell_lines(cells, rescoring["marks"]),
        "cost_lines": _cost_lines(summary, cells),
        "cells_left_out": max(0, n_cells - len(cells)),
        "protocols": protocol_rows(summary, tool_schemas or {}),
        "has_traces": has_traces,
        "space": space,
        "stats_path": STATS_PATH,
        "recent_path": RECENT_PATH,
        "summary_path": SUMMARY_PATH,
        "card_cells_path": CARD_CELLS_PATH,
        "transitions_schema": schema_rows(TRANSITIONS_SCHEMA),
        "traces_schema": schema_rows(TRACES_SCHEMA),
        "has_annotations": has_annotations,
        "annotations": annotation_rows(table, annotations)
        if table is not None and has_annotations
        else [],
        "annotations_schema": schema_rows(ANNOTATIONS_SCHEMA),
        "toolkit_version": __version__,
        "license": license,
    }
    return _environment().get_template(TEMPLATE).render(**context)


def front_matter(
    repo_id: str,
    n_rows: int,
    *,
    has_traces: bool,
    license: str,
    has_annotations: bool = False,
    has_verifications: bool = False,
) -> str:
    configs: list[dict[str, Any]] = [
        {
            "config_name": "transitions",
            "default": True,
            "data_files": [{"split": "train", "path": f"{TRANSITIONS_DIR}/*.parquet"}],
        }
    ]
    if has_traces:
        configs.append(
            {
                "config_name": "traces",
                "data_files": [{"split": "train", "path": f"{TRACES_DIR}/*.parquet"}],
            }
        )
    if has_annotations:
        configs.append(
            {
                "config_name": "annotations",
                "data_files": [{"split": "train", "path": f"{ANNOTATIONS_DIR}/*.parquet"}],
            }
        )
    if has_verifications:
        from hf_skillfollow.hub._verifications import REPO_DIR

        configs.append(
            {
                "config_name": "verifications",
                "data_files": [{"split": "train", "path": f"{REPO_DIR}/*.parquet"}],
            }
        )
    meta = {
        "license": license,
        "pretty_name": _pretty_name(repo_id),
        "task_categories": ["text-generation"],
        "language": ["en"],
        "tags": [
            "skillfollow",
            "agents",
            "tool-use",
            "retrieval",
            "evaluation",
            "paired-evaluation",
        ],
        "size_categories": [size_category(n_rows)],
        "configs": configs,
    }
    return yaml.safe_dump(meta, sort_keys=False, allow_unicode=True).strip()


def size_category(n: int) -> str:
    """The Hub's size bucket for `n` rows."""
    bounds = [
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
    ]
    bounds += [(10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B")]
    for bound, label in bounds:
        if n < bound:
            return label
    return "n>1T" if n >= 10**12 else "1B<n<10B"


def _pretty_name(repo_id: str) -> str:
    return f"skillfollow results: {repo_id}"


def cell_rows(summary: CardSummary, cache: CardRowCache | None = None) -> list[dict[str, Any]]:
    """The card's cells table: the summary's listed cells (the first MAX_CARD_CELLS).

    Only cells whose counts are not in `cache` (`_card_cache.py`) are computed, so a push
    computes the cells it changed.
    """
    from hf_skillfollow.hub import _numbers
    from hf_skillfollow.hub._card_cache import cell_key

    cache = CardRowCache() if cache is None else cache
    keys = [cell_key(c.identity, c.n_runs, c.counts) for c in summary.listed]
    missing = [
        (key, c) for key, c in zip(keys, summary.listed, strict=True) if cache.get(key) is None
    ]
    if missing:
        identity = {c.key: c.identity for _, c in missing}
        computed = _numbers.compute_cell_metrics([c for _, c in missing])
        by_cell = {m.pop("cell_key"): m for m in computed}
        for key, c in missing:
            cache.put(key, _numbers.cell_display(identity[c.key] | by_cell[c.key]))
    return [cache.rows[key] for key in keys]


def _cell_lines(cells: list[dict[str, Any]], marks: Mapping[str, str]) -> list[str]:
    """The cells table's Markdown rows (built here, not in the template: a template loop
    over 200 rows of 15 filtered fields costs more than the rest of the card)."""
    md = for_markdown
    return [
        f"| {md(c['model'])} | {md(c['benchmark'])} | {md(c['partition'])} | {md(c['pool'])} "
        f"| {c['runs']} | {c['n']} | {c['errors']} | {c['n_cond']} | {c['coverage']} | {c['rae']} | {c['oae']} "
        f"| {c['delta_skip']} | {c['agg_lift']} | {c['sign_disagree']} | {c['reportable']} "
        f"| {md(marks.get(c['cell_id'], 'not re-scored'))} |"
        for c in cells
    ]


def _cost_lines(summary: CardSummary, cells: list[dict[str, Any]]) -> list[str]:
    """The cost section's Markdown rows: listed cells with traces, in the cells table's order."""
    from hf_skillfollow.hub._numbers import NA
    from hf_skillfollow.hub._summary import summed_columns
    from hf_skillfollow.metrics._own import cost_of_sums

    md, names, out = for_markdown, summed_columns(), []
    for listed, c in zip(summary.listed, cells, strict=True):
        s = dict(zip(names, listed.counts, strict=True))
        if not (s["n_se"] or s["n_sd"]):
            continue
        f = cost_of_sums(s)
        judged = s["judged_answers"] > 0
        noise = (
            [_num(f["self_disagreement"], 1, suffix=" %"), str(s["judge_ties"]),
             str(s["grading_failures"]),
             f"{s['b_explainable']} of {s['b_all']} / {s['c_explainable']} of {s['c_all']}"]
            if judged else [NA] * 4
        )  # fmt: skip
        cols = [
            md(c["model"]), md(c["benchmark"]), md(c["pool"]), c["rae"],
            f"{s['n_se']} / {s['n_sd']}", _num(f["se_tokens"]), _num(f["sd_tokens"]),
            _num(f["d_tokens"], signed=True), _num(f["se_seconds"], 2), _num(f["sd_seconds"], 2),
            _num(f["d_seconds"], 2, signed=True), *noise,
            f"{s['se_addressing']} / {s['sd_addressing']}",
        ]  # fmt: skip
        out.append("| " + " | ".join(cols) + " |")
    return out


def _num(value: float, digits: int = 0, *, signed: bool = False, suffix: str = "") -> str:
    from hf_skillfollow.hub._numbers import NA

    if value != value:  # NaN: no trace in that arm, or no repeated judge item
        return NA
    return (f"{value:+,.{digits}f}" if signed else f"{value:,.{digits}f}") + suffix


def protocol_rows(
    summary: CardSummary, tool_schemas: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Distinct protocol settings with the cells and runs that used each."""
    from hf_skillfollow.hub._numbers import tool_signature

    out = []
    for protocol in summary.protocols:
        seeds = protocol.seeds
        group: dict[str, Any] = dict(zip(PROTOCOL_COLUMNS, protocol.group, strict=True))
        group["cells"] = protocol.cells
        group["runs"] = protocol.runs
        group["seeds"] = ", ".join(map(str, seeds[:12])) + (
            f" (+{len(seeds) - 12} more)" if len(seeds) > 12 else ""
        )
        group["tool"] = tool_signature(tool_schemas.get(group["prompts_hash"]))
        out.append(group)
    return sorted(out, key=lambda g: (-g["runs"], g["prompts_hash"]))


@functools.cache
def _environment() -> Any:
    # One per process: compiling the template costs more than rendering a 200-cell card.
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    from hf_skillfollow._resources import dataset_cards_root

    env = Environment(
        loader=FileSystemLoader(str(dataset_cards_root())),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # Markdown, not HTML; values from rows go through `md` or `code`
    )
    env.filters["md"] = for_markdown
    env.filters["code"] = for_markdown_code
    return env

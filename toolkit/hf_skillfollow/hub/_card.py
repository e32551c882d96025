"""Render the dataset card (README.md) of a results repo from the counts of all its rows.

The card is a pure function of the rows (through their per-run counts, `_stats.py`, plus the
repo id and licence), so it is identical on every push that does not add data, and nobody
needs to edit it by hand.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import yaml

from hf_skillfollow._version import __version__
from hf_skillfollow.hub._card_cache import CARD_CELLS_PATH, CardRowCache
from hf_skillfollow.hub._columns import schema_rows
from hf_skillfollow.hub._layout import ANNOTATIONS_DIR, TRACES_DIR, TRANSITIONS_DIR
from hf_skillfollow.hub._stats import STATS_PATH
from hf_skillfollow.schema import (
    ANNOTATIONS_SCHEMA,
    CELL_COLUMNS,
    TRACES_SCHEMA,
    TRANSITIONS_SCHEMA,
)

TEMPLATE = "results_card.md.j2"
#: Cells listed in the card; the rest are counted and left to `hf-skillfollow report`.
MAX_CARD_CELLS = 200
_PROTOCOL_COLUMNS = (
    "prompts_hash", "tool_mode", "retrieval_policy", "retriever", "top_k", "max_calls",
    "temperature", "max_tokens", "backend",
)  # fmt: skip
_OUTCOME_COUNTS = ("a_all", "b_all", "c_all", "d_all")


def render_card(
    stats: pa.Table,
    *,
    repo_id: str,
    has_traces: bool,
    license: str = "cc-by-4.0",
    tool_schemas: Mapping[str, Mapping[str, Any]] | None = None,
    space: str | None = None,
    annotations: pa.Table | None = None,
    verifications: pa.Table | None = None,
    cell_cache: CardRowCache | None = None,
) -> str:
    """The full README.md text: YAML header, description, protocol, cells, loading, schema.

    `stats` are the per-(run, cell) counts of `hf_skillfollow.hub._stats.run_stats`: every
    number on the card is a function of them, so the card never needs the rows themselves.
    `cell_cache` holds cell rows of an earlier render (`_card_cache.py`); it gains this one's.
    """
    from hf_skillfollow.hub._card_annotations import annotation_rows
    from hf_skillfollow.verify._card import rescoring_context

    cells, n_cells = cell_rows(stats, cell_cache)
    n_rows = _n_rows(stats)
    has_annotations = annotations is not None and annotations.num_rows > 0
    context = {
        "front_matter": front_matter(
            repo_id,
            n_rows,
            has_traces=has_traces,
            license=license,
            has_annotations=has_annotations,
            has_verifications=verifications is not None,
        ),
        "rescoring": rescoring_context(stats, verifications),
        "repo_id": repo_id,
        "pretty_name": _pretty_name(repo_id),
        "n_rows": n_rows,
        "n_runs": _n_runs(stats),
        "n_cells": n_cells,
        "cells": cells,
        "cells_left_out": max(0, n_cells - len(cells)),
        "protocols": protocol_rows(stats, tool_schemas or {}),
        "has_traces": has_traces,
        "space": space,
        "stats_path": STATS_PATH,
        "card_cells_path": CARD_CELLS_PATH,
        "transitions_schema": schema_rows(TRANSITIONS_SCHEMA),
        "traces_schema": schema_rows(TRACES_SCHEMA),
        "has_annotations": has_annotations,
        "annotations": annotation_rows(stats, annotations) if has_annotations else [],
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


def _n_rows(stats: pa.Table) -> int:
    import pyarrow.compute as pc

    return sum(int(pc.sum(stats.column(c)).as_py() or 0) for c in _OUTCOME_COUNTS)


def _n_runs(stats: pa.Table) -> int:
    import pyarrow.compute as pc

    return int(pc.count_distinct(stats.column("run_id")).as_py())


def cell_rows(
    stats: pa.Table, cache: CardRowCache | None = None
) -> tuple[list[dict[str, Any]], int]:
    """The card's cells table (its first MAX_CARD_CELLS rows) and the number of cells.

    Only the cells listed are looked at: the order depends on identity columns alone, so a
    repo of 10,000 cells costs at most 200 cells. Of those, only cells whose counts are not
    in `cache` (`_card_cache.py`) are computed, so a push computes the cells it changed.
    """
    from hf_skillfollow.hub._card_cache import cell_key
    from hf_skillfollow.hub._numbers import cell_display, compute_cell_metrics
    from hf_skillfollow.metrics import COUNT_COLUMNS

    if stats.num_rows == 0:
        return [], 0
    cache = CardRowCache() if cache is None else cache
    listed, codes, starts, n_cells = _listed_cells(stats)
    identity = listed.select(list(CELL_COLUMNS)).take(starts).to_pylist()
    sums = [_sum_by(codes, listed.column(c), len(identity)) for c in COUNT_COLUMNS]
    n_runs = _distinct_runs(codes, listed.column("run_id"), len(identity))
    keys = [cell_key(m, n_runs[i], [s[i] for s in sums]) for i, m in enumerate(identity)]
    missing = {key: i for i, key in enumerate(keys) if cache.get(key) is None}
    if missing:
        import numpy as np

        # Grouped by key (as cell_id): metrics depend on counts and runs only, and the key
        # maps each result back to its cell without comparing identity values.
        rows_of_missing = np.isin(codes, list(missing.values()))
        part = listed.filter(pa.array(rows_of_missing)).select(["run_id", *COUNT_COLUMNS])
        part_keys = [keys[int(i)] for i in codes[rows_of_missing]]
        part = part.append_column("cell_id", pa.array(part_keys, pa.string()))
        for metrics in compute_cell_metrics(part, group_by=("cell_id",)):
            key = metrics.pop("cell_id")
            cache.put(key, cell_display(identity[missing[key]] | metrics))
    return [cache.rows[key] for key in keys], n_cells


def _listed_cells(stats: pa.Table) -> tuple[pa.Table, Any, Any, int]:
    """The stats rows of the first MAX_CARD_CELLS cells in the card's order.

    Returns those rows (cell by cell), each row's cell number (0 = first listed), the first
    row of each listed cell, and the number of cells in all. The order is the card's display
    key (`_numbers.cell_display_key`), then the other cell columns, which make equal keys one
    cell. Done on integer codes (a repo holds 10^4 cells; string sorts over twenty columns
    cost more than the rest of a push).
    """
    import numpy as np
    import pyarrow.compute as pc

    def text(name: str) -> pa.ChunkedArray:
        return pc.cast(stats.column(name), pa.string())

    display = [
        pc.utf8_trim_whitespace(
            pc.binary_join_element_wise(text("benchmark"), text("benchmark_version"), " ")
        ),
        stats.column("model"),
        pc.binary_join_element_wise(text("skill_pool"), text("condition"), " / "),
        pc.binary_join_element_wise(
            "seed ", text("partition_seed"), ", ", text("partition_size"), " tasks", ""
        ),
        stats.column("cell_id"),
    ]
    rest = [stats.column(c) for c in CELL_COLUMNS if c not in ("cell_id", "model")]
    key = np.zeros(stats.num_rows, dtype=np.int64)
    span = 1
    for column, ordered in [*((c, True) for c in display), *((c, False) for c in rest)]:
        codes, n_values = _codes(column, ordered)
        if span * n_values >= 2**62:  # renumber densely, keeping the order
            key = np.unique(key, return_inverse=True)[1].astype(np.int64)
            span = int(key.max()) + 1
        key = key * n_values + codes
        span *= n_values
    order = np.argsort(key, kind="stable")
    ordered_key = key[order]
    starts = np.flatnonzero(np.r_[True, ordered_key[1:] != ordered_key[:-1]])
    n_cells = len(starts)
    end = int(starts[MAX_CARD_CELLS]) if n_cells > MAX_CARD_CELLS else stats.num_rows
    starts = starts[:MAX_CARD_CELLS]
    codes = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, end)))
    return stats.take(pa.array(order[:end])), codes, starts, n_cells


def _codes(column: pa.ChunkedArray, ordered: bool) -> tuple[Any, int]:
    """Integer code of each value and the number of values; with `ordered`, codes follow the
    values' sort order (strings by code point, as Python compares them)."""
    import numpy as np
    import pyarrow.compute as pc

    encoded = column.combine_chunks().dictionary_encode()
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    n_values = len(encoded.dictionary)
    if ordered:
        rank = np.empty(n_values, dtype=np.int64)
        rank[pc.sort_indices(encoded.dictionary).to_numpy()] = np.arange(n_values)
        codes = rank[codes]
    return codes, max(n_values, 1)


def _sum_by(codes: Any, column: pa.ChunkedArray, n: int) -> Any:
    import numpy as np

    total = np.zeros(n, dtype=np.int64)
    np.add.at(total, codes, column.to_numpy().astype(np.int64, copy=False))
    return total


def _distinct_runs(codes: Any, run_ids: pa.ChunkedArray, n: int) -> Any:
    """Distinct run ids per cell code (a run holds one stats row per cell, but count safely)."""
    import numpy as np

    runs = run_ids.combine_chunks().dictionary_encode().indices.to_numpy(zero_copy_only=False)
    span = int(runs.max(initial=0)) + 1
    pairs = np.unique(codes.astype(np.int64) * span + runs)
    return np.bincount(pairs // span, minlength=n)


def protocol_rows(
    stats: pa.Table, tool_schemas: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Distinct protocol settings with the cells and runs that used each."""
    from hf_skillfollow.hub._numbers import tool_signature

    grouped = stats.group_by(list(_PROTOCOL_COLUMNS), use_threads=False).aggregate(
        [("cell_id", "count_distinct"), ("run_id", "count_distinct"), ("seed", "distinct")]
    )
    out = []
    for row in grouped.to_pylist():
        seeds = sorted(row.pop("seed_distinct"))
        group = {c: row[c] for c in _PROTOCOL_COLUMNS}
        group["cells"] = row["cell_id_count_distinct"]
        group["runs"] = row["run_id_count_distinct"]
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
        autoescape=False,  # Markdown, not HTML; cell values are escaped with the `md` filter
    )
    env.filters["md"] = _md_cell
    return env


def _md_cell(value: object) -> str:
    """Make a value safe inside a Markdown table cell."""
    text = "" if value is None else str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")

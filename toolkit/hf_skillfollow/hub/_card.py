"""Render the dataset card (README.md) of a results repo from all of its transitions rows.

The card is a pure function of the rows (plus the repo id and licence), so it is identical
on every push that does not add data, and nobody needs to edit it by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import yaml

from hf_skillfollow._version import __version__
from hf_skillfollow.hub._columns import schema_rows
from hf_skillfollow.hub._layout import TRACES_DIR, TRANSITIONS_DIR
from hf_skillfollow.schema import TRACES_SCHEMA, TRANSITIONS_SCHEMA

TEMPLATE = "results_card.md.j2"
#: Cells listed in the card; the rest are counted and left to `hf-skillfollow report`.
MAX_CARD_CELLS = 200
_PROTOCOL_COLUMNS = (
    "prompts_hash", "tool_mode", "retrieval_policy", "retriever", "top_k", "max_calls",
    "temperature", "max_tokens", "backend",
)  # fmt: skip
_RUN_COLUMNS = ("cell_id", "seed", *_PROTOCOL_COLUMNS)


def render_card(
    transitions: pa.Table,
    *,
    repo_id: str,
    has_traces: bool,
    license: str = "cc-by-4.0",
    tool_schemas: Mapping[str, Mapping[str, Any]] | None = None,
    verifications: pa.Table | None = None,
) -> str:
    """The full README.md text: YAML header, description, protocol, cells, loading, schema."""
    from hf_skillfollow.verify._card import rescoring_context

    runs = _run_rows(transitions)
    cells = cell_rows(transitions)
    rescoring = rescoring_context(transitions, verifications)
    context = {
        "front_matter": front_matter(
            repo_id,
            transitions.num_rows,
            has_traces=has_traces,
            license=license,
            has_verifications=verifications is not None,
        ),
        "rescoring": rescoring,
        "repo_id": repo_id,
        "pretty_name": _pretty_name(repo_id),
        "n_rows": transitions.num_rows,
        "n_runs": len(runs),
        "n_cells": len(cells),
        "cells": cells[:MAX_CARD_CELLS],
        "cells_left_out": max(0, len(cells) - MAX_CARD_CELLS),
        "protocols": protocol_rows(runs, tool_schemas or {}),
        "has_traces": has_traces,
        "transitions_schema": schema_rows(TRANSITIONS_SCHEMA),
        "traces_schema": schema_rows(TRACES_SCHEMA),
        "toolkit_version": __version__,
        "license": license,
    }
    return _environment().get_template(TEMPLATE).render(**context)


def front_matter(
    repo_id: str, n_rows: int, *, has_traces: bool, license: str, has_verifications: bool = False
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


def _run_rows(transitions: pa.Table) -> list[dict[str, Any]]:
    """One dict per run with its protocol columns (constant within a run)."""
    grouped = transitions.group_by("run_id", use_threads=False).aggregate(
        [(c, "first") for c in _RUN_COLUMNS]
    )
    rows = [
        {c: row[f"{c}_first"] for c in _RUN_COLUMNS} | {"run_id": row["run_id"]}
        for row in grouped.to_pylist()
    ]
    return sorted(rows, key=lambda r: (r["cell_id"], r["run_id"]))


def cell_rows(transitions: pa.Table) -> list[dict[str, Any]]:
    """Display rows of the cells table: headline numbers computed from the rows."""
    from hf_skillfollow.hub._numbers import cell_display, compute_cell_metrics

    rows = [cell_display(m) for m in compute_cell_metrics(transitions)]
    return sorted(
        rows, key=lambda r: (r["benchmark"], r["model"], r["pool"], r["partition"], r["cell_id"])
    )


def protocol_rows(
    runs: list[dict[str, Any]], tool_schemas: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Distinct protocol settings with the cells and runs that used each."""
    from hf_skillfollow.hub._numbers import tool_signature

    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for run in runs:
        key = tuple(run[c] for c in _PROTOCOL_COLUMNS)
        group = groups.setdefault(
            key,
            {c: run[c] for c in _PROTOCOL_COLUMNS} | {"cells": set(), "runs": 0, "seeds": set()},
        )
        group["cells"].add(run["cell_id"])
        group["runs"] += 1
        group["seeds"].add(run["seed"])
    out = []
    for group in groups.values():
        seeds = sorted(group.pop("seeds"))
        group["cells"] = len(group["cells"])
        group["seeds"] = ", ".join(map(str, seeds[:12])) + (
            f" (+{len(seeds) - 12} more)" if len(seeds) > 12 else ""
        )
        group["tool"] = tool_signature(tool_schemas.get(group["prompts_hash"]))
        out.append(group)
    return sorted(out, key=lambda g: (-g["runs"], g["prompts_hash"]))


def _environment() -> Any:
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

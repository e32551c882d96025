"""Headline numbers and display strings for the card, computed with hf_skillfollow.metrics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from hf_skillfollow.formatting import UNDEFINED as NA
from hf_skillfollow.formatting import count as _int
from hf_skillfollow.formatting import not_reported
from hf_skillfollow.formatting import pp as _pp
from hf_skillfollow.formatting import with_interval as _with_interval

# The card's order of cells lives with the summary that lists them: this module imports
# _summary, never the other way round.
from hf_skillfollow.hub._summary import ListedCell, cell_display_key

#: Fixed so that the card (and its bootstrap intervals) is identical on every regeneration.
CARD_BOOTSTRAP_SEED = 0


def compute_cell_metrics(cells: Sequence[ListedCell]) -> list[dict[str, Any]]:
    """One metrics record per cell, in order, from its summed counts and runs (`cell_key`
    names the cell in each record)."""
    from hf_skillfollow.metrics import COUNT_COLUMNS, compute_cells_from_sums

    sums = {name: [cell.counts[i] for cell in cells] for i, name in enumerate(COUNT_COLUMNS)}
    return _records(
        compute_cells_from_sums(
            {"cell_key": [cell.key for cell in cells]},
            sums,
            [cell.n_runs for cell in cells],
            seed=CARD_BOOTSTRAP_SEED,
        )
    )


def _records(result: Any) -> list[dict[str, Any]]:
    if isinstance(result, pa.Table):
        return result.to_pylist()
    if hasattr(result, "to_dict"):  # pandas DataFrame
        return [_plain(r) for r in result.to_dict("records")]
    return [dict(r) for r in result]


def _plain(record: Mapping[str, Any]) -> dict[str, Any]:
    # pandas gives NaN for undefined floats; the card shows them as n/a like None.
    return {k: (None if isinstance(v, float) and v != v else v) for k, v in record.items()}


def cell_display(m: Mapping[str, Any]) -> dict[str, Any]:
    """One row of the card's cells table."""
    benchmark, model, pool, partition, cell_id = cell_display_key(m)
    heavy = bool(m.get("error_heavy"))
    hidden = not_reported(m.get("error_rate"))
    return {
        "cell_id": cell_id,
        "model": model,
        "benchmark": benchmark,
        "partition": partition,
        "pool": pool,
        "runs": _int(m.get("n_runs")),
        "n": _int(m.get("n_pairs")),
        "errors": f"{_pp(m.get('error_rate'), signed=False)}%" + (" **error-heavy**" if heavy else ""),
        "n_cond": _int(m.get("n_cond")),
        "coverage": _pp(m.get("coverage"), signed=False),
        "rae": hidden if heavy else _with_interval(m.get("rae"), m.get("rae_ci_low"), m.get("rae_ci_high")),
        "oae": hidden if heavy else _with_interval(m.get("oae"), m.get("oae_ci_low"), m.get("oae_ci_high")),
        "delta_skip": _pp(m.get("delta_skip")),
        "agg_lift": _pp(m.get("agg_lift")),
        "sign_disagree": _flag(m),
        "reportable": "yes" if m.get("reportable") else "no",
    }


def _flag(m: Mapping[str, Any]) -> str:
    if not m.get("reportable") or m.get("agg_lift") is None or m.get("rae") is None:
        return NA  # excluded from disagreement counts (docs/design.md, "Metrics")
    return "**yes**" if m.get("sign_disagree") else "no"


def tool_signature(schema: Mapping[str, Any] | None) -> str | None:
    """`search_skills(query: string, types?: array<utility|procedure|guard>)` from a tool schema."""
    if not schema:
        return None
    function = schema.get("function", schema)
    params = function.get("parameters", {})
    required = set(params.get("required", []))
    parts = [
        f"{name}{'' if name in required else '?'}: {_json_type(spec)}"
        for name, spec in params.get("properties", {}).items()
    ]
    return f"{function.get('name', '?')}({', '.join(parts)})"


def _json_type(spec: Mapping[str, Any]) -> str:
    if "enum" in spec:
        return "|".join(map(str, spec["enum"]))
    if spec.get("type") == "array":
        return f"array<{_json_type(spec.get('items', {}))}>"
    return str(spec.get("type", "any"))


def known_tool_schemas() -> dict[str, dict[str, Any]]:
    """prompts_hash -> (first) tool schema for the prompts this toolkit version itself uses."""
    try:
        from hf_skillfollow.benchmarks import DOMAINS
        from hf_skillfollow.prompts import prompts_hash, protocol_tools
    except ImportError:
        return {}
    return {
        prompts_hash(domain, access): protocol_tools(access)[0]
        for domain in DOMAINS
        for access in ("search", "catalog")
    }

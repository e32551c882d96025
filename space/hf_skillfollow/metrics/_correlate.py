"""Cross-benchmark correlation of cell effects: pure computation, no I/O.

Cells are paired when they differ only by benchmark: equal on every cell column except
`cell_id`, `benchmark`, `benchmark_version` and the domain-determined `skill_pool`,
`skill_pool_hash` and `prompts_hash`. Pearson r comes from scipy, partial r from pingouin.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

#: Cell columns that may differ between paired cells.
BENCHMARK_DEPENDENT = frozenset(
    {"cell_id", "benchmark", "benchmark_version", "skill_pool", "skill_pool_hash", "prompts_hash"}
)
#: Effects correlated, as (cells column, display name).
EFFECTS: tuple[tuple[str, str], ...] = (
    ("agg_lift", "aggregate lift"),
    ("oae", "OAE"),
    ("rae", "RAE"),
)


@dataclass
class CorrelationResult:
    """Paired cells, one row per effect, and the cells left out with the reason."""

    bench_a: str
    bench_b: str
    min_cond: int
    pairs: list[dict[str, Any]] = field(default_factory=list)
    effects: list[dict[str, Any]] = field(default_factory=list)
    excluded: list[dict[str, Any]] = field(default_factory=list)


def sd_accuracy(cells: pd.DataFrame) -> pd.Series:
    """SD accuracy (%) of each cell over all its tasks: (a + c) / n."""
    return 100.0 * (cells["a_all"] + cells["c_all"]) / cells["n_pairs"].where(cells["n_pairs"] > 0)


def correlate(
    cells: pd.DataFrame, bench_a: str, bench_b: str, *, min_cond: int
) -> CorrelationResult:
    """Pair the cells of `bench_a` and `bench_b`, keep pairs with n_cond >= min_cond on both,
    and correlate aggregate lift, OAE and RAE across the pairs."""
    from hf_skillfollow.report import identity_columns

    if bench_a == bench_b:
        raise ValueError(f"--correlate: give two different benchmarks, got {bench_a!r} twice")
    present = set(cells["benchmark"])
    for bench in (bench_a, bench_b):
        if bench not in present:
            raise ValueError(
                f"--correlate: no cell of benchmark {bench!r} (have {sorted(present)})"
            )
    key_cols = [c for c in identity_columns(cells) if c not in BENCHMARK_DEPENDENT]
    result = CorrelationResult(bench_a, bench_b, int(min_cond))
    cells = cells.assign(_sd_acc=sd_accuracy(cells))
    sides = {b: cells[cells["benchmark"] == b] for b in (bench_a, bench_b)}
    grouped = {
        b: {k: g for k, g in side.groupby(key_cols, dropna=False, sort=True)}
        for b, side in sides.items()
    }
    for key in sorted(set(grouped[bench_a]) | set(grouped[bench_b]), key=str):
        a, b = grouped[bench_a].get(key), grouped[bench_b].get(key)
        reason = _exclusion(a, b, bench_a, bench_b, min_cond)
        ids = [str(x) for g in (a, b) if g is not None for x in g["cell_id"]]
        if reason:
            result.excluded.append({"cells": ", ".join(ids), "reason": reason})
            continue
        ra, rb = a.iloc[0], b.iloc[0]
        pair = {"cell_a": ra["cell_id"], "cell_b": rb["cell_id"], "model": ra.get("model"),
                "n_cond_a": int(ra["n_cond"]), "n_cond_b": int(rb["n_cond"]),
                "sd_acc_a": float(ra["_sd_acc"]), "sd_acc_b": float(rb["_sd_acc"])}  # fmt: skip
        for col, _ in EFFECTS:
            pair[f"{col}_a"], pair[f"{col}_b"] = float(ra[col]), float(rb[col])
        result.pairs.append(pair)
    result.effects = [_effect_row(result.pairs, col, name) for col, name in EFFECTS]
    return result


def _exclusion(a: Any, b: Any, bench_a: str, bench_b: str, min_cond: int) -> str | None:
    for side, bench, other in ((a, bench_a, bench_b), (b, bench_b, bench_a)):
        if side is None:
            return f"no matching {bench} cell for this {other} cell"
        if len(side) > 1:
            return f"{len(side)} {bench} cells match one configuration (pooled differently?)"
    short = [f"{bench} n_cond {int(s['n_cond'].iloc[0])} < {min_cond}"
             for s, bench in ((a, bench_a), (b, bench_b)) if int(s["n_cond"].iloc[0]) < min_cond]  # fmt: skip
    return "; ".join(short) or None


def _effect_row(pairs: list[dict[str, Any]], col: str, name: str) -> dict[str, Any]:
    import numpy as np
    import pandas as pd

    frame = pd.DataFrame(pairs, columns=[f"{col}_a", f"{col}_b", "sd_acc_a", "sd_acc_b"]).rename(
        columns={f"{col}_a": "x", f"{col}_b": "y"}
    )
    frame = frame.replace([np.inf, -np.inf], np.nan).dropna()
    row: dict[str, Any] = {"effect": name, "n": len(frame), "r": math.nan, "p": math.nan,
                           "partial_r": math.nan, "partial_p": math.nan,
                           "single_control_min": math.nan, "single_control_max": math.nan, "note": ""}  # fmt: skip
    if len(frame) < 3 or frame["x"].nunique() < 2 or frame["y"].nunique() < 2:
        row["note"] = "needs >= 3 pairs with varying values"
        return row
    from scipy import stats

    pearson = stats.pearsonr(frame["x"], frame["y"])
    row["r"], row["p"] = float(pearson.statistic), float(pearson.pvalue)
    # Two covariates leave n - 4 degrees of freedom; pingouin needs at least one.
    if len(frame) < 5:
        row["note"] = "partial r needs >= 5 pairs"
        return row
    both = _partial(frame, ["sd_acc_a", "sd_acc_b"])
    singles = [_partial(frame, [c])[0] for c in ("sd_acc_a", "sd_acc_b")]
    row["partial_r"], row["partial_p"] = both
    finite = [s for s in singles if not math.isnan(s)]
    if finite:
        row["single_control_min"], row["single_control_max"] = min(finite), max(finite)
    return row


def _partial(frame: pd.DataFrame, covar: list[str]) -> tuple[float, float]:
    import pingouin

    if any(frame[c].nunique() < 2 for c in covar):
        return math.nan, math.nan
    out = pingouin.partial_corr(data=frame, x="x", y="y", covar=covar, method="pearson")
    p_column = "p_val" if "p_val" in out.columns else "p-val"  # renamed in pingouin 0.7
    return float(out["r"].iloc[0]), float(out[p_column].iloc[0])

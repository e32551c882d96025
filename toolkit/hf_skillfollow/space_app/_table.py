"""Filtering, sorting and formatting the precomputed cells for the leaderboard table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hf_skillfollow.space_app._board import DEFAULT_MIN_COND, THRESHOLDS

#: Rows sent to the browser, which re-serialises and lays out all of them on every filter
#: change (bench/space.py); the summary gives the match count and the CSV holds every row.
MAX_TABLE_ROWS = 200
DISAGREE_MARK = "⚠ disagree"

#: (header, source column, kind) in display order; kind: text, int, pct, p.
COMPACT: tuple[tuple[str, str, str], ...] = (
    ("Sign", "_flag", "text"),
    ("Re-scored", "rescored", "text"),
    ("Model", "model", "text"),
    ("Benchmark", "benchmark", "text"),
    ("Partition", "partition", "text"),
    ("Pool / condition", "pool_condition", "text"),
    ("Runs", "n_runs", "int"),
    ("n", "n_pairs", "int"),
    ("n_cond", "n_cond", "int"),
    ("Coverage %", "coverage", "pct"),
    ("RAE", "rae", "pct"),
    ("RAE 95% CI", "_rae_ci", "text"),
    ("McNemar p", "mcnemar_p", "p"),
    ("OAE", "oae", "pct"),
    ("OAE 95% CI", "_oae_ci", "text"),
    ("Δskip", "delta_skip", "pct"),
    ("Agg lift", "agg_lift", "pct"),
    ("Δselect", "delta_select", "pct"),
    ("b", "b_cond", "int"),
    ("c", "c_cond", "int"),
    ("Reportable", "_reportable", "text"),
    ("cell_id", "cell_id", "text"),
)
RUN_COLUMN = ("run_id", "run_id", "text")
#: Sort choices shown in the UI: header -> source column.
SORTABLE: dict[str, str] = {h: src for h, src, kind in COMPACT if kind != "text"} | {
    "Model": "model",
    "Benchmark": "benchmark",
    "RAE 95% CI": "rae_ci_low",
    "OAE 95% CI": "oae_ci_low",
}


@dataclass(frozen=True)
class Filters:
    benchmarks: tuple[str, ...] = ()
    partitions: tuple[str, ...] = ()
    pools: tuple[str, ...] = ()
    model_query: str = ""
    min_cond: int = DEFAULT_MIN_COND
    show_nonreportable: bool = False
    sort_by: str = "RAE"
    descending: bool = True
    rescored_only: bool = False


def apply_filters(cells: pd.DataFrame, f: Filters) -> pd.DataFrame:
    """The filtered, sorted cells with `_flag`/`_reportable` set for the chosen threshold."""
    mask = _base_mask(cells, f)
    if not f.show_nonreportable:
        mask &= cells[f"_rep_{f.min_cond}"].to_numpy(dtype=bool)
    positions = np.flatnonzero(mask)
    key = cells[SORTABLE.get(f.sort_by, "rae")].to_numpy()[positions]
    out = cells.take(positions[_order(key, f.descending)])
    out["_flag"] = np.where(out[f"_dis_{f.min_cond}"].to_numpy(dtype=bool), DISAGREE_MARK, "")
    out["_reportable"] = np.where(out[f"_rep_{f.min_cond}"].to_numpy(dtype=bool), "yes", "no")
    return out


def _order(key: np.ndarray, descending: bool) -> np.ndarray:
    """Stable sort order with missing values last in either direction."""
    if key.dtype.kind in "biuf":
        values = key.astype(float)
        missing = np.isnan(values)
        primary = -values if descending else values
        return np.lexsort((np.where(missing, 0.0, primary), missing))
    text = np.array(["" if v is None else str(v) for v in key], dtype=object)
    order = np.argsort(text, kind="stable")
    return order[::-1] if descending else order


def _base_mask(cells: pd.DataFrame, f: Filters) -> np.ndarray:
    """Every filter except the reportability cut, which the sensitivity table varies itself."""
    if f.min_cond not in THRESHOLDS:
        raise ValueError(f"min n_cond must be one of {THRESHOLDS}, got {f.min_cond}")
    mask = np.ones(len(cells), dtype=bool)
    for values, column in (
        (f.benchmarks, "benchmark"),
        (f.partitions, "partition"),
        (f.pools, "pool_condition"),
    ):
        if values:
            mask &= cells[column].isin(values).to_numpy()
    if f.rescored_only:
        mask &= cells["_rescored"].to_numpy(dtype=bool)
    query = f.model_query.strip().lower()
    if query:
        mask &= cells["_model_lc"].str.contains(query, regex=False).to_numpy()
    return mask


def sensitivity(cells: pd.DataFrame, f: Filters) -> pd.DataFrame:
    """Reportable cells and sign disagreements at each n_cond threshold, under the other filters."""
    from hf_skillfollow.metrics import disagreement_sensitivity

    table = disagreement_sensitivity(cells[_base_mask(cells, f)], thresholds=THRESHOLDS)
    rate = table["disagreement_rate"].map(lambda v: "—" if pd.isna(v) else f"{v:.1f}%")
    return pd.DataFrame(
        {
            "min n_cond": table["min_cond"],
            "reportable cells": table["reportable"],
            "with defined agg lift": table["with_agg_lift"],
            "sign disagreements": table["disagreements"],
            "share": rate,
        }
    )


def display_frame(
    filtered: pd.DataFrame, *, runs_separately: bool, all_columns: bool, limit: int = MAX_TABLE_ROWS
) -> pd.DataFrame:
    """Rename and round for the table; `all_columns` appends every raw metric and identity column."""
    spec = list(COMPACT) + ([RUN_COLUMN] if runs_separately else [])
    head = filtered.head(limit)
    out = pd.DataFrame({header: _format(head[src], kind) for header, src, kind in spec})
    if all_columns:
        shown = {src for _, src, _ in spec}
        for column in head.columns:
            if column not in shown and not column.startswith("_") and column not in _NOT_IN_ALL:
                out[column] = _format(
                    head[column], "pct" if head[column].dtype.kind == "f" else "raw"
                )
    return out.reset_index(drop=True)


# Labels are derived; `reportable`/`sign_disagree` from compute_cells hold the default
# threshold only, so the table and CSV show the flags at the chosen threshold instead.
_NOT_IN_ALL = {"label", "partition", "pool_condition", "reportable", "sign_disagree"}


def csv_frame(filtered: pd.DataFrame, min_cond: int) -> pd.DataFrame:
    """Every filtered row with raw (unrounded) values, flags at the chosen threshold."""
    keep = [
        c for c in filtered.columns if not c.startswith("_") and c not in _NOT_IN_ALL - {"label"}
    ]
    out = filtered[keep].copy()
    out["min_cond"] = min_cond
    out["reportable"] = filtered[f"_rep_{min_cond}"].to_numpy(dtype=bool)
    out["sign_disagree"] = filtered[f"_dis_{min_cond}"].to_numpy(dtype=bool)
    return out


def datatypes(frame: pd.DataFrame) -> list[str]:
    return ["number" if frame[c].dtype.kind in "fiu" else "str" for c in frame.columns]


def _format(column: pd.Series, kind: str) -> pd.Series:
    if kind == "pct":
        return pd.to_numeric(column, errors="coerce").round(2)
    if kind == "p":
        return pd.to_numeric(column, errors="coerce").map(
            lambda v: float(f"{v:.3g}") if pd.notna(v) else np.nan
        )
    if kind == "int":
        return pd.to_numeric(column, errors="coerce").astype("Int64")
    if kind == "text":
        return column.fillna("").astype(str)
    return column


def markdown_table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "_no rows_"
    header = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *body])


def summary_markdown(cells: pd.DataFrame, filtered: pd.DataFrame, f: Filters, shown: int) -> str:
    t = f.min_cond
    disagree = int(filtered[f"_dis_{t}"].sum()) if len(filtered) else 0
    reportable = int(filtered[f"_rep_{t}"].sum()) if len(filtered) else 0
    more = f" (first {shown:,} in the table; the CSV holds all)" if shown < len(filtered) else ""
    return (
        f"**{len(filtered):,}** of {len(cells):,} cells match{more} · **{reportable:,}** reportable at n_cond ≥ {t} · "
        f"**{disagree:,}** sign disagreement(s) {DISAGREE_MARK}\n\n"
        f"How the disagreements change with the n_cond threshold (other filters applied):\n\n"
        + markdown_table(sensitivity(cells, f))
    )


def choices(cells: pd.DataFrame, column: str) -> list[str]:
    return sorted(str(v) for v in cells[column].dropna().unique())


def parse_threshold(value: object) -> int:
    try:
        return int(str(value))
    except ValueError:
        raise ValueError(f"min n_cond must be one of {THRESHOLDS}, got {value!r}") from None


def as_tuple(values: Sequence[str] | str | None) -> tuple[str, ...]:
    if values is None:
        return ()
    return (values,) if isinstance(values, str) else tuple(values)

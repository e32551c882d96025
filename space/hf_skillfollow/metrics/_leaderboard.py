"""One row of paired metrics per cell: the leaderboard the report, card and Space show."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any

import numpy as np

from hf_skillfollow.metrics import _effects, _frame, _pooling
from hf_skillfollow.metrics._bootstrap import paired_bootstrap_ci
from hf_skillfollow.metrics._counts import CellCounts, count_cells
from hf_skillfollow.metrics._mcnemar import mcnemar_exact

if TYPE_CHECKING:
    import pandas as pd

ADHERENCE_UNKNOWN = "adherence not recorded for some retrieval-invoked task(s)"
#: The per-cell counts every metric is a function of (the fields of CellCounts).
COUNT_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(CellCounts))

#: Metric columns, in output order, after the group's identity columns.
METRIC_COLUMNS: tuple[str, ...] = (
    "n_runs", "n_pairs", "n_cond", "n_skip", "n_invoked", "coverage", "invocation",
    "a_all", "b_all", "c_all", "d_all", "a_cond", "b_cond", "c_cond", "d_cond",
    "oae", "oae_ci_low", "oae_ci_high", "rae", "rae_ci_low", "rae_ci_high", "rae_reason",
    "mcnemar_p", "mcnemar_p_all", "delta_skip", "delta_skip_reason",
    "agg_lift", "agg_lift_reason", "delta_select", "delta_select_reason",
    "n_adherent", "n_effective", "adherence", "effective", "adherence_reason",
    "reportable", "sign_disagree", "n_errored", "error_rate", "error_heavy",
)  # fmt: skip
#: Share of a cell's pairs (percent) that may end in a provider error before the cell is
#: error-heavy: not reportable, its effects not shown as measured (docs/design.md).
MAX_ERROR_RATE = 5.0


def compute_cells(
    data: Any,
    *,
    group_by: Sequence[str] | None = None,
    pool_runs: bool = True,
    min_cond: int = 10,
    resamples: int = 20_000,
    seed: int = 0,
    confidence: float = 0.95,
    intervals: bool = True,
    max_error_rate: float = MAX_ERROR_RATE,
) -> pd.DataFrame:
    """Paired metrics per cell from transitions rows (a pyarrow Table or pandas DataFrame).

    Rows of config-identical runs are pooled by summing counts (``pool_runs=False`` keeps
    each run apart). Rates are in percentage points; undefined ones are NaN with a reason.
    ``intervals=False`` leaves the bootstrap interval columns NaN, to be filled later (for
    some cells first) by `cell_intervals`, which gives the very values computed here.
    """

    if int(min_cond) < 0:
        raise ValueError(f"min_cond must be >= 0, got {min_cond}")
    keys = _pooling.group_columns(group_by, pool_runs)
    groups, counts, identity = _grouped_counts(data, keys, (*keys, "run_id"))
    return _cells_frame(
        identity,
        counts,
        groups.n_runs,
        min_cond=min_cond,
        max_error_rate=max_error_rate,
        resamples=resamples,
        seed=seed,
        confidence=confidence,
        intervals=intervals,
    )


def _grouped_counts(data: Any, keys: Sequence[str], identity_columns: Sequence[str]) -> Any:
    """Rows grouped by `keys`: the groups, their outcome counts and each group's identity."""
    _frame.require_columns(data, identity_columns, "identity")
    _frame.require_columns(data, _frame.REQUIRED_OUTCOMES, "outcome")
    groups = _pooling.make_groups(data, keys)
    counts = _count(data, groups)
    return groups, counts, {k: _frame.take(data, k, groups.first_row) for k in keys}


def cell_counts(data: Any, *, group_by: Sequence[str] | None = None) -> pd.DataFrame:
    """Outcome counts per (cell, run): the group's identity columns, `run_id` and COUNT_COLUMNS.

    These counts are sufficient for every metric: `compute_cells_from_counts` over them (or
    over any concatenation of them) equals `compute_cells` over the rows they came from.
    """
    import pandas as pd

    keys = _pooling.group_columns(group_by, pool_runs=False)
    _, counts, identity = _grouped_counts(data, keys, keys)
    return pd.DataFrame({**identity, **{c: getattr(counts, c) for c in COUNT_COLUMNS}})


def compute_cells_from_counts(
    counts: Any,
    *,
    group_by: Sequence[str] | None = None,
    pool_runs: bool = True,
    min_cond: int = 10,
    resamples: int = 20_000,
    seed: int = 0,
    confidence: float = 0.95,
    max_error_rate: float = MAX_ERROR_RATE,
) -> pd.DataFrame:
    """`compute_cells` from `cell_counts` rows (a pandas DataFrame or pyarrow Table).

    Counts are summed per cell and runs counted by distinct `run_id`, then the same metrics.
    """
    keys = _pooling.group_columns(group_by, pool_runs)
    _frame.require_columns(counts, (*keys, "run_id"), "identity")
    _frame.require_columns(counts, COUNT_COLUMNS, "count")
    groups = _pooling.make_groups(counts, keys)
    summed = []
    for name in COUNT_COLUMNS:
        total = np.zeros(groups.n_groups, dtype=np.int64)
        np.add.at(total, groups.codes, _frame.int_column(counts, name))
        summed.append(total)
    identity = {k: _frame.take(counts, k, groups.first_row) for k in keys}
    return compute_cells_from_sums(
        identity,
        dict(zip(COUNT_COLUMNS, summed, strict=True)),
        groups.n_runs,
        min_cond=min_cond,
        resamples=resamples,
        seed=seed,
        confidence=confidence,
        max_error_rate=max_error_rate,
    )


def compute_cells_from_sums(
    identity: dict[str, list[Any]],
    sums: dict[str, Any],
    n_runs: Any,
    *,
    min_cond: int = 10,
    resamples: int = 20_000,
    seed: int = 0,
    confidence: float = 0.95,
    max_error_rate: float = MAX_ERROR_RATE,
) -> pd.DataFrame:
    """`compute_cells` from counts already summed per cell: one entry per cell in `identity`
    (column -> values), `sums` (each of COUNT_COLUMNS -> values) and `n_runs`."""
    if int(min_cond) < 0:
        raise ValueError(f"min_cond must be >= 0, got {min_cond}")
    cell = CellCounts(*(np.asarray(sums[c], dtype=np.int64) for c in COUNT_COLUMNS))
    return _cells_frame(
        identity,
        cell,
        np.asarray(n_runs, dtype=np.int64),
        min_cond=min_cond,
        max_error_rate=max_error_rate,
        resamples=resamples,
        seed=seed,
        confidence=confidence,
    )


def _cells_frame(
    identity: dict[str, list[Any]],
    counts: CellCounts,
    n_runs: np.ndarray,
    *,
    min_cond: int,
    max_error_rate: float = MAX_ERROR_RATE,
    **boot: Any,
) -> pd.DataFrame:
    import pandas as pd

    metrics = _metrics(counts, n_runs, **boot)
    # a cell whose pairs are mostly provider errors measured the endpoint, not the skills
    metrics["n_errored"] = counts.n_errored
    metrics["error_rate"] = _effects.share(counts.n_errored, counts.n_pairs).value
    metrics["error_heavy"] = np.nan_to_num(metrics["error_rate"], nan=0.0) > float(max_error_rate)
    metrics["reportable"] = (counts.n_cond >= int(min_cond)) & ~metrics["error_heavy"]
    rae, lift = metrics["rae"], metrics["agg_lift"]
    with np.errstate(invalid="ignore"):
        metrics["sign_disagree"] = (
            metrics["reportable"] & ~np.isnan(lift) & ~np.isnan(rae) & (lift * rae < 0)
        )
    frame = pd.DataFrame({**identity, **{c: metrics[c] for c in METRIC_COLUMNS}})
    return frame.sort_values(list(identity), kind="stable", ignore_index=True)


def _count(data: Any, groups: _pooling.Groups) -> CellCounts:
    adherence, known = (
        _frame.nullable_bool_column(data, "adherence")
        if "adherence" in _frame.column_names(data)
        else (np.zeros(_frame.n_rows(data), bool), np.zeros(_frame.n_rows(data), bool))
    )
    return count_cells(
        groups.codes,
        groups.n_groups,
        se=_frame.bool_column(data, "se_correct"),
        sd=_frame.bool_column(data, "sd_correct"),
        returned=_frame.bool_column(data, "returned"),
        invoked=_frame.bool_column(data, "invoked"),
        adherence=adherence,
        adherence_known=known,
        errored=_frame.nonempty_column(data, "se_error") | _frame.nonempty_column(data, "sd_error"),
    )


def _metrics(
    counts: CellCounts, n_runs: np.ndarray, *, intervals: bool = True, **boot: Any
) -> dict[str, np.ndarray]:
    k = counts
    n_pairs, n_cond, n_skip = k.n_pairs, k.n_cond, k.n_skip
    oae = _effects.oae(k.b_all, k.c_all, n_pairs)
    rae = _effects.rae(k.b_cond, k.c_cond, n_cond)
    skip = _effects.delta_skip(k.skip("b"), k.skip("c"), n_skip)
    lift = _effects.accuracy_gap(k.a_cond + k.b_cond, n_cond, k.skip("a") + k.skip("b"), n_skip)
    select = _effects.accuracy_gap(k.a_cond + k.c_cond, n_cond, k.skip("a") + k.skip("c"), n_skip)
    g = len(n_pairs)
    low, high = (
        _both_intervals(n_pairs, k.b_all, k.c_all, n_cond, k.b_cond, k.c_cond, **boot)
        if intervals
        else (np.full(2 * g, np.nan), np.full(2 * g, np.nan))
    )
    adherence, effective = _adherence(k, n_pairs)
    return {
        "n_runs": n_runs, "n_pairs": n_pairs, "n_cond": n_cond, "n_skip": n_skip, "n_invoked": k.n_invoked,
        "coverage": _effects.share(n_cond, n_pairs).value, "invocation": _effects.share(k.n_invoked, n_pairs).value,
        "a_all": k.a_all, "b_all": k.b_all, "c_all": k.c_all, "d_all": k.d_all,
        "a_cond": k.a_cond, "b_cond": k.b_cond, "c_cond": k.c_cond, "d_cond": k.d_cond,
        "oae": oae.value, "oae_ci_low": low[:g], "oae_ci_high": high[:g],
        "rae": rae.value, "rae_ci_low": low[g:], "rae_ci_high": high[g:], "rae_reason": rae.reason,
        "mcnemar_p": mcnemar_exact(k.b_cond, k.c_cond), "mcnemar_p_all": mcnemar_exact(k.b_all, k.c_all),
        "delta_skip": skip.value, "delta_skip_reason": skip.reason,
        "agg_lift": lift.value, "agg_lift_reason": lift.reason,
        "delta_select": select.value, "delta_select_reason": select.reason,
        "n_adherent": k.n_adherent, "n_effective": k.n_effective,
        "adherence": adherence.value, "effective": effective.value, "adherence_reason": adherence.reason,
    }  # fmt: skip


def _both_intervals(
    n_all: np.ndarray,
    b_all: np.ndarray,
    c_all: np.ndarray,
    n_cond: np.ndarray,
    b_cond: np.ndarray,
    c_cond: np.ndarray,
    **boot: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """OAE intervals then RAE intervals, one call so that equal (n, b, c) keys are
    bootstrapped once."""
    return paired_bootstrap_ci(
        np.concatenate([n_all, n_cond]),
        np.concatenate([b_all, b_cond]),
        np.concatenate([c_all, c_cond]),
        **boot,
    )


def cell_intervals(
    cells: pd.DataFrame, *, resamples: int = 20_000, seed: int = 0, confidence: float = 0.95
) -> dict[str, np.ndarray]:
    """The OAE and RAE interval columns of `compute_cells` rows, from their count columns.

    Equal to what `compute_cells` computed with the same resamples, seed and confidence: an
    interval is a pure function of (seed, n, b, c, resamples, confidence), whichever other
    cells are computed with it (metrics/_bootstrap.py).
    """

    def ints(name: str) -> np.ndarray:
        return cells[name].to_numpy(dtype=np.int64)

    low, high = _both_intervals(
        ints("n_pairs"), ints("b_all"), ints("c_all"), ints("n_cond"), ints("b_cond"), ints("c_cond"),
        resamples=resamples, seed=seed, confidence=confidence,
    )  # fmt: skip
    g = len(cells)
    return {
        "oae_ci_low": low[:g], "oae_ci_high": high[:g],
        "rae_ci_low": low[g:], "rae_ci_high": high[g:],
    }  # fmt: skip


def _adherence(k: CellCounts, n_pairs: np.ndarray) -> tuple[_effects.Effect, _effects.Effect]:
    """Stage diagnostics as shares of all tasks, so invocation >= coverage >= adherence >= effective."""
    unknown = k.n_adherence_unknown > 0
    adherence, effective = (
        _effects.share(k.n_adherent, n_pairs),
        _effects.share(k.n_effective, n_pairs),
    )
    for effect in (adherence, effective):
        effect.value[unknown] = np.nan
        effect.reason[unknown] = ADHERENCE_UNKNOWN
    return adherence, effective


def disagreement_sensitivity(
    cells: pd.DataFrame, thresholds: Sequence[int] = (5, 10, 15, 20)
) -> pd.DataFrame:
    """How many reportable cells disagree in sign between RAE and aggregate lift, per threshold.

    Cells with an undefined aggregate lift (or RAE) keep their place among the reportable
    cells but are left out of the disagreement denominator.
    """
    import pandas as pd

    n_cond = cells["n_cond"].to_numpy()
    rae, lift = cells["rae"].to_numpy(dtype=float), cells["agg_lift"].to_numpy(dtype=float)
    rows = []
    for t in thresholds:
        reportable = n_cond >= t
        defined = reportable & ~np.isnan(rae) & ~np.isnan(lift)
        with np.errstate(invalid="ignore"):
            disagree = int((defined & (rae * lift < 0)).sum())
        n_defined = int(defined.sum())
        rows.append({
            "min_cond": int(t), "reportable": int(reportable.sum()), "with_agg_lift": n_defined,
            "disagreements": disagree, "disagreement_rate": 100.0 * disagree / n_defined if n_defined else np.nan,
        })  # fmt: skip
    return pd.DataFrame(rows)

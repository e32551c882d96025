"""Repeat statistics for cells that pool several runs (docs/design.md, "Metrics": repeats).

Pooled counts give a cell's effect; these say how stable it is across config-identical
repeats (same cell, different run_id/seed):

- `repeat_variance`: per cell, the mean and sample standard deviation (ddof = 1) across runs
  of each run's own RAE, OAE and coverage. These are descriptive of the run-to-run spread;
  the cell's effect itself stays the pooled one from `compute_cells`.
- `task_intervals`: per (cell, task), the SE and SD success counts over the k runs that
  evaluated the task, the difference of success rates and its Newcombe hybrid-score interval
  (Newcombe 1998, Stat Med 17:873, method 10: Wilson score interval per arm, combined),
  and a classification of the task as confidently/possibly degraded/improved or no change.

The interval treats the two arms as independent binomial samples. The arms of one run do
share a seed but have different prompts; any positive coupling makes the true interval
narrower, so this one errs on the wide side.

Everything is in percentage points unless a count, NaN where undefined with a reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np

from hf_skillfollow.metrics import _effects, _frame, _pooling
from hf_skillfollow.metrics._counts import count_cells

if TYPE_CHECKING:
    import pandas as pd

ONE_RUN = "the cell has 1 run: repeat statistics need >= 2 runs (hf-skillfollow run --repeats N)"
RAE_FEW_RUNS = "RAE defined in fewer than 2 runs (n_cond = 0 in the others)"
ONE_REPEAT = "the task was evaluated in only 1 run of this cell"

CONFIDENTLY_DEGRADED = "confidently degraded"
POSSIBLY_DEGRADED = "possibly degraded"
NO_CHANGE = "no change"
POSSIBLY_IMPROVED = "possibly improved"
CONFIDENTLY_IMPROVED = "confidently improved"
#: Task classes, worst first; `task_class_counts` names its columns after them.
TASK_CLASSES: tuple[str, ...] = (
    CONFIDENTLY_DEGRADED, POSSIBLY_DEGRADED, NO_CHANGE, POSSIBLY_IMPROVED, CONFIDENTLY_IMPROVED,
)  # fmt: skip

VARIANCE_COLUMNS: tuple[str, ...] = (
    "n_runs", "n_runs_rae",
    "oae_run_mean", "oae_run_sd", "rae_run_mean", "rae_run_sd", "coverage_run_mean", "coverage_run_sd",
    "repeat_reason", "rae_run_reason",
)  # fmt: skip
INTERVAL_COLUMNS: tuple[str, ...] = (
    "task_id", "k", "se_successes", "sd_successes", "se_rate", "sd_rate",
    "diff", "diff_ci_low", "diff_ci_high", "task_class", "task_reason",
)  # fmt: skip
#: Per-cell task counts: one column per class (n_confidently_degraded, ...), then the total.
CLASS_COUNT_COLUMNS: tuple[str, ...] = tuple("n_" + name.replace(" ", "_") for name in TASK_CLASSES)
COUNT_COLUMNS: tuple[str, ...] = (*CLASS_COUNT_COLUMNS, "n_tasks_repeated")


def repeat_variance(
    data: Any, *, group_by: Sequence[str] | None = None, pool_runs: bool = True
) -> pd.DataFrame:
    """Per cell: run count and run-to-run mean and sample SD of per-run OAE, RAE and coverage.

    Grouping follows `compute_cells` (same `group_by` and `pool_runs`, same row order). A
    run's RAE is undefined when it received no skill; `n_runs_rae` counts the runs where it
    is defined and the RAE mean/SD use those only. An SD needs two defined values.
    """
    import pandas as pd

    keys = _pooling.group_columns(group_by, pool_runs)
    cells, runs = _cells_and_runs(data, keys)
    cell_of_run = np.zeros(runs.n_groups, dtype=np.int64)
    cell_of_run[runs.codes] = cells.codes
    per_run = _per_run_effects(data, runs)
    out: dict[str, Any] = {"n_runs": cells.n_runs}
    for name, values in per_run.items():
        mean, sd, n_defined = _mean_sd(values, cell_of_run, cells.n_groups)
        out[f"{name}_run_mean"], out[f"{name}_run_sd"] = mean, sd
        if name == "rae":
            out["n_runs_rae"] = n_defined
    single = cells.n_runs < 2
    out["repeat_reason"] = _where(single, ONE_RUN)
    out["rae_run_reason"] = _where(~single & (out["n_runs_rae"] < 2), RAE_FEW_RUNS)
    identity = {k: _frame.take(data, k, cells.first_row) for k in keys}
    frame = pd.DataFrame({**identity, **{c: out[c] for c in VARIANCE_COLUMNS}})
    return frame.sort_values(list(keys), kind="stable", ignore_index=True)


def task_intervals(
    data: Any,
    *,
    group_by: Sequence[str] | None = None,
    pool_runs: bool = True,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Per (cell, task): success counts over its k runs and the SE − SD rate difference.

    `diff` = 100 * (se_successes - sd_successes) / k with a Newcombe hybrid-score interval
    at `confidence`. Tasks seen in fewer than 2 runs of their cell (every task of a one-run
    cell) get NaN, no class and a reason. Rows sort by the cell's columns, then task_id.
    """
    import pandas as pd

    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    keys = _pooling.group_columns(group_by, pool_runs)
    _frame.require_columns(data, (*keys, "run_id", "task_id"), "identity")
    _frame.require_columns(data, _frame.REQUIRED_OUTCOMES, "outcome")
    cells = _pooling.make_groups(data, keys)
    task_codes, n_task_values = _frame.factorize(data, "task_id")
    _check_unique_tasks(data, task_codes, n_task_values)
    pair, n_pairs = _pooling._combined_codes(
        [(cells.codes, cells.n_groups), (task_codes, n_task_values)], len(task_codes)
    )
    k = np.bincount(pair, minlength=n_pairs).astype(np.int64)
    se = np.bincount(pair[_frame.bool_column(data, "se_correct")], minlength=n_pairs)
    sd = np.bincount(pair[_frame.bool_column(data, "sd_correct")], minlength=n_pairs)
    first = _pooling._first_rows(pair)
    stats = _difference_stats(k, se.astype(np.int64), sd.astype(np.int64), confidence)
    stats["task_reason"] = _where(k < 2, ONE_REPEAT)
    stats["task_reason"][(cells.n_runs[cells.codes[first]] < 2)] = ONE_RUN
    columns = (*keys, "task_id")
    identity = {c: _frame.take(data, c, first) for c in columns}
    frame = pd.DataFrame({**identity, **{c: stats[c] for c in INTERVAL_COLUMNS if c != "task_id"}})
    return frame.sort_values(list(columns), kind="stable", ignore_index=True)


def newcombe_interval(
    x1: np.ndarray, n1: np.ndarray, x2: np.ndarray, n2: np.ndarray, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Newcombe's hybrid-score interval for p1 − p2 (proportions, not percent); NaN where n = 0.

    With Wilson limits (l_i, u_i) of each arm and d = p1 − p2:
    low = d − sqrt((p1 − l1)² + (u2 − p2)²), high = d + sqrt((u1 − p1)² + (p2 − l2)²).
    """
    l1, u1 = wilson_interval(x1, n1, confidence)
    l2, u2 = wilson_interval(x2, n2, confidence)
    p1, p2 = _rate(x1, n1), _rate(x2, n2)
    d = p1 - p2
    return d - np.hypot(p1 - l1, u2 - p2), d + np.hypot(u1 - p1, p2 - l2)


def wilson_interval(
    x: np.ndarray, n: np.ndarray, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for x successes in n trials; NaN where n = 0."""
    x, n = np.asarray(x, dtype=np.float64), np.asarray(n, dtype=np.float64)
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)  # stdlib: no scipy.stats import cost
    with np.errstate(invalid="ignore", divide="ignore"):
        p = x / n
        denom = 1.0 + z * z / n
        centre = (p + z * z / (2.0 * n)) / denom
        half = z * np.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n)) / denom
    # The limits are exactly 0 at x = 0 and 1 at x = n; float noise would leave 1e-17 there.
    low = np.where(x == 0, 0.0, np.clip(centre - half, 0.0, 1.0))
    high = np.where(x == n, 1.0, np.clip(centre + half, 0.0, 1.0))
    empty = n <= 0
    return np.where(empty, np.nan, low), np.where(empty, np.nan, high)


def classify(diff: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Task class from the point estimate and interval; None where the difference is NaN."""
    diff, low, high = (np.asarray(v, dtype=np.float64) for v in (diff, low, high))
    out = np.full(diff.shape, None, dtype=object)
    with np.errstate(invalid="ignore"):
        out[diff == 0] = NO_CHANGE
        out[diff < 0] = POSSIBLY_DEGRADED
        out[(diff < 0) & (high < 0)] = CONFIDENTLY_DEGRADED
        out[diff > 0] = POSSIBLY_IMPROVED
        out[(diff > 0) & (low > 0)] = CONFIDENTLY_IMPROVED
    return out


def task_class_counts(intervals: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Per cell (`keys` columns of `intervals`): how many tasks fall in each class."""
    import pandas as pd

    keys = list(keys)
    onehot = pd.DataFrame(
        {col: (intervals["task_class"] == name).astype(np.int64)
         for col, name in zip(CLASS_COUNT_COLUMNS, TASK_CLASSES, strict=True)}
    )  # fmt: skip
    onehot["n_tasks_repeated"] = intervals["task_class"].notna().astype(np.int64)
    grouped = pd.concat([intervals[keys], onehot], axis=1).groupby(keys, dropna=False, sort=False)
    return grouped.sum().reset_index()


def repeat_summary(
    data: Any,
    *,
    group_by: Sequence[str] | None = None,
    pool_runs: bool = True,
    confidence: float = 0.95,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-cell variance with task class counts, per-task intervals), rows as in `compute_cells`."""
    keys = list(_pooling.group_columns(group_by, pool_runs))
    variance = repeat_variance(data, group_by=group_by, pool_runs=pool_runs)
    tasks = task_intervals(data, group_by=group_by, pool_runs=pool_runs, confidence=confidence)
    counts = task_class_counts(tasks, keys)
    summary = variance.merge(counts, on=keys, how="left", sort=False)
    summary[list(COUNT_COLUMNS)] = summary[list(COUNT_COLUMNS)].fillna(0).astype(np.int64)
    return summary, tasks


def _cells_and_runs(data: Any, keys: Sequence[str]) -> tuple[_pooling.Groups, _pooling.Groups]:
    _frame.require_columns(data, (*keys, "run_id"), "identity")
    _frame.require_columns(data, _frame.REQUIRED_OUTCOMES, "outcome")
    run_keys = tuple(dict.fromkeys((*keys, "run_id")))
    return _pooling.make_groups(data, keys), _pooling.make_groups(data, run_keys)


def _per_run_effects(data: Any, runs: _pooling.Groups) -> dict[str, np.ndarray]:
    n = _frame.n_rows(data)
    k = count_cells(
        runs.codes,
        runs.n_groups,
        se=_frame.bool_column(data, "se_correct"),
        sd=_frame.bool_column(data, "sd_correct"),
        returned=_frame.bool_column(data, "returned"),
        invoked=_frame.bool_column(data, "invoked"),
        adherence=np.zeros(n, dtype=bool),  # not used here
        adherence_known=np.zeros(n, dtype=bool),
    )
    return {
        "oae": _effects.oae(k.b_all, k.c_all, k.n_pairs).value,
        "rae": _effects.rae(k.b_cond, k.c_cond, k.n_cond).value,
        "coverage": _effects.share(k.n_cond, k.n_pairs).value,
    }


def _mean_sd(
    values: np.ndarray, group: np.ndarray, n_groups: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and sample SD (ddof = 1) of the defined values per group, and how many there were."""
    ok = ~np.isnan(values)
    g, v = group[ok], values[ok]
    count = np.bincount(g, minlength=n_groups).astype(np.int64)
    mean, sd = np.full(n_groups, np.nan), np.full(n_groups, np.nan)
    np.divide(np.bincount(g, weights=v, minlength=n_groups), count, out=mean, where=count > 0)
    # Two passes (deviations from the mean) rather than E[x²] − E[x]², which cancels badly.
    squares = np.bincount(g, weights=(v - mean[g]) ** 2, minlength=n_groups)
    np.divide(squares, count - 1, out=sd, where=count > 1)
    np.sqrt(sd, out=sd, where=count > 1)
    return mean, sd, count


def _difference_stats(
    k: np.ndarray, se: np.ndarray, sd: np.ndarray, confidence: float
) -> dict[str, np.ndarray]:
    repeated = k >= 2
    low, high = newcombe_interval(se, k, sd, k, confidence)
    se_rate, sd_rate = 100.0 * _rate(se, k), 100.0 * _rate(sd, k)
    diff = np.where(repeated, se_rate - sd_rate, np.nan)
    low, high = np.where(repeated, 100.0 * low, np.nan), np.where(repeated, 100.0 * high, np.nan)
    return {
        "k": k, "se_successes": se, "sd_successes": sd, "se_rate": se_rate, "sd_rate": sd_rate,
        "diff": diff, "diff_ci_low": low, "diff_ci_high": high, "task_class": classify(diff, low, high),
    }  # fmt: skip


def _rate(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    x, n = np.asarray(x, dtype=np.float64), np.asarray(n, dtype=np.float64)
    out = np.full(np.broadcast(x, n).shape, np.nan)
    np.divide(x, n, out=out, where=n > 0)
    return out


def _check_unique_tasks(data: Any, task_codes: np.ndarray, n_task_values: int) -> None:
    """A task counted twice in one run would inflate k; name the first duplicate."""
    run_codes, n_run_values = _frame.factorize(data, "run_id")
    pair, n_distinct = _pooling._combined_codes(
        [(run_codes, n_run_values), (task_codes, n_task_values)], len(task_codes)
    )
    if n_distinct == len(pair):
        return
    first_dup = np.flatnonzero(np.bincount(pair)[pair] > 1)[:1]
    run, task = (_frame.take(data, c, first_dup)[0] for c in ("run_id", "task_id"))
    raise ValueError(f"transitions data: duplicate (run_id, task_id) = ({run!r}, {task!r})")


def _where(mask: np.ndarray, why: str) -> np.ndarray:
    out = np.full(mask.shape, None, dtype=object)
    out[mask] = why
    return out

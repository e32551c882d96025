"""The leaderboard frame: columns, reportability, sign disagreement and its sensitivity table."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from hf_skillfollow.metrics import (
    METRIC_COLUMNS,
    cell_intervals,
    compute_cells,
    disagreement_sensitivity,
)
from hf_skillfollow.schema import CELL_COLUMNS
from tests._cells import rows_for, table_for

# S_call: b=3 c=1 d=6 -> RAE +20, SE accuracy 0.3; S_skip: a=8 d=2 -> SE accuracy 0.8: agg lift -50.
DISAGREE = rows_for({"b": 3, "c": 1, "d": 6}, {"a": 8, "d": 2}, run_id="r-dis", cell_id="dis")
# S_call: a=3 b=4 c=1 d=2 -> RAE +30, SE accuracy 0.7; S_skip: a=5 b=1 c=2 d=2 -> 0.6: agg lift +10.
AGREE = rows_for(
    {"a": 3, "b": 4, "c": 1, "d": 2},
    {"a": 5, "b": 1, "c": 2, "d": 2},
    run_id="r-agr",
    cell_id="agr",
)


def test_columns_identity_then_metrics() -> None:
    cells = compute_cells(table_for(AGREE), resamples=100)
    assert list(cells.columns) == [*CELL_COLUMNS, *METRIC_COLUMNS]
    no_pool = compute_cells(table_for(AGREE), resamples=100, pool_runs=False)
    assert list(no_pool.columns) == [*CELL_COLUMNS, "run_id", *METRIC_COLUMNS]


def test_sign_disagreement_flag() -> None:
    cells = compute_cells(table_for(DISAGREE, AGREE), resamples=100).set_index("cell_id")
    dis = cells.loc["dis"]
    assert math.isclose(dis.rae, 20.0) and math.isclose(dis.agg_lift, 100 * (0.3 - 0.8))
    assert math.isclose(dis.delta_select, 100 * (1 / 10 - 8 / 10))
    assert dis.reportable and dis.sign_disagree
    assert cells.loc["agr"].reportable and not cells.loc["agr"].sign_disagree


def test_reportability_threshold() -> None:
    table = table_for(DISAGREE)  # n_cond = 10
    assert bool(compute_cells(table, min_cond=10, resamples=100).iloc[0].reportable)
    cell = compute_cells(table, min_cond=11, resamples=100).iloc[0]
    assert not cell.reportable and not cell.sign_disagree  # a non-reportable cell is never flagged
    assert math.isclose(cell.rae, 20.0)  # but keeps its RAE


def test_undefined_agg_lift_is_never_a_disagreement() -> None:
    everywhere = rows_for(
        {"b": 2, "c": 9}, run_id="r-all", cell_id="all"
    )  # RAE < 0, agg lift undefined
    cell = compute_cells(table_for(everywhere), resamples=100).iloc[0]
    assert cell.reportable and math.isnan(cell.agg_lift) and not cell.sign_disagree


def test_sensitivity_counts_by_hand() -> None:
    cells = pd.DataFrame({
        "n_cond":   [4,    6,    12,     16,  25,   30],
        "rae":      [10.0, -5.0, 20.0,   8.0, -3.0, np.nan],
        "agg_lift": [-1.0, 2.0,  np.nan, 4.0, 6.0,  1.0],
    })  # fmt: skip
    table = disagreement_sensitivity(cells).set_index("min_cond")
    # >=5: cells 6,12,16,25,30 -> with both defined: 6,16,25 -> disagree: 6 (-5*2), 25 (-3*6)
    assert table.loc[5].tolist()[:3] == [5, 3, 2]
    assert math.isclose(table.loc[5, "disagreement_rate"], 100 * 2 / 3)
    assert table.loc[10].tolist()[:3] == [4, 2, 1]
    assert table.loc[15].tolist()[:3] == [3, 2, 1]
    assert table.loc[20].tolist()[:3] == [2, 1, 1]


def test_empty_input_gives_an_empty_frame_with_all_columns() -> None:
    cells = compute_cells(table_for([]))
    assert cells.empty and list(cells.columns) == [*CELL_COLUMNS, *METRIC_COLUMNS]


def test_missing_outcome_column_is_named() -> None:
    table = table_for(AGREE).drop_columns(["returned"])
    with pytest.raises(ValueError, match=r"missing outcome column\(s\) \['returned'\]"):
        compute_cells(table)


def test_deferred_intervals_equal_the_ones_computed_with_the_cells() -> None:
    """`intervals=False` leaves only the interval columns out; `cell_intervals` over one cell
    alone gives what `compute_cells` gave it beside the other (the Space's deferred start)."""
    data = table_for(DISAGREE, AGREE)
    full = compute_cells(data, resamples=500, seed=3)
    later = compute_cells(data, resamples=500, seed=3, intervals=False)
    ci = ["oae_ci_low", "oae_ci_high", "rae_ci_low", "rae_ci_high"]
    assert later[ci].isna().all().all() and full[ci].notna().all().all()
    pd.testing.assert_frame_equal(later.drop(columns=ci), full.drop(columns=ci))
    one = later[later["cell_id"] == "dis"]
    got = cell_intervals(one, resamples=500, seed=3)
    want = full[full["cell_id"] == "dis"]
    for name in ci:
        np.testing.assert_array_equal(got[name], want[name].to_numpy())
    assert got["rae_ci_low"][0] < 20.0 < got["rae_ci_high"][0]  # around RAE = +20 pp

"""Every paired effect on hand-computed counts, and the undefined cases (null with a reason)."""

from __future__ import annotations

import math

import numpy as np

from hf_skillfollow.metrics import accuracy_gap, compute_cells, delta_skip, oae, rae, share
from tests._cells import rows_for, table_for

# S_call: a=3 b=4 c=1 d=2 (n_cond 10); S_skip: a=5 b=1 c=2 d=2 (n_skip 10); 2 skip rows invoked.
COND = {"a": 3, "b": 4, "c": 1, "d": 2}
SKIP = {"a": 5, "b": 1, "c": 2, "d": 2}


def _cell(**kwargs):
    cells = compute_cells(table_for(rows_for(COND, SKIP, invoked_skip=2, **kwargs)), resamples=200)
    assert len(cells) == 1
    return cells.iloc[0]


def test_counts_of_the_two_by_two_tables() -> None:
    cell = _cell()
    assert (cell.a_all, cell.b_all, cell.c_all, cell.d_all) == (8, 5, 3, 4)
    assert (cell.a_cond, cell.b_cond, cell.c_cond, cell.d_cond) == (3, 4, 1, 2)
    assert (cell.n_pairs, cell.n_cond, cell.n_skip, cell.n_invoked) == (20, 10, 10, 12)


def test_effects_hand_computed() -> None:
    cell = _cell()
    assert math.isclose(cell.oae, 100 * (5 - 3) / 20)  # 10.0
    assert math.isclose(cell.rae, 100 * (4 - 1) / 10)  # 30.0
    assert math.isclose(cell.delta_skip, 100 * (1 - 2) / 10)  # -10.0
    assert math.isclose(cell.agg_lift, 100 * (7 / 10 - 6 / 10))  # SE accuracy 0.7 vs 0.6
    assert math.isclose(cell.delta_select, 100 * (4 / 10 - 7 / 10))  # SD accuracy 0.4 vs 0.7
    assert math.isclose(cell.coverage, 50.0)
    assert math.isclose(cell.invocation, 60.0)
    assert (
        cell.rae_reason is None and cell.delta_skip_reason is None and cell.agg_lift_reason is None
    )


def test_stage_diagnostics_are_shares_of_all_tasks() -> None:
    # adherent: the first 5 S_call rows in a, b, c, d order = a, a, a, b, b -> 5 adherent, all correct in SE
    cell = _cell(adherent=5)
    assert (cell.n_adherent, cell.n_effective) == (5, 5)
    assert math.isclose(cell.adherence, 100 * 5 / 20) and math.isclose(cell.effective, 100 * 5 / 20)
    # 7 adherent: a a a b b b b -> effective 7; make it 8 to include the c row (SE wrong)
    cell = _cell(adherent=8)
    assert (cell.n_adherent, cell.n_effective) == (8, 7)
    assert cell.invocation >= cell.coverage >= cell.adherence >= cell.effective


def test_adherence_not_recorded_is_null_with_reason() -> None:
    cell = _cell()  # adherence null on every row
    assert math.isnan(cell.adherence) and math.isnan(cell.effective)
    assert "adherence not recorded" in cell.adherence_reason


def test_no_retrieval_leaves_rae_and_agg_lift_undefined() -> None:
    cell = compute_cells(
        table_for(rows_for(None, {"a": 2, "b": 3, "c": 1, "d": 4})), resamples=200
    ).iloc[0]
    assert cell.n_cond == 0 and cell.coverage == 0.0
    for name in ("rae", "rae_ci_low", "rae_ci_high", "agg_lift", "delta_select"):
        assert math.isnan(cell[name]), name
    assert cell.rae_reason == "n_cond = 0: the SE run never received a skill"
    assert "S_ret is empty" in cell.agg_lift_reason and "S_ret is empty" in cell.delta_select_reason
    assert math.isclose(cell.delta_skip, 100 * (3 - 1) / 10) and math.isclose(
        cell.oae, cell.delta_skip
    )
    assert cell.mcnemar_p == 1.0 and not cell.reportable and not cell.sign_disagree


def test_retrieval_on_every_task_leaves_delta_skip_and_agg_lift_undefined() -> None:
    cell = compute_cells(table_for(rows_for({"a": 2, "b": 3, "c": 1, "d": 4})), resamples=200).iloc[
        0
    ]
    assert cell.n_skip == 0 and cell.coverage == 100.0
    assert math.isnan(cell.delta_skip) and cell.delta_skip_reason.startswith("n_skip = 0")
    assert math.isnan(cell.agg_lift) and "S_noret is empty" in cell.agg_lift_reason
    assert math.isclose(cell.rae, 20.0) and math.isclose(cell.oae, 20.0)
    assert (
        cell.rae_ci_low == cell.oae_ci_low and cell.rae_ci_high == cell.oae_ci_high
    )  # same (n, b, c)


def test_vectorised_functions_never_divide_by_zero() -> None:
    with np.errstate(all="raise"):
        r = rae(np.array([0, 3]), np.array([0, 1]), np.array([0, 10]))
        s = delta_skip(np.array([1, 0]), np.array([0, 0]), np.array([4, 0]))
        o = oae(np.array([0]), np.array([0]), np.array([0]))
        g = accuracy_gap(
            np.array([0, 1, 2]), np.array([0, 2, 4]), np.array([1, 0, 1]), np.array([2, 0, 2])
        )
        c = share(np.array([0, 5]), np.array([0, 20]))
    assert math.isnan(r.value[0]) and r.value[1] == 20.0 and r.reason[1] is None
    assert s.value[0] == 25.0 and math.isnan(s.value[1]) and s.reason[1].startswith("n_skip = 0")
    assert math.isnan(o.value[0]) and o.reason[0].startswith("n_pairs = 0")
    assert math.isnan(g.value[0]) and math.isnan(g.value[1]) and g.value[2] == 0.0
    assert "S_ret is empty" in g.reason[0] and "S_noret is empty" in g.reason[1]
    assert math.isnan(c.value[0]) and c.value[1] == 25.0

"""Property tests: the OAE decomposition holds exactly, and nothing raises on any 0/1 input."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_skillfollow.metrics import compute_cells, delta_skip, oae, rae
from hf_skillfollow.schema import transitions_from_rows
from tests._rows import transition_row

_ROW = st.tuples(
    st.booleans(), st.booleans(), st.booleans(), st.booleans()
)  # se, sd, returned, invoked


def _identity_holds(o: float, r: float, s: float, n_cond: int, n_skip: int) -> bool:
    n = n_cond + n_skip
    rhs = (n_cond / n) * (0.0 if n_cond == 0 else r) + (n_skip / n) * (0.0 if n_skip == 0 else s)
    return math.isclose(o, rhs, rel_tol=1e-12, abs_tol=1e-9)


@given(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 200), st.integers(0, 200), st.integers(0, 200),
                          st.integers(0, 200), st.integers(0, 200), st.integers(0, 200), st.integers(0, 200)),
                min_size=1, max_size=50))  # fmt: skip
def test_decomposition_on_arbitrary_counts(cells: list[tuple[int, ...]]) -> None:
    """Counts (a, b, c, d) of S_call and of S_skip, as many cells at once."""
    arr = np.array(cells, dtype=np.int64)
    cond, skip = arr[:, :4], arr[:, 4:]
    n_cond, n_skip = cond.sum(1), skip.sum(1)
    n = n_cond + n_skip
    o = oae(cond[:, 1] + skip[:, 1], cond[:, 2] + skip[:, 2], n).value
    r = rae(cond[:, 1], cond[:, 2], n_cond).value
    s = delta_skip(skip[:, 1], skip[:, 2], n_skip).value
    for i in range(len(arr)):
        if n[i] == 0:
            assert math.isnan(o[i])
            continue
        assert _identity_holds(o[i], r[i], s[i], int(n_cond[i]), int(n_skip[i]))


@settings(max_examples=60, deadline=None)
@given(st.lists(_ROW, min_size=0, max_size=40), st.integers(0, 2**32))
def test_compute_cells_never_raises_and_decomposes(rows: list[tuple[bool, ...]], seed: int) -> None:
    data = [
        transition_row(
            task_id=f"t{i}", se_correct=se, sd_correct=sd, returned=ret, invoked=inv or ret
        )
        for i, (se, sd, ret, inv) in enumerate(rows)
    ]
    cells = compute_cells(transitions_from_rows(data), resamples=50, seed=seed)
    if not rows:
        assert cells.empty
        return
    cell = cells.iloc[0]
    assert cell.n_pairs == len(rows)
    assert _identity_holds(cell.oae, cell.rae, cell.delta_skip, int(cell.n_cond), int(cell.n_skip))
    for name, reason in (
        ("rae", "rae_reason"),
        ("delta_skip", "delta_skip_reason"),
        ("agg_lift", "agg_lift_reason"),
    ):
        assert math.isnan(cell[name]) == (cell[reason] is not None), name
    assert cell.oae_ci_low <= cell.oae <= cell.oae_ci_high
    if cell.n_cond:
        assert cell.rae_ci_low <= cell.rae <= cell.rae_ci_high
    assert 0.0 <= cell.mcnemar_p <= 1.0 and 0.0 <= cell.mcnemar_p_all <= 1.0

"""The paired effects (docs/design.md, "Metrics") in percentage points, vectorised over cells.

Every function takes count arrays and returns an `Effect`: float values with NaN where the
quantity is undefined, and a reason string there (None where defined). Nothing divides by
zero and nothing raises on empty subsets.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

NO_CALL = "n_cond = 0: the SE run never received a skill"
NO_SKIP = "n_skip = 0: the SE run received a skill on every task"
NO_PAIRS = "n_pairs = 0: no evaluated tasks"
S_RET_EMPTY = "retrieval on no task: S_ret is empty"
S_NORET_EMPTY = "retrieval on every task: S_noret is empty"


class Effect(NamedTuple):
    value: np.ndarray  # float64, NaN where undefined
    reason: np.ndarray  # object: None where defined, else why not


def _as_int(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def paired_effect(b: np.ndarray, c: np.ndarray, n: np.ndarray, undefined: str) -> Effect:
    """100 * (b - c) / n; the shared form of OAE, RAE and Δskip."""
    b, c, n = _as_int(b), _as_int(c), _as_int(n)
    value = np.full(n.shape, np.nan)
    ok = n > 0
    np.divide(100.0 * (b - c), n, out=value, where=ok)
    return Effect(value, _reasons(ok, undefined))


def oae(b_all: np.ndarray, c_all: np.ndarray, n_pairs: np.ndarray) -> Effect:
    return paired_effect(b_all, c_all, n_pairs, NO_PAIRS)


def rae(b_cond: np.ndarray, c_cond: np.ndarray, n_cond: np.ndarray) -> Effect:
    return paired_effect(b_cond, c_cond, n_cond, NO_CALL)


def delta_skip(b_skip: np.ndarray, c_skip: np.ndarray, n_skip: np.ndarray) -> Effect:
    return paired_effect(b_skip, c_skip, n_skip, NO_SKIP)


def accuracy_gap(
    correct_ret: np.ndarray, n_ret: np.ndarray, correct_noret: np.ndarray, n_noret: np.ndarray
) -> Effect:
    """100 * (acc(S_ret) - acc(S_noret)); undefined when either set is empty.

    With SE correctness this is the aggregate retrieval lift; with SD correctness it is
    Δselect, the selection bias that the aggregate lift carries.
    """
    n_ret, n_noret = _as_int(n_ret), _as_int(n_noret)
    ok = (n_ret > 0) & (n_noret > 0)
    value = np.full(n_ret.shape, np.nan)
    acc_ret = np.divide(_as_int(correct_ret), n_ret, out=np.zeros(n_ret.shape), where=ok)
    acc_noret = np.divide(_as_int(correct_noret), n_noret, out=np.zeros(n_ret.shape), where=ok)
    np.multiply(100.0, acc_ret - acc_noret, out=value, where=ok)
    reason = np.full(n_ret.shape, None, dtype=object)
    reason[n_noret <= 0] = S_NORET_EMPTY
    reason[n_ret <= 0] = S_RET_EMPTY  # both empty only when n_pairs = 0; say the first
    return Effect(value, reason)


def share(part: np.ndarray, n_pairs: np.ndarray) -> Effect:
    """100 * part / n_pairs: coverage, invocation and the other stage diagnostics."""
    return paired_effect(part, np.zeros_like(_as_int(part)), n_pairs, NO_PAIRS)


def _reasons(ok: np.ndarray, why: str) -> np.ndarray:
    reason = np.full(ok.shape, None, dtype=object)
    reason[~ok] = why
    return reason

"""Exact two-sided McNemar test on the discordant counts (binomial, p = 0.5)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np


def mcnemar_exact(b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """p = min(1, 2 * BinomCDF(min(b, c); b + c, 0.5)), and p = 1 when b + c = 0.

    Vectorised over cells; the doubled lower tail equals the two-sided binomial test
    because Binomial(m, 0.5) is symmetric. The tail is summed in exact integers once per
    distinct (min(b, c), b + c): importing `scipy.stats` for it cost the Space's start-up
    more than computing every cell (bench/space.py).
    """
    b = np.asarray(b, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    m = b + c
    p = np.ones(m.shape)
    some = m > 0
    if some.any():
        pairs = np.stack([np.minimum(b, c)[some], m[some]], axis=1)
        unique, inverse = np.unique(pairs, axis=0, return_inverse=True)
        tails = np.array([_lower_tail(int(k), int(n)) for k, n in unique], dtype=float)
        p[some] = np.minimum(1.0, 2.0 * tails[inverse.reshape(-1)])
    return p


#: Above this many discordant pairs the integer sum gets slow (seconds at 10^5) and
#: scipy's regularised incomplete beta is used instead.
EXACT_LIMIT = 5_000


@lru_cache(maxsize=65_536)
def _lower_tail(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2), exactly rounded (C(n, i+1) = C(n, i)·(n−i)/(i+1))."""
    if n > EXACT_LIMIT:
        from scipy.special import bdtr

        return float(bdtr(k, n, 0.5))
    term = total = 1
    for i in range(k):
        term = term * (n - i) // (i + 1)
        total += term
    return total / (1 << n)

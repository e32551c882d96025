"""Exact two-sided McNemar test on the discordant counts (binomial, p = 0.5)."""

from __future__ import annotations

import numpy as np


def mcnemar_exact(b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """p = min(1, 2 * BinomCDF(min(b, c); b + c, 0.5)), and p = 1 when b + c = 0.

    Vectorised over cells; the doubled lower tail equals the two-sided binomial test
    because Binomial(m, 0.5) is symmetric.
    """
    from scipy.stats import binom

    b = np.asarray(b, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    m = b + c
    p = np.ones(m.shape)
    some = m > 0
    if some.any():
        tail = binom.cdf(np.minimum(b, c)[some], m[some], 0.5)
        p[some] = np.minimum(1.0, 2.0 * tail)
    return p

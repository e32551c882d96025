"""Exact McNemar p-values against hand computation and scipy's two-sided binomial test."""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import binomtest

from hf_skillfollow.metrics import mcnemar_exact


def test_hand_computed_values() -> None:
    p = mcnemar_exact(np.array([4, 5, 0, 3, 10]), np.array([1, 3, 0, 3, 0]))
    assert math.isclose(p[0], 2 * (1 + 5) / 2**5)  # b=4, c=1: 0.375
    assert math.isclose(p[1], 2 * (1 + 8 + 28 + 56) / 2**8)  # b=5, c=3
    assert p[2] == 1.0  # no discordant pairs
    assert p[3] == 1.0  # b == c: the doubled tail exceeds 1 and is capped
    assert math.isclose(p[4], 2 / 2**10)


def test_matches_scipy_binomtest_on_a_grid() -> None:
    b, c = np.meshgrid(np.arange(0, 25), np.arange(0, 25), indexing="ij")
    b, c = b.ravel(), c.ravel()
    p = mcnemar_exact(b, c)
    for bi, ci, pi in zip(b, c, p, strict=True):
        expected = 1.0 if bi + ci == 0 else binomtest(int(bi), int(bi + ci), 0.5).pvalue
        assert math.isclose(pi, expected, rel_tol=1e-9, abs_tol=1e-15), (bi, ci, pi, expected)


def test_large_counts_on_both_sides_of_the_exact_limit() -> None:
    from hf_skillfollow.metrics._mcnemar import EXACT_LIMIT

    for m in (EXACT_LIMIT - 2, EXACT_LIMIT + 2):
        b = m // 2 - 40
        p = mcnemar_exact(np.array([b]), np.array([m - b]))[0]
        assert math.isclose(p, binomtest(b, m, 0.5).pvalue, rel_tol=1e-9), m

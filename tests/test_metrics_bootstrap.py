"""The paired-multinomial percentile bootstrap: its law, its RNG scheme and its intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hf_skillfollow.metrics import diff_cdf, paired_bootstrap_ci
from hf_skillfollow.metrics._bootstrap import _order_stats, _windows


def _literal_interval(
    n: int, b: int, c: int, resamples: int, seed: int, confidence: float
) -> tuple[float, float]:
    """The documented scheme step by step: every resample drawn, then np.percentile."""
    cdf = diff_cdf(n, [b], [c])[0]
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, n, b, c])))
    u = rng.random(resamples)
    d = -n + np.minimum(np.searchsorted(cdf, u, side="right"), 2 * n)
    alpha = 1 - confidence
    low, high = np.percentile(100.0 * d / n, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return float(low), float(high)


def test_law_is_the_multinomial_law_of_b_minus_c() -> None:
    n, b, c = 6, 2, 1
    pb, pc, pr = b / n, c / n, (n - b - c) / n
    pmf = {d: 0.0 for d in range(-n, n + 1)}
    for i in range(n + 1):  # b* = i, c* = j
        for j in range(n + 1 - i):
            coef = math.factorial(n) / (
                math.factorial(i) * math.factorial(j) * math.factorial(n - i - j)
            )
            pmf[i - j] += coef * pb**i * pc**j * pr ** (n - i - j)
    expected = np.cumsum([pmf[d] for d in range(-n, n + 1)])
    np.testing.assert_allclose(diff_cdf(n, [b], [c])[0], expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(
    "key", [(1, 0, 1), (2, 1, 1), (9, 3, 2), (40, 0, 0), (80, 80, 0), (80, 11, 17)]
)
def test_law_is_the_documented_recurrence_bit_for_bit(key: tuple[int, int, int]) -> None:
    """The band-limited implementation against the module docstring's full-width recurrence."""
    n, b, c = key
    pb, pc, pr = b / n, c / n, (n - b - c) / n
    p = np.zeros(2 * n + 1)
    p[n] = 1.0
    for _ in range(n):
        q = pr * p
        q[1:] += pb * p[:-1]
        q[:-1] += pc * p[1:]
        p = q
    np.testing.assert_array_equal(diff_cdf(n, [b, 0], [c, 0])[0], np.cumsum(p))


def test_law_matches_literal_resampling_of_tasks() -> None:
    """Drawing task indices with replacement gives the same distribution of b* - c*."""
    n, b, c = 12, 4, 3
    outcomes = np.array([1] * b + [-1] * c + [0] * (n - b - c))
    draws = np.random.default_rng(123).integers(0, n, size=(200_000, n))
    d = outcomes[draws].sum(axis=1)
    empirical = np.cumsum(np.bincount(d + n, minlength=2 * n + 1)) / len(d)
    assert np.abs(empirical - diff_cdf(n, [b], [c])[0]).max() < 0.005


@pytest.mark.parametrize("resamples", [1, 2, 7, 1000, 20_000])
@pytest.mark.parametrize("confidence", [0.95, 0.9, 0.5])
def test_fast_intervals_equal_the_literal_scheme_bit_for_bit(
    resamples: int, confidence: float
) -> None:
    keys = [(10, 10, 0), (10, 0, 0), (7, 3, 2), (40, 9, 4), (80, 12, 15), (1, 0, 1), (25, 0, 25)]
    n, b, c = (np.array(col) for col in zip(*keys, strict=True))
    low, high = paired_bootstrap_ci(n, b, c, resamples=resamples, seed=11, confidence=confidence)
    for i, key in enumerate(keys):
        assert (low[i], high[i]) == _literal_interval(*key, resamples, 11, confidence), key


def test_all_helpful_flips_give_a_degenerate_interval_at_100() -> None:
    low, high = paired_bootstrap_ci([10], [10], [0])
    assert (low[0], high[0]) == (100.0, 100.0)
    low, high = paired_bootstrap_ci([8], [0], [0])
    assert (low[0], high[0]) == (0.0, 0.0)


def test_interval_contains_the_point_estimate() -> None:
    rng = np.random.default_rng(5)
    n = rng.integers(1, 81, size=300)
    b = rng.integers(0, n + 1)
    c = rng.integers(0, n - b + 1)
    low, high = paired_bootstrap_ci(n, b, c, resamples=2000)
    point = 100.0 * (b - c) / n
    assert np.all(low <= point) and np.all(point <= high)
    assert np.all((low < high) | ((b + c) == 0) | (b == n) | (c == n))


def test_deterministic_for_equal_seeds_and_independent_of_the_other_cells() -> None:
    n, b, c = np.array([30, 30, 50]), np.array([6, 6, 3]), np.array([2, 2, 9])
    first = paired_bootstrap_ci(n, b, c, seed=3)
    again = paired_bootstrap_ci(n, b, c, seed=3)
    alone = paired_bootstrap_ci(n[2:], b[2:], c[2:], seed=3)
    np.testing.assert_array_equal(first, again)
    assert (first[0][2], first[1][2]) == (alone[0][0], alone[1][0])
    assert first[0][0] == first[0][1]  # equal counts, equal interval
    other = paired_bootstrap_ci(n, b, c, seed=4, resamples=500)
    same_seed = paired_bootstrap_ci(n, b, c, seed=3, resamples=500)
    assert not np.array_equal(other, same_seed)  # the seed does enter


def test_empty_subset_is_nan_and_bad_parameters_are_named() -> None:
    low, high = paired_bootstrap_ci([0, 5], [0, 1], [0, 0])
    assert math.isnan(low[0]) and math.isnan(high[0]) and not math.isnan(low[1])
    with pytest.raises(ValueError, match="resamples"):
        paired_bootstrap_ci([5], [1], [0], resamples=0)
    with pytest.raises(ValueError, match="seed"):
        paired_bootstrap_ci([5], [1], [0], seed=-1)
    with pytest.raises(ValueError, match="confidence"):
        paired_bootstrap_ci([5], [1], [0], confidence=1.0)


def test_window_selection_falls_back_when_the_window_misses() -> None:
    """Values crowded at one end defeat the value windows; the result must still be exact."""
    kth = np.array([499, 500, 19498, 19499])
    windows = _windows(kth, 20_000)
    crowded = np.concatenate(
        [np.full(19_000, 0.999), np.random.default_rng(0).random(1000) * 0.001]
    )
    for u in (crowded, np.random.default_rng(1).random(20_000)):
        np.testing.assert_array_equal(_order_stats(u.copy(), kth, windows), np.sort(u)[kth])

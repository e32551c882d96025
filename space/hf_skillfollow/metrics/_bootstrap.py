"""Seeded paired-multinomial percentile bootstrap for RAE and OAE.

Resampling the n tasks of a subset with replacement draws the four outcome counts
(a*, b*, c*, d*) from Multinomial(n; a/n, b/n, c/n, d/n). RAE and OAE depend only on
D* = b* - c*, whose law is that of a sum of n independent steps of +1 (prob b/n), -1
(prob c/n) and 0 (prob (a+d)/n). The bootstrap distribution is therefore a function of
(n, b, c) alone.

A percentile interval of R resampled statistics depends only on the sorted sample, and the
sorted sample only on how many resamples land on each support value D = -n..n. The count
vector of R independent draws from a law p is Multinomial(R, p), so each bootstrap draws
that vector directly: the same bootstrap distribution as R literal resamples of the tasks,
not an approximation of it, at the cost of one multinomial over 2n + 1 categories instead
of R * n task indices.

RNG scheme, version 3 (reproduce it bit for bit from this description). Keys with
n <= EXACT_MAX_N (1,000: every size the study uses, and pooled repeats of it) take steps 1-4
below, unchanged from version 2; keys with n > EXACT_MAX_N take steps 1'-2' after them.

1. law: ``p`` = float64 vector over D = -n..n, start at the point mass on 0, then n times
   ``q = pr * p; q[1:] += pb * p[:-1]; q[:-1] += pc * p[1:]; p = q`` with ``pb = b / n``,
   ``pc = c / n``, ``pr = (n - b - c) / n``.
2. counts: ``N = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, n, b, c])))
   .multinomial(resamples, p)``; ``N[j]`` resamples have D* = -n + j.
3. sorted resampled statistics: ``x = np.repeat(100.0 * np.arange(-n, n + 1) / n, N)``.
4. interval: ``np.percentile(x, [100 * alpha / 2, 100 * (1 - alpha / 2)])`` with
   ``alpha = 1 - confidence`` (numpy's default "linear" method).

Above EXACT_MAX_N, step 1 (n steps over 2n + 1 values, O(n^2)) would dominate: 7 s for one
key at n = 40,000, never finishing at n = 2,000,000. There each resample draws the four
outcome counts themselves, which costs the same at any n:

1'. resamples: with the same generator as step 2, ``bs = rng.binomial(n, b / n, resamples)``,
    then ``cs = rng.binomial(n - bs, c / (n - b), resamples)`` (``cs = 0`` when ``c = 0``):
    (bs, cs, n - bs - cs) is Multinomial(n; b/n, c/n, (n-b-c)/n) drawn as successive
    binomials, the law of step 1 by construction, resample by resample.
2'. interval: ``np.percentile(100.0 * (bs - cs) / n, levels)`` as in step 4.

The two ways sample the same bootstrap distribution; they consume the stream differently, so
above EXACT_MAX_N the interval is another draw of it than version 2 gave (version 2 is not
computable there at scale). Two draws of a 20,000-resample percentile differ by Monte Carlo
error, about 0.027 * sqrt(n) * sd(step) support steps (sd), which exceeds one step (100/n pp)
for n beyond a few thousand whatever the method; `bench/metrics.py --large-n N` prints it.

numpy draws the multinomial as successive binomials with probabilities
``p[j] / (1 - p[0] - ... - p[j-1])``; like the CDF rounding of version 1, their rounding
moves probability only at the level of float64 rounding. Version 1 drew R uniforms and inverted the CDF of ``p``: the same bootstrap
distribution, a different consumption of the stream, hence other intervals.

The interval is a pure function of (seed, n, b, c, resamples, confidence): a cell's
interval never depends on which other cells are computed with it, and cells with equal
counts get equal intervals. The implementation advances the laws of all keys together
(`_laws`), builds their generator states at once (`_seeding`, checked against numpy's own
objects) and never expands step 3: the k-th smallest statistic (k from 0) is support value
j, where j is how many cumulative counts are <= k.
Bit-for-bit equality assumes the same numpy: Generator streams are stable in practice but
not promised across numpy versions.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hf_skillfollow.metrics._seeding import pcg64_states

SCHEME_VERSION = 3
#: keys up to this n take the exact law's count vector (steps 1-4), larger ones steps 1'-2'
EXACT_MAX_N = 1000


def percentile_levels(confidence: float) -> np.ndarray:
    """The two percentiles (0-100) of a two-sided interval at `confidence`."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    alpha = 1.0 - confidence
    return np.array([100.0 * alpha / 2.0, 100.0 * (1.0 - alpha / 2.0)])


def diff_pmf(n: int, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Step 1 for keys that share n: law rows over D = -n..n, shape (len(b), 2n + 1)."""
    b = np.asarray(b, dtype=np.int64).ravel()
    if not len(b):
        return np.zeros((0, 2 * int(n) + 1))
    return _laws(np.full(len(b), int(n), dtype=np.int64), b, np.asarray(c, dtype=np.int64).ravel())


def _laws(n: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Step 1 for keys with any n: rows over D = -top..top with top = max(n), zero off support.

    All keys advance together, a key dropping out once it has taken its n steps, so the
    work costs a few numpy calls per step rather than per (step, n). The arrays are laid out
    (support, key) so that each band operation runs over contiguous rows of keys.
    """
    top = int(n.max())
    order = np.argsort(-n, kind="stable")  # longest first: the active keys are a prefix
    n, b, c = n[order], b[order], c[order]
    pb, pc, pr = b / n, c / n, (n - b - c) / n
    p = np.zeros((2 * top + 1, len(n)))
    p[top] = 1.0
    q, tmp = np.zeros_like(p), np.empty_like(p)
    out = np.empty((len(n), 2 * top + 1))
    for t in range(1, top + 1):
        k, done = _n_at_least(n, t), _n_at_least(n, t + 1)
        # Only the band [-t, t] can be non-zero after t steps; outside it (and outside a key's
        # own support) the docstring's recurrence adds exact zeros, so skipping it or sharing
        # the wider array gives the very same floats as the recurrence on 2n + 1 values.
        lo, hi = top - t, top + t + 1
        left, right = max(lo, 1), min(hi, 2 * top)
        np.multiply(pr[:k], p[lo:hi, :k], out=q[lo:hi, :k])
        np.multiply(pb[:k], p[left - 1 : hi - 1, :k], out=tmp[left:hi, :k])
        q[left:hi, :k] += tmp[left:hi, :k]
        np.multiply(pc[:k], p[lo + 1 : right + 1, :k], out=tmp[lo:right, :k])
        q[lo:right, :k] += tmp[lo:right, :k]
        p, q = q, p
        out[done:k] = p[:, done:k].T  # keys whose n is t are complete
    laws = np.empty_like(out)
    laws[order] = out
    return laws


def _n_at_least(n_descending: np.ndarray, t: int) -> int:
    return int(np.searchsorted(-n_descending, -t, side="right"))


def diff_cdf(n: int, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Cumulative `diff_pmf`, shape (len(b), 2n + 1)."""
    return np.cumsum(diff_pmf(n, b, c), axis=1)


def paired_bootstrap_ci(
    n: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    *,
    resamples: int = 20_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of 100 * (b - c) / n per cell; NaN where n = 0."""
    _check(resamples, seed)
    levels = percentile_levels(confidence)
    n, b, c = (np.asarray(x, dtype=np.int64).ravel() for x in (n, b, c))
    low, high = np.full(n.shape, np.nan), np.full(n.shape, np.nan)
    defined = n > 0
    if not defined.any():
        return low, high
    # One bootstrap per distinct (n, b, c); the scheme makes that exact, not an approximation.
    keys, back = np.unique(
        np.stack([n[defined], b[defined], c[defined]], axis=1), axis=0, return_inverse=True
    )
    key_low, key_high = _intervals(keys, int(resamples), int(seed), levels)
    low[defined], high[defined] = key_low[back.ravel()], key_high[back.ravel()]
    return low, high


def _check(resamples: int, seed: int) -> None:
    if int(resamples) < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if int(seed) < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")


def _ranks(resamples: int, levels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """numpy's 'linear' percentile: the two order statistics each level reads, and the weight."""
    virtual = (resamples - 1) * np.true_divide(levels, 100)
    previous = np.floor(virtual)
    gamma = virtual - previous
    prev_i, next_i = previous.astype(np.intp), previous.astype(np.intp) + 1
    above = virtual >= resamples - 1
    prev_i[above] = next_i[above] = resamples - 1
    below = virtual < 0
    prev_i[below] = next_i[below] = 0
    return prev_i, next_i, gamma


def _lerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    # numpy's own formula (lib._function_base_impl._lerp), so the floats match np.percentile.
    diff = b - a
    return np.where(t >= 0.5, b - diff * (1 - t), a + diff * t)


def _intervals(
    keys: np.ndarray, resamples: int, seed: int, levels: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Steps 1-4 (n <= EXACT_MAX_N) or 1'-2' (larger n) per key of `keys` (sorted by n)."""
    small = int(np.searchsorted(keys[:, 0], EXACT_MAX_N, side="right"))
    low, high = np.empty(len(keys)), np.empty(len(keys))
    if small:
        low[:small], high[:small] = _exact_intervals(keys[:small], resamples, seed, levels)
    if small < len(keys):
        low[small:], high[small:] = _drawn_intervals(keys[small:], resamples, seed, levels)
    return low, high


def _drawn_intervals(
    keys: np.ndarray, resamples: int, seed: int, levels: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Steps 1'-2': two binomial draws per resample, whatever n is."""
    bitgen = np.random.PCG64(0)
    rng = np.random.Generator(bitgen)
    out = np.empty((len(keys), len(levels)))
    for i, ((n, b, c), state) in enumerate(
        zip(keys.tolist(), pcg64_states(seed, keys), strict=True)
    ):
        bitgen.state = state
        bs = rng.binomial(n, b / n, resamples)
        cs = rng.binomial(n - bs, c / (n - b), resamples) if c else 0
        out[i] = np.percentile(100.0 * (bs - cs) / n, levels)
    return out[:, 0], out[:, 1]


def _exact_intervals(
    keys: np.ndarray, resamples: int, seed: int, levels: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Steps 1-4 for keys sorted by n, reading only the order statistics the percentile uses."""
    prev_i, next_i, gamma = _ranks(resamples, levels)
    ranks = np.concatenate([prev_i, next_i])
    states = pcg64_states(seed, keys)
    stat = np.empty((len(keys), len(ranks)))
    for rows in _chunks(keys[:, 0]):
        n = keys[rows, 0]
        top = int(n[-1])
        counts = _counts(_laws(n, keys[rows, 1], keys[rows, 2]), n, states[rows], resamples)
        # The k-th smallest statistic sits at support index #{j: cumulative count j <= k};
        # the last cumulative count is `resamples` > k, so the index stays on the support.
        at = (np.cumsum(counts, axis=1)[:, :, None] <= ranks).sum(axis=1)
        stat[rows] = 100.0 * (at - top) / n[:, None]
    out = _lerp(stat[:, : len(levels)], stat[:, len(levels) :], gamma[None, :])
    return out[:, 0], out[:, 1]


def _chunks(n_ascending: np.ndarray, budget: int = 1 << 21) -> Iterator[slice]:
    """Consecutive key ranges whose law arrays stay within `budget` floats each."""
    start = 0
    while start < len(n_ascending):
        width = 2 * n_ascending[start:] + 1  # the last key of a range sets its width
        fits = np.flatnonzero(np.arange(1, len(width) + 1) * width <= budget)
        stop = start + (int(fits[-1]) + 1 if len(fits) else 1)
        yield slice(start, stop)
        start = stop


def _counts(
    laws: np.ndarray, n: np.ndarray, states: list[dict[str, Any]], resamples: int
) -> np.ndarray:
    """Step 2 per key (row of `laws`, centred on its middle column), as counts over all columns.

    One generator object is re-seeded per key instead of one built per key: a Generator
    keeps nothing besides its bit generator's state but a cache of binomial constants keyed
    by their (n, p), so re-seeding gives the numbers a fresh one would.
    """
    top = laws.shape[1] // 2
    bitgen = np.random.PCG64(0)
    rng = np.random.Generator(bitgen)
    out = np.zeros(laws.shape, dtype=np.int64)
    for i, (m, state) in enumerate(zip(n.tolist(), states, strict=True)):
        bitgen.state = state
        support = slice(top - m, top + m + 1)
        out[i, support] = rng.multinomial(resamples, laws[i, support])
    return out

"""Seeded paired-multinomial percentile bootstrap for RAE and OAE.

Resampling the n tasks of a subset with replacement draws the four outcome counts
(a*, b*, c*, d*) from Multinomial(n; a/n, b/n, c/n, d/n). RAE and OAE depend only on
D* = b* - c*, whose law is that of a sum of n independent steps of +1 (prob b/n), -1
(prob c/n) and 0 (prob (a+d)/n). The bootstrap distribution is therefore a function of
(n, b, c) alone, and each resample draws D* exactly from it with one uniform (inverse
transform) instead of n task indices. The result is the same bootstrap, not an
approximation of it.

RNG scheme, version 1 (reproduce it bit for bit from this description):

1. law: ``p`` = float64 vector over D = -n..n, start at the point mass on 0, then n times
   ``q = pr * p; q[1:] += pb * p[:-1]; q[:-1] += pc * p[1:]; p = q`` with ``pb = b / n``,
   ``pc = c / n``, ``pr = (n - b - c) / n``; ``cdf = np.cumsum(p)``.
2. uniforms: ``np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, n, b, c])))
   .random(resamples)``.
3. resampled statistic: ``D_i = -n + min(np.searchsorted(cdf, u_i, side="right"), 2n)``,
   ``stat_i = 100.0 * D_i / n``.
4. interval: ``np.percentile(stat, [100 * alpha / 2, 100 * (1 - alpha / 2)])`` with
   ``alpha = 1 - confidence`` (numpy's default "linear" method).

The interval is thus a pure function of (seed, n, b, c, resamples, confidence): a cell's
interval never depends on which other cells are computed with it, and cells with equal
counts get equal intervals. The implementation evaluates steps 3-4 only at the order
statistics that the percentile reads (the inverse transform is monotone, so sorting the
uniforms sorts the statistics), which gives identical floats at a fraction of the cost.
Bit-for-bit equality assumes the same numpy: Generator streams are stable in practice but
not promised across numpy versions.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

SCHEME_VERSION = 1


def percentile_levels(confidence: float) -> np.ndarray:
    """The two percentiles (0-100) of a two-sided interval at `confidence`."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    alpha = 1.0 - confidence
    return np.array([100.0 * alpha / 2.0, 100.0 * (1.0 - alpha / 2.0)])


def diff_cdf(n: int, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Step 1 for keys that share n: CDF rows over D = -n..n, shape (len(b), 2n + 1)."""
    b = np.asarray(b, dtype=np.int64).reshape(-1, 1)
    c = np.asarray(c, dtype=np.int64).reshape(-1, 1)
    pb, pc, pr = b / n, c / n, (n - b - c) / n
    p = np.zeros((len(b), 2 * n + 1))
    p[:, n] = 1.0
    q, tmp = np.zeros_like(p), np.empty_like(p)
    for t in range(1, n + 1):
        # Only the support [-t, t] can be non-zero after t steps; outside it the docstring's
        # recurrence adds exact zeros, so skipping that band gives the very same floats.
        lo, hi = n - t, n + t + 1
        left, right = max(lo, 1), min(hi, 2 * n)
        np.multiply(pr, p[:, lo:hi], out=q[:, lo:hi])
        np.multiply(pb, p[:, left - 1 : hi - 1], out=tmp[:, left:hi])
        q[:, left:hi] += tmp[:, left:hi]
        np.multiply(pc, p[:, lo + 1 : right + 1], out=tmp[:, lo:right])
        q[:, lo:right] += tmp[:, lo:right]
        p, q = q, p
    return np.cumsum(p, axis=1)


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
    key_low, key_high = _intervals(keys, resamples, seed, levels)
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
    prev_i, next_i, gamma = _ranks(resamples, levels)
    kth = np.unique(np.concatenate([prev_i, next_i]))
    workers = _workers(len(keys))
    with ThreadPoolExecutor(workers) as pool:
        # Uniforms in worker threads while this thread computes the laws (independent work).
        u_at, pending = _uniform_order_stats(pool, workers, keys, resamples, seed, kth)
        groups = [(n, np.flatnonzero(keys[:, 0] == n)) for n in np.unique(keys[:, 0]).tolist()]
        cdfs = [diff_cdf(n, keys[rows, 1], keys[rows, 2]) for n, rows in groups]
        for job in pending:
            job.result()
    stat_prev = np.empty((len(keys), len(levels)))
    stat_next = np.empty_like(stat_prev)
    pos_prev, pos_next = np.searchsorted(kth, prev_i), np.searchsorted(kth, next_i)
    for (n, rows), cdf in zip(groups, cdfs, strict=True):
        # searchsorted(side="right") = how many CDF entries are <= u, capped at the top.
        idx = (cdf[:, :, None] <= u_at[rows][:, None, :]).sum(axis=1)
        stat = 100.0 * (np.minimum(idx, 2 * n) - n) / n
        stat_prev[rows], stat_next[rows] = stat[:, pos_prev], stat[:, pos_next]
    out = _lerp(stat_prev, stat_next, gamma[None, :])
    return out[:, 0], out[:, 1]


def _uniform_order_stats(
    pool: ThreadPoolExecutor,
    workers: int,
    keys: np.ndarray,
    resamples: int,
    seed: int,
    kth: np.ndarray,
) -> tuple[np.ndarray, list[Future[None]]]:
    """Step 2 per key, keeping only the order statistics at `kth` (sorted ranks).

    Returns the output array and the jobs filling it. Generation and selection release the
    GIL; each key has its own stream, so the split over threads cannot change any number.
    """
    out = np.empty((len(keys), len(kth)))
    windows = _windows(kth, resamples)
    key_list = keys.tolist()

    def work(lo: int, hi: int) -> None:
        for i in range(lo, hi):
            n, b, c = key_list[i]
            rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, n, b, c])))
            out[i] = _order_stats(rng.random(resamples), kth, windows)

    bounds = np.linspace(0, len(keys), workers + 1).astype(int).tolist()
    return out, [pool.submit(work, lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]


def _windows(kth: np.ndarray, resamples: int) -> list[tuple[np.ndarray, float, bool]]:
    """Clusters of nearby ranks, each with a one-sided value cut that almost surely holds them.

    A cluster in the lower half is looked for among values below a cut, one in the upper half
    among values at or above it, 8 binomial standard deviations beyond the ranks' quantiles.
    `_order_stats` checks that the cut did hold them and falls back to a full partition
    otherwise, so the cut only saves time; it never changes a result.
    """
    clusters: list[list[int]] = []
    for r in kth.tolist():
        if clusters and r - clusters[-1][-1] <= 2:
            clusters[-1].append(r)
        else:
            clusters.append([r])
    out = []
    for ranks in clusters:
        lo_q, hi_q = ranks[0] / resamples, (ranks[-1] + 1) / resamples
        spread = 8.0 * np.sqrt(
            max(lo_q * (1 - lo_q), hi_q * (1 - hi_q), 1.0 / resamples) / resamples
        )
        upper = lo_q + hi_q > 1.0
        cut = max(lo_q - spread, 0.0) if upper else min(hi_q + spread, 1.0)
        out.append((np.array(ranks), cut, upper))
    return out


def _order_stats(
    u: np.ndarray, kth: np.ndarray, windows: list[tuple[np.ndarray, float, bool]]
) -> np.ndarray:
    """Exact order statistics of `u` at ranks `kth`, selecting beyond a cut on one side."""
    values = []
    for ranks, cut, upper in windows:
        inside = u[u >= cut] if upper else u[u < cut]
        below = len(u) - len(inside) if upper else 0
        if below > ranks[0] or below + len(inside) <= ranks[-1]:
            return np.partition(u, kth)[kth]
        inside.partition(ranks - below)
        values.append(inside[ranks - below])
    return np.concatenate(values)


def _workers(n_keys: int) -> int:
    if n_keys < 64:
        return 1  # a thread still overlaps the laws with the uniforms
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8))

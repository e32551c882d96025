"""Benchmark: the full paired-metrics leaderboard for 10,000 cells x 80 tasks.

`compute_cells` (vectorised counts, one bootstrap per distinct (n, b, c) drawn as a
multinomial count vector, order statistics read off cumulative counts) against a
straightforward per-cell pandas groupby/apply written here, both with 20,000-resample 95%
intervals and the same documented RNG scheme (hf_skillfollow.metrics._bootstrap, version 3),
so the two must agree: every column exactly, except the McNemar p-values, which may differ
by float rounding (the package sums binomial terms, the baseline calls scipy's binom.cdf;
3 of 10,000 cells differ by one ulp, 1.1e-16) and are compared to a relative tolerance of
P_RTOL = 1e-12. The bench asserts it.

Then the bootstrap alone on one large cell (`--large-n`): the package's interval (steps
1'-2' above EXACT_MAX_N: two binomial draws per resample) against version 2's exact law
(steps 1-4, O(n^2)), timed side by side where version 2 is still computable, and how far the
two intervals lie apart in support steps, beside version 2's own spread across seeds (the
Monte Carlo error any 20,000-resample interval has).

    python bench/metrics.py [--cells 10000] [--tasks 80] [--resamples 20000] [--baseline-cells N]
                            [--large-n 5000] [--huge-n 2000000]

`--baseline-cells N` times the baseline on the first N cells only and extrapolates
linearly to all cells; the output says so.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time

import numpy as np
import pandas as pd
import pyarrow as pa

from hf_skillfollow.metrics import SCHEME_VERSION, compute_cells, paired_bootstrap_ci
from hf_skillfollow.metrics._bootstrap import EXACT_MAX_N
from hf_skillfollow.schema import CELL_COLUMNS, TRANSITIONS_SCHEMA, validate_transitions

CONDITIONS = ["normal", "schema-empty", "filler", "random", "corrupted", "metadata-only"]
BENCHMARKS = ["mbppplus", "humanevalplus", "math500"]
#: relative tolerance for p-values: two exact computations agree to float rounding only
P_RTOL = 1e-12
P_COLUMNS = ("mcnemar_p", "mcnemar_p_all")


def synthetic_transitions(n_cells: int, n_tasks: int, seed: int = 7) -> pa.Table:
    """Seeded transitions with per-cell accuracy, coverage and flip rates (one run per cell)."""
    rng = np.random.default_rng(seed)
    shape = (n_cells, n_tasks)
    p_sd = rng.uniform(0.1, 0.9, n_cells)[:, None]
    p_ret = np.where(rng.random(n_cells) < 0.05, 0.0, rng.uniform(0, 1, n_cells))[:, None]
    helps, harms = rng.uniform(0, 0.3, n_cells)[:, None], rng.uniform(0, 0.2, n_cells)[:, None]
    sd = rng.random(shape) < p_sd
    returned = rng.random(shape) < p_ret
    invoked = returned | (rng.random(shape) < 0.05)
    flip = np.where(sd, rng.random(shape) < harms, rng.random(shape) < helps) & (
        returned | (rng.random(shape) < 0.3)
    )
    se = sd ^ flip
    adherence = np.where(returned, rng.random(shape) < 0.5, False)
    cell = np.repeat(np.arange(n_cells), n_tasks)
    i = np.arange(n_cells)
    per_cell = {
        "model": [f"org/model-{m:03d}" for m in i % 100],
        "benchmark": [BENCHMARKS[k] for k in (i // 100) % 3],
        "condition": [CONDITIONS[k] for k in (i // 300) % 6],
        "partition_seed": 42 + (i // 1800) % 3,
        "top_k": np.array([1, 3, 5], dtype=np.int32)[(i // 5400) % 3],
        "run_id": [f"run-{k:05d}" for k in i],
    }
    per_cell["cell_id"] = [
        hashlib.sha256(f"{a}|{b}|{c}|{d}|{e}".encode()).hexdigest()[:16]
        for a, b, c, d, e in zip(
            *(per_cell[k] for k in ("model", "benchmark", "condition", "partition_seed", "top_k")),
            strict=True,
        )
    ]
    n = n_cells * n_tasks
    constants = {
        "schema_version": 1, "repeat_index": 0, "created_at": "2026-01-01T00:00:00+00:00", "backend": "openai",
        "tool_mode": "native", "retrieval_policy": "auto", "benchmark_version": "v1", "partition_size": n_tasks,
        "skill_pool": "coding", "skill_pool_hash": "abc", "access": "search", "retriever": "bm25s", "max_calls": 3, "temperature": 0.7,
        "max_tokens": 8192, "seed": 0, "prompts_hash": "p1", "toolkit_version": "0.1.0",
    }  # fmt: skip
    columns: dict[str, pa.Array] = {}
    for field in TRANSITIONS_SCHEMA:
        name = field.name
        if name in per_cell:
            columns[name] = pa.array(per_cell[name]).cast(field.type).take(cell)
        elif name in constants:
            columns[name] = pa.array(np.full(n, constants[name])).cast(field.type)
    empty_lists = pa.ListArray.from_arrays(
        np.zeros(n + 1, dtype=np.int32), pa.array([], pa.string())
    )
    outcomes = {
        "task_id": pa.array([f"task/{t}" for t in range(n_tasks)]).take(np.tile(np.arange(n_tasks), n_cells)),
        "se_correct": se.ravel(), "sd_correct": sd.ravel(), "invoked": invoked.ravel(), "returned": returned.ravel(),
        "n_calls": pa.array(invoked.ravel().astype(np.int32)), "queries": empty_lists, "skills_returned": empty_lists,
        "se_error": pa.nulls(n, pa.string()), "sd_error": pa.nulls(n, pa.string()),
        "adherence": pa.array(adherence.ravel(), mask=~returned.ravel()),
    }  # fmt: skip
    columns.update(
        {k: pa.array(v) if isinstance(v, np.ndarray) else v for k, v in outcomes.items()}
    )
    # Columns added to the schema later are backfilled, as for files written before them.
    return validate_transitions(pa.table(columns), "synthetic")


# ---------------------------------------------------------------- baseline (per cell)


def _baseline_interval(
    n: int, b: int, c: int, resamples: int, seed: int, levels: np.ndarray
) -> tuple[float, float]:
    """The documented scheme, done literally: full law, all resamples expanded, np.percentile
    (steps 1-4) up to EXACT_MAX_N, two binomial draws per resample (steps 1'-2') above."""
    if n == 0:
        return float("nan"), float("nan")
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, n, b, c])))
    if n > EXACT_MAX_N:
        bs = rng.binomial(n, b / n, resamples)
        cs = rng.binomial(n - bs, c / (n - b), resamples) if c else 0
        low, high = np.percentile(100.0 * (bs - cs) / n, levels)
        return float(low), float(high)
    return _version2_interval(n, b, c, resamples, rng, levels)


def _version2_interval(
    n: int, b: int, c: int, resamples: int, rng: np.random.Generator, levels: np.ndarray
) -> tuple[float, float]:
    """Steps 1-4 at any n: the exact law by its O(n^2) recurrence, then its count vector."""
    p = np.zeros(2 * n + 1)
    p[n] = 1.0
    pb, pc, pr = b / n, c / n, (n - b - c) / n
    for _ in range(n):
        q = pr * p
        q[1:] += pb * p[:-1]
        q[:-1] += pc * p[1:]
        p = q
    counts = rng.multinomial(resamples, p)
    sample = np.repeat(100.0 * np.arange(-n, n + 1) / n, counts)
    low, high = np.percentile(sample, levels)
    return float(low), float(high)


def _baseline_cell(
    g: pd.DataFrame, resamples: int, seed: int, levels: np.ndarray, min_cond: int
) -> pd.Series:
    from scipy.stats import binom

    se, sd, ret = g["se_correct"].to_numpy(), g["sd_correct"].to_numpy(), g["returned"].to_numpy()
    b_all, c_all = int((se & ~sd).sum()), int((~se & sd).sum())
    b_cond, c_cond = int((se & ~sd & ret).sum()), int((~se & sd & ret).sum())
    n, n_cond = len(g), int(ret.sum())
    n_skip = n - n_cond
    rae = 100.0 * (b_cond - c_cond) / n_cond if n_cond else float("nan")
    skip = 100.0 * ((b_all - b_cond) - (c_all - c_cond)) / n_skip if n_skip else float("nan")
    lift = (
        100.0 * (se[ret].sum() / n_cond - se[~ret].sum() / n_skip)
        if n_cond and n_skip
        else float("nan")
    )
    select = (
        100.0 * (sd[ret].sum() / n_cond - sd[~ret].sum() / n_skip)
        if n_cond and n_skip
        else float("nan")
    )

    def mcnemar(b: int, c: int) -> float:
        return 1.0 if b + c == 0 else float(min(1.0, 2.0 * binom.cdf(min(b, c), b + c, 0.5)))

    oae_ci = _baseline_interval(n, b_all, c_all, resamples, seed, levels)
    rae_ci = _baseline_interval(n_cond, b_cond, c_cond, resamples, seed, levels)
    return pd.Series({
        "n_pairs": n, "n_cond": n_cond, "b_all": b_all, "c_all": c_all, "b_cond": b_cond, "c_cond": c_cond,
        "oae": 100.0 * (b_all - c_all) / n, "oae_ci_low": oae_ci[0], "oae_ci_high": oae_ci[1],
        "rae": rae, "rae_ci_low": rae_ci[0], "rae_ci_high": rae_ci[1],
        "mcnemar_p": mcnemar(b_cond, c_cond), "mcnemar_p_all": mcnemar(b_all, c_all),
        "delta_skip": skip, "agg_lift": lift, "delta_select": select,
        "coverage": 100.0 * n_cond / n, "reportable": n_cond >= min_cond,
        "sign_disagree": bool(n_cond >= min_cond and lift * rae < 0),
    })  # fmt: skip


def baseline(
    df: pd.DataFrame, resamples: int, seed: int, confidence: float, min_cond: int
) -> pd.DataFrame:
    alpha = 1.0 - confidence
    levels = np.array([100.0 * alpha / 2.0, 100.0 * (1.0 - alpha / 2.0)])
    keys = list(CELL_COLUMNS)
    out = df.groupby(keys, sort=True).apply(
        _baseline_cell, resamples, seed, levels, min_cond, include_groups=False
    )
    return out.reset_index()


# ---------------------------------------------------------------- main


def _compare(fast: pd.DataFrame, slow: pd.DataFrame) -> None:
    keys = list(CELL_COLUMNS)
    merged = slow.merge(fast, on=keys, suffixes=("_base", ""), validate="one_to_one")
    assert len(merged) == len(slow), "baseline cells missing from compute_cells"
    for col in slow.columns.difference(keys):
        a = merged[col].to_numpy().astype(float)
        b = merged[f"{col}_base"].to_numpy().astype(float)
        if col in P_COLUMNS:
            same = np.allclose(a, b, rtol=P_RTOL, atol=0.0, equal_nan=True)
        else:
            same = np.array_equal(a, b, equal_nan=True)
        assert same, f"{col}: compute_cells and the baseline differ"


def _load() -> str:
    return (
        " / ".join(f"{x:.1f}" for x in os.getloadavg())
        + " (1/5/15 min; other work on the machine slows wall times)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--cells", type=int, default=10_000)
    ap.add_argument("--tasks", type=int, default=80)
    ap.add_argument("--resamples", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--baseline-cells",
        type=int,
        default=None,
        help="time the baseline on this many cells and extrapolate",
    )
    ap.add_argument(
        "--repeats", type=int, default=3, help="compute_cells timings (best is reported)"
    )
    ap.add_argument("--large-n", type=int, default=5000,
                    help="one cell this large, timed against version 2's exact law (0: skip)")  # fmt: skip
    ap.add_argument("--huge-n", type=int, default=2_000_000,
                    help="one cell this large, the package alone (0: skip)")  # fmt: skip
    args = ap.parse_args()
    if SCHEME_VERSION != 3:
        raise SystemExit(f"the baseline implements RNG scheme 3, the package uses {SCHEME_VERSION}")

    table = synthetic_transitions(args.cells, args.tasks)
    print(f"synthetic transitions: {args.cells:,} cells x {args.tasks} tasks = {table.num_rows:,} rows; "
          f"{args.resamples:,} resamples, 95% intervals; CPUs available: {len(os.sched_getaffinity(0))}")  # fmt: skip
    compute_cells(
        table.slice(0, args.tasks * 10), resamples=args.resamples, seed=args.seed
    )  # warm imports
    times, cpus = [], []
    for _ in range(args.repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fast = compute_cells(table, resamples=args.resamples, seed=args.seed)
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    t_fast = min(times)
    print(
        f"compute_cells (pyarrow table in, leaderboard out): {t_fast:.3f} s wall, best of {args.repeats} "
        f"({', '.join(f'{t:.3f}' for t in times)}); CPU time {min(cpus):.3f} s (all threads)"
    )
    print(
        f"  {len(fast):,} cells; {int((fast['n_cond'] == 0).sum()):,} with n_cond = 0; load average {_load()}"
    )

    n_base = min(args.baseline_cells or args.cells, args.cells)
    df = table.slice(0, n_base * args.tasks).to_pandas()
    t0, c0 = time.perf_counter(), time.process_time()
    slow = baseline(df, args.resamples, args.seed, 0.95, 10)
    t_slow, c_slow = time.perf_counter() - t0, time.process_time() - c0
    _compare(fast, slow)
    scale = args.cells / n_base
    label = (
        "measured"
        if n_base == args.cells
        else f"measured on {n_base:,} cells ({t_slow:.2f} s), extrapolated x{scale:g}"
    )
    print(
        f"baseline per-cell pandas groupby/apply: {t_slow * scale:.2f} s wall, CPU {c_slow * scale:.2f} s ({label})"
    )
    mismatched = _p_ulps(fast, slow)
    print(
        f"results identical on the {n_base:,} compared cells (every column exact; McNemar p within "
        f"rtol {P_RTOL:g}: {mismatched} p-value(s) not bit-equal)"
    )
    print(
        f"speed-up: {t_slow * scale / t_fast:.1f}x wall, {c_slow * scale / min(cpus):.1f}x CPU time"
    )
    if args.large_n:
        _large_cell(args.large_n, args.resamples, args.seed)
    if args.huge_n:
        _huge_cell(args.huge_n, args.resamples, args.seed)


def _p_ulps(fast: pd.DataFrame, slow: pd.DataFrame) -> int:
    keys = list(CELL_COLUMNS)
    merged = slow.merge(fast, on=keys, suffixes=("_base", ""))
    return int(sum((merged[c] != merged[f"{c}_base"]).sum() for c in P_COLUMNS))


def _large_cell(n: int, resamples: int, seed: int) -> None:
    """One cell of n tasks: steps 1'-2' against version 2's exact law, time and distance."""
    levels = np.array([2.5, 97.5])
    b, c = n // 5, n // 8
    t0 = time.perf_counter()
    low, high = paired_bootstrap_ci([n], [b], [c], resamples=resamples, seed=seed)
    t_new = time.perf_counter() - t0
    t0 = time.perf_counter()
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, n, b, c])))
    v2 = _version2_interval(n, b, c, resamples, rng, levels)
    t_v2 = time.perf_counter() - t0
    step = 100.0 / n
    print(
        f"one cell, n = {n:,} (b = {b:,}, c = {c:,}): package {t_new * 1e3:.1f} ms, version 2 exact "
        f"law {t_v2:.2f} s ({t_v2 / t_new:.0f}x); intervals [{low[0]:+.3f}, {high[0]:+.3f}] vs "
        f"[{v2[0]:+.3f}, {v2[1]:+.3f}] pp: {abs(low[0] - v2[0]) / step:.1f} and "
        f"{abs(high[0] - v2[1]) / step:.1f} support steps apart"
    )
    spread = []
    for other in range(1, 4):  # version 2's own Monte Carlo error: the same law, other seeds
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed + other, n, b, c])))
        alt = _version2_interval(n, b, c, resamples, rng, levels)
        spread += [abs(alt[0] - v2[0]) / step, abs(alt[1] - v2[1]) / step]
    print(
        f"  version 2 against itself with seeds {seed + 1}-{seed + 3}: bounds "
        f"{min(spread):.1f}-{max(spread):.1f} support steps apart (Monte Carlo error of 20,000 resamples)"
    )


def _huge_cell(n: int, resamples: int, seed: int) -> None:
    b, c = n // 5, n // 8
    t0 = time.perf_counter()
    low, high = paired_bootstrap_ci([n], [b], [c], resamples=resamples, seed=seed)
    elapsed = time.perf_counter() - t0
    print(
        f"one cell, n = {n:,}: package {elapsed * 1e3:.1f} ms, interval [{low[0]:+.3f}, {high[0]:+.3f}] pp "
        f"(version 2 needs n = {n:,} steps over {2 * n + 1:,} values: not run)"
    )


if __name__ == "__main__":
    main()

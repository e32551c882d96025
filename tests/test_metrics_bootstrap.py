"""The paired-multinomial percentile bootstrap: its law, its RNG scheme and its intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hf_skillfollow.metrics import SCHEME_VERSION, diff_cdf, paired_bootstrap_ci
from hf_skillfollow.metrics._bootstrap import EXACT_MAX_N, _chunks, _laws, diff_pmf
from hf_skillfollow.metrics._seeding import pcg64_states


def _recurrence(n: int, b: int, c: int) -> np.ndarray:
    """Step 1 of the module docstring, full width, as written there."""
    pb, pc, pr = b / n, c / n, (n - b - c) / n
    p = np.zeros(2 * n + 1)
    p[n] = 1.0
    for _ in range(n):
        q = pr * p
        q[1:] += pb * p[:-1]
        q[:-1] += pc * p[1:]
        p = q
    return p


def _literal_interval(
    n: int, b: int, c: int, resamples: int, seed: int, confidence: float
) -> tuple[float, float]:
    """The documented scheme step by step: counts drawn, the sorted sample expanded, np.percentile."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, n, b, c])))
    counts = rng.multinomial(resamples, _recurrence(n, b, c))
    sample = np.repeat(100.0 * np.arange(-n, n + 1) / n, counts)
    alpha = 1 - confidence
    low, high = np.percentile(sample, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return float(low), float(high)


def _drawn_interval(
    n: int, b: int, c: int, resamples: int, seed: int, confidence: float
) -> tuple[float, float]:
    """Steps 1'-2' of the module docstring (n > EXACT_MAX_N) as written there."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, n, b, c])))
    bs = rng.binomial(n, b / n, resamples)
    cs = rng.binomial(n - bs, c / (n - b), resamples) if c else 0
    alpha = 1 - confidence
    low, high = np.percentile(100.0 * (bs - cs) / n, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return float(low), float(high)


def test_scheme_version_is_the_one_these_tests_spell_out() -> None:
    assert SCHEME_VERSION == 3 and EXACT_MAX_N == 1000


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
    np.testing.assert_array_equal(diff_pmf(n, [b, 0], [c, 0])[0], _recurrence(n, b, c))
    np.testing.assert_array_equal(diff_cdf(n, [b, 0], [c, 0])[0], np.cumsum(_recurrence(n, b, c)))


def test_laws_of_keys_with_different_n_are_each_keys_own_recurrence() -> None:
    """Keys advanced together on the widest support: same floats, exact zeros off support."""
    keys = [(80, 11, 17), (1, 0, 1), (40, 0, 0), (80, 80, 0), (9, 3, 2), (40, 20, 19), (2, 1, 1)]
    n, b, c = (np.array(col) for col in zip(*keys, strict=True))
    laws = _laws(n, b, c)
    assert laws.shape == (len(keys), 161)
    for row, (m, bb, cc) in zip(laws, keys, strict=True):
        np.testing.assert_array_equal(row[80 - m : 81 + m], _recurrence(m, bb, cc))
        assert not row[: 80 - m].any() and not row[81 + m :].any()


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
    keys += [(80, 79, 1), (80, 1, 79), (80, 40, 40), (3, 1, 1)]  # thin tails, no room left
    n, b, c = (np.array(col) for col in zip(*keys, strict=True))
    low, high = paired_bootstrap_ci(n, b, c, resamples=resamples, seed=11, confidence=confidence)
    for i, key in enumerate(keys):
        assert (low[i], high[i]) == _literal_interval(*key, resamples, 11, confidence), key


def test_many_mixed_keys_equal_the_literal_scheme_bit_for_bit() -> None:
    rng = np.random.default_rng(8)
    n = rng.integers(1, 120, size=400)
    b = rng.integers(0, n + 1)
    c = rng.integers(0, n - b + 1)
    low, high = paired_bootstrap_ci(n, b, c, seed=2**40 + 7)
    for i in range(0, 400, 9):
        key = (int(n[i]), int(b[i]), int(c[i]))
        assert (low[i], high[i]) == _literal_interval(*key, 20_000, 2**40 + 7, 0.95), key


def test_intervals_agree_with_literal_task_resampling() -> None:
    """The percentile bootstrap done the textbook way, task indices drawn with replacement,
    lands within one support step (100 / n points) of the scheme's interval."""
    for n, b, c in [(30, 9, 4), (24, 2, 7), (50, 0, 3)]:
        outcomes = np.array([1] * b + [-1] * c + [0] * (n - b - c))
        draws = np.random.default_rng(n).integers(0, n, size=(20_000, n))
        textbook = np.percentile(100.0 * outcomes[draws].sum(axis=1) / n, [2.5, 97.5])
        low, high = paired_bootstrap_ci([n], [b], [c], seed=1)
        step = 100 / n + 1e-9  # support values differ in the last bits between the two ways
        assert abs(low[0] - textbook[0]) <= step and abs(high[0] - textbook[1]) <= step


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


def test_generator_states_are_numpys_seed_sequence_states() -> None:
    keys = np.array([[80, 5, 3], [1, 0, 1], [0, 0, 0], [12, 4, 3], [2**32 - 1, 7, 2**31]])
    for seed in (0, 1, 11, 2**32 - 1, 2**32, 2**70 + 5):
        for key, state in zip(keys.tolist(), pcg64_states(seed, keys), strict=True):
            expected = np.random.PCG64(np.random.SeedSequence([seed, *key])).state
            assert state == expected, (seed, key)
    with pytest.raises(ValueError, match="2\\*\\*32"):
        pcg64_states(0, np.array([[2**32, 0, 0]]))


def test_chunks_cover_every_key_once_in_order_within_the_budget() -> None:
    n = np.sort(np.random.default_rng(3).integers(1, 300, size=500))
    chunks = list(_chunks(n, budget=20_000))
    assert len(chunks) > 1
    assert np.array_equal(np.concatenate([np.arange(len(n))[s] for s in chunks]), np.arange(len(n)))
    for s in chunks:
        rows = n[s]
        assert len(rows) == 1 or len(rows) * (2 * rows[-1] + 1) <= 20_000
    assert [(s.start, s.stop) for s in _chunks(np.array([5000]), budget=100)] == [(0, 1)]


# ---------------------------------------------------------------- large cells (issue 20, item 12)


def test_intervals_up_to_exact_max_n_are_version_2s_bit_for_bit() -> None:
    """Every size the study uses (80 per partition, pooled repeats of it) and up to 1,000:
    the interval is the one the exact-law scheme gave before large cells were drawn apart."""
    keys = [(160, 30, 21), (240, 0, 9), (400, 51, 47), (640, 300, 2), (1000, 123, 98), (1000, 0, 0)]
    n, b, c = (np.array(col) for col in zip(*keys, strict=True))
    low, high = paired_bootstrap_ci(n, b, c, seed=5)
    for i, key in enumerate(keys):
        assert (low[i], high[i]) == _literal_interval(*key, 20_000, 5, 0.95), key


@pytest.mark.parametrize("resamples", [1, 20_000])
def test_intervals_above_exact_max_n_are_the_documented_draws_bit_for_bit(resamples: int) -> None:
    keys = [(1001, 200, 150), (5000, 0, 0), (40_000, 40_000, 0), (40_000, 0, 40_000),
            (2_000_000, 400_000, 250_000), (2_000_000, 3, 0), (123_457, 1, 123_456)]  # fmt: skip
    n, b, c = (np.array(col) for col in zip(*keys, strict=True))
    low, high = paired_bootstrap_ci(n, b, c, resamples=resamples, seed=9)
    for i, key in enumerate(keys):
        assert (low[i], high[i]) == _drawn_interval(*key, resamples, 9, 0.95), key


def test_drawn_intervals_sample_the_exact_bootstrap_law() -> None:
    """Above EXACT_MAX_N the percentiles land on the exact law's quantiles up to the Monte
    Carlo error of 20,000 resamples (sd of a 2.5% quantile: sqrt(.025 * .975 / R) / density);
    five of those errors plus one support step bound every key, over several seeds."""
    n = 3000
    support = 100.0 * np.arange(-n, n + 1) / n
    for b, c in [(600, 375), (40, 90), (1500, 1490)]:
        cdf = np.cumsum(_recurrence(n, b, c))
        sd_d = np.sqrt(n * ((b + c) / n - ((b - c) / n) ** 2))  # sd of b* - c*, in tasks
        density = 0.0584 / sd_d  # normal density at the 2.5% quantile, per task
        tolerance = (5 * np.sqrt(0.025 * 0.975 / 20_000) / density + 1) * 100 / n
        exact = [support[np.searchsorted(cdf, q)] for q in (0.025, 0.975)]
        for seed in range(4):
            low, high = paired_bootstrap_ci([n], [b], [c], seed=seed)
            assert abs(low[0] - exact[0]) <= tolerance and abs(high[0] - exact[1]) <= tolerance


@pytest.mark.timeout(60)
def test_a_two_million_task_cell_takes_no_work_per_task() -> None:
    """Version 2 took n steps over 2n + 1 values here (never finishing); now two binomials
    per resample. The time limit only catches the quadratic way, it measures nothing."""
    low, high = paired_bootstrap_ci([2_000_000] * 3, [400_000, 7, 0], [250_000, 0, 0], seed=1)
    assert low[0] < 7.5 < high[0] and high[0] - low[0] < 0.2
    assert (low[2], high[2]) == (0.0, 0.0) and 0 <= low[1] <= high[1] < 0.001


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_report_of_a_two_million_task_cell_finishes(tmp_path) -> None:
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq
    from click.testing import CliRunner

    from hf_skillfollow.cli import cli
    from tests._cells import rows_for, table_for

    n = 2_000_000
    base = table_for(rows_for({"a": 1}, run_id="big", cell_id="big"))
    big = base.take(np.zeros(n, dtype=np.int64))
    rng = np.random.default_rng(0)
    columns = {
        "task_id": pa.array([f"t{i}" for i in range(n)]),
        "sd_correct": pa.array(rng.random(n) < 0.5),
    }
    columns["se_correct"] = pa.array(np.asarray(columns["sd_correct"]) ^ (rng.random(n) < 0.1))
    for name, column in columns.items():
        i = big.schema.get_field_index(name)
        big = big.set_column(i, big.schema.field(i), column)
    folder = tmp_path / "big"
    folder.mkdir()
    pq.write_table(big, folder / "transitions.parquet")
    (folder / "manifest.json").write_text(json.dumps({"run_id": "big"}))
    result = CliRunner().invoke(cli, ["report", str(folder), "--format", "json"])
    assert result.exit_code == 0, result.output[-2000:]
    (cell,) = json.loads(result.stdout)
    assert cell["n_pairs"] == n and cell["oae_ci_low"] < cell["oae"] < cell["oae_ci_high"]

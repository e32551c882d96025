"""One way to write numbers and undefined values, shared by the report, the card and the Space."""

from __future__ import annotations

import math

import numpy as np

from hf_skillfollow import formatting as fmt


def test_undefined_is_one_word_whatever_the_missing_value() -> None:
    for missing in (None, math.nan, np.float64("nan")):
        assert fmt.pp(missing) == "n/a"
        assert fmt.with_interval(missing, 1.0, 2.0) == "n/a"
        assert fmt.p_value(missing) == "n/a"
        assert fmt.count(missing) == "n/a"
        assert fmt.mean_sd(missing, 1.0) == "n/a"
    assert fmt.undefined("n_skip = 0") == "n/a (n_skip = 0)"


def test_numbers() -> None:
    assert (
        fmt.pp(3.84) == "+3.8" and fmt.pp(-0.04) == "-0.0" and fmt.pp(12.25, signed=False) == "12.2"
    )
    assert fmt.with_interval(3.84, -1.25, 8.95) == "+3.8 [-1.2, +8.9]"
    assert fmt.with_interval(3.84, None, math.nan) == "+3.8"
    assert fmt.p_value(0.031249) == "0.0312" and fmt.p_value(1.0) == "1"
    assert fmt.count(np.int64(7)) == "7"
    assert fmt.mean_sd(2.0, math.nan) == "+2.0 ± n/a"


def test_report_and_card_write_undefined_the_same_way() -> None:
    from hf_skillfollow.hub._numbers import cell_display

    card = cell_display(
        {"cell_id": "c", "model": "m", "benchmark": "b", "benchmark_version": "v",
         "partition_seed": 42, "partition_size": 80, "skill_pool": "p", "condition": "normal",
         "n_runs": 1, "n_pairs": 10, "n_cond": 0, "coverage": 0.0, "rae": None,
         "oae": 0.0, "oae_ci_low": 0.0, "oae_ci_high": 0.0, "delta_skip": 0.0,
         "agg_lift": None, "reportable": False}
    )  # fmt: skip
    assert card["rae"] == card["agg_lift"] == fmt.UNDEFINED

"""`report --correlate`: cells paired across benchmarks, effects correlated, exclusions named.

Expected values are computed here from the chosen counts with numpy (Pearson r via corrcoef,
partial r via the correlation of least-squares residuals), independently of scipy/pingouin.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from hf_skillfollow.cli import cli
from hf_skillfollow.metrics import compute_cells
from hf_skillfollow.metrics._correlate import correlate
from tests._cells import rows_for, table_for

# model -> {benchmark: (cond counts, skip counts)}; every n_cond >= 10 except where noted.
CELLS = {
    "m1": {"mbppplus": ({"a": 5, "b": 4, "c": 1, "d": 2}, {"a": 3, "d": 3}),
           "humanevalplus": ({"a": 4, "b": 3, "c": 1, "d": 3}, {"a": 2, "c": 1, "d": 2})},
    "m2": {"mbppplus": ({"a": 6, "b": 1, "c": 3, "d": 2}, {"a": 4, "b": 1, "d": 1}),
           "humanevalplus": ({"a": 5, "b": 1, "c": 4, "d": 1}, {"a": 1, "d": 4})},
    "m3": {"mbppplus": ({"a": 3, "b": 5, "c": 2, "d": 2}, {"a": 2, "c": 2, "d": 2}),
           "humanevalplus": ({"a": 3, "b": 4, "c": 2, "d": 2}, {"a": 3, "d": 3})},
    "m4": {"mbppplus": ({"a": 7, "b": 2, "c": 2, "d": 1}, {"a": 5, "d": 1}),
           "humanevalplus": ({"a": 6, "b": 2, "c": 3, "d": 1}, {"a": 3, "b": 1, "d": 1})},
    "m5": {"mbppplus": ({"a": 2, "b": 6, "c": 1, "d": 3}, {"a": 1, "d": 5}),
           "humanevalplus": ({"a": 2, "b": 5, "c": 1, "d": 4}, {"b": 1, "d": 4})},
    "m6": {"mbppplus": ({"a": 4, "b": 2, "c": 4, "d": 2}, {"a": 3, "c": 1, "d": 2}),
           "humanevalplus": ({"a": 5, "b": 1, "c": 3, "d": 2}, {"a": 2, "d": 3})},
    "small": {"mbppplus": ({"a": 3, "b": 2, "c": 1, "d": 1}, {"a": 2, "d": 2}),  # n_cond 7
              "humanevalplus": ({"a": 4, "b": 3, "c": 1, "d": 3}, {"a": 2, "d": 2})},
    "only-a": {"mbppplus": ({"a": 4, "b": 3, "c": 2, "d": 2}, {"a": 2, "d": 2})},
}  # fmt: skip
KEPT = ["m1", "m2", "m3", "m4", "m5", "m6"]


def _table():
    parts = []
    for model, benches in CELLS.items():
        for bench, (cond, skip) in benches.items():
            cid = f"{model}-{bench}"
            parts.append(
                rows_for(cond, skip, model=model, benchmark=bench, cell_id=cid, run_id=cid)
            )
    return table_for(*parts)


def _by_hand(model: str, bench: str) -> dict[str, float]:
    cond, skip = CELLS[model][bench]
    g = lambda d, k: d.get(k, 0)  # noqa: E731
    n_cond, n_skip = sum(cond.values()), sum(skip.values())
    n = n_cond + n_skip
    b, c = g(cond, "b") + g(skip, "b"), g(cond, "c") + g(skip, "c")
    return {
        "rae": 100 * (g(cond, "b") - g(cond, "c")) / n_cond,
        "oae": 100 * (b - c) / n,
        "agg_lift": 100
        * ((g(cond, "a") + g(cond, "b")) / n_cond - (g(skip, "a") + g(skip, "b")) / n_skip),
        "sd": 100 * (g(cond, "a") + g(cond, "c") + g(skip, "a") + g(skip, "c")) / n,
    }


def _residual_r(x, y, controls) -> float:
    z = np.column_stack([np.ones(len(x)), *controls])
    rx = x - z @ np.linalg.lstsq(z, x, rcond=None)[0]
    ry = y - z @ np.linalg.lstsq(z, y, rcond=None)[0]
    return float(np.corrcoef(rx, ry)[0, 1])


@pytest.fixture(scope="module")
def cells():
    return compute_cells(_table(), resamples=100)


def test_pearson_and_partial_r_match_numbers_computed_by_hand(cells) -> None:
    result = correlate(cells, "mbppplus", "humanevalplus", min_cond=10)
    assert sorted(p["model"] for p in result.pairs) == KEPT
    hand = {m: (_by_hand(m, "mbppplus"), _by_hand(m, "humanevalplus")) for m in KEPT}
    sd_a = np.array([hand[m][0]["sd"] for m in KEPT])
    sd_b = np.array([hand[m][1]["sd"] for m in KEPT])
    rows = {e["effect"]: e for e in result.effects}
    for col, name in (("rae", "RAE"), ("oae", "OAE"), ("agg_lift", "aggregate lift")):
        x = np.array([hand[m][0][col] for m in KEPT])
        y = np.array([hand[m][1][col] for m in KEPT])
        row = rows[name]
        assert row["n"] == 6
        assert row["r"] == pytest.approx(np.corrcoef(x, y)[0, 1])
        assert row["partial_r"] == pytest.approx(_residual_r(x, y, [sd_a, sd_b]))
        singles = sorted([_residual_r(x, y, [sd_a]), _residual_r(x, y, [sd_b])])
        assert (row["single_control_min"], row["single_control_max"]) == pytest.approx(
            tuple(singles)
        )
        assert 0 <= row["p"] <= 1 and 0 <= row["partial_p"] <= 1


def test_excluded_cells_carry_their_reason(cells) -> None:
    result = correlate(cells, "mbppplus", "humanevalplus", min_cond=10)
    reasons = {e["cells"]: e["reason"] for e in result.excluded}
    assert reasons["small-mbppplus, small-humanevalplus"] == "mbppplus n_cond 7 < 10"
    assert reasons["only-a-mbppplus"] == "no matching humanevalplus cell for this mbppplus cell"


def test_unknown_benchmark_is_a_clear_error(cells) -> None:
    with pytest.raises(ValueError, match="no cell of benchmark 'math500'"):
        correlate(cells, "mbppplus", "math500", min_cond=10)


def test_report_correlate_from_the_cli(tmp_path) -> None:
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(_table(), path)
    res = CliRunner().invoke(cli, ["report", str(path), "--correlate", "mbppplus", "humanevalplus",
                                   "--format", "json", "--resamples", "100"])  # fmt: skip
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert len(data["pairs"]) == 6 and len(data["excluded"]) == 2
    table = CliRunner().invoke(
        cli, ["report", str(path), "--correlate", "mbppplus", "humanevalplus", "--resamples", "100"]
    )
    assert "partial r" in table.output and "Excluded cells" in table.output

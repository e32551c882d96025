"""Repeat statistics: run-to-run variance and per-task SE − SD intervals, on hand-computed runs."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from hf_skillfollow.cli import cli
from hf_skillfollow.metrics import (
    classify,
    compute_cells,
    newcombe_interval,
    repeat_summary,
    repeat_variance,
    task_intervals,
    wilson_interval,
)
from hf_skillfollow.schema import transitions_from_rows
from tests._rows import transition_row

Z = 1.959963984540054  # standard normal 97.5% quantile
# (se_correct, sd_correct) of the four outcome categories
_OUTCOME = {"a": (True, True), "b": (True, False), "c": (False, True), "d": (False, False)}


def _run(run_id: str, index: int, tasks: dict[str, str], **identity: Any) -> list[dict[str, Any]]:
    """One run: task id -> outcome letter, upper case when the SE run received a skill."""
    rows = []
    for task, code in tasks.items():
        se, sd = _OUTCOME[code.lower()]
        returned = code.isupper()
        rows.append(
            transition_row(
                run_id=run_id, repeat_index=index, seed=index, task_id=task, se_correct=se,
                sd_correct=sd, returned=returned, invoked=returned, **identity,
            )
        )  # fmt: skip
    return rows


# Three repeats of one cell, same four tasks:
#   r1: OAE 100*(1-1)/4 = 0,   RAE (S_call t0 b, t1 c)  100*(1-1)/2 = 0,    coverage 50
#   r2: OAE 100*(2-0)/4 = 50,  RAE (S_call t0 b, t1 a)  100*(1-0)/2 = 50,   coverage 50
#   r3: OAE 100*(1-1)/4 = 0,   RAE (S_call t1 c)        100*(0-1)/1 = -100, coverage 25
R1 = _run("r1", 0, {"t0": "B", "t1": "C", "t2": "a", "t3": "d"})
R2 = _run("r2", 1, {"t0": "B", "t1": "A", "t2": "a", "t3": "b"})
R3 = _run("r3", 2, {"t0": "b", "t1": "C", "t2": "a", "t3": "d"})


def _table(*runs: list[dict[str, Any]]):
    return transitions_from_rows([r for run in runs for r in run])


def _wilson(x: int, n: int) -> tuple[float, float]:
    """Wilson limits in the textbook form (x + z²/2 ± z sqrt(x(n-x)/n + z²/4)) / (n + z²)."""
    centre, half = x + Z * Z / 2, Z * math.sqrt(x * (n - x) / n + Z * Z / 4)
    return (centre - half) / (n + Z * Z), (centre + half) / (n + Z * Z)


def _newcombe(x1: int, x2: int, n: int) -> tuple[float, float]:
    (l1, u1), (l2, u2) = _wilson(x1, n), _wilson(x2, n)
    p1, p2 = x1 / n, x2 / n
    d = p1 - p2
    return d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt(
        (u1 - p1) ** 2 + (p2 - l2) ** 2
    )


# ----------------------------------------------------------------------- run-to-run variance


def test_variance_of_per_run_effects_hand_computed() -> None:
    (cell,) = repeat_variance(_table(R1, R2, R3)).to_dict("records")
    assert cell["n_runs"] == 3 and cell["n_runs_rae"] == 3
    # OAE 0, 50, 0: mean 50/3, SD sqrt((2 (50/3)² + (100/3)²) / 2) = 50/sqrt(3)
    assert math.isclose(cell["oae_run_mean"], 50 / 3)
    assert math.isclose(cell["oae_run_sd"], 50 / math.sqrt(3))
    # RAE 0, 50, -100: mean -50/3, squared deviations (50/3)² + (200/3)² + (250/3)² = 105000/9
    assert math.isclose(cell["rae_run_mean"], -50 / 3)
    assert math.isclose(cell["rae_run_sd"], math.sqrt(105000 / 9 / 2))  # 76.376
    # coverage 50, 50, 25: mean 125/3, SD 25/sqrt(3)
    assert math.isclose(cell["coverage_run_mean"], 125 / 3)
    assert math.isclose(cell["coverage_run_sd"], 25 / math.sqrt(3))
    assert pd.isna(cell["repeat_reason"]) and pd.isna(cell["rae_run_reason"])


def test_run_mean_is_not_the_pooled_effect() -> None:
    """The pooled RAE sums counts (b 2, c 2 over 5 tasks = 0); the per-run mean is -50/3."""
    table = _table(R1, R2, R3)
    pooled = compute_cells(table, resamples=100).iloc[0]
    spread = repeat_variance(table).iloc[0]
    assert pooled.rae == 0.0 and not math.isclose(spread.rae_run_mean, pooled.rae)


def test_identical_runs_have_zero_sd() -> None:
    runs = [_run(f"r{i}", i, {"t0": "B", "t1": "a", "t2": "c"}) for i in range(3)]
    (cell,) = repeat_variance(_table(*runs)).to_dict("records")
    assert (cell["oae_run_sd"], cell["rae_run_sd"], cell["coverage_run_sd"]) == (0.0, 0.0, 0.0)
    assert math.isclose(cell["oae_run_mean"], 0.0) and math.isclose(cell["rae_run_mean"], 100.0)
    assert math.isclose(cell["coverage_run_mean"], 100 / 3)


def test_single_run_cell_gets_nan_sd_and_a_reason() -> None:
    solo = _run("solo", 0, {"t0": "B", "t1": "c"}, cell_id="cell-2")
    frame = repeat_variance(_table(R1, R2, solo))
    assert list(frame["cell_id"]) == ["cell-1", "cell-2"] and list(frame["n_runs"]) == [2, 1]
    one = frame.iloc[1]
    assert math.isnan(one.oae_run_sd) and math.isnan(one.rae_run_sd)
    assert math.isnan(one.coverage_run_sd)
    assert "1 run" in one.repeat_reason and "--repeats" in one.repeat_reason
    assert one.oae_run_mean == 0.0  # its one run: b 1, c 1
    assert pd.isna(frame.iloc[0].repeat_reason)


def test_rae_undefined_in_a_run_is_left_out_and_counted() -> None:
    never = _run("r2", 1, {"t0": "b", "t1": "a"})  # no skill returned: RAE undefined
    twice = _run("r3", 2, {"t0": "C", "t1": "a"})  # RAE -100
    frame = repeat_variance(_table(_run("r1", 0, {"t0": "B", "t1": "a"}), never, twice))
    cell = frame.iloc[0]
    assert cell.n_runs == 3 and cell.n_runs_rae == 2
    assert cell.rae_run_mean == 0.0 and math.isclose(cell.rae_run_sd, math.sqrt(2) * 100)
    only_one = repeat_variance(_table(_run("r1", 0, {"t0": "B"}), never)).iloc[0]
    assert only_one.n_runs_rae == 1 and math.isnan(only_one.rae_run_sd)
    assert only_one.rae_run_mean == 100.0 and "fewer than 2 runs" in only_one.rae_run_reason


def test_cells_and_order_follow_compute_cells_and_group_by() -> None:
    other = _run("x1", 0, {"t0": "c"}, cell_id="cell-0", condition="filler")
    table = _table(R1, other, R2)
    keys = ["cell_id", "condition"]
    assert (
        repeat_variance(table)[keys].values.tolist()
        == compute_cells(table, resamples=100)[keys].values.tolist()
    )
    by_model = repeat_variance(table, group_by=["model"])
    assert list(by_model["n_runs"]) == [3] and "cell_id" not in by_model.columns
    apart = repeat_variance(table, pool_runs=False)
    assert list(apart["n_runs"]) == [1, 1, 1]


def test_pandas_and_arrow_agree() -> None:
    table = _table(R1, R2, R3, _run("solo", 0, {"t0": "B"}, cell_id="cell-2"))
    pd.testing.assert_frame_equal(repeat_variance(table), repeat_variance(table.to_pandas()))
    pd.testing.assert_frame_equal(task_intervals(table), task_intervals(table.to_pandas()))


# ------------------------------------------------------------------------- per-task intervals


def test_wilson_limits_hand_computed() -> None:
    low, high = wilson_interval(np.array([0, 1, 3]), np.array([3, 3, 3]))
    assert low[0] == 0.0 and high[2] == 1.0  # exact at the boundaries
    assert math.isclose(high[0], Z * Z / (3 + Z * Z))  # 0.56150
    assert math.isclose(low[1], 0.0614919, abs_tol=1e-7)
    assert math.isclose(high[1], 0.7923404, abs_tol=1e-7)
    assert math.isclose(low[2], 3 / (3 + Z * Z))  # 0.43850
    assert all(math.isnan(v) for v in wilson_interval(0, 0))


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        ((56, 70, 48, 80), (0.0524, 0.3339)),
        ((9, 10, 3, 10), (0.1705, 0.8090)),
        ((5, 56, 0, 29), (-0.0381, 0.1926)),
        ((0, 10, 0, 20), (-0.1611, 0.2775)),
        ((0, 10, 0, 10), (-0.2775, 0.2775)),
        ((10, 10, 0, 20), (0.6791, 1.0)),
        ((10, 10, 0, 10), (0.6075, 1.0)),
    ],
)
def test_newcombe_matches_published_method_10(
    counts: tuple[int, int, int, int], expected: tuple[float, float]
) -> None:
    """Newcombe (1998) Stat Med 17:873, Table II, method 10 (hybrid score), to 4 decimals."""
    low, high = newcombe_interval(*counts)
    assert (round(float(low), 4), round(float(high), 4)) == expected


def test_task_intervals_hand_computed() -> None:
    tasks = task_intervals(_table(R1, R2, R3)).set_index("task_id")
    assert list(tasks["k"]) == [3, 3, 3, 3]
    assert list(tasks["se_successes"]) == [3, 1, 3, 1]
    assert list(tasks["sd_successes"]) == [0, 3, 3, 0]
    t0, t1, t2, t3 = (tasks.loc[t] for t in ("t0", "t1", "t2", "t3"))
    # t0: SE 3/3 vs SD 0/3 -> +100, low = 100 (1 - sqrt(2) z²/(3 + z²)) = +20.59
    assert t0["diff"] == 100.0 and t0.diff_ci_high == 100.0
    assert math.isclose(t0.diff_ci_low, 100 * (1 - math.sqrt(2) * Z * Z / (3 + Z * Z)))
    assert math.isclose(t0.diff_ci_low, 20.5923, abs_tol=1e-4)
    assert t0.task_class == "confidently improved"
    # t1: SE 1/3 vs SD 3/3 -> -66.7 [-93.85, +5.86]: below 0 but the interval holds 0
    assert math.isclose(t1["diff"], -200 / 3)
    assert math.isclose(t1.diff_ci_low, -93.8508, abs_tol=1e-4)
    assert math.isclose(t1.diff_ci_high, 5.8569, abs_tol=1e-4)
    assert (t1.diff_ci_low, t1.diff_ci_high) == pytest.approx(
        tuple(100 * v for v in _newcombe(1, 3, 3))
    )
    assert t1.task_class == "possibly degraded"
    # t2: 3/3 vs 3/3 -> 0 [-56.15, +56.15]
    assert t2["diff"] == 0.0 and math.isclose(t2.diff_ci_high, 100 * Z * Z / (3 + Z * Z))
    assert math.isclose(t2.diff_ci_low, -t2.diff_ci_high) and t2.task_class == "no change"
    # t3: 1/3 vs 0/3 -> +33.3 [-29.05, +79.23]
    assert math.isclose(t3.diff_ci_low, -29.0507, abs_tol=1e-4)
    assert math.isclose(t3.diff_ci_high, 79.2340, abs_tol=1e-4)
    assert t3.task_class == "possibly improved"
    assert tasks["task_reason"].isna().all()


def test_task_missing_in_one_run_uses_its_own_k() -> None:
    # t9 is absent from r3: SE 0/2 vs SD 2/2 -> -100 with high = -100 + 100 sqrt(2) z²/(2 + z²)
    # = -7.00, so still confidently degraded; t8 only in r1 is not classified.
    r1 = _run("r1", 0, {"t0": "a", "t9": "c", "t8": "c"})
    r2 = _run("r2", 1, {"t0": "a", "t9": "C"})
    r3 = _run("r3", 2, {"t0": "a"})
    tasks = task_intervals(_table(r1, r2, r3)).set_index("task_id")
    t9 = tasks.loc["t9"]
    assert t9.k == 2 and (t9.se_successes, t9.sd_successes) == (0, 2)
    assert t9["diff"] == -100.0 and t9.diff_ci_low == -100.0
    assert math.isclose(t9.diff_ci_high, -100 + 100 * math.sqrt(2) * Z * Z / (2 + Z * Z))
    assert math.isclose(t9.diff_ci_high, -6.9985, abs_tol=1e-4)
    assert t9.task_class == "confidently degraded"
    t8 = tasks.loc["t8"]
    assert t8.k == 1 and math.isnan(t8["diff"]) and math.isnan(t8.diff_ci_low)
    assert pd.isna(t8.task_class) and "only 1 run" in t8.task_reason
    assert (t8.se_rate, t8.sd_rate) == (0.0, 100.0)  # the counts are still reported


def test_single_run_cell_tasks_are_not_classified() -> None:
    solo = _run("solo", 0, {"t0": "B", "t1": "c"}, cell_id="cell-2")
    tasks = task_intervals(_table(R1, R2, solo))
    two = tasks[tasks["cell_id"] == "cell-2"]
    assert list(two["k"]) == [1, 1] and two["diff"].isna().all() and two["task_class"].isna().all()
    assert all("1 run" in r and "--repeats" in r for r in two["task_reason"])
    one = tasks[tasks["cell_id"] == "cell-1"]
    assert list(one["k"]) == [2, 2, 2, 2] and one["task_class"].notna().all()


def test_classify_boundaries() -> None:
    diff = np.array([-50.0, -50.0, -50.0, 0.0, 10.0, 10.0, 10.0, np.nan])
    low = np.array([-90.0, -90.0, -90.0, -40.0, -5.0, 0.0, 2.0, np.nan])
    high = np.array([-1.0, 0.0, 5.0, 40.0, 50.0, 50.0, 50.0, np.nan])
    assert list(classify(diff, low, high)) == [
        "confidently degraded", "possibly degraded", "possibly degraded", "no change",
        "possibly improved", "possibly improved", "confidently improved", None,
    ]  # fmt: skip


def test_confidence_changes_width_and_is_checked() -> None:
    table = _table(R1, R2, R3)
    wide = task_intervals(table, confidence=0.95).set_index("task_id")
    narrow = task_intervals(table, confidence=0.5).set_index("task_id")
    assert narrow.loc["t1", "diff_ci_high"] < 0 < wide.loc["t1", "diff_ci_high"]
    assert narrow.loc["t1", "task_class"] == "confidently degraded"
    with pytest.raises(ValueError, match="confidence"):
        task_intervals(table, confidence=1.0)


def test_duplicate_task_in_a_run_is_an_error_naming_it() -> None:
    with pytest.raises(ValueError, match=r"duplicate \(run_id, task_id\).*'r1'.*'t0'"):
        task_intervals(_table(R1, _run("r1", 0, {"t0": "a"})))


def test_missing_task_id_column_is_named() -> None:
    frame = _table(R1, R2).to_pandas().drop(columns=["task_id"])
    with pytest.raises(ValueError, match="task_id"):
        task_intervals(frame)


def test_summary_counts_tasks_per_class() -> None:
    solo = _run("solo", 0, {"t0": "B"}, cell_id="cell-2")
    summary, tasks = repeat_summary(_table(R1, R2, R3, solo))
    first, second = summary.to_dict("records")
    assert (first["n_confidently_improved"], first["n_possibly_improved"], first["n_no_change"]) == (
        1, 1, 1,
    )  # fmt: skip
    assert (first["n_possibly_degraded"], first["n_confidently_degraded"]) == (1, 0)
    assert first["n_tasks_repeated"] == 4 and second["n_tasks_repeated"] == 0
    assert second["n_possibly_degraded"] == 0 and len(tasks) == 5


# ------------------------------------------------------------------------------------- CLI


def _run_dir(root: Path, rows: list[dict[str, Any]]) -> Path:
    folder = root / rows[0]["run_id"]
    folder.mkdir(parents=True)
    pq.write_table(transitions_from_rows(rows), folder / "transitions.parquet")
    (folder / "manifest.json").write_text(json.dumps({"run_id": rows[0]["run_id"]}))
    return folder


def _report(*args: str | Path) -> str:
    result = CliRunner().invoke(cli, ["report", *map(str, args), "--resamples", "200"])
    assert result.exit_code == 0, result.output
    return result.output


def test_cli_report_repeats_json(tmp_path: Path) -> None:
    solo = _run("solo", 0, {"t0": "B", "t1": "c"}, cell_id="cell-2")
    for rows in (R1, R2, R3, solo):
        _run_dir(tmp_path, rows)
    cells = json.loads(_report(tmp_path, "--repeats", "--format", "json"))
    assert [c["cell_id"] for c in cells] == ["cell-1", "cell-2"]
    rep = cells[0]["repeats"]
    assert rep["n_runs"] == 3 and rep["n_runs_rae"] == 3
    assert math.isclose(rep["rae_run_sd"], math.sqrt(105000 / 9 / 2))
    assert math.isclose(rep["oae_run_sd"], 50 / math.sqrt(3))
    assert (rep["n_confidently_degraded"], rep["n_possibly_degraded"]) == (0, 1)
    assert (rep["n_confidently_improved"], rep["n_possibly_improved"]) == (1, 1)
    by_task = {t["task_id"]: t for t in rep["tasks"]}
    assert set(by_task) == {"t0", "t1", "t2", "t3"}
    assert by_task["t1"]["task_class"] == "possibly degraded" and by_task["t1"]["k"] == 3
    assert math.isclose(by_task["t0"]["diff_ci_low"], 20.5923, abs_tol=1e-4)
    single = cells[1]["repeats"]
    assert single["oae_run_sd"] is None and "--repeats" in single["repeat_reason"]
    assert [t["task_class"] for t in single["tasks"]] == [None, None]
    assert cells[0]["rae"] == 0.0  # the pooled leaderboard keys are still there


def test_cli_default_output_has_no_repeats(tmp_path: Path) -> None:
    for rows in (R1, R2):
        _run_dir(tmp_path, rows)
    cells = json.loads(_report(tmp_path, "--format", "json"))
    assert "repeats" not in cells[0]
    assert "--repeats" in _report(tmp_path)  # a hint, since the cell pools two runs
    assert "Run-to-run" not in _report(tmp_path)
    assert "Run-to-run variation" in _report(tmp_path, "--repeats")


def test_cli_single_run_table_says_repeats_need_runs(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, R1)
    plain = _report(run)
    assert "--repeats" not in plain  # unchanged when no cell has >= 2 runs
    flagged = _report(run, "--repeats")
    assert flagged.startswith(plain) and "need >= 2 runs" in flagged[len(plain) :]
    assert "Run-to-run variation" not in flagged
    header = _report(run, "--repeats", "--format", "csv").splitlines()[0].split(",")
    assert {"oae_run_sd", "rae_run_sd", "coverage_run_sd", "n_confidently_degraded"} <= set(header)

"""The report's own-task figures on hand-made rows (metrics._own: pure computation)."""

from __future__ import annotations

import json
import math

from hf_skillfollow.metrics import _own


def _t(task: str, se: bool, sd: bool, returned: list[str], cell: str = "c1") -> dict:
    return {"run_id": "r", "cell_id": cell, "task_id": task, "benchmark": "skill-evals",
            "se_correct": se, "sd_correct": sd, "returned": bool(returned),
            "skills_returned": returned}  # fmt: skip


def _trace(task: str, arm: str, majority: list[bool], *, tokens: int = 10, seconds: float = 1.0,
           unanimous: list[bool] | None = None, fragile: bool = False) -> dict:  # fmt: skip
    record = {"majority": majority, "unanimous": unanimous or [True] * len(majority),
              "n_valid": 2, "ties": 0, "fragile": fragile, "grading_failure": False}  # fmt: skip
    return {"run_id": "r", "cell_id": "c1", "task_id": task, "arm": arm, "prompt_tokens": tokens,
            "completion_tokens": 0, "latency_s": seconds, "judge_verdicts": json.dumps(record),
            "addresses_grader": task == "a/1" and arm == "se"}  # fmt: skip


TRANSITIONS = [
    _t("a/1", True, False, ["a"]),  # b, skill a retrieved on its own eval
    _t("a/2", False, True, ["b"]),  # c, but another skill was retrieved
    _t("a/3", True, False, []),  # b, nothing retrieved
    _t("b/1", False, False, ["b"]),
]
TRACES = [
    _trace("a/1", "se", [True, True], tokens=30, seconds=3.0, unanimous=[True, False], fragile=True),
    _trace("a/1", "sd", [True, False], tokens=10, seconds=1.0),
    _trace("a/2", "se", [False, False], tokens=30, seconds=3.0),
    _trace("a/2", "sd", [True, True], tokens=10, seconds=1.0),
    _trace("a/3", "se", [True], tokens=30, seconds=3.0),
    _trace("a/3", "sd", [False], tokens=10, seconds=1.0),
    _trace("b/1", "se", [False], tokens=30, seconds=3.0),
    _trace("b/1", "sd", [False], tokens=10, seconds=1.0),
]  # fmt: skip


def test_per_skill_counts_each_skill_on_its_own_evals() -> None:
    rows = {r["skill"]: r for r in _own.per_skill(TRANSITIONS, TRACES)}
    a = rows["a"]
    # a's evals: 3; a itself retrieved on a/1 only: coverage 1/3, b=1, c=0, RAE=+100
    assert (a["n"], a["n_retrieved"], a["b"], a["c"]) == (3, 1, 1, 0)
    assert math.isclose(a["coverage"], 100 / 3) and a["rae"] == 100.0
    # expectations met over a's evals: SE 2+0+1 of 5, SD 1+2+0 of 5
    assert (a["se_expectations"], a["sd_expectations"]) == (60.0, 60.0)
    b = rows["b"]
    assert (b["n"], b["n_retrieved"], b["b"], b["c"], b["coverage"]) == (1, 1, 0, 0, 100.0)
    assert b["rae"] == 0.0


def test_noise_cost_and_addressing_by_hand() -> None:
    (noise,) = _own.judge_noise(TRANSITIONS, TRACES).values()
    # items with two valid repeats: 2+2+2+2+1+1+1+1 = 12, one disagreeing
    assert (noise["items"], noise["disagreeing"]) == (12, 1)
    # b flips a/1 (fragile SE: explainable) and a/3 (not); c flip a/2 (not)
    assert (noise["b"], noise["b_explainable"], noise["c"], noise["c_explainable"]) == (2, 1, 1, 0)
    (cost,) = _own.cost(TRACES).values()
    assert (cost["d_tokens"], cost["d_seconds"]) == (20.0, 2.0)
    assert _own.addressing(TRACES) == {"c1": {"se": 1, "sd": 0}}


def test_noise_counts_one_judged_trace_per_answer_the_last() -> None:
    # a trace file holding the a/1 SE answer twice: the later record replaces the earlier
    again = _trace("a/1", "se", [True], unanimous=[False])
    (noise,) = _own.judge_noise(TRANSITIONS, [*TRACES, again]).values()
    # items: 12 - 2 (the replaced record's) + 1; disagreeing: 1 - 1 + 1; explainable: 1 - 1
    assert (noise["answers"], noise["items"], noise["disagreeing"]) == (8, 11, 1)
    assert noise["b_explainable"] == 0


def test_traces_written_before_the_grading_columns_read_with_them_null() -> None:
    import pyarrow as pa
    import pytest

    from hf_skillfollow.columns import ADDED_NULLABLE
    from hf_skillfollow.schema import TRACES_SCHEMA, SchemaError, validate_traces

    row = {"schema_version": 1, "run_id": "r", "cell_id": "c", "task_id": "t", "arm": "sd",
           "messages": [], "final_answer": "", "extracted": "", "correct": False,
           "scorer_details": "{}", "error": None, "n_calls": 0, "latency_s": 0.5,
           "prompt_tokens": 1, "completion_tokens": 1}  # fmt: skip
    old = pa.Table.from_pylist(
        [row], schema=pa.schema([f for f in TRACES_SCHEMA if f.name not in ADDED_NULLABLE])
    )
    table = validate_traces(old, source="old.parquet")
    assert table.schema.names == TRACES_SCHEMA.names
    added = [c for c in TRACES_SCHEMA.names if c in ADDED_NULLABLE]  # some are transitions'
    assert {"grader", "judge", "judge_verdicts", "addresses_grader"} <= set(added)
    assert all(table.column(c).null_count == 1 for c in added)
    with pytest.raises(SchemaError, match=r"missing column\(s\) \['latency_s'\]"):
        validate_traces(old.drop(["latency_s"]), source="old.parquet")


def test_rae_beside_the_figures_by_hand() -> None:
    # S_call: a/1 (b), a/2 (c), b/1 (d): RAE = 100 (1 - 1) / 3 = 0; a cell without S_call: NaN
    rae = _own.rae_by_cell([*TRANSITIONS, _t("x/1", True, False, [], cell="c2")])
    assert rae["c1"] == 0.0 and math.isnan(rae["c2"])


def test_space_trace_view_shows_the_judge_escaped() -> None:
    from hf_skillfollow.space_app._drill import traces_html

    record = {"judge": "m@<b>h</b>", "majority": [True, False], "grading_failure": False,
              "repeats": [{"verdicts": [{"passed": True, "evidence": "<script>x</script>"},
                                        {"passed": False, "evidence": "no"}]},
                          {"verdicts": [{"passed": True, "evidence": "ok"},
                                        {"passed": True, "evidence": "yes"}]}]}  # fmt: skip
    row = {"correct": False, "n_calls": 0, "latency_s": 1.0, "prompt_tokens": 1,
           "completion_tokens": 1, "messages": [], "extracted": "a",
           "judge_verdicts": json.dumps(record)}  # fmt: skip
    html = traces_html(row, {**row, "judge_verdicts": None}, "t")
    assert "e1: <b>met</b> (✓✓)" in html and "e2: <b>not met</b> (✗✓)" in html
    assert "<script>" not in html and "&lt;script&gt;" in html and "m@&lt;b&gt;h&lt;/b&gt;" in html
    assert html.count("<b>judge ") == 1  # only the judged arm


def test_card_sums_by_hand_and_their_means_equal_the_report_cost() -> None:
    sums = _own.cost_sums(TRANSITIONS, TRACES)
    assert set(sums) == {("r", "c1")}
    s = sums[("r", "c1")]
    assert (s["n_se"], s["n_sd"], s["se_tokens"], s["sd_tokens"]) == (4, 4, 120, 40)
    assert (s["se_ms"], s["sd_ms"]) == (12_000, 4_000)
    # 8 judged answers; 12 repeated items, 1 disagreeing; b flip a/1 explainable (fragile SE)
    assert (s["judged_answers"], s["judge_items"], s["judge_disagreeing"]) == (8, 12, 1)
    assert (s["b_explainable"], s["c_explainable"], s["se_addressing"], s["sd_addressing"]) == (
        1,
        0,
        1,
        0,
    )
    means = _own.cost_of_sums(s)
    (report,) = _own.cost(TRACES).values()
    for k in ("se_tokens", "sd_tokens", "d_tokens", "se_seconds", "sd_seconds", "d_seconds"):
        assert math.isclose(means[k], report[k]), k
    assert math.isclose(means["self_disagreement"], 100 / 12)

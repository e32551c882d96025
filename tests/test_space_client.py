"""The leaderboard app driven through gradio_client against a real server process.

The fixture has hand-chosen paired counts; every expected value below is worked out by hand
from those counts (docs/design.md, "Metrics"), never by the code under test.

Cell A (model-alpha, mbppplus, normal), two runs pooled:
  run a1: S_call a,b,c,d = 3,6,1,2 (n_cond 12); S_skip a,b,c,d = 10,2,4,12 (n_skip 28)
  run a2: S_call 2,3,1,2 (8);                   S_skip 8,1,2,9 (20)
  pooled: S_call 5,9,2,4 (20); S_skip 18,3,6,21 (48); n = 68
  RAE = 100·7/20 = 35; OAE = 100·(12−8)/68 = 5.882; Δskip = 100·(3−6)/48 = −6.25
  coverage = 29.41; agg lift = 14/20 − 21/48 = 26.25; Δselect = 7/20 − 24/48 = −15
  McNemar p (b=9, c=2) = 2·(1+11+55)/2^11 = 0.06543
Cell B (model-beta, humanevalplus, normal), one run:
  S_call 2,2,6,2 (12); S_skip 2,2,2,22 (28); n = 40
  RAE = −33.33; OAE = −10; agg lift = 4/12 − 4/28 = 19.05 (> 0): sign disagreement
Cell C (model-gamma, mbppplus, filler), one run:
  S_call 1,1,3,1 (6); S_skip 1,0,1,18 (20); n = 26
  RAE = −33.33; agg lift = 2/6 − 1/20 = 28.33: disagreement, reportable only at n_cond ≥ 5
"""

from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hf_skillfollow.schema import traces_from_rows, transitions_from_rows

# (se, sd) for the a, b, c, d categories of the 2x2 table.
_OUTCOMES = {"a": (True, True), "b": (True, False), "c": (False, True), "d": (False, False)}
RUNS = {
    # run_id: (cell_id, model, benchmark, condition, S_call counts, S_skip counts)
    "a1": ("cellA", "model-alpha", "mbppplus", "normal", (3, 6, 1, 2), (10, 2, 4, 12)),
    "a2": ("cellA", "model-alpha", "mbppplus", "normal", (2, 3, 1, 2), (8, 1, 2, 9)),
    "b1": ("cellB", "model-beta", "humanevalplus", "normal", (2, 2, 6, 2), (2, 2, 2, 22)),
    "c1": ("cellC", "model-gamma", "mbppplus", "filler", (1, 1, 3, 1), (1, 0, 1, 18)),
}
BAD_SCHEMA = "wrong_schema.parquet"
EMPTY = "empty_run"
MISSING = "no_such_folder"


def _identity(run_id: str, cell_id: str, model: str, benchmark: str, condition: str) -> dict:
    return {
        "schema_version": 1, "run_id": run_id, "cell_id": cell_id, "repeat_index": 0 if run_id.endswith("1") else 1,
        "created_at": "2025-01-01T00:00:00Z", "model": model, "backend": "openai", "tool_mode": "native",
        "retrieval_policy": "auto", "benchmark": benchmark, "benchmark_version": "v1", "partition_seed": 42,
        "partition_size": 80, "skill_pool": "coding", "skill_pool_hash": "h1", "condition": condition,
        "retriever": "bm25s", "top_k": 3, "max_calls": 3, "temperature": 0.7, "max_tokens": 8192,
        "seed": int(run_id.endswith("2")), "prompts_hash": "p1", "toolkit_version": "0.1.0",
    }  # fmt: skip


def run_rows(run_id: str) -> list[dict]:
    cell_id, model, benchmark, condition, cond_counts, skip_counts = RUNS[run_id]
    rows, i = [], 0
    for invoked, counts in ((True, cond_counts), (False, skip_counts)):
        for kind, count in zip("abcd", counts, strict=True):
            se, sd = _OUTCOMES[kind]
            for _ in range(count):
                rows.append(
                    {
                        **_identity(run_id, cell_id, model, benchmark, condition),
                        "task_id": f"Mbpp/{i}", "se_correct": se, "sd_correct": sd, "invoked": invoked,
                        "returned": invoked, "n_calls": int(invoked),
                        "queries": [f"query {run_id} {i}"] if invoked else [],
                        "skills_returned": ["prefix-sum", "two-pointer-pair-sum"] if invoked else [],
                        "adherence": invoked and se,
                    }
                )  # fmt: skip
                i += 1
    return rows


def _trace(run_id: str, task_id: str, arm: str, correct: bool, text: str) -> dict:
    messages = [
        {
            "role": "system",
            "content": "You are a helpful assistant.",
            "tool_calls": None,
            "tool_call_id": None,
            "name": None,
        },
        {
            "role": "user",
            "content": "Write a function.",
            "tool_calls": None,
            "tool_call_id": None,
            "name": None,
        },
        {
            "role": "assistant",
            "content": text,
            "tool_calls": None,
            "tool_call_id": None,
            "name": None,
        },
    ]
    return {
        "schema_version": 1, "run_id": run_id, "cell_id": RUNS[run_id][0], "task_id": task_id, "arm": arm,
        "messages": messages, "final_answer": text, "extracted": text, "correct": correct, "scorer_details": "{}",
        "error": None, "n_calls": 1 if arm == "se" else 0, "latency_s": 1.5, "prompt_tokens": 10, "completion_tokens": 5,
    }  # fmt: skip


def build_sources(root: Path) -> list[str]:
    """Good run dirs under root/runs, plus three bad sources; returns the source arguments."""
    runs = root / "runs"
    for run_id in RUNS:
        run_dir = runs / run_id
        run_dir.mkdir(parents=True)
        pq.write_table(transitions_from_rows(run_rows(run_id)), run_dir / "transitions.parquet")
        (run_dir / "manifest.json").write_text(json.dumps({"run_id": run_id}))
    # Task Mbpp/2 of run b1 is a helpful flip in S_call (rows 0-1 are "a", 2-3 are "b").
    traces = [
        _trace("b1", "Mbpp/2", "se", True, "def f(): return SE_ANSWER"),
        _trace("b1", "Mbpp/2", "sd", False, "def f(): return SD_ANSWER"),
    ]
    pq.write_table(traces_from_rows(traces), runs / "b1" / "traces.parquet")
    pq.write_table(pa.table({"foo": [1, 2]}), root / BAD_SCHEMA)
    empty = root / EMPTY
    empty.mkdir()
    pq.write_table(transitions_from_rows([]), empty / "transitions.parquet")
    (empty / "manifest.json").write_text(json.dumps({"run_id": "empty"}))
    return [str(runs), str(root / BAD_SCHEMA), str(empty), str(root / MISSING)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(tmp: Path) -> tuple[subprocess.Popen, str]:
    """`hf-skillfollow leaderboard` over the fixture, in its own process, on a free port."""
    port = _free_port()
    env = dict(os.environ, GRADIO_ANALYTICS_ENABLED="False", HF_HUB_OFFLINE="1")
    cmd = [
        sys.executable,
        "-m",
        "hf_skillfollow.cli",
        "leaderboard",
        *build_sources(tmp),
        "--port",
        str(port),
        "--no-discover",
        "--resamples",
        "2000",
    ]
    log = open(tmp / "server.log", "w")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(
                f"leaderboard exited with {proc.returncode}: {(tmp / 'server.log').read_text()[-3000:]}"
            )
        try:
            with urllib.request.urlopen(url, timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError(
        f"leaderboard did not answer within 180 s: {(tmp / 'server.log').read_text()[-3000:]}"
    )


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    proc, url = start_app(tmp_path_factory.mktemp("space"))
    yield url
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def client(app_url):
    from gradio_client import Client

    return Client(app_url, verbose=False)


def refresh(
    client,
    *,
    benchmarks=(),
    model="",
    min_cond="10",
    nonreportable=False,
    runs=False,
    sort_by="RAE",
    descending=True,
):
    out = client.predict(
        list(benchmarks),
        [],
        [],
        model,
        min_cond,
        nonreportable,
        runs,
        False,
        sort_by,
        descending,
        api_name="/refresh",
    )
    summary, table, p1, p2, p3, cells = out
    table = table.get("value", table)
    rows = [dict(zip(table["headers"], row, strict=True)) for row in table["data"]]
    plots = [json.loads(p["plot"]) for p in (p1, p2, p3)]
    return summary, rows, plots, cells


def test_pooled_table_values_match_hand_counts(client):
    summary, rows, _, _ = refresh(client)
    assert [r["Model"] for r in rows] == [
        "model-alpha",
        "model-beta",
    ]  # C is below n_cond 10; sorted by RAE desc
    a, b = rows
    assert (a["Runs"], a["n"], a["n_cond"], a["b"], a["c"]) == (2, 68, 20, 9, 2)
    assert a["RAE"] == pytest.approx(35.0)
    assert a["OAE"] == pytest.approx(5.88, abs=0.005)
    assert a["Coverage %"] == pytest.approx(29.41, abs=0.005)
    assert a["Δskip"] == pytest.approx(-6.25)
    assert a["Agg lift"] == pytest.approx(26.25)
    assert a["Δselect"] == pytest.approx(-15.0)
    assert a["McNemar p"] == pytest.approx(0.0654, abs=1e-4)
    assert a["Sign"] == "" and a["Reportable"] == "yes"
    assert (b["n"], b["n_cond"], b["b"], b["c"]) == (40, 12, 2, 6)
    assert b["RAE"] == pytest.approx(-33.33, abs=0.005)
    assert b["OAE"] == pytest.approx(-10.0)
    assert b["Agg lift"] == pytest.approx(19.05, abs=0.005)
    assert b["Sign"] == "⚠ disagree"
    lo, hi = (float(x) for x in a["RAE 95% CI"].strip("[]").split(","))
    assert lo < 35.0 < hi
    assert "**2** of 3 cells match" in summary and "**1** sign disagreement" in summary


def test_min_cond_threshold_changes_rows_and_disagreements(client):
    summary, rows, _, _ = refresh(client, min_cond="5")
    assert sorted(r["Model"] for r in rows) == ["model-alpha", "model-beta", "model-gamma"]
    gamma = next(r for r in rows if r["Model"] == "model-gamma")
    assert gamma["Sign"] == "⚠ disagree" and gamma["n_cond"] == 6
    assert "**2** sign disagreement" in summary
    # sensitivity table: threshold | reportable | with agg lift | disagreements | share
    assert "| 5 | 3 | 3 | 2 | 66.7% |" in summary
    assert "| 10 | 2 | 2 | 1 | 50.0% |" in summary
    assert "| 15 | 1 | 1 | 0 | 0.0% |" in summary


def test_filters_benchmark_model_and_nonreportable(client):
    _, rows, _, _ = refresh(client, benchmarks=["humanevalplus"])
    assert [r["Model"] for r in rows] == ["model-beta"]
    _, rows, _, _ = refresh(client, model="GAM")
    assert rows == []
    _, rows, _, _ = refresh(client, model="GAM", nonreportable=True)
    assert [(r["Model"], r["Reportable"]) for r in rows] == [("model-gamma", "no")]
    _, rows, _, _ = refresh(client, sort_by="OAE", descending=False)
    assert [r["Model"] for r in rows] == ["model-beta", "model-alpha"]


def test_runs_separately_splits_pooled_cell(client):
    _, rows, _, cells = refresh(client, runs=True, min_cond="5", nonreportable=True)
    by_run = {r["run_id"]: r for r in rows}
    assert set(by_run) == {"a1", "a2", "b1", "c1"}
    assert by_run["a1"]["RAE"] == pytest.approx(100 * 5 / 12, abs=0.005)
    assert by_run["a2"]["RAE"] == pytest.approx(100 * 2 / 8, abs=0.005)
    assert by_run["a1"]["n"] == 40 and by_run["a2"]["n"] == 28
    assert {c[1] for c in cells["choices"]} == {"cellA|a1", "cellA|a2", "cellB|b1", "cellC|c1"}


def test_plots_carry_the_cells_and_shaded_quadrants(client):
    _, _, (lift_rae, coverage_rae, select_lift), _ = refresh(client)
    traces = {t["name"]: t for t in lift_rae["data"]}
    agree, disagree = traces["signs agree (1)"], traces["sign disagreement (1)"]
    assert agree["x"] == pytest.approx([26.25]) and agree["y"] == pytest.approx([35.0])
    assert disagree["x"] == pytest.approx([100 * (4 / 12 - 4 / 28)]) and disagree[
        "y"
    ] == pytest.approx([-100 / 3])
    assert disagree["text"] == ["model-beta"] and disagree["customdata"] == ["cellB"]
    assert "n_cond 12" in disagree["hovertext"][0] and "b/c invoked 2/6" in disagree["hovertext"][0]
    rects = [s for s in lift_rae["layout"]["shapes"] if s["type"] == "rect"]
    assert {(r["x0"] >= 0, r["y1"] <= 0) for r in rects} == {
        (True, True),
        (False, False),
    }  # the two off-diagonal quadrants
    assert lift_rae["layout"]["title"]["text"] == "Aggregate lift vs RAE"
    cov = {t["name"]: t for t in coverage_rae["data"]}
    assert cov["mbppplus (1)"]["x"] == pytest.approx([100 * 20 / 68])
    sel = {t["name"]: t for t in select_lift["data"]}
    assert sel["RAE > 0 (1)"]["x"] == pytest.approx([-15.0]) and sel["RAE > 0 (1)"][
        "y"
    ] == pytest.approx([26.25])
    assert sel["RAE < 0 (1)"]["x"] == pytest.approx([100 * (8 / 12 - 4 / 28)])


def test_plot_cap_keeps_every_disagreement_and_ignores_the_sort():
    """Above MAX_POINTS a plot draws a sample: all sign disagreements, the rest spread evenly."""
    import numpy as np
    import pandas as pd

    from hf_skillfollow.space_app import _plots
    from hf_skillfollow.space_app._table import DISAGREE_MARK

    n = 3 * _plots.MAX_POINTS
    i = np.arange(n)
    cells = pd.DataFrame(
        {
            "rae": i / n - 0.5,
            "agg_lift": np.where(i % 10 == 0, 0.5 - i / n, i / n - 0.5),
            "coverage": 50.0,
            "delta_select": 1.0,
            "benchmark": "mbppplus",
            "model": [f"m{k}" for k in i],
            "_flag": np.where(i % 10 == 0, DISAGREE_MARK, ""),
            "_hover": "h",
            "_key": [f"cell{k}" for k in i],
        }
    )
    shuffled = cells.sample(frac=1.0, random_state=0)  # the table's sort order is arbitrary
    fig = _plots.lift_vs_rae(shuffled)
    traces = {t["name"].split(" (")[0]: t for t in fig["data"]}
    flagged = traces["sign disagreement"]["customdata"]
    assert sorted(flagged) == sorted(f"cell{k}" for k in range(0, n, 10))  # n / 10 of them
    agree = traces["signs agree"]["customdata"]
    assert len(flagged) + len(agree) == _plots.MAX_POINTS
    assert agree[0] == "cell1" and agree[-1] == f"cell{n - 1}"  # spread over the whole range
    assert f"{_plots.MAX_POINTS:,} of {n:,} cells" in fig["layout"]["title"]["text"]
    assert _plots.lift_vs_rae(cells)["data"][0]["customdata"] == agree  # same points, any sort


def test_drill_down_matrices_decomposition_and_flips(client):
    header, matrices, decomposition, flips, tasks = client.predict("cellA", api_name="/cell")
    assert "model-alpha" in header
    assert (
        "a = 5" in matrices and "b = 9" in matrices and "c = 2" in matrices and "d = 4" in matrices
    )
    assert (
        "a = 23" in matrices
        and "b = 12" in matrices
        and "c = 8" in matrices
        and "d = 25" in matrices
    )
    # 5.88 = (20/68)·35 + (48/68)·(−6.25) = 10.29 − 4.41
    assert (
        "5.88 = 0.2941 × (35.00) + (1 − 0.2941) × (-6.25) = 10.29 − 4.41 = **5.88** pp"
        in decomposition
    )
    flips = flips.get("value", flips)
    rows = [dict(zip(flips["headers"], r, strict=True)) for r in flips["data"]]
    assert len(rows) == 20  # b_all 12 + c_all 8
    assert sum(r["flip"] == "helpful (b)" for r in rows) == 12
    invoked = [r for r in rows if r["subset"] == "retrieval-invoked"]
    assert len(invoked) == 11  # b_cond 9 + c_cond 2
    assert all(
        r["skills_returned"] == "prefix-sum; two-pointer-pair-sum"
        and r["queries"].startswith("query ")
        for r in invoked
    )
    assert tasks["choices"][0][0].startswith("b ")


def test_traces_side_by_side_and_missing_traces(client):
    se, sd = client.predict("b1|Mbpp/2", api_name="/traces")
    assert "SE arm — correct" in se and "SE_ANSWER" in se
    assert "SD arm — wrong" in sd and "SD_ANSWER" in sd
    se, _ = client.predict("a1|Mbpp/0", api_name="/traces")
    assert "Traces unavailable" in se and "no trace rows for run a1, task Mbpp/0" in se


def test_bad_sources_are_named_in_a_visible_warning(app_url):
    with urllib.request.urlopen(app_url + "config", timeout=10) as response:
        config = json.load(response)
    warning = next(
        c for c in config["components"] if c.get("props", {}).get("elem_id") == "sf-warnings"
    )
    text = warning["props"]["value"]
    assert warning["props"]["visible"] is True
    assert BAD_SCHEMA in text and "missing column" in text
    assert EMPTY in text and "no transition rows" in text
    assert MISSING in text and "no such file or folder" in text


def test_csv_export_holds_all_filtered_rows(client):
    path = client.predict(
        [], [], [], "", "5", False, False, False, "RAE", True, api_name="/export_csv"
    )
    path = (
        path.get("value", path) if isinstance(path, dict) else path
    )  # a visibility update wraps the file
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    # B and C tie on RAE (−33.33); the sort is stable over compute_cells' cell order
    assert [r["model"] for r in rows] == ["model-alpha", "model-beta", "model-gamma"]
    alpha = rows[0]
    assert (
        float(alpha["rae"]) == pytest.approx(35.0)
        and int(alpha["b_cond"]) == 9
        and alpha["sign_disagree"] == "False"
    )
    assert {r["min_cond"] for r in rows} == {"5"}

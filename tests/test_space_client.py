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
Cell D (model-delta, mbppplus, random), one run that never retrieved a skill:
  S_call 0,0,0,0; S_skip 5,3,1,11 (20); n = 20
  RAE, McNemar p on S_call, agg lift and Δselect undefined; OAE = Δskip = 100·2/20 = 10
Skills: every retrieval-invoked task returns prefix-sum; harmful (c) ones also binary-search,
the others two-pointer-pair-sum. Per-skill tally of cell A (pooled), by hand:
  binary-search: harmful 2, helpful 0, returned on 2 (the c_cond tasks)
  prefix-sum: harmful 2, helpful 9, returned on 20 (every S_call task)
  two-pointer-pair-sum: harmful 0, helpful 9, returned on 18 (the other S_call tasks)
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs

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
    "d1": ("cellD", "model-delta", "mbppplus", "random", (0, 0, 0, 0), (5, 3, 1, 11)),
}
HARMFUL_SKILLS = ["prefix-sum", "binary-search"]
OTHER_SKILLS = ["prefix-sum", "two-pointer-pair-sum"]
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
                        "skills_returned": (HARMFUL_SKILLS if kind == "c" else OTHER_SKILLS) if invoked else [],
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
        _trace(
            "b1", "Mbpp/2", "sd", False, "def f(): return SD_ANSWER  # <script>alert(1)</script>"
        ),
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


def good_source(tmp: Path) -> str:
    """The fixture's one good source (every run of RUNS), as `build_sources` names it."""
    return str(tmp / "runs")


def key(cell_id: str, run_id: str | None = None, tmp: Path | None = None) -> str:
    """The board's drill-down key of a cell of the good source (`_board.cell_key`)."""
    from hf_skillfollow.space_app._board import cell_key

    return cell_key(cell_id, good_source(tmp or SPACE_TMP[0]), run_id)


def task_key(run_id: str, task_id: str) -> str:
    from hf_skillfollow.space_app._drill import trace_key

    return trace_key(good_source(SPACE_TMP[0]), run_id, task_id)


#: The folder of the module's app (set by the `app_url` fixture).
SPACE_TMP: list[Path] = []


def start_app(tmp: Path) -> tuple[subprocess.Popen, str]:
    """`hf-skillfollow leaderboard` over the fixture, in its own process, on a free port."""
    port = _free_port()
    env = dict(
        os.environ,
        GRADIO_ANALYTICS_ENABLED="False",
        HF_HUB_OFFLINE="1",
        SKILLFOLLOW_BOARD_CACHE=str(tmp / "board-cache"),  # not the user's cache folder
    )
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
    tmp = tmp_path_factory.mktemp("space")
    SPACE_TMP[:] = [tmp]
    proc, url = start_app(tmp)
    yield url
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def client(app_url):
    from gradio_client import Client

    return Client(app_url, verbose=False)


#: Lines under the model name, kept apart from the Model cell's text by their class.
_LINES = {"sf-src": "source", "sf-phone": "phone", "sf-judge": "judge"}


class _Table(HTMLParser):
    """Rows of the first <table> in a fragment as {header: text}, plus the row's data-* attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.headers: list[str] = []
        self.rows: list[dict] = []
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._attrs: dict = {}
        self._depth = 0
        self._source: list[str] | None = None  # text of a line under the model name
        self._line = ""  # which line: source, phone (the phone summary) or judge

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._depth += 1
        if self._depth != 1:
            return
        if tag == "tr":
            self._row, self._attrs = [], dict(attrs)
        elif tag in {"td", "th"}:
            self._cell = []
        elif tag == "div" and self._source is None:
            classes = (dict(attrs).get("class") or "").split()
            line = next((_LINES[c] for c in classes if c in _LINES), "")
            if line:
                self._source, self._line = [], line

    def handle_endtag(self, tag):
        if tag == "table":
            self._depth -= 1
        if self._depth != 1:
            return
        if tag == "div" and self._source is not None:
            self._attrs[self._line] = " ".join("".join(self._source).split())
            self._source = None
        elif tag in {"td", "th"} and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            if not self.headers:
                self.headers = [h.rstrip(" ▲▼") for h in self._row]
            else:
                self.rows.append({**dict(zip(self.headers, self._row, strict=True)), **self._attrs})
            self._row = None

    def handle_data(self, data):
        if self._source is not None:
            self._source.append(data)
        elif self._cell is not None:
            self._cell.append(data)


def parse_table(html: str) -> list[dict]:
    parser = _Table()
    parser.feed(html)
    return parser.rows


def refresh(client, *, benchmarks=(), model="", min_cond="10", show=(), sort="rae:desc"):
    """The page's view through the named endpoint: summary HTML, table rows, plot points."""
    summary, table, plots = client.predict(
        list(benchmarks), [], [], model, min_cond, list(show), sort, api_name="/refresh"
    )
    return summary, parse_table(table), plots


def points(plots: str, caption: str) -> dict[str, tuple[float, float]]:
    """{cell key: (x, y)} of the plot whose caption starts with `caption`."""
    figure = next(f for f in plots.split("<figure")[1:] if f"<figcaption>{caption}" in f)
    found = re.findall(r'data-sf-cell="([^"]+)" data-x="([^"]+)" data-y="([^"]+)"', figure)
    return {k: (float(x), float(y)) for k, x, y in found}


def cells_api(client, **kw) -> list[dict]:
    return client.predict(
        kw.get("benchmarks", []), [], [], kw.get("model", ""), kw.get("min_cond", 10),
        kw.get("show", []), kw.get("sort", "rae:desc"), api_name="/cells",
    )  # fmt: skip


def test_pooled_values_match_hand_counts(client):
    rows = cells_api(client)
    assert [r["model"] for r in rows] == ["model-alpha", "model-beta"]  # C, D below n_cond 10
    a, b = rows
    assert (a["n_runs"], a["n_pairs"], a["n_cond"], a["b_cond"], a["c_cond"]) == (2, 68, 20, 9, 2)
    assert a["rae"] == pytest.approx(35.0)
    assert a["oae"] == pytest.approx(400 / 68)
    assert a["coverage"] == pytest.approx(100 * 20 / 68)
    assert a["delta_skip"] == pytest.approx(-6.25)
    assert a["agg_lift"] == pytest.approx(26.25)
    assert a["delta_select"] == pytest.approx(-15.0)
    assert a["mcnemar_p"] == pytest.approx(134 / 2048)
    assert a["reportable"] is True and a["sign_disagree"] is False
    assert (b["n_pairs"], b["n_cond"], b["b_cond"], b["c_cond"]) == (40, 12, 2, 6)
    assert b["rae"] == pytest.approx(-100 / 3)
    assert b["agg_lift"] == pytest.approx(100 * (4 / 12 - 4 / 28))
    assert b["sign_disagree"] is True
    assert a["rae_ci_low"] < 35.0 < a["rae_ci_high"]


def test_table_shows_key_columns_with_units_and_the_flag_beside_the_lift(client):
    summary, rows, _ = refresh(client)
    assert [r["Model"] for r in rows] == ["model-alpha", "model-beta"]
    a, b = rows
    headers = list(a)
    rae, lift = headers.index("RAE pp [95% CI]"), headers.index("Agg lift pp")
    assert lift == rae + 1  # the lift a flag disagrees with sits right beside RAE
    assert a["RAE pp [95% CI]"].startswith("+35.0 [") and a["data-sf-cell"] == key("cellA")
    lo, hi = (float(x) for x in a["RAE pp [95% CI]"][7:-1].split(","))
    assert lo < 35.0 < hi
    assert a["RAE pp [95% CI]"].count(".") == 3  # value and both ends at one decimal
    assert a["n_cond / n"] == "20 / 68 (29.4%)errored 0.0% (0)"  # the error rate under it
    assert a["b / c"] == "9 / 2" and a["Runs"] == "2"
    assert a["McNemar p"] == "0.0654" and a["Δselect pp"] == "-15.0" and a["Agg lift pp"] == "+26.2"
    assert b["RAE pp [95% CI]"].startswith("-33.3 [")
    assert b["Agg lift pp"] == "⚠ +19.0"  # 100·(4/12 − 4/28) = 19.05
    assert b["Δselect pp"] == "+52.4"  # SD: 8/12 − 4/28
    assert "<b>2</b> of 4 cells match" in summary and "<b>1</b> sign disagreement" in summary


def test_undefined_values_say_why_in_the_cli_words(client):
    from hf_skillfollow.report import NEVER_RETRIEVED

    _, rows, _ = refresh(client, show=["non-reportable cells"], min_cond="5")
    assert [r["Model"] for r in rows] == ["model-alpha", "model-beta", "model-gamma", "model-delta"]
    d = rows[-1]  # reportable first; among the rest the undefined RAE sorts last
    assert d["RAE pp [95% CI]"] == NEVER_RETRIEVED  # the CLI's words
    assert d["McNemar p"] == NEVER_RETRIEVED  # not p = 1 on zero discordant pairs
    assert d["Agg lift pp"] == "n/a (retrieval on no task: S_call is empty)"
    assert d["Δselect pp"] == "n/a (retrieval on no task: S_call is empty)"
    assert d["OAE pp [95% CI]"].startswith("+10.0 [") and d["Δskip pp"] == "+10.0"
    assert d["Reportable"] == "no n_cond < 5" and "sf-nonrep" in d["class"]


def test_reportable_cells_sort_before_non_reportable_ones(client):
    _, rows, _ = refresh(client, show=["non-reportable cells"], sort="rae:asc")
    # ascending RAE would put C (−33.3) first; it is not reportable at 10, so it comes after A, B
    assert [r["Model"] for r in rows] == ["model-beta", "model-alpha", "model-gamma", "model-delta"]
    assert [r["Reportable"].split()[0] for r in rows] == ["yes", "yes", "no", "no"]
    assert rows[2]["RAE pp [95% CI]"].startswith("-33.3*")


def test_min_cond_threshold_changes_rows_and_disagreements(client):
    summary, rows, _ = refresh(client, min_cond="5")
    assert sorted(r["Model"] for r in rows) == ["model-alpha", "model-beta", "model-gamma"]
    gamma = next(r for r in rows if r["Model"] == "model-gamma")
    assert gamma["Agg lift pp"].startswith("⚠") and gamma["n_cond / n"].startswith("6 / 26")
    assert "<b>2</b> sign disagreement" in summary
    sens = [r for r in parse_table(summary.split("<details", 1)[1])]
    by_t = {r["min n_cond"]: r for r in sens}
    assert [by_t[t]["reportable cells"] for t in ("5", "10", "15", "20")] == ["3", "2", "1", "1"]
    assert [by_t[t]["sign disagreements"] for t in ("5", "10", "15")] == ["2", "1", "0"]
    assert by_t["5"]["share"] == "66.7%"


def test_filters_benchmark_model_and_sort(client):
    _, rows, _ = refresh(client, benchmarks=["humanevalplus"])
    assert [r["Model"] for r in rows] == ["model-beta"]
    _, rows, _ = refresh(client, model="GAM")
    assert rows == []
    _, rows, _ = refresh(client, model="GAM", show=["non-reportable cells"])
    assert [(r["Model"], r["Reportable"]) for r in rows] == [("model-gamma", "no n_cond < 10")]
    _, rows, _ = refresh(client, sort="oae:asc")
    assert [r["Model"] for r in rows] == ["model-beta", "model-alpha"]
    with pytest.raises(Exception, match="unknown column"):
        refresh(client, sort="nonsense:asc")


def test_sorted_header_shows_the_direction_and_the_next_click(client):
    _, table, _ = client.predict([], [], [], "", "10", [], "oae:asc", api_name="/refresh")
    oae = re.search(
        r'<th[^>]*data-sf-sort="oae:(\w+)"[^>]*aria-sort="(\w+)"[^>]*>([^<]*)</th>', table
    )
    assert oae.groups() == ("desc", "ascending", "OAE pp [95% CI] ▲")
    assert 'data-sf-sort="rae:desc" aria-sort="none"' in table
    assert 'title="Retrieval-invoked actual-use effect, percentage points' in table


def test_runs_separately_splits_pooled_cell(client):
    summary, rows, _ = refresh(
        client, show=["runs separately", "non-reportable cells"], min_cond="5"
    )
    by_run = {r["data-sf-cell"]: r for r in rows}
    runs = [("cellA", "a1"), ("cellA", "a2"), ("cellB", "b1"), ("cellC", "c1"), ("cellD", "d1")]
    assert set(by_run) == {key(c, r) for c, r in runs}
    assert by_run[key("cellA", "a1")]["RAE pp [95% CI]"].startswith("+41.7 [")  # 100·5/12
    assert by_run[key("cellA", "a2")]["RAE pp [95% CI]"].startswith("+25.0 [")  # 100·2/8
    assert by_run[key("cellA", "a1")]["n_cond / n"].startswith("12 / 40")
    assert "Runs" not in rows[0]  # the run id is shown instead of a count
    assert "of 5 runs (4 cells) match" in summary  # runs are not called cells


def test_plots_carry_the_cells_and_the_intervals(client):
    _, _, plots = refresh(client)
    lift_rae = points(plots, "Aggregate lift vs RAE")
    assert lift_rae[key("cellA")] == pytest.approx((26.25, 35.0), abs=1e-3)
    assert lift_rae[key("cellB")] == pytest.approx((100 * (4 / 12 - 4 / 28), -100 / 3), abs=1e-3)
    assert points(plots, "Coverage vs RAE")[key("cellA")] == pytest.approx(
        (100 * 20 / 68, 35.0), abs=1e-3
    )
    assert points(plots, "Selection gap vs aggregate lift")[key("cellA")] == pytest.approx(
        (-15.0, 26.25), abs=1e-3
    )
    assert plots.count('class="sf-shade"') == 2  # the two disagreement quadrants
    assert "sign disagreement ⚠ (1)" in plots and "signs agree (1)" in plots
    hover = re.search(
        rf'data-sf-cell="{re.escape(key("cellB"))}"[^>]*><title>([^<]*)</title></circle>', plots
    )
    assert hover and "model-beta · humanevalplus v1 · coding / normal" in hover.group(1)
    assert "b/c invoked 2/6" in hover.group(1)
    # once per page: the first plot drawing a cell carries its hover text, the others borrow it
    assert plots.count("<title>model-beta · humanevalplus v1") == 1
    assert len(re.findall(rf'<circle [^>]*data-sf-cell="{re.escape(key("cellB"))}"', plots)) == 3
    _, _, one = refresh(client, benchmarks=["humanevalplus"])
    assert "humanevalplus (1)" in one  # the legend stays with a single benchmark


def test_plot_cap_keeps_every_disagreement_and_ignores_the_sort():
    """Above MAX_POINTS a plot draws a sample: all sign disagreements, the rest spread evenly."""
    import numpy as np
    import pandas as pd

    from hf_skillfollow.space_app import _plots

    n = 3 * _plots.MAX_POINTS
    i = np.arange(n)
    cells = pd.DataFrame({"key": [f"cell{k}" for k in i]}, index=i)
    flagged = i % 10 == 0
    shuffled = np.random.default_rng(0).permutation(n)  # the table's sort order is arbitrary
    keep, note = _plots.capped(cells.take(shuffled), flagged[shuffled])
    kept = cells.take(shuffled).take(keep)["key"].tolist()
    assert len(kept) == _plots.MAX_POINTS
    assert set(f"cell{k}" for k in range(0, n, 10)) <= set(kept)  # every disagreement
    assert kept[0] == "cell0" and kept[-1] == f"cell{n - 1}"  # spread over the whole range
    assert f"{_plots.MAX_POINTS:,} of {n:,} cells" in note
    again, _ = _plots.capped(cells, flagged)
    assert cells.take(again)["key"].tolist() == kept  # same points, any sort


def _drill(client, key):
    header, matrices, decomposition, tally, flips, traces = client.predict(key, api_name="/cell")
    return header, matrices, decomposition, tally, flips, traces


def test_drill_down_matrices_decomposition_and_flips(client):
    header, matrices, decomposition, _, flips, _ = _drill(client, key("cellA"))
    assert "model-alpha" in header and f'data-sf-open="{key("cellA")}"' in header
    for text in ("a = 5", "b = 9", "c = 2", "d = 4", "a = 23", "b = 12", "c = 8", "d = 25"):
        assert text in matrices
    # 5.88 = (20/68)·35 + (48/68)·(−6.25) = 10.29 − 4.41
    assert (
        "5.88 = 0.2941 × (35.00) + (1 − 0.2941) × (-6.25) = 10.29 − 4.41 = **5.88** pp"
        in decomposition
    )
    rows = parse_table(flips)
    assert len(rows) == 20  # b_all 12 + c_all 8
    kinds = [r["data-flip"] for r in rows]
    assert kinds == ["harmful"] * 8 + ["helpful"] * 12  # harmful flips first
    invoked = [r for r in rows if r["subset"] == "retrieval-invoked"]
    assert len(invoked) == 11  # b_cond 9 + c_cond 2
    assert [r["skills returned"] for r in invoked[:2]] == ["prefix-sum; binary-search"] * 2
    assert all(r["queries"].startswith("query ") for r in invoked)
    assert f'data-sf-task="{task_key("a1", "Mbpp/")}' in flips and "<th>run</th>" in flips
    assert _drill(client, "cellA")[0] == header  # a link from before keys named the source


def test_harmful_flips_tallied_per_skill_by_hand(client):
    _, _, _, tally, _, _ = _drill(client, key("cellA"))
    rows = [
        (r["skill"], r["harmful flips"], r["helpful flips"], r["returned on"])
        for r in parse_table(tally)
    ]
    assert rows == [
        ("binary-search", "2", "0", "2"),
        ("prefix-sum", "2", "9", "20"),
        ("two-pointer-pair-sum", "0", "9", "18"),
    ]
    # every S_call task received two skills: no flip is one skill's alone
    assert {(r["harmful, alone"], r["helpful, alone"]) for r in parse_table(tally)} == {("0", "0")}


def test_never_retrieved_cell_says_so_in_the_drill_down(client):
    from hf_skillfollow.report import NEVER_RETRIEVED

    _, _, decomposition, tally, _, _ = _drill(client, key("cellD"))
    assert NEVER_RETRIEVED in decomposition and "OAE = Δskip = 10.00 pp" in decomposition
    assert "No skill was returned" in tally


def test_traces_side_by_side_and_missing_traces(client):
    traces = client.predict(task_key("b1", "Mbpp/2"), api_name="/traces")
    assert client.predict("b1|Mbpp/2", api_name="/traces") == traces  # a key without the source
    se, sd = traces.split('class="sf-trace sf-arm-se"')[1].split('class="sf-trace sf-arm-sd"')
    assert "SE arm — correct" in se and "SE_ANSWER" in se
    assert "SD arm — wrong" in sd and "SD_ANSWER" in sd
    assert "<details" in se and "system · 28 chars" in se  # the system prompt starts collapsed
    traces = client.predict(task_key("a1", "Mbpp/0"), api_name="/traces")
    assert "Traces unavailable" in traces and "no trace rows for run a1, task Mbpp/0" in traces


def test_trace_text_is_escaped_not_rendered(client):
    traces = client.predict(task_key("b1", "Mbpp/2"), api_name="/traces")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in traces and "<script" not in traces


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


def test_csv_export_is_one_get_with_the_page_query(app_url):
    query = "min_cond=5&sort=rae%3Adesc"
    with urllib.request.urlopen(f"{app_url}export.csv?{query}", timeout=30) as response:
        assert "attachment" in response.headers["Content-Disposition"]
        rows = list(csv.DictReader(io.StringIO(response.read().decode("utf-8"))))
    # B and C tie on RAE (−33.33); the sort is stable over compute_cells' cell order
    assert [r["model"] for r in rows] == ["model-alpha", "model-beta", "model-gamma"]
    alpha = rows[0]
    assert float(alpha["rae"]) == pytest.approx(35.0) and int(alpha["b_cond"]) == 9
    assert alpha["sign_disagree"] == "False" and {r["min_cond"] for r in rows} == {"5"}
    with pytest.raises(urllib.error.HTTPError) as bad:
        urllib.request.urlopen(f"{app_url}export.csv?min_cond=7", timeout=30)
    assert bad.value.code == 400 and "min n_cond must be one of" in bad.value.read().decode()


def test_url_query_round_trip():
    from hf_skillfollow.space_app import _table as T

    f = T.Filters(benchmarks=("mbppplus", "math 500"), model_query="org/Model a&b", min_cond=15,
                  show_nonreportable=True, sort="lift:asc")  # fmt: skip
    query = T.query_string(f, runs=True, all_columns=False)
    state = T.state_from_query(parse_qs(query))
    assert state == T.ViewState(f, runs=True, all_columns=False, cell=None)
    assert T.query_string(T.Filters(), runs=False, all_columns=False) == ""  # defaults stay out
    with pytest.raises(ValueError, match="sort: unknown column 'x'"):
        T.state_from_query({"sort": ["x:asc"]})


def test_board_without_sources_explains_itself_instead_of_an_empty_table():
    """A fresh Space: no source named, discovery off (HF_HUB_OFFLINE in the Space means no
    Hub); the page says how to add sources and the banner says none was configured."""
    from hf_skillfollow.space_app._board import load_board
    from hf_skillfollow.space_app._ui import build_app

    config = build_app(load_board([], resamples=10, discover=False)).get_config_file()
    by_id = {c["props"].get("elem_id"): c["props"] for c in config["components"]}
    assert "SKILLFOLLOW_SOURCES" in by_id["sf-empty"]["value"]
    assert "sf-table" not in by_id and "sf-plots" not in by_id
    assert "No sources configured" in by_id["sf-warnings"]["value"]

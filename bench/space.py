"""Benchmark the leaderboard app: start-up to first full render, and filter-change latency.

Data: 1,000,000 synthetic transition rows (12,500 cells x 80 tasks, one run per cell) written
as one parquet file in the transitions schema. Figures printed:

- in-process: source loading, compute_cells (bootstrap), board build, one filter change;
- end to end: `hf-skillfollow leaderboard FILE` started as a process, a headless Chromium
  (Debian's, via Playwright) loads the page; time from process start until the table rows
  and all three plots are drawn; then the latency of a filter change seen in the browser
  and through gradio_client.

Usage: python bench/space.py [--cells 12500] [--tasks 80] [--resamples 20000] [--no-browser]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
MODELS = 125
CONDITIONS = ("normal", "schema-empty", "filler", "random", "corrupted")
BENCHMARKS = ("mbppplus", "humanevalplus", "math500", "mbppplus", "humanevalplus")


def make_table(n_cells: int, n_tasks: int, seed: int = 0) -> pa.Table:
    """Transitions rows with per-cell retrieval and flip rates drawn at random."""
    from hf_skillfollow.schema import TRANSITIONS_SCHEMA

    rng = np.random.default_rng(seed)
    cell = np.repeat(np.arange(n_cells), n_tasks)
    n = len(cell)
    p_cond = rng.uniform(0.05, 0.95, n_cells)[cell]
    p_sd = rng.uniform(0.2, 0.8, n_cells)[cell]
    lift = rng.normal(0.0, 0.15, n_cells)[cell]
    cond = rng.random(n) < p_cond
    sd = rng.random(n) < p_sd
    se = np.where(cond, rng.random(n) < np.clip(p_sd + lift, 0, 1), rng.random(n) < p_sd)
    model = np.array([f"org{m % 7}/model-{m}" for m in range(MODELS)])[cell % MODELS]
    cond_name = np.array(CONDITIONS)[(cell // MODELS) % len(CONDITIONS)]
    bench = np.array(BENCHMARKS)[(cell // (MODELS * len(CONDITIONS))) % len(BENCHMARKS)]
    pseed = 42 + (cell // (MODELS * len(CONDITIONS) * len(BENCHMARKS))) % 3
    top_k = 1 + 2 * ((cell // (MODELS * len(CONDITIONS) * len(BENCHMARKS) * 3)) % 3)
    cols = {
        "schema_version": np.full(n, 1, np.int32),
        "run_id": np.char.add("run-", cell.astype(str)),
        "cell_id": np.char.add("cell-", cell.astype(str)),
        "repeat_index": np.zeros(n, np.int32),
        "created_at": np.full(n, "2025-01-01T00:00:00Z"),
        "model": model,
        "backend": np.full(n, "openai"),
        "tool_mode": np.full(n, "native"),
        "retrieval_policy": np.full(n, "auto"),
        "benchmark": bench,
        "benchmark_version": np.full(n, "v1"),
        "partition_seed": pseed.astype(np.int64),
        "partition_size": np.full(n, n_tasks, np.int64),
        "skill_pool": np.where(bench == "math500", "math", "coding"),
        "skill_pool_hash": np.full(n, "abc123"),
        "condition": cond_name,
        "retriever": np.full(n, "bm25s"),
        "top_k": top_k.astype(np.int32),
        "max_calls": np.full(n, 3, np.int32),
        "temperature": np.full(n, 0.7),
        "max_tokens": np.full(n, 8192, np.int32),
        "seed": np.zeros(n, np.int64),
        "prompts_hash": np.full(n, "p1"),
        "toolkit_version": np.full(n, "0.1.0"),
        "task_id": np.char.add("Mbpp/", (np.arange(n) % n_tasks).astype(str)),
        "se_correct": se,
        "sd_correct": sd,
        "invoked": cond,
        "returned": cond,
        "n_calls": cond.astype(np.int32),
    }
    arrays = {k: pa.array(v) for k, v in cols.items()}
    offsets = pa.array(np.concatenate([[0], np.cumsum(cond)]).astype(np.int32))
    arrays["queries"] = pa.ListArray.from_arrays(
        offsets, pa.array(np.full(int(cond.sum()), "prefix sums"))
    )
    arrays["skills_returned"] = pa.ListArray.from_arrays(
        offsets, pa.array(np.full(int(cond.sum()), "prefix-sum"))
    )
    arrays["se_error"] = pa.nulls(n, pa.string())
    arrays["sd_error"] = pa.nulls(n, pa.string())
    arrays["adherence"] = pa.array(cond & (rng.random(n) < 0.5))
    return pa.table(
        [arrays[f.name].cast(f.type) for f in TRANSITIONS_SCHEMA], schema=TRANSITIONS_SCHEMA
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def in_process(path: Path, resamples: int) -> None:
    from hf_skillfollow.space_app import _table as T
    from hf_skillfollow.space_app._board import load_board
    from hf_skillfollow.space_app._ui import _refresh, build_app

    t0 = time.perf_counter()
    board = load_board([str(path)], resamples=resamples, discover=False)
    t1 = time.perf_counter()
    build_app(board)
    t2 = time.perf_counter()
    print(f"in-process  load sources     {board.timings['load_s']:7.3f} s")
    print(
        f"in-process  compute_cells    {board.timings['metrics_s']:7.3f} s  ({len(board.pooled):,} cells, {resamples:,} resamples)"
    )
    print(f"in-process  build app        {t2 - t1:7.3f} s  (incl. first table + 3 plots)")
    print(f"in-process  total to app     {t2 - t0:7.3f} s")
    filters = [
        T.Filters(benchmarks=("mbppplus",)),
        T.Filters(model_query="model-1"),
        T.Filters(min_cond=20, show_nonreportable=True),
        T.Filters(pools=("coding / filler",), sort_by="Agg lift"),
        T.Filters(show_nonreportable=True, min_cond=5),
    ]
    times = []
    for f in filters * 3:
        s = time.perf_counter()
        _refresh(board, f, runs_separately=False, all_columns=False)
        times.append(time.perf_counter() - s)
    print(
        f"in-process  filter change    median {1000 * statistics.median(times):6.1f} ms, max {1000 * max(times):6.1f} ms"
    )


def end_to_end(path: Path, resamples: int, browser: bool) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    env = dict(os.environ, SKILLFOLLOW_RESAMPLES=str(resamples), GRADIO_ANALYTICS_ENABLED="False")
    cmd = [
        sys.executable,
        "-m",
        "hf_skillfollow.cli",
        "leaderboard",
        str(path),
        "--port",
        str(port),
        "--no-discover",
    ]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        ctx = _browser() if browser else None
        _wait_http(url, proc)
        t_http = time.perf_counter() - t0
        print(f"end-to-end  server answering {t_http:7.3f} s after process start")
        if ctx is not None:
            _browser_figures(ctx, url, t0)
        _client_figures(url)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _browser():
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    ctx = pw.chromium.launch_persistent_context(
        tempfile.mkdtemp(prefix="sf-bench-chromium-"),
        executable_path=CHROMIUM,
        args=CHROMIUM_ARGS,
        headless=True,
        viewport={"width": 1400, "height": 1000},
    )
    return ctx


def _wait_http(url: str, proc: subprocess.Popen) -> None:
    deadline = time.perf_counter() + 600
    while time.perf_counter() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"leaderboard process exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("server did not answer within 600 s")


def _browser_figures(ctx, url: str, t0: float) -> None:
    page = ctx.new_page()
    page.goto(url)
    rows = page.locator("#sf-table .virtual-body [role=row]")
    rows.first.wait_for(timeout=120_000)
    for plot in ("sf-plot-lift-rae", "sf-plot-coverage-rae", "sf-plot-select-lift"):
        page.locator(f"#{plot} .main-svg").first.wait_for(timeout=120_000)
    print(
        f"end-to-end  first full render {time.perf_counter() - t0:6.3f} s after process start (table rows + 3 plots in Chromium)"
    )
    summary = page.locator("#sf-summary")
    times = []
    for threshold in ("5", "15", "20", "10") * 2:
        before = summary.inner_text()
        s = time.perf_counter()
        page.locator("#sf-f-mincond label", has_text=threshold).first.click()
        page.wait_for_function(
            "([sel, old]) => document.querySelector(sel).innerText !== old",
            arg=["#sf-summary", before],
            timeout=120_000,
        )
        times.append(time.perf_counter() - s)
    print(
        f"end-to-end  filter in browser median {1000 * statistics.median(times):6.1f} ms, max {1000 * max(times):6.1f} ms"
        " (click min n_cond → summary redrawn)"
    )
    body = "#sf-table .virtual-body"
    times = []
    for _ in range(6):
        before = page.locator(body).inner_text()
        s = time.perf_counter()
        page.locator("#sf-f-desc input").first.click()
        page.wait_for_function(
            "([sel, old]) => document.querySelector(sel).innerText !== old",
            arg=[body, before],
            timeout=120_000,
        )
        times.append(time.perf_counter() - s)
    print(
        f"end-to-end  sort in browser   median {1000 * statistics.median(times):6.1f} ms, max {1000 * max(times):6.1f} ms"
        " (toggle Descending → table rows redrawn; plots not re-sent)"
    )
    ctx.close()


def _client_figures(url: str) -> None:
    from gradio_client import Client

    client = Client(url, verbose=False)
    times = []
    for bench in (["mbppplus"], ["math500"], [], ["humanevalplus"]) * 2:
        s = time.perf_counter()
        client.predict(
            bench, [], [], "", "10", False, False, False, "RAE", True, api_name="/refresh"
        )
        times.append(time.perf_counter() - s)
    print(
        f"end-to-end  filter via gradio_client median {1000 * statistics.median(times):6.1f} ms, max {1000 * max(times):6.1f} ms"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=12_500)
    ap.add_argument("--tasks", type=int, default=80)
    ap.add_argument("--resamples", type=int, default=20_000)
    ap.add_argument("--no-browser", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sf-bench-") as tmp:
        path = Path(tmp) / "transitions.parquet"
        s = time.perf_counter()
        pq.write_table(make_table(args.cells, args.tasks), path)
        print(
            f"data        {args.cells * args.tasks:,} rows ({args.cells:,} cells x {args.tasks} tasks) written in {time.perf_counter() - s:.1f} s"
        )
        in_process(path, args.resamples)
        end_to_end(path, args.resamples, browser=not args.no_browser)


if __name__ == "__main__":
    main()

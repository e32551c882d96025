"""Benchmark the leaderboard against a bare Gradio app, side by side in one run.

For each data size (default: 39 cells = 3,120 rows, and 12,500 cells = 1,000,000 rows; 80
tasks per cell, one run per cell) this writes synthetic transitions rows as one parquet file,
then alternates, --repeats times each:

- ours, warm cache: `hf-skillfollow leaderboard FILE` started as a process whose start-up
  cache (space_app/_cache.py) holds the cells of this file's revision, computed by this board
  from the rows (a restarted Space whose sources did not change);
- ours, cold cache: the same with an empty cache folder (a first start, or new rows): loads
  every row and computes every cell, and the bootstrap intervals of the rows the first view
  shows; the other intervals (and the cache write) follow once the page has loaded;
- bare: `bench/space_bare.py`, a plain `gr.Dataframe` of the same precomputed cells showing as
  many rows as the board first shows, started the same way;

and a headless Chromium (Debian's, via Playwright, already open) loads each page. Printed:
medians of the first complete render (process start until the table rows, and for ours the
three plots, are drawn) and of a filter change seen in the browser (min n_cond radio clicked
until every output is redrawn; 8 clicks alternating between two thresholds, and separately the
mean of the first 2, views the page had not shown, which the board's view cache cannot answer),
with the ratios ours/bare; each start's figures and the load are printed as it ends. In-process figures (loading,
compute_cells, cache read, build, one filter) come first, with a check that the cached cells
equal a fresh recomputation. Print the load average with the figures (`uptime`).

The board's peak memory with a decompression-bomb source beside a normal one comes first
(`--bomb-mb`, 0 to skip): the bomb is a results run of a few KB whose model column is one
string of that many MB referenced by every row; each board is loaded in its own process and
its peak RSS printed beside the normal source loaded alone (the read budget, hub/_budget.py,
refuses the bomb from its footer; before it, a 64 MB bomb took the loader to a 1.68 GB peak).

Usage: python bench/space.py [--cells 39 12500] [--tasks 80] [--resamples 20000] [--repeats 3]
                             [--cache both|warm|cold] [--bomb-mb 64]
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
    from hf_skillfollow.schema import validate_transitions

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
        "access": np.full(n, "search"),
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
    # Columns added to the schema later are backfilled, as for files written before them.
    return validate_transitions(pa.table(arrays), "synthetic")


BARE_APP = Path(__file__).with_name("space_bare.py")
#: Cell columns the bare table shows (as many as the board's compact table).
BARE_COLUMNS = (
    "model", "benchmark", "skill_pool", "condition", "partition_seed", "n_runs", "n_cond",
    "n_pairs", "rae", "rae_ci_low", "rae_ci_high", "agg_lift", "delta_select", "mcnemar_p",
    "oae", "delta_skip", "b_cond", "c_cond",
)  # fmt: skip
#: Clicks that change the shown rows at both sizes (the outputs of an unchanged view are not redrawn).
THRESHOLD_CLICKS = ("5", "20") * 4
#: The first clicks show views the page has not shown before; the later ones go back to them
#: (which the board answers from its view cache, `_ui.ViewCache`).
FIRST_VISITS = 2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def in_process(path: Path, resamples: int, cache: Path) -> tuple[int, Path]:
    """Timings of the board's stages (filling `cache`); returns the first view's row count and
    the bare app's cells."""
    import pandas as pd

    from hf_skillfollow.space_app import _table as T
    from hf_skillfollow.space_app._board import load_board
    from hf_skillfollow.space_app._cache import ENV_CACHE
    from hf_skillfollow.space_app._ui import build_app, render_view

    os.environ[ENV_CACHE] = str(cache)
    board = load_board([str(path)], resamples=resamples, discover=False)
    t1 = time.perf_counter()
    build_app(board)
    t2 = time.perf_counter()
    cached = load_board([str(path)], resamples=resamples, discover=False)
    if not cached.from_cache or board.from_cache:
        raise SystemExit("the start-up cache was not written or not read back")
    pd.testing.assert_frame_equal(cached.pooled, board.pooled)
    print(f"  in-process  load sources   {board.timings['load_s']:7.3f} s")
    print(
        f"  in-process  compute_cells  {board.timings['metrics_s']:7.3f} s  ({len(board.pooled):,} cells, {resamples:,} resamples)"
    )
    print(
        f"  in-process  cached cells   {cached.timings['load_s']:7.3f} s  (revision check + read;"
        " equal to the recomputation)"
    )
    print(f"  in-process  build app      {t2 - t1:7.3f} s  (first table and 3 plots rendered)")
    deferred = load_board([str(path)], resamples=resamples, discover=False, use_cache=False,
                          defer_intervals=True)  # fmt: skip
    t3 = time.perf_counter()
    build_app(deferred)
    t4 = time.perf_counter()
    deferred.complete()
    t5 = time.perf_counter()
    pd.testing.assert_frame_equal(deferred.pooled, board.pooled)
    print(
        f"  in-process  cold start as the app does it: compute_cells without intervals"
        f" {deferred.timings['metrics_s']:.3f} s, build app {t4 - t3:.3f} s (the shown rows'"
        f" intervals), the other intervals after the page loads {t5 - t4:.3f} s (equal to the"
        " full computation)"
    )
    benchmarks = sorted(board.pooled["benchmark"].astype(str).unique())
    filters = [
        T.Filters(benchmarks=(benchmarks[0],)),
        T.Filters(model_query="model-1"),
        T.Filters(min_cond=20, show_nonreportable=True),
        T.Filters(sort="lift:asc"),
        T.Filters(show_nonreportable=True, min_cond=5),
    ]
    times = []
    for f in filters * 3:
        s = time.perf_counter()
        render_view(board, T.ViewState(f))
        times.append(time.perf_counter() - s)
    print(
        f"  in-process  filter change  median {1000 * statistics.median(times):6.1f} ms, max {1000 * max(times):6.1f} ms"
    )
    filtered = T.apply_filters(board.pooled, T.Filters())
    rows = min(len(filtered), T.PAGE_ROWS)
    bare = path.with_name("cells.parquet")
    board.pooled[list(BARE_COLUMNS)].to_parquet(bare)
    return rows, bare


def _start(cmd: list[str], env: dict[str, str]) -> tuple[subprocess.Popen, float]:
    t0 = time.perf_counter()
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), t0


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class App:
    """How to start one of the two apps and what to wait for in its page."""

    def __init__(
        self, name: str, cmd, ready_js: str, click: str, changed_js: str, env=dict
    ) -> None:
        self.name, self.cmd, self.ready_js, self.click, self.changed_js, self.env = (
            name, cmd, ready_js, click, changed_js, env,
        )  # fmt: skip


def ours(path: Path, resamples: int, cache: Path | None) -> App:
    """The board; `cache` None = a fresh, empty cache folder (beside `path`) for every start."""
    from hf_skillfollow.space_app._cache import ENV_CACHE

    def env() -> dict[str, str]:
        return {ENV_CACHE: str(cache or tempfile.mkdtemp(prefix="cold-", dir=path.parent))}

    return App(
        "ours, warm cache" if cache else "ours, cold cache",
        lambda port: [sys.executable, "-m", "hf_skillfollow.cli", "leaderboard", str(path),
                      "--port", str(port), "--no-discover", "--resamples", str(resamples)],
        "() => document.querySelectorAll('#sf-table tbody tr').length > 0"
        " && document.querySelectorAll('#sf-plots svg').length === 3",
        "#sf-f-mincond label",
        # the summary always changes (it names the threshold); the table and plots arrive in
        # the same message and are applied in the same update
        f"() => {{ const t = {TEXT_OURS}; return t !== null && t !== window.__oldText; }}",
        env,
    )  # fmt: skip


def bare(cells: Path, rows: int) -> App:
    return App(
        "bare",
        lambda port: [sys.executable, str(BARE_APP), str(cells), "--port", str(port),
                      "--rows", str(rows)],
        "() => document.querySelectorAll('#bare-table [role=row], #bare-table tbody tr').length > 1",
        "#bare-t label",
        f"() => {{ const t = {TEXT_BARE}; return t !== null && t !== window.__oldText; }}",
    )  # fmt: skip


#: The shown content only: a component's innerText also holds Gradio's status tracker
#: ("processing | 0.1s", the load event's "0.4s"), whose appearing or ticking read as a finished
#: filter (per-start medians of ~100 ms or ~300 ms at the same code, warm or cold alike).
TEXT_OURS = "(document.querySelector('#sf-summary [data-sf-query]') || {}).innerText ?? null"
TEXT_BARE = (
    "Array.from(document.querySelectorAll('#bare-table [role=row], #bare-table tbody tr'),"
    " (r) => r.innerText).join('\\n')"
)
MARK_OURS = f"() => {{ window.__oldText = {TEXT_OURS}; }}"
MARK_BARE = f"() => {{ window.__oldText = {TEXT_BARE}; }}"


def measure(ctx, app: App, resamples: int) -> tuple[float, list[float]]:
    """(seconds from process start to complete render, filter latencies in seconds)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    env = dict(os.environ, SKILLFOLLOW_RESAMPLES=str(resamples), GRADIO_ANALYTICS_ENABLED="False",
               HF_HUB_OFFLINE="1", **app.env())  # fmt: skip
    proc, t0 = _start(app.cmd(port), env)
    try:
        _wait_http(url, proc)
        page = ctx.new_page()
        page.goto(url)
        page.wait_for_function(app.ready_js, timeout=300_000, polling="raf")
        render = time.perf_counter() - t0
        page.wait_for_timeout(300)
        times = []
        mark = MARK_BARE if app.name == "bare" else MARK_OURS
        for threshold in THRESHOLD_CLICKS:
            page.evaluate(mark)
            s = time.perf_counter()
            page.locator(app.click, has_text=threshold).first.click()
            page.wait_for_function(app.changed_js, timeout=120_000, polling="raf")
            times.append(time.perf_counter() - s)
        page.close()
        return render, times
    finally:
        _stop(proc)


def _browser(profile: str):
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    ctx = pw.chromium.launch_persistent_context(
        profile,
        executable_path=CHROMIUM,
        args=CHROMIUM_ARGS,
        headless=True,
        viewport={"width": 1440, "height": 1000},
    )
    return pw, ctx


def _wait_http(url: str, proc: subprocess.Popen) -> None:
    deadline = time.perf_counter() + 600
    while time.perf_counter() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"app process exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.02)
    raise SystemExit("server did not answer within 600 s")


def side_by_side(
    ctx, apps: list[App], repeats: int, resamples: int
) -> dict[str, tuple[float, float]]:
    renders: dict[str, list[float]] = {a.name: [] for a in apps}
    filters: dict[str, list[float]] = {a.name: [] for a in apps}
    firsts: dict[str, list[float]] = {a.name: [] for a in apps}
    for r in range(repeats):
        # Alternate, so load on the machine hits every app alike, and rotate which app goes
        # first, so that position is no part of the comparison: a fixed order always measured
        # "ours, warm cache" first, right after the in-process figures (its filter read 2.3x
        # bare in one --repeats 1 run, while in-process the warm and cold boards filter alike).
        for app in apps[r % len(apps) :] + apps[: r % len(apps)]:
            render, times = measure(ctx, app, resamples)
            renders[app.name].append(render)
            filters[app.name].append(statistics.median(times))
            firsts[app.name].append(statistics.mean(times[:FIRST_VISITS]))
            # every start, so that the spread behind each median shows (a ratio's margin)
            print(f"  start {r + 1}/{repeats}  {app.name:17s} render {render:5.2f} s  filter"
                  f" {1000 * filters[app.name][-1]:4.0f} ms (first visits"
                  f" {1000 * firsts[app.name][-1]:4.0f} ms)  ({_load()})", flush=True)  # fmt: skip
    return {
        name: tuple(statistics.median(x[name]) for x in (renders, filters, firsts))
        for name in renders
    }


def run_size(n_cells: int, args: argparse.Namespace, ctx) -> list[tuple[str, ...]]:
    rows = n_cells * args.tasks
    print(f"data: {n_cells:,} cells x {args.tasks} tasks = {rows:,} rows  ({_load()})")
    with tempfile.TemporaryDirectory(prefix="sf-bench-") as tmp:
        path = Path(tmp) / "transitions.parquet"
        pq.write_table(make_table(n_cells, args.tasks), path)
        warm = Path(tmp) / "board-cache"
        shown, cells = in_process(path, args.resamples, warm)
        if ctx is None:
            return []
        if shown == 0:  # the browser would wait for table rows that never come
            raise SystemExit(
                f"the board's first view shows no cell of {n_cells} x {args.tasks} tasks (too few"
                " reach the default min n_cond): raise --cells or --tasks"
            )
        apps = [ours(path, args.resamples, warm)] * (args.cache != "cold")
        apps += [ours(path, args.resamples, None)] * (args.cache != "warm")
        result = side_by_side(ctx, [*apps, bare(cells, shown)], args.repeats, args.resamples)
    b_r, b_f, b_v = result["bare"]
    data = f"{n_cells:,} cells ({rows:,} rows), {shown} rows shown"
    out = []
    for name, (o_r, o_f, o_v) in result.items():
        ratios = (
            ("-", "-", "-")
            if name == "bare"
            else (f"{o_r / b_r:.2f}x (target <= 1.3x)", f"{o_f / b_f:.2f}x (target <= 1.5x)",
                  f"{o_v / b_v:.2f}x")
        )  # fmt: skip
        out.append((data, name, f"{o_r:.2f} s", ratios[0], f"{1000 * o_f:.0f} ms", ratios[1],
                    f"{1000 * o_v:.0f} ms", ratios[2], _load()))  # fmt: skip
    return out


_PEAK = """
import resource, sys
from hf_skillfollow.space_app._board import load_board
board = load_board(sys.argv[1:], resamples=200, discover=False, use_cache=False)
refused = [w for w in board.warnings if "bomb" in w]
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{peak:.0f} {len(board.pooled)} {int(bool(refused))}")
"""


def bomb_memory(mb: int, n_tasks: int) -> None:
    """Peak RSS of a board over a normal source alone and beside a bomb source."""
    with tempfile.TemporaryDirectory(prefix="sf-bench-bomb-") as tmp:
        normal = Path(tmp) / "normal.parquet"
        pq.write_table(make_table(39, n_tasks), normal)
        bomb = Path(tmp) / "bomb" / "run-bomb"
        bomb.mkdir(parents=True)
        table = make_table(1, n_tasks)
        indices = pa.array(np.zeros(table.num_rows, dtype=np.int32))
        model = pa.DictionaryArray.from_arrays(indices, pa.array(["m" * (mb << 20)]))
        table = table.set_column(table.schema.get_field_index("model"), "model", model)
        path = bomb / "transitions.parquet"
        pq.write_table(table, path, compression="zstd", store_schema=False)
        rows = []
        for label, sources in (
            ("normal source alone", [normal]),
            ("bomb beside it", [bomb.parent, normal]),
        ):
            out = subprocess.run([sys.executable, "-c", _PEAK, *map(str, sources)],
                                 capture_output=True, text=True, timeout=600)  # fmt: skip
            if out.returncode:
                raise SystemExit(out.stderr[-2000:])
            peak, cells, refused = out.stdout.split()
            rows.append((label, float(peak), int(cells), refused == "1"))
        print(f"bomb: {path.stat().st_size / 1024:.0f} KB file, one {mb} MB string x {table.num_rows} rows "
              f"= {mb * table.num_rows / 1024:.1f} GB decoded  ({_load()})")  # fmt: skip
        for label, peak, cells, refused in rows:
            note = ", bomb refused with a warning" if refused else ""
            print(f"  peak RSS, {label:20s} {peak:7.0f} MB  ({cells} cells{note})")
        print(f"  bomb beside / alone: {rows[1][1] / rows[0][1]:.2f}x")


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f}/{five:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--cells", type=int, nargs="+", default=[39, 12_500],
        help="data sizes to measure, in cells (each cell has --tasks rows) [39 12500]",
    )  # fmt: skip
    ap.add_argument("--tasks", type=int, default=80, help="paired tasks per cell [80]")
    ap.add_argument(
        "--resamples", type=int, default=20_000, help="bootstrap resamples per interval [20000]"
    )
    ap.add_argument(
        "--repeats", type=int, default=3, help="starts of each app per size; medians shown [3]"
    )
    ap.add_argument(
        "--cache",
        choices=("both", "warm", "cold"),
        default="both",
        help="start the board with its start-up cache warm, cold, or both [both]",
    )
    ap.add_argument(
        "--no-browser", action="store_true", help="only the in-process figures (no Chromium)"
    )
    ap.add_argument(
        "--bomb-mb", type=int, default=64,
        help="MB of the bomb source's one string for the peak-memory figure; 0 skips it [64]",
    )  # fmt: skip
    args = ap.parse_args()
    if min(args.cells) < 1 or args.tasks < 1 or args.repeats < 1 or args.resamples < 1:
        ap.error("--cells, --tasks, --repeats and --resamples must be positive")
    if args.bomb_mb > 0:
        bomb_memory(args.bomb_mb, args.tasks)
    with tempfile.TemporaryDirectory(prefix="sf-bench-chromium-") as profile:
        pw, ctx = (None, None) if args.no_browser else _browser(profile)
        try:
            table = [row for n in args.cells for row in run_size(n, args, ctx)]
        finally:
            if ctx is not None:
                ctx.close()
                pw.stop()
    if args.no_browser:
        return
    header = ("data", "app", "render", "render vs bare", "filter", "filter vs bare",
              "first visits", "vs bare", "load 1/5 min")  # fmt: skip
    print(f"\nmedians of {args.repeats} starts per app, alternating; render = process start to"
          " rows (+3 plots for ours) drawn in Chromium; filter = median of 8 threshold clicks;"
          f" first visits = mean of the first {FIRST_VISITS} (views not seen before: ours"
          " renders them, later clicks come back to them)")  # fmt: skip
    print(" | ".join(header))
    for row in table:
        print(" | ".join(row))


if __name__ == "__main__":
    main()

"""Benchmark: push and load a results repo of 1,000,000 transitions rows (12,500 runs).

Push: one run into an empty folder repo vs into a repo that already holds `--push-into` runs
(what `push --dry-run` does: validate, plan, counts, card, write; target: the second at most
2x the first, since a push updates the card's summary and appends to the small recent-counts
file instead of reading every published run or every run's counts; the repo's recent-counts
file is half full, as a push meets it on average), timed in-process (`build_repo`) and as
`hf-skillfollow push` processes (what a user waits for).
Load (cold: no datasets or toolkit cache): `load_transitions(folder)` + `to_pandas()`, the
Space's loader (`space_app._sources.load_sources`) and `datasets.load_dataset` + `to_pandas()`,
each against the peer: the same rows as one JSON Lines file read with
`pandas.read_json(lines=True)` (target: the toolkit's loaders at least as fast). Medians of
`--repeats`; prints figures, ratios and the load average (the machine may be shared).
The synthetic files are written once (parquet, no push) and reused from a temp folder.

    python bench/hub.py [--rows 1000000] [--rows-per-run 80] [--push-into 10000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa

from hf_skillfollow.hub._card import render_card
from hf_skillfollow.hub._card_cache import CARD_CELLS_PATH, CardRowCache
from hf_skillfollow.hub._counts import recent_limit
from hf_skillfollow.hub._layout import (
    CARD_PATH,
    MANIFEST,
    RUN_TRANSITIONS,
    TRANSITIONS_DIR,
    parquet_bytes,
    transitions_path,
)
from hf_skillfollow.hub._stats import RECENT_PATH, STATS_PATH, run_stats, stats_bytes
from hf_skillfollow.hub._summary import SUMMARY_PATH, CardSummary
from hf_skillfollow.schema import TRANSITIONS_SCHEMA, validate_transitions


def synthetic_transitions(n_rows: int, rows_per_run: int, seed: int = 0) -> pa.Table:
    """Schema-v1 rows: runs of `rows_per_run` tasks, random paired outcomes."""
    rng = np.random.default_rng(seed)
    run = np.arange(n_rows) // rows_per_run
    task = np.arange(n_rows) % rows_per_run
    returned = rng.random(n_rows) < 0.4
    n_calls = np.where(returned, rng.integers(1, 4, n_rows), 0).astype(np.int32)
    str_col = lambda fmt, values: pa.array([fmt.format(v) for v in values], pa.string())  # noqa: E731
    query_lists = pa.ListArray.from_arrays(
        np.concatenate([[0], np.cumsum(returned.astype(np.int32))]).astype(np.int32),
        pa.array([f"query {i}" for i in np.flatnonzero(returned)], pa.string()),
    )
    cols = {
        "schema_version": pa.array(np.ones(n_rows, np.int32)),
        "run_id": str_col("run-{:06d}", run),
        "cell_id": str_col("cell-{:06d}", run),
        "repeat_index": pa.array(np.zeros(n_rows, np.int32)),
        "created_at": pa.array(["2026-11-30T00:00:00+00:00"] * n_rows, pa.string()),
        "model": str_col("org/model-{:03d}", run % 100),
        "backend": pa.array(["openai"] * n_rows, pa.string()),
        "tool_mode": pa.array(["native"] * n_rows, pa.string()),
        "retrieval_policy": pa.array(["auto"] * n_rows, pa.string()),
        "benchmark": pa.array(["mbppplus"] * n_rows, pa.string()),
        "benchmark_version": pa.array(["v0.1.0"] * n_rows, pa.string()),
        "partition_seed": pa.array(42 + run % 3, pa.int64()),
        "partition_size": pa.array(np.full(n_rows, rows_per_run, np.int64)),
        "skill_pool": pa.array(["coding"] * n_rows, pa.string()),
        "skill_pool_hash": pa.array(["0123456789abcdef"] * n_rows, pa.string()),
        "condition": pa.array(["normal"] * n_rows, pa.string()),
        "access": pa.array(["search"] * n_rows, pa.string()),
        "retriever": pa.array(["bm25s"] * n_rows, pa.string()),
        "top_k": pa.array(np.full(n_rows, 3, np.int32)),
        "max_calls": pa.array(np.full(n_rows, 3, np.int32)),
        "temperature": pa.array(np.full(n_rows, 0.7)),
        "max_tokens": pa.array(np.full(n_rows, 8192, np.int32)),
        "seed": pa.array(np.zeros(n_rows, np.int64)),
        "prompts_hash": pa.array(["fedcba9876543210"] * n_rows, pa.string()),
        "toolkit_version": pa.array(["0.1.0"] * n_rows, pa.string()),
        "task_id": pa.array(np.array(_task_ids(rows_per_run))[task], pa.string()),
        "se_correct": pa.array(rng.random(n_rows) < 0.5),
        "sd_correct": pa.array(rng.random(n_rows) < 0.5),
        "invoked": pa.array(returned),
        "returned": pa.array(returned),
        "n_calls": pa.array(n_calls),
        "queries": query_lists,
        "skills_returned": query_lists,
        "se_error": pa.nulls(n_rows, pa.string()),
        "sd_error": pa.nulls(n_rows, pa.string()),
        "adherence": pa.array(
            np.where(returned, rng.random(n_rows) < 0.5, None).tolist(), pa.bool_()
        ),
    }
    # Columns added to the schema later are backfilled, as for files written before them.
    return validate_transitions(pa.table(cols), "synthetic")


def _task_ids(rows_per_run: int) -> list[str]:
    # In the order `canonical` sorts them (by string), so the fixture needs no sort per run.
    return sorted(f"Mbpp/{i}" for i in range(rows_per_run))


class Fixture:
    """The synthetic rows as files, built once and kept in a temp folder across bench runs.

    `files/` holds every run's published transitions file (the bytes a push would write),
    `runs/` run directories of the runs the bench pushes (made on first use), `stats-N.parquet`,
    `summary-N.json`, `card_cells-N.json` and `README-N.md` the counts, card summary, card-row
    cache and card of a repo of the first N runs, and `transitions.jsonl` the peer file (written
    by the load half when it first needs it).
    Repos are assembled from hard links, so each bench run starts from a fresh repo in
    seconds; a push replaces files by rename, so it never writes through a link.
    """

    def __init__(self, root: Path, n_runs: int) -> None:
        self.root, self.n_runs = root, n_runs

    def run_ids(self) -> list[str]:
        return [f"run-{i:06d}" for i in range(self.n_runs)]

    def run_dir(self, index: int) -> Path:
        """The run directory of run `index` (made on first use from its published file)."""
        run = self.root / "runs" / self.run_ids()[index]
        if not (run / MANIFEST).is_file():
            run.mkdir(parents=True, exist_ok=True)
            if not (run / RUN_TRANSITIONS).exists():
                os.link(self.root / "files" / f"{run.name}.parquet", run / RUN_TRANSITIONS)
            (run / MANIFEST).write_text(json.dumps({"run_id": run.name}))
        return run

    def repo(self, n_old: int, dest: Path) -> Path:
        """A results repo folder of the first `n_old` runs, linked into `dest`."""
        data = dest / TRANSITIONS_DIR
        data.mkdir(parents=True)
        for run_id in self.run_ids()[:n_old]:
            os.link(self.root / "files" / f"{run_id}.parquet", data / f"{run_id}.parquet")
        (dest / "stats").mkdir()
        os.link(self.root / f"stats-{n_old}.parquet", dest / STATS_PATH)
        os.link(self.root / f"recent-{n_old}.parquet", dest / RECENT_PATH)
        os.link(self.root / f"README-{n_old}.md", dest / CARD_PATH)
        os.link(self.root / f"card_cells-{n_old}.json", dest / CARD_CELLS_PATH)
        os.link(self.root / f"summary-{n_old}.json", dest / SUMMARY_PATH)
        return dest


def build_fixture(args: argparse.Namespace, n_old: int) -> Fixture:
    """The cached fixture for these options (built on first use: minutes for 10^6 rows)."""
    from hf_skillfollow import __version__

    # the schema's digest: files written before a column was added are rebuilt, not reused
    schema = hashlib.sha256(str(TRANSITIONS_SCHEMA).encode()).hexdigest()[:8]
    key = f"{args.rows}-{args.rows_per_run}-{__version__}-{schema}"
    rpr = args.rows_per_run
    root = args.fixture_dir or Path(tempfile.gettempdir()) / f"hf-skillfollow-bench-hub-{key}"
    fixture = Fixture(root, args.rows // args.rows_per_run)
    if (root / "complete").is_file():
        print(f"fixture: reusing {root}", flush=True)
        _derived_files(fixture, table=None, sizes=(n_old, fixture.n_runs), rows_per_run=rpr)
        return fixture
    t0 = time.perf_counter()
    shutil.rmtree(root, ignore_errors=True)
    (root / "files").mkdir(parents=True)
    table = synthetic_transitions(args.rows, rpr)

    def write(index: int) -> None:
        part = table.slice(index * rpr, rpr)
        run_id = fixture.run_ids()[index]
        (root / "files" / f"{run_id}.parquet").write_bytes(parquet_bytes(part, "transitions"))

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        list(pool.map(write, range(fixture.n_runs)))
    _derived_files(fixture, table, (n_old, fixture.n_runs), rpr)
    (root / "complete").write_text("")
    print(f"fixture: built {root} in {time.perf_counter() - t0:.1f} s", flush=True)
    return fixture


def _card_code() -> str:
    """Hash of the code that writes the counts, the card and its cache (hub/, metrics/)."""
    import hf_skillfollow.hub as hub
    import hf_skillfollow.metrics as metrics

    digest = hashlib.sha256()
    for package in (hub, metrics):
        for path in sorted(Path(package.__file__).parent.glob("*.py")):
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _derived_files(
    fixture: Fixture, table: pa.Table | None, sizes: tuple[int, ...], rows_per_run: int
) -> None:
    """Counts, card and card cache of a repo of the first N runs, as a push would leave them.

    Written apart from the run files so that a change of the card code costs seconds here.
    """
    root = fixture.root
    for n in sorted(set(sizes)):
        names = (
            f"stats-{n}.parquet", f"README-{n}.md", f"card_cells-{n}.json", f"summary-{n}.json",
            f"recent-{n}.parquet",
        )  # fmt: skip
        fingerprint = root / f"code-{n}.txt"
        if all((root / name).is_file() for name in names) and (
            fingerprint.is_file() and fingerprint.read_text() == _card_code()
        ):
            continue
        if table is None:
            table = synthetic_transitions(fixture.n_runs * rows_per_run, rows_per_run)
        stats = run_stats(table.slice(0, n * rows_per_run))
        paths = sorted(transitions_path(run_id) for run_id in fixture.run_ids()[:n])
        cache, summary = CardRowCache(), CardSummary.of(stats, paths)
        card = render_card(summary, repo_id="org/bench", has_traces=False, cell_cache=cache)
        # A push appends to the recent-counts file until it outgrows recent_limit, then merges
        # it into the main one: the repo holds it half full, the size a push meets on average.
        n_recent = min(recent_limit(n) // 2, stats.num_rows)  # a small repo: all recent
        base, recent = stats.slice(0, n - n_recent), stats.slice(n - n_recent)
        summary.base_rows, summary.recent_rows = base.num_rows, recent.num_rows
        (root / names[0]).write_bytes(stats_bytes(base))
        (root / names[1]).write_text(card, encoding="utf-8")
        (root / names[2]).write_bytes(cache.to_bytes())
        (root / names[3]).write_bytes(summary.to_bytes())
        (root / names[4]).write_bytes(stats_bytes(recent))
        fingerprint.write_text(_card_code())


def timed(label: str, fn, results: dict[str, float], repeats: int = 1):  # noqa: ANN001, ANN201
    """Median wall time of `repeats` calls (and, in CPU[label], the median process CPU time).

    CPU time (all threads) is printed too: on a loaded machine wall times swing by several x,
    while CPU time still compares the work each side does.
    """
    walls, cpus, out = [], [], None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    results[label] = statistics.median(walls)
    CPU[label] = statistics.median(cpus)
    print(f"  {label:<52s} {results[label]:8.3f} s wall {CPU[label]:8.3f} s CPU", flush=True)
    return out


CPU: dict[str, float] = {}


def timed_pair(
    first: tuple[str, Callable[[], object]],
    second: tuple[str, Callable[[], object]],
    results: dict[str, float],
    repeats: int,
) -> None:
    """Medians of two measurements taken in turn (a, b, a, b, ...), as `timed` prints them."""
    walls: dict[str, list[float]] = {first[0]: [], second[0]: []}
    cpus: dict[str, list[float]] = {first[0]: [], second[0]: []}
    for _ in range(repeats):
        for label, fn in (first, second):
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            walls[label].append(time.perf_counter() - t0)
            cpus[label].append(time.process_time() - c0)
    for label in walls:
        results[label] = statistics.median(walls[label])
        CPU[label] = statistics.median(cpus[label])
        print(f"  {label:<52s} {results[label]:8.3f} s wall {CPU[label]:8.3f} s CPU", flush=True)


def _cli_push(run: Path, folder: Path) -> None:
    cmd = [sys.executable, "-m", "hf_skillfollow.cli", "push", str(run), "--repo", "org/bench"]
    subprocess.run([*cmd, "--dry-run", str(folder)], check=True, capture_output=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="transitions rows in all")
    ap.add_argument(
        "--rows-per-run", type=int, default=80, help="tasks per run (80 = one partition)"
    )
    ap.add_argument(
        "--push-into", type=int, default=10_000, help="runs already in the repo for the push test"
    )
    ap.add_argument("--repeats", type=int, default=3, help="timings per load figure (median)")
    ap.add_argument(
        "--push-repeats",
        type=int,
        default=9,
        help="pushes per push figure (median); the two repos alternate, so load swings hit both",
    )
    ap.add_argument(
        "--fixture-dir",
        type=Path,
        default=None,
        help="where the synthetic files are built once and reused (default: a temp folder "
        "named after the options)",
    )
    ap.add_argument(
        "--skip-datasets", action="store_true", help="leave out datasets.load_dataset (slowest)"
    )
    ap.add_argument("--skip-cli", action="store_true", help="leave out the CLI push processes")
    ap.add_argument(
        "--only", choices=("push", "load"), default=None, help="run one half of the bench"
    )
    args = ap.parse_args()

    n_runs = args.rows // args.rows_per_run
    n_old = min(args.push_into, n_runs - 2 * args.push_repeats)
    fixture = build_fixture(args, n_old)
    work = Path(tempfile.mkdtemp(prefix="bench-hub-"))
    print(f"{args.rows:,} rows in {n_runs:,} runs of {args.rows_per_run} tasks; work {work}")
    print(f"load average at start: {_load_average()}")
    r: dict[str, float] = {}

    if args.only != "load":
        _bench_push(args, fixture, work, n_old, r)
    if args.only != "push":
        _bench_load(args, fixture, work, n_runs, r)
    shutil.rmtree(work, ignore_errors=True)


def _bench_push(
    args: argparse.Namespace, fixture: Fixture, work: Path, n_old: int, r: dict[str, float]
) -> None:
    from hf_skillfollow.hub import build_repo

    repo = fixture.repo(n_old, work / "repo")
    repeats = args.push_repeats
    runs = [fixture.run_dir(i) for i in range(n_old, n_old + 2 * repeats)]
    build_repo([runs[-1]], work / "warm-up")  # imports and template compile, in neither figure
    print(f"push one run (folder repo, median of {repeats}, the two pushes alternating):")
    new, empties = iter(runs[:repeats]), iter(range(repeats))
    timed_pair(
        (f"push 1 run into the {n_old:,}-run repo", lambda: build_repo([next(new)], repo)),
        (
            "push 1 run into an empty repo",
            lambda: build_repo([runs[0]], work / f"empty-{next(empties)}"),
        ),
        r,
        repeats,
    )
    if not args.skip_cli:
        # The same pushes as a user runs them: one `hf-skillfollow push --dry-run` process each.
        cli_new, cli_empties = iter(runs[repeats:]), iter(range(repeats))
        timed_pair(
            (
                f"CLI: push 1 run into the {n_old + repeats:,}-run repo",
                lambda: _cli_push(next(cli_new), repo),
            ),
            (
                "CLI: push 1 run into an empty repo",
                lambda: _cli_push(runs[0], work / f"cli-empty-{next(cli_empties)}"),
            ),
            r,
            repeats,
        )
    print(f"load average after the pushes: {_load_average()}")
    key_into, key_empty = f"push 1 run into the {n_old:,}-run repo", "push 1 run into an empty repo"
    into, empty = r[key_into], r[key_empty]
    print(f"  push: {n_old:,}-run repo {into:.3f} s vs empty repo {empty:.3f} s -> {into / empty:.2f}x wall,"
          f" {CPU[key_into] / CPU[key_empty]:.2f}x CPU (target <= 2x)")  # fmt: skip
    if not args.skip_cli:
        cli_into = r[f"CLI: push 1 run into the {n_old + repeats:,}-run repo"]
        cli_empty = r["CLI: push 1 run into an empty repo"]
        print(f"  push (CLI processes): {cli_into:.2f} s vs {cli_empty:.2f} s -> {cli_into / cli_empty:.2f}x wall"
              " (target <= 2x)")  # fmt: skip


def _bench_load(
    args: argparse.Namespace, fixture: Fixture, work: Path, n_runs: int, r: dict[str, float]
) -> None:
    import pandas as pd

    from hf_skillfollow.hub import load_transitions
    from hf_skillfollow.space_app._sources import load_sources

    full = fixture.repo(n_runs, work / "full")
    jsonl = fixture.root / "transitions.jsonl"
    if not jsonl.is_file():  # the peer's file, only for the load half (733 MB at 10^6 rows)
        part = jsonl.with_suffix(".partial")
        table = synthetic_transitions(args.rows, args.rows_per_run)
        table.to_pandas().to_json(part, orient="records", lines=True)
        part.rename(jsonl)
    print(f"load {n_runs:,} runs cold (median of {args.repeats}):")
    back = timed(
        "peer: pandas.read_json(lines=True)",
        lambda: pd.read_json(jsonl, lines=True),
        r,
        args.repeats,
    )
    assert len(back) == args.rows
    del back
    frame = timed(
        "load_transitions(folder) + to_pandas()",
        lambda: load_transitions(full).to_pandas(),
        r,
        args.repeats,
    )
    assert len(frame) == args.rows
    del frame
    loaded = timed(
        "Space loader: load_sources([folder])", lambda: load_sources([str(full)]), r, args.repeats
    )
    assert loaded.transitions is not None and loaded.transitions.num_rows == args.rows, (
        loaded.warnings
    )
    del loaded
    if not args.skip_datasets:
        import datasets

        caches = iter(range(args.repeats))
        timed(
            "datasets.load_dataset(folder) + to_pandas() (cold)",
            lambda: datasets.load_dataset(
                str(full),
                "transitions",
                split="train",
                cache_dir=str(work / f"hf-cache-{next(caches)}"),
            ).to_pandas(),
            r,
            args.repeats,
        )
    print(f"load average after the loads: {_load_average()}")

    repo_bytes = sum(p.stat().st_size for p in (full / TRANSITIONS_DIR).glob("*.parquet"))
    print("sizes:")
    print(
        f"  parquet files {repo_bytes / 1e6:8.1f} MB   JSONL {jsonl.stat().st_size / 1e6:8.1f} MB"
    )
    peer, peer_cpu = (
        r["peer: pandas.read_json(lines=True)"],
        CPU["peer: pandas.read_json(lines=True)"],
    )
    for label in ("load_transitions(folder) + to_pandas()", "Space loader: load_sources([folder])",
                  "datasets.load_dataset(folder) + to_pandas() (cold)"):  # fmt: skip
        if label in r:
            print(f"  load: {label} {r[label]:.2f} s vs read_json {peer:.2f} s -> {peer / r[label]:.2f}x wall,"
                  f" {peer_cpu / CPU[label]:.2f}x CPU (JSONL time / ours; target >= 1x)")  # fmt: skip


def _load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1, 5, 15 min)"


if __name__ == "__main__":
    main()

"""Benchmark: build and load a results repo of 1,000,000 transitions rows vs the same rows as JSONL.

Repo path: run directories -> `build_repo` (what `push --dry-run` does: validate, write
deterministic parquet, render the card with every cell's numbers) -> `datasets.load_dataset`
of the local repo folder -> `to_pandas()`. Peer: the same rows written as JSON Lines with
pandas and read back with `pandas.read_json(lines=True)`. Prints figures and ratios.

    python bench/hub.py [--rows 1000000] [--rows-per-run 80] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hf_skillfollow.schema import TRANSITIONS_SCHEMA


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
        "retriever": pa.array(["bm25s"] * n_rows, pa.string()),
        "top_k": pa.array(np.full(n_rows, 3, np.int32)),
        "max_calls": pa.array(np.full(n_rows, 3, np.int32)),
        "temperature": pa.array(np.full(n_rows, 0.7)),
        "max_tokens": pa.array(np.full(n_rows, 8192, np.int32)),
        "seed": pa.array(np.zeros(n_rows, np.int64)),
        "prompts_hash": pa.array(["fedcba9876543210"] * n_rows, pa.string()),
        "toolkit_version": pa.array(["0.1.0"] * n_rows, pa.string()),
        "task_id": str_col("Mbpp/{}", task),
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
    return pa.Table.from_pydict(cols, schema=TRANSITIONS_SCHEMA)


def write_run_dirs(table: pa.Table, rows_per_run: int, root: Path) -> list[Path]:
    dirs = []
    for start in range(0, table.num_rows, rows_per_run):
        part = table.slice(start, rows_per_run)
        run_id = part.column("run_id")[0].as_py()
        d = root / run_id
        d.mkdir(parents=True)
        pq.write_table(part, d / "transitions.parquet")
        (d / "manifest.json").write_text(json.dumps({"run_id": run_id}))
        dirs.append(d)
    return dirs


def timed(label: str, fn, results: dict[str, float]):  # noqa: ANN001, ANN201
    t0 = time.perf_counter()
    out = fn()
    results[label] = time.perf_counter() - t0
    print(f"  {label:<44s} {results[label]:8.2f} s", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument(
        "--rows-per-run", type=int, default=80, help="tasks per run (80 = one partition)"
    )
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()

    import datasets
    import pandas as pd

    from hf_skillfollow.hub import build_repo

    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-hub-"))
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    table = synthetic_transitions(args.rows, args.rows_per_run)
    runs = write_run_dirs(table, args.rows_per_run, work / "runs")
    print(f"{args.rows:,} rows in {len(runs):,} runs of {args.rows_per_run} tasks; workdir {work}")
    r: dict[str, float] = {}

    print("results repo (parquet + card, through datasets):")
    timed(
        "build_repo (validate, write parquet, card)",
        lambda: build_repo(runs, work / "repo", repo_id="org/bench"),
        r,
    )
    cache = work / "hf-cache"
    ds = timed(
        "load_dataset(folder, 'transitions') cold",
        lambda: datasets.load_dataset(
            str(work / "repo"), "transitions", split="train", cache_dir=str(cache)
        ),
        r,
    )
    df = timed("to_pandas()", ds.to_pandas, r)
    timed(
        "load_dataset warm (cache hit) + to_pandas",
        lambda: datasets.load_dataset(
            str(work / "repo"), "transitions", split="train", cache_dir=str(cache)
        ).to_pandas(),
        r,
    )
    assert len(df) == args.rows

    print("JSONL peer (pandas):")
    jsonl = work / "transitions.jsonl"
    timed(
        "write JSONL (to_pandas + to_json lines)",
        lambda: table.to_pandas().to_json(jsonl, orient="records", lines=True),
        r,
    )
    back = timed("pandas.read_json(lines=True)", lambda: pd.read_json(jsonl, lines=True), r)
    assert len(back) == args.rows

    repo_bytes = sum(p.stat().st_size for p in (work / "repo" / "data").rglob("*.parquet"))
    load = r["load_dataset(folder, 'transitions') cold"] + r["to_pandas()"]
    print("sizes:")
    print(f"  parquet files {repo_bytes / 1e6:8.1f} MB   JSONL {jsonl.stat().st_size / 1e6:8.1f} MB"
          f"   ratio JSONL/parquet {jsonl.stat().st_size / repo_bytes:5.1f}x")  # fmt: skip
    print("ratios (JSONL time / repo time; >1 means the repo is faster):")
    print(f"  read:  read_json {r['pandas.read_json(lines=True)']:.2f} s vs load_dataset+to_pandas {load:.2f} s"
          f" -> {r['pandas.read_json(lines=True)'] / load:.2f}x")  # fmt: skip
    warm = r["load_dataset warm (cache hit) + to_pandas"]
    print(f"  read (warm cache): {r['pandas.read_json(lines=True)'] / warm:.2f}x")
    write = r["build_repo (validate, write parquet, card)"]
    print(f"  write: JSONL {r['write JSONL (to_pandas + to_json lines)']:.2f} s vs build_repo {write:.2f} s"
          f" -> {r['write JSONL (to_pandas + to_json lines)'] / write:.2f}x")  # fmt: skip
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

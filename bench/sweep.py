"""Benchmark: sweeps against the scripted OpenAI-compatible server (tests/_model_double.py)
with a fixed latency per request, side by side with the peer, in one run.

1. Sweep vs serial runs: N small MATH-500 cells (one partition seed each) as one
   `hf-skillfollow sweep` process vs N `hf-skillfollow run` processes one after another, with
   the same concurrency setting (requests in flight to the model) in both. Target: >= 5x.
2. Sweep overhead per cell: the same pairs as N one-task cells through the sweep driver vs as
   one N-task run through `runner.execute`, both in-process; (sweep - run) / N. Target: < 0.2 s.
3. `--executor ray`, scoring-bound: HumanEval+ cells with a latency-free scripted model on a
   local Ray cluster (driver-only head) with one worker node vs two, each worker node pinned to
   a CPU core of its own (`taskset`), standing in for a machine. Target: >= 1.6x throughput.
   Timed in-process around `run_sweep` (after `ray.init`), so start-up is outside both sides.
   The expected-output cache is warmed first, so both sides score warm.

Prints every repeat, medians, ratios and the load average: on a shared machine the figures
are measured under that load.

    python bench/sweep.py [--cells 24] [--tasks 2] [--latency 0.3] [--concurrency 8]
                          [--repeats 1] [--ray-cells 4] [--ray-tasks 8] [--no-ray]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests._model_double import ScriptedModelServerDouble  # noqa: E402

from hf_skillfollow.tasks import load_tasks  # noqa: E402

CLI = [sys.executable, "-m", "hf_skillfollow.cli"]
DATA = Path(os.environ.get("SKILLFOLLOW_DATA_DIR") or REPO.parent / "shared" / "data")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1, 5, 15 min)"


def env() -> dict[str, str]:
    paths = [str(REPO / "toolkit"), str(REPO), os.environ.get("PYTHONPATH", "")]
    return {
        **os.environ,
        "PYTHONPATH": ":".join(p for p in paths if p),
        "RAY_USAGE_STATS_ENABLED": "0",
    }


def sweep_yaml(path: Path, url: str, benchmark: str, tasks_file: Path, cells: int, tasks: int,
               concurrency: int, max_cells: int) -> Path:  # fmt: skip
    seeds = ", ".join(str(s) for s in range(1, cells + 1))
    path.write_text(
        f"name: bench\nmax_cells: {max_cells}\n"
        f"model_defaults: {{backend: openai, base_url: '{url}', concurrency: {concurrency}}}\n"
        f"settings: {{concurrency: {concurrency}}}\n"
        "models:\n  - {name: M, model: double-model}\n"
        f"benchmarks:\n  - {{benchmark: {benchmark}, tasks_file: '{tasks_file}', limit: {tasks}, "
        f"partition_seeds: [{seeds}]}}\n"
    )
    return path


def timed(cmd: list[str], **kw: object) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env(), capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    if proc.returncode:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return time.perf_counter() - start


def part_serial_vs_sweep(args: argparse.Namespace, tasks: list, math_file: Path) -> float:
    print(f"\n1. {args.cells} cells x {args.tasks} MATH-500 tasks, latency {args.latency} s/request, "
          f"concurrency {args.concurrency}")  # fmt: skip
    sweeps, serials = [], []
    with ScriptedModelServerDouble(tasks, latency_s=args.latency) as double:
        for r in range(args.repeats):
            tmp = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
            try:
                serial = 0.0
                for seed in range(1, args.cells + 1):
                    serial += timed([*CLI, "run", "--model", "double-model", "--base-url", double.url,
                                     "--benchmark", "math500", "--tasks-file", str(math_file),
                                     "--limit", str(args.tasks), "--partition-seed", str(seed),
                                     "--concurrency", str(args.concurrency), "-o", str(tmp / "serial"),
                                     "--no-report"])  # fmt: skip
                f = sweep_yaml(tmp / "s.yaml", double.url, "math500", math_file, args.cells,
                               args.tasks, args.concurrency, args.cells)  # fmt: skip
                swept = timed([*CLI, "sweep", str(f), "-o", str(tmp / "sweep"), "--plain"])
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            serials.append(serial)
            sweeps.append(swept)
            print(f"   repeat {r + 1}: serial runs {serial:7.2f} s   sweep {swept:6.2f} s   "
                  f"ratio {serial / swept:5.2f}x   load {load()}")  # fmt: skip
    ratio = statistics.median(serials) / statistics.median(sweeps)
    print(f"   median: serial {statistics.median(serials):.2f} s, sweep {statistics.median(sweeps):.2f} s "
          f"-> {ratio:.2f}x (target >= 5x)")  # fmt: skip
    return ratio


async def _one_run(url: str, math_file: Path, n: int, out: Path, concurrency: int) -> None:
    from hf_skillfollow.backends import open_backend
    from hf_skillfollow.config import RunConfig
    from hf_skillfollow.runner import execute, plan_new_run

    config = RunConfig(backend="openai", model="double-model", base_url=url, benchmark="math500",
                       tasks_file=math_file, partition_size=n, concurrency=concurrency)  # fmt: skip
    plan = plan_new_run(config, out)
    async with open_backend(config) as backend:
        await execute(plan, backend)
    plan.store.write_tables()


async def _sweep_in_process(path: Path, out: Path, executor: object = None) -> float:
    """Seconds `run_sweep` takes over every cell of `path` (the executor already started)."""
    import io

    from hf_skillfollow import sweep as sw
    from hf_skillfollow.sweep._executors._local import LocalExecutor
    from hf_skillfollow.sweep._run import run_sweep
    from hf_skillfollow.sweep._view import LogView, Tally

    _, spec, cells = sw.load(str(path))
    jobs = sw.jobs_for(cells, out)
    summary = sw.plan(jobs, out)
    async with executor or LocalExecutor() as ex:  # type: ignore[attr-defined]
        view = LogView(Tally.of(summary.states), io.StringIO())
        start = time.perf_counter()
        result = await run_sweep(
            jobs, ex, view, retry=spec.retry, max_cells=spec.max_cells, output_dir=out
        )
        elapsed = time.perf_counter() - start
    assert not result.failed, result.results
    return elapsed


def part_overhead(args: argparse.Namespace, tasks: list, math_file: Path) -> float:
    n = args.cells
    print(
        f"\n2. overhead: {n} one-task cells (sweep) vs one {n}-task run, in-process, latency 0.02 s"
    )
    per_cell = []
    with ScriptedModelServerDouble(tasks, latency_s=0.02) as double:
        warm = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
        # first-use costs (imports, the scorer, the retriever) belong to neither side
        asyncio.run(_one_run(double.url, math_file, 2, warm, args.concurrency))
        shutil.rmtree(warm, ignore_errors=True)
        for r in range(args.repeats):
            tmp = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
            try:
                # one cell of n tasks: partition seed 1, size n; n cells of one task each: the
                # first task of partitions 1..n (different tasks, the same amount of work)
                start = time.perf_counter()
                asyncio.run(_one_run(double.url, math_file, n, tmp / "run", args.concurrency))
                single = time.perf_counter() - start
                f = sweep_yaml(
                    tmp / "s.yaml", double.url, "math500", math_file, n, 1, args.concurrency, n
                )
                swept = asyncio.run(_sweep_in_process(f, tmp / "sweep"))
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            per_cell.append((swept - single) / n)
            print(f"   repeat {r + 1}: one run {single:6.2f} s   sweep {swept:6.2f} s   "
                  f"overhead {per_cell[-1]:.3f} s/cell   load {load()}")  # fmt: skip
    med = statistics.median(per_cell)
    print(f"   median overhead {med:.3f} s per cell (target < 0.2 s)")
    return med


def part_ray(args: argparse.Namespace) -> float | None:
    from tests._ray_cluster import LocalRayCluster

    from hf_skillfollow.sweep._executors._ray import RayExecutor

    he_file = DATA / "HumanEvalPlus-v0.1.10.jsonl.gz"
    tasks = load_tasks("humanevalplus", he_file)[0]
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        print("\n3. ray: needs 2 CPU cores to pin two worker nodes; skipped")
        return None
    print(f"\n3. ray: {args.ray_cells} HumanEval+ cells x {args.ray_tasks} tasks, scripted model "
          "without latency; worker nodes pinned to one core each")  # fmt: skip
    results: dict[int, list[float]] = {1: [], 2: []}
    with ScriptedModelServerDouble(tasks) as double:
        tmp = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
        f = sweep_yaml(tmp / "s.yaml", double.url, "humanevalplus", he_file, args.ray_cells,
                       args.ray_tasks, 2, args.ray_cells)  # fmt: skip
        timed(
            [*CLI, "sweep", str(f), "-o", str(tmp / "warm"), "--plain"]
        )  # warm the expected outputs
        for r in range(args.repeats):
            for nodes in (1, 2):
                with LocalRayCluster(head_cpus=0) as cluster:
                    for i in range(nodes):
                        cluster.add_worker(cpus=1, prefix=("taskset", "-c", str(cores[i])))
                    out = tmp / f"ray{nodes}-{r}"
                    executor = RayExecutor(cluster.address, "127.0.0.1")
                    wall = asyncio.run(_sweep_in_process(f, out, executor))
                results[nodes].append(wall)
                print(f"   repeat {r + 1}: {nodes} worker node(s) {wall:6.2f} s   load {load()}")
        shutil.rmtree(tmp, ignore_errors=True)
    one, two = statistics.median(results[1]), statistics.median(results[2])
    print(
        f"   median: 1 node {one:.2f} s, 2 nodes {two:.2f} s -> {one / two:.2f}x throughput (target >= 1.6x)"
    )
    return one / two


def _verdict(name: str, value: float | None, fmt: str, ok: bool) -> None:
    if value is not None:
        print(f"   {name:<22}{fmt.format(value)}  {'met' if ok else 'NOT met'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", type=int, default=24)
    ap.add_argument("--tasks", type=int, default=2)
    ap.add_argument("--latency", type=float, default=0.3)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--ray-cells", type=int, default=4)
    ap.add_argument("--ray-tasks", type=int, default=8)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--parts", default="1,2,3", help="parts to run, e.g. 1,2")
    args = ap.parse_args()
    parts = {int(p) for p in args.parts.split(",")} - ({3} if args.no_ray else set())
    math_file = DATA / "math500.jsonl"
    tasks = load_tasks("math500", math_file)[0]
    print(f"bench/sweep.py on {os.cpu_count()} CPUs, load average {load()}")
    ratio = part_serial_vs_sweep(args, tasks, math_file) if 1 in parts else None
    overhead = part_overhead(args, tasks, math_file) if 2 in parts else None
    ray_ratio = part_ray(args) if 3 in parts else None
    print("\nsummary (measured under the load averages printed above):")
    _verdict("sweep vs serial runs", ratio, "{:5.2f}x (target >= 5x)", (ratio or 0) >= 5)
    _verdict("overhead per cell", overhead, "{:.3f} s (target < 0.2 s)", (overhead or 1) < 0.2)
    _verdict("ray 2 nodes vs 1", ray_ratio, "{:5.2f}x (target >= 1.6x)", (ray_ratio or 0) >= 1.6)
    print(f"   load average at the end {load()}")


if __name__ == "__main__":
    main()

"""Benchmark: `hf-skillfollow verify` vs `hf-skillfollow score` on the same answers.

Builds a folder of run directories holding ``--pairs`` paired rows with their traces (runs of
at most one benchmark's worth of tasks each), where each SE/SD final answer is a fenced
canonical solution or a stub (MBPP+), or a ``\\boxed{}`` reference or wrong constant
(MATH-500), every answer text distinct (so neither side can reuse a verdict). Then times, side
by side in one run, with the same ``--workers``:

- ``score``: the same answers as EvalPlus-format samples (the extracted program as
  ``solution`` for code, the answer text for math), and
- ``verify``: re-extraction from the traces, re-scoring, comparison, state file and record,
  with a fresh state.

A warm-up ``score`` (untimed) fills the expected-output cache first, so both timed runs are
warm. Prints the wall times, the ratio (target: verify ≤ 1.2 × score) and the machine load.

    python bench/verify.py [--benchmark math500|mbppplus] [--pairs 1000] [--workers 2]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FILES = {"math500": "math500.jsonl", "mbppplus": "mbppplus-v0.1.0.jsonl"}


def _data_file(data_dir: str | None, benchmark: str) -> Path:
    base = Path(
        data_dir or os.environ.get("SKILLFOLLOW_DATA_DIR") or REPO.parent / "shared" / "data"
    )
    path = base / FILES[benchmark]
    if not path.is_file():
        sys.exit(f"benchmark data not found: {path} (pass --data-dir or set SKILLFOLLOW_DATA_DIR)")
    return path


def _right(run: int, task_id: str, arm: str) -> bool:
    return int(hashlib.sha256(f"{run}:{arm}:{task_id}".encode()).hexdigest(), 16) % 4 != 0


def _answer(task, run: int, arm: str) -> str:  # noqa: ANN001 - hf_skillfollow.tasks.Task
    tag = f"run {run}, {arm}"  # every answer text distinct
    right = _right(run, task.task_id, arm)
    if task.domain == "math":
        return (
            f"({tag}) The final answer is $\\boxed{{{task.reference if right else '-987654321'}}}$."
        )
    body = (
        task.problem["canonical_solution"]
        if right
        else f"def {task.entry_point}(*a):\n    return None\n"
    )
    return f"Solution ({tag}):\n```python\n# {tag}\n{body}\n```\n"


def build(benchmark: str, data: Path, pairs: int, root: Path) -> tuple[Path, Path, int]:
    """Run directories under root/runs and the matching samples file; returns (runs, samples, n)."""
    import pyarrow.parquet as pq

    from hf_skillfollow.schema import traces_from_rows, transitions_from_rows
    from hf_skillfollow.scoring import extract_code
    from hf_skillfollow.scoring._version import SCORER_VERSION
    from hf_skillfollow.tasks import load_tasks

    tasks, version = load_tasks(benchmark, data)
    samples = (root / "samples.jsonl").open("w", encoding="utf-8")
    run, left = 0, pairs
    while left > 0:
        chosen = tasks[: min(left, len(tasks))]
        left -= len(chosen)
        run_id = f"bench-verify-{run}"
        transitions, traces = [], []
        for task in chosen:
            identity = _identity(run_id, benchmark, version, run)
            answers = {arm: _answer(task, run, arm) for arm in ("se", "sd")}
            transitions.append({**identity, "task_id": task.task_id,
                                "se_correct": _right(run, task.task_id, "se"), "sd_correct": _right(run, task.task_id, "sd"),
                                "invoked": False, "returned": False, "n_calls": 0, "queries": [], "skills_returned": []})  # fmt: skip
            for arm, text in answers.items():
                messages = [
                    {"role": "system", "content": "system prompt", "tool_calls": None, "tool_call_id": None, "name": None},
                    {"role": "user", "content": task.prompt, "tool_calls": None, "tool_call_id": None, "name": None},
                    {"role": "assistant", "content": text, "tool_calls": None, "tool_call_id": None, "name": None},
                ]  # fmt: skip
                traces.append({"schema_version": 1, "run_id": run_id, "cell_id": identity["cell_id"],
                               "task_id": task.task_id, "arm": arm, "messages": messages, "final_answer": text,
                               "extracted": "", "correct": _right(run, task.task_id, arm),
                               "scorer_details": json.dumps({"scorer_version": SCORER_VERSION}),
                               "error": None, "n_calls": 0, "latency_s": 0.0, "prompt_tokens": 0,
                               "completion_tokens": 0})  # fmt: skip
                solution = text if task.domain == "math" else extract_code(text)
                samples.write(json.dumps({"task_id": task.task_id, "solution": solution}) + "\n")
        run_dir = root / "runs" / run_id
        run_dir.mkdir(parents=True)
        pq.write_table(transitions_from_rows(transitions), run_dir / "transitions.parquet")
        pq.write_table(traces_from_rows(traces), run_dir / "traces.parquet")
        (run_dir / "manifest.json").write_text(json.dumps({"run_id": run_id}))
        run += 1
    samples.close()
    return root / "runs", root / "samples.jsonl", pairs


def _identity(run_id: str, benchmark: str, version: str, run: int) -> dict:
    return {
        "schema_version": 1, "run_id": run_id, "cell_id": f"bench-{benchmark}", "repeat_index": run,
        "created_at": "2025-01-01T00:00:00+00:00", "model": "bench-model", "backend": "openai",
        "tool_mode": "native", "retrieval_policy": "auto", "benchmark": benchmark,
        "benchmark_version": version, "partition_seed": 42, "partition_size": 1000,
        "skill_pool": "pool", "skill_pool_hash": "h", "condition": "normal", "retriever": "bm25s",
        "top_k": 3, "max_calls": 3, "temperature": 0.0, "max_tokens": 512, "seed": run,
        "prompts_hash": "p", "toolkit_version": "0.1.0",
    }  # fmt: skip


def _timed(cmd: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in ok:
        sys.exit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    return elapsed, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmark", choices=sorted(FILES), default="math500")
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--data-dir")
    args = parser.parse_args()
    data = _data_file(args.data_dir, args.benchmark)
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        work = Path(tmp)
        runs, samples, pairs = build(args.benchmark, data, args.pairs, work)
        env = {
            **os.environ,
            "SKILLFOLLOW_CACHE_DIR": str(work / "cache"),
            "PYTHONPATH": str(REPO / "toolkit"),
        }
        cli = [sys.executable, "-m", "hf_skillfollow.cli"]
        score = [*cli, "score", "--benchmark", args.benchmark, "--tasks-file", str(data),
                 "--samples", str(samples), "--workers", str(args.workers)]  # fmt: skip
        verify = [*cli, "verify", str(runs), "--tasks-file", f"{args.benchmark}={data}", "--format", "json",
                  "--workers", str(args.workers), "--record-dir", str(work / "records")]  # fmt: skip
        load_before = os.getloadavg()
        warm, _ = _timed([*score, "-o", str(work / "warm.jsonl")], env)
        t_score, _ = _timed([*score, "-o", str(work / "verdicts.jsonl")], env)
        t_verify, out = _timed(
            [*verify, "--state", str(work / "state.jsonl"), "--fresh"], env, ok=(0, 1)
        )
        load_after = os.getloadavg()
        result = json.loads(out)
        verdicts = [json.loads(line) for line in (work / "verdicts.jsonl").read_text().splitlines()]
    answers = 2 * pairs
    print(f"bench/verify.py: {args.benchmark}, {pairs} pairs ({answers} answers), {args.workers} workers, "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    print(f"  load average before {load_before[0]:.2f} / after {load_after[0]:.2f} (1 min)")
    print(f"  warm-up score (untimed for the ratio): {warm:.1f} s")
    print(
        f"  hf-skillfollow score : {t_score:7.1f} s  ({sum(v['passed'] for v in verdicts)}/{len(verdicts)} passed)"
    )
    print(f"  hf-skillfollow verify: {t_verify:7.1f} s  ({result['rows_agreeing']}/{result['rows_checked']} rows agree, "
          f"{result['answers_rescored']} answers re-scored)")  # fmt: skip
    ratio = t_verify / t_score
    print(
        f"  ratio verify / score : {ratio:.2f}  (target <= 1.20: {'met' if ratio <= 1.2 else 'NOT met'})"
    )


if __name__ == "__main__":
    main()

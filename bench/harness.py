"""Harness overhead: pairs per minute through the embedded server vs the server's raw
single-stream throughput (issue 3: harness overhead under 10%).

Server half: `server_single_stream_tok_s` sends chat requests straight to the llama.cpp
server over HTTP (no agent, no runner, no openai client) one at a time and reports completion
tokens per second of wall time. Harness half: `harness_pairs` runs the real runner (agent,
retrieval, sandboxed scoring, fsynced records) on MBPP+ tasks against the same server. Both
run in one process against one server, so the figures are side by side:

    python bench/harness.py --tasks-file ../shared/data/mbppplus-v0.1.0.jsonl --pairs 6
    python bench/harness.py --base-url http://127.0.0.1:8080/v1 --model NAME   # server half only
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

PROMPT = (
    "Write a Python function `longest_run(xs)` that returns the length of the longest run of "
    "equal consecutive elements in the list `xs`. Reply inside a ```python block."
)


@dataclass
class Throughput:
    """Single-stream figures over the measured requests (warm-up excluded)."""

    tok_s: float  # completion tokens / wall seconds, summed over requests
    requests: int
    completion_tokens: int
    prompt_tokens: int
    wall_s: float
    per_request_tok_s: list[float]


def server_single_stream_tok_s(
    base_url: str,
    model: str,
    *,
    n_requests: int = 5,
    max_tokens: int = 256,
    temperature: float = 0.7,
    prompt: str = PROMPT,
    warmup: int = 1,
    timeout_s: float = 300.0,
) -> Throughput:
    """Raw single-stream throughput of an OpenAI-compatible server: sequential requests,
    seeds 0..n-1, completion tokens over wall time (prompt processing included, as it is for
    the harness's own requests)."""
    body = {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": temperature,
    }
    rates, tokens, prompt_tokens, wall = [], 0, 0, 0.0
    with httpx.Client(base_url=base_url, timeout=timeout_s, trust_env=False) as client:
        for i in range(warmup + n_requests):
            start = time.perf_counter()
            response = client.post("/chat/completions", json={**body, "seed": i})
            elapsed = time.perf_counter() - start
            response.raise_for_status()
            if i < warmup:
                continue
            usage = response.json()["usage"]
            tokens += usage["completion_tokens"]
            prompt_tokens += usage["prompt_tokens"]
            wall += elapsed
            rates.append(usage["completion_tokens"] / elapsed)
    return Throughput(tokens / wall, n_requests, tokens, prompt_tokens, wall, rates)


@dataclass
class HarnessFigures:
    """The runner's figures over one partition slice."""

    pairs: int
    wall_s: float
    completion_tokens: int

    @property
    def pairs_per_min(self) -> float:
        return 60 * self.pairs / self.wall_s

    @property
    def tok_s(self) -> float:
        return self.completion_tokens / self.wall_s


async def harness_pairs(backend: object, config: object, out_dir: Path) -> HarnessFigures:
    """Run the real runner over `config`'s tasks on an already open backend."""
    from hf_skillfollow.runner import execute, plan_new_run

    plan = plan_new_run(config, out_dir)  # type: ignore[arg-type]
    start = time.perf_counter()
    await execute(plan, backend)  # type: ignore[arg-type]
    wall = time.perf_counter() - start
    traces = [t for r in plan.store.read_records() for t in r["traces"]]
    return HarnessFigures(
        pairs=len(traces) // 2,
        wall_s=wall,
        completion_tokens=sum(t["completion_tokens"] for t in traces),
    )


async def _with_embedded_server(
    args: argparse.Namespace,
) -> tuple[Throughput, float, int, HarnessFigures | None]:
    from hf_skillfollow.backends._local import open_local_backend
    from hf_skillfollow.config import RunConfig

    config = RunConfig(
        backend="local",
        n_threads=args.threads,
        tasks_file=args.tasks_file,
        partition_size=max(args.pairs, 1),
        limit=max(args.pairs, 1),
        max_tokens=args.max_tokens,
        concurrency=1,
    )
    start = time.perf_counter()
    async with open_local_backend(config) as backend:
        started = time.perf_counter() - start
        result = await asyncio.to_thread(
            server_single_stream_tok_s,
            backend.info.base_url,
            backend.model,
            n_requests=args.requests,
            max_tokens=args.max_tokens,
        )
        harness = None
        if args.pairs:
            with tempfile.TemporaryDirectory() as tmp:
                harness = await harness_pairs(backend, config, Path(tmp))
        return result, started, backend.info.n_threads, harness


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--base-url", help="measure an already running server instead of starting the embedded one"
    )
    parser.add_argument("--model", default="SmolLM2-135M-Instruct.Q4_1.gguf")
    parser.add_argument("--requests", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--threads", type=int, default=None, help="embedded server threads [auto]")
    parser.add_argument(
        "--pairs", type=int, default=6, help="MBPP+ pairs for the harness half (0: skip)"
    )
    parser.add_argument("--tasks-file", type=Path, help="local MBPP+ file (offline)")
    args = parser.parse_args()
    if args.base_url:
        result = server_single_stream_tok_s(
            args.base_url, args.model, n_requests=args.requests, max_tokens=args.max_tokens
        )
        print(f"server: {args.base_url}")
    else:
        result, started_s, threads, harness = asyncio.run(_with_embedded_server(args))
        print(f"embedded server: started in {started_s:.1f} s, {threads} thread(s)")
    print(
        f"single-stream throughput: {result.tok_s:.1f} tok/s "
        f"({result.completion_tokens} completion tokens, {result.prompt_tokens} prompt tokens, "
        f"{result.requests} requests, {result.wall_s:.1f} s; per request median "
        f"{statistics.median(result.per_request_tok_s):.1f}, min {min(result.per_request_tok_s):.1f}, "
        f"max {max(result.per_request_tok_s):.1f} tok/s)"
    )

    if not args.base_url and harness is not None:
        print(
            f"harness: {harness.pairs} pairs in {harness.wall_s:.1f} s = {harness.pairs_per_min:.1f} pairs/min, "
            f"{harness.tok_s:.1f} completion tok/s (prompt processing, retrieval, scoring, records included)"
        )
        ratio = harness.tok_s / result.tok_s
        print(
            f"ratio harness tok/s / raw single-stream tok/s: {ratio:.2f} (harness overhead {100 * (1 - ratio):+.1f}%)"
        )


if __name__ == "__main__":
    main()

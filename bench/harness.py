"""Harness overhead: pairs per minute through the embedded server vs the server's raw
single-stream throughput (issue 3: harness overhead under 10%).

This file holds the server half: `server_single_stream_tok_s` sends chat requests straight
to the llama.cpp server over HTTP (no agent, no runner, no openai client) one at a time and
reports completion tokens per second of wall time. Run it as a script:

    python bench/harness.py                 # starts the embedded server itself
    python bench/harness.py --base-url http://127.0.0.1:8080/v1 --model NAME
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from dataclasses import dataclass

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


async def _with_embedded_server(args: argparse.Namespace) -> tuple[Throughput, float, int]:
    from hf_skillfollow.backends._local import open_local_backend
    from hf_skillfollow.config import RunConfig

    start = time.perf_counter()
    async with open_local_backend(RunConfig(backend="local", n_threads=args.threads)) as backend:
        started = time.perf_counter() - start
        result = await asyncio.to_thread(
            server_single_stream_tok_s,
            backend.info.base_url,
            backend.model,
            n_requests=args.requests,
            max_tokens=args.max_tokens,
        )
        return result, started, backend.info.n_threads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--base-url", help="measure an already running server instead of starting the embedded one"
    )
    parser.add_argument("--model", default="SmolLM2-135M-Instruct.Q4_1.gguf")
    parser.add_argument("--requests", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--threads", type=int, default=None, help="embedded server threads [auto]")
    args = parser.parse_args()
    if args.base_url:
        result = server_single_stream_tok_s(
            args.base_url, args.model, n_requests=args.requests, max_tokens=args.max_tokens
        )
        print(f"server: {args.base_url}")
    else:
        result, started_s, threads = asyncio.run(_with_embedded_server(args))
        print(f"embedded server: started in {started_s:.1f} s, {threads} thread(s)")
    print(
        f"single-stream throughput: {result.tok_s:.1f} tok/s "
        f"({result.completion_tokens} completion tokens, {result.prompt_tokens} prompt tokens, "
        f"{result.requests} requests, {result.wall_s:.1f} s; per request median "
        f"{statistics.median(result.per_request_tok_s):.1f}, min {min(result.per_request_tok_s):.1f}, "
        f"max {max(result.per_request_tok_s):.1f} tok/s)"
    )


if __name__ == "__main__":
    main()

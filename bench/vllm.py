"""Pairs per minute on one partition: in-process batched vLLM vs a vLLM server.

Three modes run the same tasks with the same seed, decoding and protocol through the real
runner (agent, retrieval, sandboxed scoring, fsynced records):

- `vllm (batched)`: `--backend vllm`, the whole partition advancing in lock-step batches;
- `vllm-server (concurrency C)`: `--backend vllm-server` (vLLM's OpenAI server, started and
  stopped by the backend) with the runner's bounded concurrency;
- `vllm-server (one at a time)`: the same server, one request at a time.

Only the runs are timed; engine and server start-up are printed separately. Run it with the
interpreter of the vLLM venv (`.ci/setup-vllm` makes it and the model):

    .venv-vllm/bin/python bench/vllm.py [--tasks 12] [--max-tokens 96] [--concurrency 4] [--out DIR]

Target on a 2-core CPU: batched at least 3x one-at-a-time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# Run as `python bench/vllm.py`, this file's folder heads sys.path and its name would shadow
# the `vllm` package (here and in vLLM's spawned engine process, which inherits sys.path).
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from hf_skillfollow.backends import open_backend  # noqa: E402
from hf_skillfollow.backends._base import BackendWrapper, ChatRequest, ChatResult  # noqa: E402
from hf_skillfollow.config import RunConfig  # noqa: E402
from hf_skillfollow.runner import PairOutcome, execute, plan_new_run  # noqa: E402

DEFAULT_MODEL = Path.home() / ".cache/hf-skillfollow/smollm2-135m-hf"
#: The shared benchmark data: SKILLFOLLOW_DATA_DIR, else ../shared/data beside the repository.
DEFAULT_TASKS = (
    Path(
        os.environ.get("SKILLFOLLOW_DATA_DIR")
        or Path(__file__).resolve().parents[2] / "shared" / "data"
    )
    / "mbppplus-v0.1.0.jsonl"
)


@dataclass
class Figures:
    mode: str
    pairs: int
    wall_s: float
    completion_tokens: int
    batches: str = ""

    @property
    def pairs_per_min(self) -> float:
        return 60.0 * self.pairs / self.wall_s

    @property
    def tok_s(self) -> float:
        return self.completion_tokens / self.wall_s


async def _timed_run(mode: str, config: RunConfig, backend, out: Path) -> Figures:
    plan = plan_new_run(config, out)
    outcomes: list[PairOutcome] = []
    start = time.monotonic()
    await execute(plan, backend, outcomes.append)
    wall = time.monotonic() - start
    plan.store.write_tables()  # untimed: the run directory as `run` leaves it
    records = plan.store.read_records()
    completion = sum(tr["completion_tokens"] for r in records for tr in r["traces"])
    errors = [
        f"{r['task_id']}: {r['transition']['se_error'] or r['transition']['sd_error']}"
        for r in records
        if r["transition"]["se_error"] or r["transition"]["sd_error"]
    ]
    if errors:
        print(f"  warning: {len(errors)} pairs with errors in {mode}, e.g. {errors[0]}")
    return Figures(mode, len(outcomes), wall, completion)


async def bench_batched(config: RunConfig, out: Path) -> tuple[Figures, float]:
    start = time.monotonic()
    async with open_backend(config) as backend:
        startup = time.monotonic() - start
        figures = await _timed_run("vllm (batched, in-process)", config, backend, out / "batched")
        sizes = backend.batch_sizes
        figures.batches = (
            f"{len(sizes)} generate calls, sizes {sizes[:8]}{' ...' if len(sizes) > 8 else ''}"
        )
    return figures, startup


class OneAtATime(BackendWrapper):
    """At most one request in flight, whatever the runner's concurrency."""

    def __init__(self, inner: object) -> None:
        super().__init__(inner)  # type: ignore[arg-type]
        self._lock = asyncio.Lock()

    async def chat(self, request: ChatRequest) -> ChatResult:
        async with self._lock:
            return await self.inner.chat(request)


async def bench_server(config: RunConfig, out: Path) -> tuple[list[Figures], float]:
    """One server, started by the `vllm-server` backend itself: the runner's concurrency,
    then strictly one request at a time."""
    start = time.monotonic()
    async with open_backend(config) as backend:
        startup = time.monotonic() - start
        concurrent = await _timed_run(
            f"vllm-server (concurrency {config.concurrency})", config, backend, out / "server"
        )
        single = config.model_copy(update={"concurrency": 1})
        one = await _timed_run(
            "vllm-server (one at a time)", single, OneAtATime(backend), out / "server-one"
        )
    return [concurrent, one], startup


def _config(args: argparse.Namespace, backend: str) -> RunConfig:
    return RunConfig(
        backend=backend,
        model=str(args.model),
        tool_parser="hermes",
        retrieval_policy=args.retrieval_policy,
        tasks_file=args.tasks_file,
        limit=args.tasks,
        max_tokens=args.max_tokens,
        temperature=0.7,
        seed=args.seed,
        concurrency=args.concurrency,
        engine_options={
            "max_model_len": 8192,
            **({"enforce_eager": True} if args.enforce_eager else {}),
        },
    )


def _print(figures: list[Figures], startups: dict[str, float]) -> None:
    print(f"\n{'mode':<32} {'pairs':>5} {'wall s':>8} {'pairs/min':>10} {'compl tok/s':>12}")
    for f in figures:
        print(
            f"{f.mode:<32} {f.pairs:>5} {f.wall_s:>8.1f} {f.pairs_per_min:>10.2f} {f.tok_s:>12.1f}"
        )
    for f in figures:
        if f.batches:
            print(f"  {f.mode}: {f.batches}")
    for name, seconds in startups.items():
        print(f"start-up {name}: {seconds:.0f} s")
    batched, concurrent, single = figures
    print(
        f"\nbatched / one-at-a-time: {batched.pairs_per_min / single.pairs_per_min:.2f}x pairs/min (target >= 3x)"
    )
    print(
        f"batched / server concurrency: {batched.pairs_per_min / concurrent.pairs_per_min:.2f}x pairs/min"
    )
    print(
        f"server concurrency / one-at-a-time: {concurrent.pairs_per_min / single.pairs_per_min:.2f}x pairs/min"
    )


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-vllm-") as tmp:
        out = args.out or Path(tmp)
        batched, batched_startup = await bench_batched(_config(args, "vllm"), out)
        print(f"batched done: {batched.pairs} pairs in {batched.wall_s:.1f} s", flush=True)
        served, server_startup = await bench_server(_config(args, "vllm-server"), out)
    _print(
        [batched, *served], {"in-process engine": batched_startup, "vllm server": server_startup}
    )


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--model", type=Path, default=DEFAULT_MODEL, help="HF-format model dir [%(default)s]"
    )
    parser.add_argument(
        "--tasks-file", type=Path, default=DEFAULT_TASKS, help="MBPP+ jsonl [%(default)s]"
    )
    parser.add_argument("--tasks", type=int, default=12, help="pairs per mode [%(default)s]")
    parser.add_argument("--max-tokens", type=int, default=96, help="per model turn [%(default)s]")
    parser.add_argument(
        "--concurrency", type=int, default=4, help="the runner's concurrency [%(default)s]"
    )
    parser.add_argument("--seed", type=int, default=0, help="the runs' seed [%(default)s]")
    parser.add_argument(
        "--enforce-eager", action="store_true", help="no torch.compile (a quicker start)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="keep the run directories here (batched/, server/, server-one/) [a temp folder]",
    )
    parser.add_argument(
        "--retrieval-policy",
        choices=["auto", "forced"],
        default="forced",
        help="forced gives multi-turn SE arms [%(default)s]",
    )
    return parser.parse_args()


if __name__ == "__main__":
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    os.environ.setdefault("VLLM_USE_AOT_COMPILE", "0")  # docs/vllm.md: a cache that loads
    asyncio.run(main(_parse()))

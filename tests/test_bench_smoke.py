"""Every benchmark in bench/ runs to its end at a tiny size, so a change that breaks one fails
the suite the day it is made instead of the day someone measures again (issue 40).

Each bench runs as its own process (`python bench/NAME.py ARGS`), as a user runs it, with the
tiny arguments of `TINY`; the test checks that it exits 0 and prints the lines that carry its
figures. No timing is asserted: the figures of a tiny run on a shared machine mean nothing,
only that the bench still reaches them. A bench added to bench/ without an entry in `TINY`
fails `test_every_bench_has_tiny_arguments`.

Where each runs: the default suite, except `vllm.py` (it needs the vLLM venv of
`.ci/setup-vllm`: tests/test_vllm.py runs it in the vllm step, CI step 3), `harbor.py`
(marked `harbor`: it needs Harbor in .venv-harbor, CI step 4), the Ray part of
`sweep.py` (marked `slow` and `ray`: the `ray` extra is installed in CI step 2) and the whole
shape of `score.py` (slow: each EvalPlus process lives at least 20 s).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"


@dataclass(frozen=True)
class Tiny:
    """How one bench runs at a tiny size: its arguments (split like a shell line; `{data}` is
    the benchmark data folder, `{tmp}` a fresh temp folder) and text its output must contain
    (its figures)."""

    args: str
    prints: tuple[str, ...]
    marks: tuple[pytest.MarkDecorator, ...] = field(default=())
    timeout_s: int = 300


#: bench file -> its tiny runs (one bench may need two: a part behind another marker).
TINY: dict[str, tuple[Tiny, ...]] = {
    # Its whole corpus is small: it runs at its own size.
    "grader_addressing.py": (
        Tiny("", ("whole corpus:", "held out:", "precision", "recall")),
    ),
    # Needs Harbor in .venv-harbor: the harbor step (CI step 4) runs it.
    "harbor.py": (
        Tiny(
            "--trials 1 --concurrency 2 --latency 0.05 --slots 4",
            ("endpoint:", "ours ", "direct ", "x limit: whole run", "x limit: window",
             "overhead of ours:", "ours outside the jobs' window",
             "a trial of ours (medians): environment_setup", "load average"),
            marks=(pytest.mark.harbor,),
            timeout_s=900,
        ),
    ),
    "harness.py": (
        Tiny(
            "--pairs 1 --requests 1 --max-tokens 16 --tasks-file {data}/mbppplus-v0.1.0.jsonl",
            ("single-stream throughput:", "harness: 1 pairs", "ratio harness tok/s"),
        ),
    ),
    "hub.py": (
        Tiny(
            "--rows 160 --rows-per-run 8 --push-into 10 --push-repeats 1 --repeats 1"
            " --fixture-dir {tmp}/fixture",
            ("push 1 run into an empty repo", "push: 10-run repo", "(target <= 2x)",
             "load: datasets.load_dataset", "(JSONL time / ours; target >= 1x)"),
        ),
    ),
    "metrics.py": (
        Tiny(
            "--cells 30 --tasks 12 --resamples 200 --repeats 1 --large-n 200 --huge-n 5000",
            ("compute_cells (pyarrow table in", "results identical on the 30 compared cells",
             "speed-up:", "one cell, n = 200", "one cell, n = 5,000"),
        ),
    ),
    # Every EvalPlus process lives at least 20 s (its watchdog thread sleeps in 20-s steps), so
    # the default suite runs one (cold, HumanEval+) and the slow step the whole shape.
    "score.py": (
        Tiny(
            "--benchmark humanevalplus --limit 3 --cold-repeats 1 --repeats 0 --data-dir {data}",
            ("== HumanEval+ v0.1.10 canonical solutions: 3 tasks", "speed-up cold (best of each)",
             "ours vs its own limit", "agreement with evalplus run 1: 3/3",
             "our verdict flips over 1 runs: 0"),
        ),
        Tiny(
            "--benchmark both --limit 3 --cold-repeats 1 --repeats 2 --data-dir {data}",
            ("== MBPP+ v0.1.0 canonical solutions: 3 tasks", "== HumanEval+ v0.1.10",
             "speed-up warm (best of each)", "our verdict flips over 3 runs: 0"),
            marks=(pytest.mark.slow,),
            timeout_s=900,
        ),
    ),
    "score_steps.py": (
        Tiny(
            "--tasks HumanEval/0 --repeats 2 --warmup 1 --data-dir {data}",
            ("HumanEval/0 canonical (1006 inputs", "HumanEval/0 fail (1006 inputs",
             "minimal root", "result, exit, teardown", "CPU ms per run (medians): harness"),
        ),
        Tiny(
            "--sweep mbppplus --limit 3 --data-dir {data}",
            ("3/3 canonical solutions passed", "their runs' CPU beyond it, mean",
             "per run over all 3: host CPU"),
        ),
    ),
    "space.py": (
        Tiny(
            "--cells 5 --tasks 80 --resamples 50 --repeats 1 --bomb-mb 1 --cache warm",
            ("bomb beside / alone:", "in-process  filter change", "in-process  cold start",
             "| ours, warm cache |", "| bare |", "(target <= 1.3x)"),
        ),
    ),
    # The peer app of space.py: the space.py run above starts it and clicks through it.
    "space_bare.py": (),
    "sweep.py": (
        Tiny(
            "--parts 1,2 --cells 1 --tasks 1 --latency 0.01 --concurrency 2",
            ("median: serial", "median overhead", "sweep vs serial runs", "overhead per cell"),
        ),
        Tiny(
            "--parts 3 --ray-cells 2 --ray-tasks 1",
            ("1 worker node(s)", "2 worker node(s)", "ray 2 nodes vs 1"),
            marks=(pytest.mark.slow, pytest.mark.ray),
            timeout_s=600,
        ),
    ),
    "verify.py": (
        Tiny(
            "--benchmark mbppplus --pairs 4 --data-dir {data}",
            ("hf-skillfollow score :", "hf-skillfollow verify:", "4/4 rows agree",
             "ratio verify / score"),
        ),
    ),
    # Needs the vLLM venv: tests/test_vllm.py::test_bench_vllm_batched_and_server_runs runs it
    # at a tiny size in the vllm step (CI step 3) and checks the runs it leaves, which spares
    # that step two more engine starts.
    "vllm.py": (),
}  # fmt: skip


def _cases() -> list:
    out = []
    for name, runs in sorted(TINY.items()):
        for i, tiny in enumerate(runs):
            out.append(pytest.param(name, tiny, id=f"{name}-{i}", marks=tiny.marks))
    return out


def test_every_bench_has_tiny_arguments() -> None:
    """A bench without an entry would never run here: add its tiny arguments to TINY."""
    benches = {p.name for p in BENCH.glob("*.py")}
    assert benches, f"no benches found in {BENCH}"
    assert sorted(benches - set(TINY)) == [], "benches missing from TINY"
    assert sorted(set(TINY) - benches) == [], "TINY names benches that no longer exist"


@pytest.mark.parametrize(("name", "tiny"), _cases())
def test_bench_runs_to_its_figures(name: str, tiny: Tiny, data_dir: Path, tmp_path: Path) -> None:
    args = [a.format(data=data_dir, tmp=tmp_path) for a in shlex.split(tiny.args)]
    # TMPDIR short: Chromium (space.py) binds a Unix socket under it, and a socket's path may
    # not pass 107 bytes; /tmp/pytest-of-USER/pytest-NNNN/test_bench_runs_to_its_figures0/
    # org.chromium.Chromium.XXXXXX/SingletonSocket reaches 108 once pytest has numbered 1,000
    # runs on a machine.
    with tempfile.TemporaryDirectory(prefix="sfb-", dir="/tmp") as tmp:
        env = {**os.environ, "SKILLFOLLOW_DATA_DIR": str(data_dir),
               "SKILLFOLLOW_CACHE_DIR": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1",
               "HF_DATASETS_CACHE": str(tmp_path / "hf-datasets"), "TMPDIR": tmp}  # fmt: skip
        proc = subprocess.run(
            [sys.executable, str(BENCH / name), *args],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=tiny.timeout_s,
        )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"bench/{name} exited {proc.returncode}:\n{out[-4000:]}"
    missing = [line for line in tiny.prints if line not in proc.stdout]
    assert not missing, f"bench/{name} did not print {missing}:\n{proc.stdout[-4000:]}"

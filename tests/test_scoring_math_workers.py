"""Math checks in worker processes of their own: a check that hangs, dies or grows costs its
own answer only (issue 21: one stalled answer made `score` exit with "cannot schedule new
futures after shutdown" and raised BrokenProcessPool in the answer beside it)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hf_skillfollow.scoring import _math_worker, score_answer, score_answer_async, score_many
from hf_skillfollow.tasks import Task, load_tasks

#: math-verify computes on this until its own 5 s timeout, in under 100 MB (5.1 s of CPU and
#: 85 MB here): its end depends on CPU time, not on how fast a machine fills memory. The
#: timeouts below (1 s) stay well under it even on a much faster machine.
SLOW = r"\boxed{(x+1)^{3000}}"
#: math-verify maps memory on this until its 5 s timeout (2.5 GB here, unbounded): in a worker,
#: whose address space is capped, it ends when the cap is reached (1.8 to 2.9 s with 1 GiB).
MEMORY_HOG = r"\boxed{(x+1)^{10^{7}}}"


@pytest.fixture(scope="module")
def math500(data_dir: Path) -> dict[str, Task]:
    return {t.task_id: t for t in load_tasks("math500", data_dir / "math500.jsonl")[0]}


@pytest.fixture
def three(math500: dict[str, Task]) -> Task:
    return next(t for t in math500.values() if t.reference == "3")


@pytest.fixture
def fresh_workers(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Workers of this test's own (started with the limits the test sets)."""
    monkeypatch.setattr(_math_worker._pool, "value", None)
    yield
    if _math_worker._pool.value is not None:
        _math_worker._pool.value.close()


def test_a_math_timeout_costs_only_its_answer(
    three: Task, fresh_workers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_math_worker, "MATH_TIMEOUT_S", 1.0)
    pairs = [(three, r"\boxed{3}"), (three, SLOW)] + [(three, r"\boxed{3}")] * 5
    verdicts = score_many(pairs, workers=2)
    assert verdicts[1].reason == "math check exceeded 1 s", verdicts[1]
    assert [v.passed for v in verdicts] == [True, False, True, True, True, True, True]
    # the batch after it is scored as usual (a shut-down pool refused every later answer)
    assert [v.passed for v in score_many([(three, r"\boxed{3}")] * 2, workers=2)] == [True] * 2


def test_concurrent_checks_of_a_run_survive_a_timeout(
    three: Task, fresh_workers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `run` scores each pair's two answers with score_answer_async, side by side
    monkeypatch.setattr(_math_worker, "MATH_TIMEOUT_S", 1.0)

    async def both() -> list[object]:
        return list(
            await asyncio.gather(
                score_answer_async(three, SLOW), score_answer_async(three, r"\boxed{3}")
            )
        )

    slow, good = asyncio.run(both())
    assert not slow.passed and slow.reason == "math check exceeded 1 s"  # type: ignore[attr-defined]
    assert good.passed  # type: ignore[attr-defined]


def test_a_worker_killed_mid_check_costs_only_that_answer(three: Task, fresh_workers: None) -> None:
    got: list[object] = []
    thread = threading.Thread(target=lambda: got.append(score_answer(three, SLOW)))
    thread.start()
    deadline = time.monotonic() + 30
    while _math_worker._pool.value is None or not _math_worker._pool.value.workers.all:
        assert time.monotonic() < deadline, "no math worker started"
        time.sleep(0.05)
    (worker,) = _math_worker._pool.value.workers.all
    time.sleep(0.5)  # into its imports or its check: the request is in its stdin
    os.kill(worker.proc.pid, signal.SIGKILL)
    thread.join(timeout=60)
    assert len(got) == 1 and got[0].reason == "math check failed: its worker ended (signal 9)"  # type: ignore[attr-defined]
    assert score_answer(three, r"\boxed{3}").passed  # a fresh worker takes the next answer


def test_math_workers_run_under_a_memory_limit(
    three: Task, fresh_workers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _math_worker.MEMORY_BYTES <= 1 << 30
    limit = 256 << 20
    monkeypatch.setattr(_math_worker, "MEMORY_BYTES", limit)
    assert score_answer(three, r"\boxed{3}").passed  # the interpreter and math-verify fit
    (worker,) = _math_worker._pool.value.workers.all  # type: ignore[union-attr]
    limits = Path(f"/proc/{worker.proc.pid}/limits").read_text()
    assert f"Max address space         {limit}" in limits
    verdict = score_answer(three, MEMORY_HOG)  # unbounded, it maps GBs within 5 s
    assert not verdict.passed
    for w in _math_worker._pool.value.workers.all:  # type: ignore[union-attr]
        status = Path(f"/proc/{w.proc.pid}/status").read_text()
        peak_kb = int(status.split("VmPeak:")[1].split()[0])
        assert peak_kb * 1024 <= limit
    assert score_answer(three, r"\boxed{3}").passed


def test_score_command_keeps_every_verdict_when_an_answer_stalls(
    data_dir: Path, tmp_path: Path
) -> None:
    # On main, the 140 KB answer stalled the boxed extraction for minutes, then the 120 s
    # ceiling discarded the pool and `score` exited 1 without a verdicts file.
    rows = [
        {"task_id": "test/precalculus/807.json", "solution": r"\boxed{(3,\frac{\pi}{2})}"},
        {"task_id": "test/precalculus/807.json", "solution": "\\boxed{" * 20_000},
        {"task_id": "test/precalculus/807.json", "solution": SLOW},
        {"task_id": "test/precalculus/807.json", "solution": MEMORY_HOG},
        {
            "task_id": "test/precalculus/807.json",
            "solution": r"\boxed{\left(3, \frac{\pi}{2}\right)}",
        },
    ]
    samples = tmp_path / "math.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "verdicts.jsonl"
    cmd = [sys.executable, "-m", "hf_skillfollow.cli", "score", "--benchmark", "math500"]
    cmd += ["--samples", str(samples), "--output", str(out)]
    cmd += ["--tasks-file", str(data_dir / "math500.jsonl")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=110)
    assert proc.returncode == 0, proc.stderr[-3000:]
    verdicts = [json.loads(line) for line in out.read_text().splitlines()]
    assert [v["passed"] for v in verdicts] == [True, False, False, False, True]
    assert verdicts[1]["reason"] == "no \\boxed{} answer (20000 \\boxed{ never closed)"

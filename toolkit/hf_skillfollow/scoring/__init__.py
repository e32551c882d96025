"""Scoring of model answers: sandboxed EvalPlus-semantics code tests and math answer checks.

Code: every program runs in its own fresh, confined process (``_sandbox``), against the base
and plus inputs of its task, with expected outputs from the canonical solution (``_code``).
Math: the reply's last ``\\boxed{}`` answer, judged by math-verify, then by normalised exact
match (``_math``), in worker processes of their own (``_math_worker``): math-verify's timeouts
rely on ``signal.alarm``, and a check that hangs or runs out of memory costs its answer only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from hf_skillfollow.scoring._extract import extract_boxed, extract_code
from hf_skillfollow.scoring._verdict import Verdict

# Executors are imported where used: every sandboxed harness imports this package, and
# concurrent.futures.process (with multiprocessing) would cost each of them ~0.1 s of CPU.
if TYPE_CHECKING:
    from hf_skillfollow.scoring._schedule import Schedule
    from hf_skillfollow.tasks import Task

__all__ = [
    "Verdict",
    "extract_boxed",
    "extract_code",
    "prepare",
    "score_answer",
    "score_answer_async",
    "score_many",
    "score_solution",
]


def score_answer(task: Task, text: str) -> Verdict:
    """Score a model's final answer text (code is extracted from it first). Thread-safe."""
    _not_judged(task)
    if _is_math(task):
        from hf_skillfollow.scoring import _math_worker

        return _math_worker.check(task, text or "")
    return score_solution(task, extract_code(text or ""))


def score_solution(task: Task, program: str) -> Verdict:
    """Score a complete program as-is (EvalPlus ``solution``), without extraction."""
    from hf_skillfollow.scoring._code import score_program

    return score_program(task, program)


def prepare(workers: int = 2) -> None:
    """Start what ``score_many(..., workers)`` will need for code tasks (the isolation probe,
    one sandbox zygote per worker) in the background, so that it starts while the caller
    loads its tasks; optional, and returns at once."""
    from hf_skillfollow.scoring import _sandbox

    _sandbox.prestart(workers)


def score_many(
    pairs: Sequence[tuple[Task, str]],
    workers: int = 2,
    *,
    extract: bool = True,
    progress: Callable[[Verdict], None] | None = None,
    on_result: Callable[[int, Verdict], None] | None = None,
) -> list[Verdict]:
    """Score many answers concurrently; verdicts come back in input order.

    ``extract=False`` scores code answers as complete programs (the ``score`` command).
    ``on_result(i, verdict)`` is called as soon as pair ``i`` is scored (``verify`` saves
    each verdict at once, so an interrupted run resumes without re-scoring it). Missing
    expected outputs are computed first, then programs run longest first (``_schedule``).
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    for task, _ in pairs:
        _not_judged(task)
    from hf_skillfollow.scoring import _code, _math_worker
    from hf_skillfollow.scoring._sandbox import CancelScope

    programs = [
        text if _is_math(task) else (extract_code(text or "") if extract else text)
        for task, text in pairs
    ]
    schedule, references, waiting = _plan(pairs, programs)
    failures: dict[int, _code.ReferenceFailure] = {}  # by program
    scope = CancelScope()
    verdicts: dict[int, Verdict] = {}

    def reference(key: str) -> None:
        cost = 0.0
        try:
            _, header = _code.ensure_expected(references[key])
            cost = float(header["base_cpu_s"]) + float(header["plus_cpu_s"])
        except _code.ReferenceFailure as exc:
            # its programs get "cannot score", without a second try
            failures.update(dict.fromkeys(waiting[key], exc))
        finally:
            schedule.reference_done(key, cost)

    def one(i: int) -> None:
        task, program = pairs[i][0], programs[i]
        if _is_math(task):
            with scope.active():
                verdict = _math_worker.check(task, program or "")
        elif (failure := failures.get(i)) is not None:
            verdict = _code.cannot_score(task, program, failure)
        else:
            with scope.active():
                verdict = score_solution(task, program)
        if on_result is not None:
            on_result(i, verdict)
        if progress is not None:
            progress(verdict)
        verdicts[i] = verdict

    def work() -> None:
        while (item := schedule.take()) is not None:
            if item[0] == "reference":
                reference(str(item[1]))
            else:
                one(item[1])

    from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

    with ThreadPoolExecutor(max_workers=workers) as threads:
        try:
            futures = [threads.submit(work) for _ in range(workers)]
            # all done, or the first failure (raised here) without waiting for the rest
            for future in wait(futures, return_when=FIRST_EXCEPTION).done:
                future.result()
            return [verdicts[i] for i in range(len(pairs))]
        except BaseException:
            # Interrupted (Ctrl-C) or failed: no sandbox or math check outlives the batch.
            schedule.close()
            scope.cancel()
            threads.shutdown(wait=False, cancel_futures=True)
            raise


def _plan(
    pairs: Sequence[tuple[Task, str]], programs: list[str]
) -> tuple[Schedule, dict[str, Task], dict[str, list[int]]]:
    """The schedule, the tasks whose expected outputs it computes first (by key), and the
    programs (indices) that wait for each."""
    from hf_skillfollow.scoring import _code
    from hf_skillfollow.scoring._schedule import Schedule

    references: dict[str, Task] = {}
    waiting: dict[str, list[int]] = {}
    ready: dict[int, float] = {}
    for i, (task, _) in enumerate(pairs):
        if _is_math(task):
            ready[i] = -1.0  # after the code programs: they run in math worker processes
            continue
        if not _code.scorable(task, programs[i]):
            ready[i] = 0.0  # fails at once, without expected outputs
            continue
        key = _code.task_key(task)
        cost = _code.cached_cost(task, key)
        if cost is not None:
            ready[i] = cost
            continue
        references.setdefault(key, task)
        waiting.setdefault(key, []).append(i)
    order = sorted(references, key=lambda k: -_code.estimated_cost(references[k]))
    return Schedule(order, waiting, ready), references, waiting


async def score_answer_async(task: Task, text: str) -> Verdict:
    """``score_answer`` in a worker thread; cancelling the await kills its sandbox."""
    import asyncio

    from hf_skillfollow.scoring._sandbox import CancelScope

    scope = CancelScope()

    def call() -> Verdict:
        with scope.active():
            return score_answer(task, text)

    try:
        return await asyncio.to_thread(call)
    except asyncio.CancelledError:
        scope.cancel()
        raise


def _is_math(task: Task) -> bool:
    from hf_skillfollow.benchmarks import BENCHMARKS

    if task.grader is not None:  # a maintainer's own task: `answer` is checked like MATH-500
        return task.grader == "answer"
    return BENCHMARKS[task.benchmark].scorer == "math"


def _not_judged(task: Task) -> None:
    # `tests` and `answer` tasks go through the scorers here; `expectations` need a judge model
    if task.grader == "expectations":
        raise ValueError(
            f"{task.task_id}: an expectations task is graded by the judge (hf_skillfollow.judge)"
        )

"""Code scoring with EvalPlus semantics, every program run in its own sandboxed process.

Expected outputs come from the canonical solution, computed by trusted workers
(``_reference``: the benchmark's own code needs no sandbox) and cached on disk per task
together with the canonical solution's CPU time. A
candidate's CPU budget is ``max(cpu_floor_s, cpu_factor * reference CPU time)`` for the
whole task: CPU time, unlike EvalPlus's wall-clock floor of 1 s per input, does not grow
with machine load, so verdicts do not flip when the machine is busy.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import tempfile
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_skillfollow._dirs import cache_root
from hf_skillfollow._evalplus_files import evalplus_version
from hf_skillfollow._text import safe_text
from hf_skillfollow.benchmarks import BENCHMARKS
from hf_skillfollow.scoring import _sandbox
from hf_skillfollow.scoring._verdict import Verdict

#: bump when the harness or the payload layout changes: old cache entries are then ignored
HARNESS_VERSION = "6"
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


@dataclass(frozen=True)
class CodeBudget:
    cpu_floor_s: float = 4.0
    cpu_factor: float = 20.0
    memory_bytes: int = 4 * _sandbox.GIB
    reference_cpu_s: float = 600.0
    reference_memory_bytes: int = 16 * _sandbox.GIB


DEFAULT_BUDGET = CodeBudget()


class ReferenceFailure(RuntimeError):
    """The canonical solution itself failed in the sandbox: the task cannot be scored."""


def cache_dir() -> Path:
    return cache_root() / "expected"


def score_program(task: Any, program: str, budget: CodeBudget = DEFAULT_BUDGET) -> Verdict:
    """Run ``program`` (a full solution) against every base and plus input of ``task``."""
    if not program.strip():
        return Verdict(task.task_id, False, "no code in the answer", {"extracted": program})
    if "base_input" not in task.problem:
        # The original HumanEval's check() would have to run inside the program's process,
        # where the program can subvert it: only input/expected-output tasks are scored.
        return Verdict(
            task.task_id,
            False,
            "cannot score: the task has no base_input (original HumanEval rows are not scored; "
            "use HumanEval+)",
            {"extracted": program},
        )
    try:
        payload_path, header = ensure_expected(task, budget)
    except ReferenceFailure as exc:
        return cannot_score(task, program, exc)
    cpu = max(budget.cpu_floor_s, budget.cpu_factor * (header["base_cpu_s"] + header["plus_cpu_s"]))
    memory = max(budget.memory_bytes, 2 * header["maxrss_bytes"] + 2 * _sandbox.GIB)
    limits = _sandbox.SandboxLimits(cpu_s=cpu, memory_bytes=memory)
    request = _request(task, program, "candidate")
    with open(payload_path, "rb") as data:
        outcome = _sandbox.run(request, limits, data)
    return _verdict(task, program, outcome, limits)


def cannot_score(task: Any, program: str, failure: ReferenceFailure) -> Verdict:
    """The verdict for a program whose task's canonical solution failed."""
    return Verdict(task.task_id, False, f"cannot score: {failure}", {"extracted": program})


def _request(task: Any, code: str, mode: str) -> dict[str, Any]:
    p = task.problem
    from hf_skillfollow.scoring._oracle import has_special_oracle, special_oracle

    dataset = BENCHMARKS[task.benchmark].evalplus_dataset
    mbpp = dataset == "mbpp"
    oracle = special_oracle()
    return {
        "mode": mode,
        "dataset": dataset,
        "entry_point": p["entry_point"],
        "atol": p.get("atol", 0) or 0,
        # a `tests` task's per-assert comparisons (scoring._custom; None for the benchmarks)
        "checks": p.get("checks"),
        "code": code,
        "output_not_none": mbpp and p["entry_point"] in oracle.MBPP_OUTPUT_NOT_NONE_TASKS,
        "output_set_eq": mbpp and p["entry_point"] in oracle.MBPP_OUTPUT_SET_EQ_TASKS,
        "special_oracle": has_special_oracle(dataset, p["entry_point"]),
    }


def _verdict(
    task: Any, program: str, outcome: _sandbox.SandboxResult, limits: _sandbox.SandboxLimits
) -> Verdict:
    r = outcome.result
    details = {
        "extracted": safe_text(program),
        "isolation": outcome.isolation,
        "sandbox_uid": outcome.details.get("uid"),
        "stage": r.get("stage"),
        "failed_input": r.get("index"),
        "cpu_budget_s": round(limits.cpu_s, 3),
    }
    # The judge's reasons quote what the program sent (an exception's text, a refused
    # module name), which may hold lone surrogates: escape them before anything stores it.
    reason = safe_text(str(r.get("reason", "")))
    return Verdict(task.task_id, bool(r["passed"]), reason, details)


# --- expected outputs ------------------------------------------------------------------------


def task_key(task: Any) -> str:
    """Content hash of everything the expected outputs depend on.

    Tasks loaded from a benchmark file carry its digest: with EvalPlus's version (which
    deserialises the inputs) it stands for the inputs, which are otherwise hashed value by
    value (seconds per run for HumanEval+'s ~160,000 inputs)."""
    p = task.problem
    parts = [
        HARNESS_VERSION,
        task.benchmark,
        task.task_id,
        p["prompt"],
        p["canonical_solution"],
        p["entry_point"],
    ]
    if task.source_digest:
        inputs: Any = ["file", task.source_digest, evalplus_version()]
    else:
        inputs = [_canonical(p["base_input"]), _canonical(p["plus_input"])]
    blob = json.dumps([parts, p.get("atol"), inputs])
    return hashlib.sha256(blob.encode()).hexdigest()


def _canonical(x: Any) -> Any:
    # JSON-able and independent of set iteration order (which depends on the hash seed).
    if isinstance(x, list | tuple):
        return [type(x).__name__, [_canonical(i) for i in x]]
    if isinstance(x, set | frozenset):
        return ["set", sorted(json.dumps(_canonical(i)) for i in x)]
    if isinstance(x, dict):
        return ["dict", sorted((json.dumps(_canonical(k)), _canonical(v)) for k, v in x.items())]
    if isinstance(x, float | complex):
        return [type(x).__name__, repr(x)]
    return x


def ensure_expected(task: Any, budget: CodeBudget = DEFAULT_BUDGET) -> tuple[Path, dict[str, Any]]:
    """Path of the task's cached payload (inputs + expected outputs) and its header."""
    key = task_key(task)
    payload_path, header_path = _cache_paths(task, key)
    with _lock(key):
        if not (payload_path.is_file() and header_path.is_file()):
            _compute_expected(task, budget, payload_path, header_path)
        return payload_path, json.loads(header_path.read_text())


def cached_cost(task: Any, key: str) -> float | None:
    """The canonical solution's measured CPU seconds, if the task's expected outputs are
    cached under ``key`` (its ``task_key``; a passing program costs about as much); None
    otherwise."""
    try:
        h = json.loads(_cache_paths(task, key)[1].read_text())
        return float(h["base_cpu_s"]) + float(h["plus_cpu_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def estimated_cost(task: Any) -> float:
    """A guess at the reference run's cost, from the inputs alone: the sum of the integers
    up to 10**9 among them. Loop bounds: the slowest canonical solutions loop up to one
    (Mbpp/599 sums ``range(10**8)``); larger integers are arithmetic operands, not bounds."""
    p = task.problem
    return float(
        sum(
            abs(a) if abs(a) <= _LOOP_BOUND else 0
            for inp in (*p["base_input"], *p["plus_input"])
            if isinstance(inp, list | tuple)
            for a in inp
            if type(a) is int
        )
    )


def scorable(task: Any, program: str) -> bool:
    """Whether scoring ``program`` needs the task's expected outputs (else it fails at once)."""
    return bool(program.strip()) and "base_input" in task.problem


_LOOP_BOUND = 10**9


def _cache_paths(task: Any, key: str) -> tuple[Path, Path]:
    """The task's cached payload (inputs + expected outputs) and its JSON header."""
    base = cache_dir() / task.benchmark
    return base / f"{key}.pkl", base / f"{key}.json"


def _lock(key: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


def _compute_expected(task: Any, budget: CodeBudget, payload_path: Path, header_path: Path) -> None:
    p = task.problem
    request = _request(task, p["prompt"] + p["canonical_solution"], "reference")
    payload_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = payload_path.parent / f".tmp-{uuid.uuid4().hex}"
    try:
        header = _reference_outputs(
            {
                "code": request["code"],
                "entry_point": request["entry_point"],
                # pickled once, here: the worker forwards these bytes, its task's process
                # computes on a copy and writes them to the payload as they are
                "inputs": pickle.dumps(
                    {"base_input": p["base_input"], "plus_input": p["plus_input"]},
                    protocol=pickle.HIGHEST_PROTOCOL,
                ),
                "output_not_none": request["output_not_none"],
                "same_bytes_pass_ok": not request["special_oracle"],
                "cpu_s": budget.reference_cpu_s,
                "memory_bytes": budget.reference_memory_bytes,
                "wall_s": 3 * budget.reference_cpu_s + 20,
                "path": str(tmp),
            }
        )
        if not header["passed"] or not tmp.is_file():
            raise ReferenceFailure(
                f"{task.task_id}: canonical solution failed: {header.get('reason')}"
            )
        os.replace(tmp, payload_path)
    finally:
        tmp.unlink(missing_ok=True)
    header = {**header, "task_id": task.task_id, "harness_version": HARNESS_VERSION}
    _atomic_write(header_path, json.dumps(header).encode())


def _reference_outputs(job: dict[str, Any]) -> dict[str, Any]:
    from hf_skillfollow.scoring import _reference

    try:
        return _reference.compute(job)
    except (OSError, RuntimeError) as exc:  # the worker itself died (killed from outside)
        return {"passed": False, "reason": f"reference worker failed: {exc}"}


def _atomic_write(path: Path, blob: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

"""Benchmarks (MBPP+, HumanEval+, MATH-500) and the documented partition sampler.

Tasks come from the official sources: EvalPlus's own loaders for the code benchmarks (which
honour ``MBPP_OVERRIDE_PATH`` / ``HUMANEVAL_OVERRIDE_PATH``) and the Hub dataset
``HuggingFaceH4/MATH-500`` through ``datasets``. Each has a local-file override: the
``tasks_file`` argument, else the benchmark's environment variable (``SKILLFOLLOW_MBPP_FILE``
/ ``SKILLFOLLOW_HUMANEVAL_FILE`` / ``SKILLFOLLOW_MATH500_FILE``). Each benchmark's facts are
declared once, in `hf_skillfollow.benchmarks`. A local MBPP+/HumanEval+ file whose bytes were
loaded before gives tasks whose inputs are decoded when first read (`_evalplus_files`).

The original HumanEval file (``HumanEval.jsonl.gz``: ``test`` code, no ``base_input`` /
``plus_input``) is refused with a pointer to HumanEval+: its ``check`` function would have
to run inside the untrusted program's process, where a program can forge its outcome, and
HumanEval+ carries the same tests as ``base_input`` (see docs/sandbox.md).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hf_skillfollow._task import Task, TaskLoadError
from hf_skillfollow.benchmarks import BENCHMARKS, BenchmarkSpec, benchmark_spec

__all__ = [
    "Task",
    "TaskLoadError",
    "benchmark_of_id",
    "load_tasks",
    "partition",
    "task_sort_key",
]


def task_sort_key(task_id: str) -> tuple[Any, ...]:
    """Natural order: ``Mbpp/2`` before ``Mbpp/11`` (runs of ASCII digits compare as numbers;
    any other character, a superscript ``²`` included, as text)."""
    return tuple(
        (0, int(p), "") if p.isascii() and p.isdigit() else (1, 0, p)
        for p in re.split(r"([0-9]+)", task_id)
        if p
    )


def load_tasks(
    benchmark: str,
    tasks_file: str | os.PathLike[str] | None = None,
    skills_dir: str | os.PathLike[str] | None = None,
) -> tuple[list[Task], str]:
    """All tasks of ``benchmark`` in natural id order, and a benchmark version string.

    ``skills_dir`` is the pool whose ``evals/evals.json`` files are the ``skill-evals`` tasks."""
    try:
        spec = benchmark_spec(benchmark)
    except ValueError as exc:
        raise TaskLoadError(str(exc)) from None
    if spec.loader in ("custom", "skill-evals"):
        tasks, version = _load_own(spec, tasks_file, skills_dir)
        return sorted(tasks, key=lambda t: task_sort_key(t.task_id)), version
    path = tasks_file or os.environ.get(spec.file_env) or None
    source = "--tasks-file" if tasks_file else spec.file_env
    if path is not None and not Path(path).is_file():
        what = "is not a regular file" if Path(path).exists() else "does not exist"
        raise TaskLoadError(f"{source}: benchmark file {path} {what}")
    if path is not None:
        _check_first_row(benchmark, str(path), source)  # before a loader fails obscurely
    try:
        if spec.loader == "hub":
            tasks, version = _load_math500(spec, None if path is None else str(path))
        else:
            tasks, version = _load_evalplus(benchmark, None if path is None else str(path))
    except TaskLoadError as exc:
        if path is None:  # the official download failed: say how to work offline
            raise TaskLoadError(f"{exc}; {_offline_hint(spec)}") from exc
        raise
    _check_ids(benchmark, [t.task_id for t in tasks], f"{source} {path}" if path else None)
    return sorted(tasks, key=lambda t: task_sort_key(t.task_id)), version


def _load_own(
    spec: BenchmarkSpec,
    tasks_file: str | os.PathLike[str] | None,
    skills_dir: str | os.PathLike[str] | None,
) -> tuple[list[Task], str]:
    from hf_skillfollow import tasks_custom

    if spec.loader == "skill-evals":
        if skills_dir is None:
            raise TaskLoadError("--benchmark skill-evals: name the skill pool with --skills POOL")
        from hf_skillfollow.skills import SkillPoolError, load_pool

        try:
            pool = load_pool(skills_dir)
        except SkillPoolError as exc:
            raise TaskLoadError(str(exc)) from None
        return tasks_custom.load_skill_evals(pool)
    path = tasks_file or os.environ.get(spec.file_env) or None
    if path is None:
        raise TaskLoadError("--benchmark custom: give the task file with --tasks-file FILE.jsonl")
    return tasks_custom.load_custom(path)  # it says what is wrong with the file


def _offline_hint(spec: BenchmarkSpec) -> str:
    return (
        f"without network access, point at a local copy of the benchmark with --tasks-file FILE "
        f"or the environment variable {spec.file_env}=FILE"
    )


def benchmark_of_id(task_id: object) -> str | None:
    """The benchmark whose official id form `task_id` has, if any."""
    if not isinstance(task_id, str):
        return None
    return next(
        (b.name for b in BENCHMARKS.values() if b.id_form and re.fullmatch(b.id_form, task_id)),
        None,
    )


def _mismatch(benchmark: str, task_id: str, owner: str, where: str) -> TaskLoadError:
    return TaskLoadError(
        f"{where}: task id {task_id!r} belongs to {owner}, not {benchmark}; "
        f"pass --benchmark {owner}, or a {benchmark} file"
    )


def _check_first_row(benchmark: str, path: str, source: str) -> None:
    import gzip
    import json

    where = f"{source} {path}"
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as fh:
            line = next((ln for ln in fh if ln.strip()), b"")
        first = json.loads(line.decode("utf-8")) if line else {}
    except (UnicodeDecodeError, EOFError, OSError) as exc:
        raise TaskLoadError(f"{where}: not a (gzipped) UTF-8 JSON-lines file ({exc})") from None
    except ValueError as exc:  # json.JSONDecodeError
        raise TaskLoadError(f"{where}: first record is not valid JSON ({exc})") from None
    if not isinstance(first, dict):
        raise TaskLoadError(f"{where}: first record is not a JSON object")
    for spec in BENCHMARKS.values():
        task_id = first.get(spec.id_field)
        if spec.name != benchmark and benchmark_of_id(task_id) == spec.name:
            raise _mismatch(benchmark, task_id, spec.name, f"{where}: first record")


def _check_ids(benchmark: str, ids: list[str], where: str | None) -> None:
    for task_id in ids:
        owner = benchmark_of_id(task_id)
        if owner is not None and owner != benchmark:
            raise _mismatch(benchmark, task_id, owner, where or f"the official {benchmark} source")


def partition(task_ids: Iterable[str], seed: int, size: int) -> list[str]:
    """The documented, platform-independent sampler.

    Every id is ranked by the hex digest of ``sha256(f"{seed}:{task_id}")`` (UTF-8); the
    ``size`` lowest ranks are taken and returned in natural id order. Python's ``random``
    is deliberately not used: its algorithms are not guaranteed across versions.
    """
    ids = sorted(set(task_ids), key=task_sort_key)
    if size < 1:
        raise ValueError(f"partition size must be >= 1, got {size}")
    if size > len(ids):
        raise ValueError(f"partition size {size} exceeds the {len(ids)} available tasks")
    ranked = sorted(ids, key=lambda i: (hashlib.sha256(f"{seed}:{i}".encode()).hexdigest(), i))
    return sorted(ranked[:size], key=task_sort_key)


# --- code benchmarks through EvalPlus -------------------------------------------------------


def _same_file_same_tasks(loader: Any) -> Any:
    """Loading a local file whose bytes were loaded before returns those tasks again (a copy of
    the list; tasks are frozen): a sweep plans many runs of one benchmark file in a process.
    The loader gets the bytes it was keyed by (None: no local file, or it cannot be read)."""
    cache: dict[tuple[str, str], tuple[list[Task], str]] = {}

    def load(first: Any, path: str | None) -> tuple[list[Task], str]:
        try:
            data = Path(path).read_bytes() if path is not None else None
        except OSError:
            data = None  # the loader says what is wrong with the file
        if data is None:
            return loader(first, path, None)
        key = (repr(first), hashlib.sha256(data).hexdigest())
        if key not in cache:
            cache[key] = loader(first, path, data)
            while len(cache) > 8:
                del cache[next(iter(cache))]
        tasks, version = cache[key]
        return list(tasks), version

    return load


@_same_file_same_tasks
def _load_evalplus(benchmark: str, path: str | None, data: bytes | None) -> tuple[list[Task], str]:
    """A local file's tasks come through `_evalplus_files.load_file`: their inputs are decoded
    when first used (a warm ``score`` never does)."""
    from hf_skillfollow import _evalplus_files

    if benchmark == "humanevalplus" and path is not None and _is_original_humaneval(path, data):
        raise _refuse_original_humaneval(path)
    try:
        if path is not None and data is not None:
            problems, digest = _evalplus_files.load_file(benchmark, path, data)
            release = ""
        else:
            by_id, digest, release = _evalplus_files.problems(benchmark, path)
            problems = list(by_id.values())
    except _evalplus_files.LOAD_ERRORS as exc:
        where = path or f"the EvalPlus {benchmark} release"
        raise _evalplus_files.load_error(benchmark, where, exc) from exc
    label = f"file:{Path(path).name}" if path else release
    version = f"{benchmark}@{label}+md5.{digest[:12]}"
    return [_code_task(benchmark, p, digest) for p in problems], version


def _code_task(benchmark: str, problem: dict[str, Any], digest: str) -> Task:
    prompt = problem["prompt"]
    if BENCHMARKS[benchmark].evalplus_dataset == "mbpp":
        prompt = _mbpp_prompt(problem)
    return Task(
        benchmark,
        problem["task_id"],
        prompt,
        entry_point=problem["entry_point"],
        problem=problem,
        source_digest=digest,
    )


def _mbpp_prompt(problem: dict[str, Any]) -> str:
    # MBPP+ v0.2.0 prompts end with one example assertion (it names the function); v0.1.0
    # prompts do not, so add the first line of `assertion` in the same layout.
    prompt = problem["prompt"]
    example = next(
        (ln for ln in problem.get("assertion", "").splitlines() if ln.startswith("assert ")), None
    )
    if "assert " in prompt or example is None:
        return prompt
    description = prompt.strip().strip("'\"").strip()
    return f'"""\n{description}\n{example}\n"""\n'


def _is_original_humaneval(path: str, data: bytes | None) -> bool:
    from hf_skillfollow._evalplus_files import first_record

    if data is None:
        return False  # unreadable: the loader says what is wrong with the file
    try:
        first = first_record(data, path.endswith(".gz"))
    except (OSError, EOFError, ValueError):
        return False
    return isinstance(first, dict) and "test" in first and "base_input" not in first


def _refuse_original_humaneval(path: str) -> TaskLoadError:
    return TaskLoadError(
        f"{path}: this is the original HumanEval file (check() tests, no base_input); its "
        "tests would run inside the untrusted program, so it is not scored. Use the HumanEval+ "
        "release (e.g. HumanEvalPlus-v0.1.10.jsonl.gz, whose base inputs are these tests), "
        "or leave --tasks-file / SKILLFOLLOW_HUMANEVAL_FILE unset for the official source"
    )


# --- MATH-500 through datasets ---------------------------------------------------------------


@_same_file_same_tasks
def _load_math500(
    spec: BenchmarkSpec, path: str | None, data: bytes | None
) -> tuple[list[Task], str]:
    import datasets

    hub_id = str(spec.hub_id)
    try:
        if path is None:
            rows = datasets.load_dataset(hub_id, split="test")
            version = f"math500@hub:{hub_id}+fp.{rows._fingerprint[:12]}"
        else:
            rows = datasets.load_dataset("json", data_files=path, split="train")
            digest = hashlib.md5(Path(path).read_bytes() if data is None else data).hexdigest()
            version = f"math500@file:{Path(path).name}+md5.{digest[:12]}"
    except Exception as exc:  # datasets raises many types (network, schema, file)
        raise TaskLoadError(f"cannot load math500 from {path or hub_id}: {exc}") from exc
    return [_math_task(row, path or hub_id, i) for i, row in enumerate(rows, start=1)], version


def _math_task(row: dict[str, Any], source: str, line: int) -> Task:
    missing = [k for k in ("problem", "answer", "unique_id") if k not in row]
    if missing:
        raise TaskLoadError(f"{source}: row {line} lacks field(s) {', '.join(missing)}")
    return Task(
        "math500", row["unique_id"], row["problem"], reference=str(row["answer"]), problem=dict(row)
    )

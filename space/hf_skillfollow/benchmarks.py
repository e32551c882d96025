"""Every benchmark the toolkit knows, declared once: name, domain, loader, data override, scorer.

The run configuration, the `run` and `score` commands' choices, task loading (`tasks`) and
scoring read this table; adding a benchmark is one entry here plus its loader. The module
imports nothing heavy, so the config and the CLI can read it freely.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: `general`: a maintainer's own tasks (`custom`, `skill-evals`); each task's grader picks its
#: prompt (tests: coding, answer: math, expectations: general) and `--skills` names the pool.
Domain = Literal["coding", "math", "general"]


@dataclass(frozen=True)
class BenchmarkSpec:
    """One benchmark.

    `domain` picks the shipped skill pool and the arms' prompts; `loader` is ``evalplus``
    (EvalPlus's own loader for `evalplus_dataset`, EvalPlus's name for the dataset, which its
    special-case oracles also key on), ``hub`` (the Hub dataset `hub_id` through
    `datasets`), ``custom`` (a maintainer's JSONL task file, `tasks_custom`) or ``skill-evals``
    (every `<skill>/evals/evals.json` of the `--skills` pool); `file_env` names the environment variable of a local file that replaces the
    official source; `scorer` is ``code`` (sandboxed EvalPlus semantics), ``math``
    (math-verify, then boxed exact match) or ``graded`` (each task names its grader: tests,
    answer or expectations; docs/tasks.md). `id_form` is a regular expression every task id
    of the official release matches in full (read from the row field `id_field`): a file
    whose ids have another benchmark's form was given with the wrong `--benchmark`.
    """

    name: str
    title: str
    domain: Domain
    loader: Literal["evalplus", "hub", "custom", "skill-evals"]
    file_env: str
    scorer: Literal["code", "math", "graded"]
    evalplus_dataset: str | None = None
    hub_id: str | None = None
    id_field: str = "task_id"
    id_form: str = ""


BENCHMARKS: dict[str, BenchmarkSpec] = {
    spec.name: spec
    for spec in (
        BenchmarkSpec(
            "mbppplus",
            "MBPP+",
            "coding",
            "evalplus",
            "SKILLFOLLOW_MBPP_FILE",
            "code",
            evalplus_dataset="mbpp",
            id_form=r"Mbpp/\d+",
        ),
        BenchmarkSpec(
            "humanevalplus",
            "HumanEval+",
            "coding",
            "evalplus",
            "SKILLFOLLOW_HUMANEVAL_FILE",
            "code",
            evalplus_dataset="humaneval",
            id_form=r"HumanEval/\d+",
        ),
        BenchmarkSpec(
            "math500",
            "MATH-500",
            "math",
            "hub",
            "SKILLFOLLOW_MATH500_FILE",
            "math",
            hub_id="HuggingFaceH4/MATH-500",
            id_field="unique_id",
            id_form=r"test/[\w-]+/\d+\.json",
        ),
        BenchmarkSpec(
            "custom", "custom tasks", "general", "custom", "SKILLFOLLOW_CUSTOM_FILE", "graded"
        ),
        BenchmarkSpec("skill-evals", "skill evals", "general", "skill-evals", "", "graded"),
    )
}

#: Benchmark names, in the order the CLI offers them.
BENCHMARK_NAMES: tuple[str, ...] = tuple(BENCHMARKS)
#: The skill-pool/prompt domains, sorted.
DOMAINS: tuple[str, ...] = tuple(sorted({spec.domain for spec in BENCHMARKS.values()}))


def benchmark_spec(name: str) -> BenchmarkSpec:
    """The spec of `name`; an unknown name is a ValueError that lists the known ones."""
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise ValueError(
            f"unknown benchmark {name!r}; choose one of {', '.join(BENCHMARK_NAMES)}"
        ) from None

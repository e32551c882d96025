"""Every benchmark the toolkit knows, declared once: name, domain, loader, data override, scorer.

The run configuration, the `run` and `score` commands' choices, task loading (`tasks`) and
scoring read this table; adding a benchmark is one entry here plus its loader. The module
imports nothing heavy, so the config and the CLI can read it freely.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Domain = Literal["coding", "math"]


@dataclass(frozen=True)
class BenchmarkSpec:
    """One benchmark.

    `domain` picks the shipped skill pool and the arms' prompts; `loader` is ``evalplus``
    (EvalPlus's own loader for `evalplus_dataset`, EvalPlus's name for the dataset, which its
    special-case oracles also key on) or ``hub`` (the Hub dataset `hub_id` through
    `datasets`); `file_env` names the environment variable of a local file that replaces the
    official source; `scorer` is ``code`` (sandboxed EvalPlus semantics) or ``math``
    (math-verify, then boxed exact match). `id_form` is a regular expression every task id
    of the official release matches in full (read from the row field `id_field`): a file
    whose ids have another benchmark's form was given with the wrong `--benchmark`.
    """

    name: str
    title: str
    domain: Domain
    loader: Literal["evalplus", "hub"]
    file_env: str
    scorer: Literal["code", "math"]
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

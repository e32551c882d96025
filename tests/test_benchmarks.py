"""The benchmark registry is what the config, the CLI and the scorers accept."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from hf_skillfollow.benchmarks import BENCHMARK_NAMES, BENCHMARKS, DOMAINS
from hf_skillfollow.cli import cli
from hf_skillfollow.config import RunConfig
from hf_skillfollow.tasks import Task, TaskLoadError, load_tasks


def test_registry_holds_the_three_benchmarks_and_the_own_task_sources() -> None:
    assert BENCHMARK_NAMES == ("mbppplus", "humanevalplus", "math500", "custom", "skill-evals")
    assert {n: b.domain for n, b in BENCHMARKS.items()} == {
        "mbppplus": "coding",
        "humanevalplus": "coding",
        "math500": "math",
        "custom": "general",  # each own task's grader picks its prompt (docs/tasks.md)
        "skill-evals": "general",
    }
    assert DOMAINS == ("coding", "general", "math")


def test_unknown_benchmark_is_named_by_config_and_loader() -> None:
    with pytest.raises(ValidationError, match="unknown benchmark 'gsm8k'; choose one of mbppplus"):
        RunConfig(benchmark="gsm8k")
    with pytest.raises(TaskLoadError, match="unknown benchmark 'gsm8k'"):
        load_tasks("gsm8k")


@pytest.mark.parametrize("command", ["run", "score"])
def test_cli_offers_the_registered_benchmarks(command: str) -> None:
    out = CliRunner().invoke(cli, [command, "--help"]).output
    assert "[mbppplus|humanevalplus|math500|custom" in out


def test_task_domain_comes_from_the_registry() -> None:
    assert RunConfig(benchmark="math500").domain == "math"
    assert Task("humanevalplus", "HumanEval/0", "p").domain == "coding"

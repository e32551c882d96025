"""Benchmark loading through the official loaders (local-file overrides) and the partition sampler."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from hf_skillfollow.tasks import TaskLoadError, load_tasks, partition, task_sort_key

# a local file's fields are cached (`_evalplus_files`): in a private folder, not the user's
pytestmark = pytest.mark.usefixtures("private_score_cache")


def _spec_partition(ids: list[str], seed: int, size: int) -> set[str]:
    """The documented rule, written out independently of the implementation."""
    digests = {i: hashlib.sha256(f"{seed}:{i}".encode()).hexdigest() for i in ids}
    return set(sorted(ids, key=lambda i: digests[i])[:size])


def test_mbppplus_from_local_file_through_evalplus(data_dir: Path) -> None:
    path = data_dir / "mbppplus-v0.1.0.jsonl"
    tasks, version = load_tasks("mbppplus", path)
    assert len(tasks) == 399
    ids = [t.task_id for t in tasks]
    assert len(set(ids)) == 399
    assert ids[:3] == ["Mbpp/2", "Mbpp/3", "Mbpp/4"]  # natural order, not string order
    assert hashlib.md5(path.read_bytes()).hexdigest()[:12] in version
    assert "mbppplus-v0.1.0.jsonl" in version
    first = tasks[0]
    assert first.entry_point == "similar_elements"
    assert first.problem["base_input"][0] == [
        (3, 4, 5, 6),
        (5, 7, 4, 10),
    ]  # EvalPlus deserialised tuples
    assert "assert similar_elements(" in first.prompt  # v0.1.0 prompts get the example assertion
    assert first.domain == "coding"


def test_evalplus_override_global_is_restored(data_dir: Path) -> None:
    from evalplus.data import mbpp

    before = mbpp.MBPP_OVERRIDE_PATH
    load_tasks("mbppplus", data_dir / "mbppplus-v0.1.0.jsonl")
    assert before == mbpp.MBPP_OVERRIDE_PATH


def test_environment_variable_and_flag_precedence(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = (data_dir / "mbppplus-v0.1.0.jsonl").read_text().splitlines()
    small = tmp_path / "three.jsonl"
    small.write_text("\n".join(lines[:3]) + "\n")
    monkeypatch.setenv("SKILLFOLLOW_MBPP_FILE", str(small))
    assert len(load_tasks("mbppplus")[0]) == 3
    assert len(load_tasks("mbppplus", data_dir / "mbppplus-v0.1.0.jsonl")[0]) == 399


def test_humanevalplus_from_local_file_through_evalplus(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = data_dir / "HumanEvalPlus-v0.1.10.jsonl.gz"
    tasks, version = load_tasks("humanevalplus", path)
    with gzip.open(path, "rt") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    assert len(tasks) == len(rows) == 164
    assert [t.task_id for t in tasks] == [f"HumanEval/{i}" for i in range(164)]
    assert hashlib.md5(path.read_bytes()).hexdigest()[:12] in version
    assert version.startswith("humanevalplus@file:HumanEvalPlus-v0.1.10.jsonl.gz")
    by_id = {r["task_id"]: r for r in rows}
    for task in tasks[:10]:
        row = by_id[task.task_id]
        assert task.prompt == row["prompt"] and task.entry_point == row["entry_point"]
        assert task.problem["base_input"] == row["base_input"]
        assert task.problem["plus_input"] == row["plus_input"]
        assert task.domain == "coding"
    # the environment variable is the other way to point at a local file
    monkeypatch.setenv("SKILLFOLLOW_HUMANEVAL_FILE", str(path))
    assert load_tasks("humanevalplus")[1] == version


def test_original_humaneval_is_refused_with_a_pointer_to_humanevalplus(data_dir: Path) -> None:
    with pytest.raises(TaskLoadError) as info:
        load_tasks("humanevalplus", data_dir / "humaneval.jsonl.gz")
    message = str(info.value)
    assert "humaneval.jsonl.gz" in message and "original HumanEval" in message
    assert "HumanEval+" in message and "\n" not in message


def test_math500_from_local_file_through_datasets(data_dir: Path) -> None:
    tasks, version = load_tasks("math500", data_dir / "math500.jsonl")
    rows = [json.loads(line) for line in (data_dir / "math500.jsonl").read_text().splitlines()]
    assert len(tasks) == 500
    by_id = {t.task_id: t for t in tasks}
    for row in rows[:20]:
        task = by_id[row["unique_id"]]
        assert task.prompt == row["problem"] and task.reference == row["answer"]
        assert task.domain == "math" and task.entry_point is None
    assert version.startswith("math500@file:math500.jsonl")


def test_missing_file_names_the_flag_and_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(TaskLoadError, match=r"--tasks-file.*nope\.jsonl"):
        load_tasks("mbppplus", tmp_path / "nope.jsonl")
    monkeypatch.setenv("SKILLFOLLOW_MATH500_FILE", str(tmp_path / "gone.jsonl"))
    with pytest.raises(TaskLoadError, match=r"SKILLFOLLOW_MATH500_FILE.*gone\.jsonl"):
        load_tasks("math500")


def test_bad_rows_and_unknown_benchmark_are_clear_errors(tmp_path: Path) -> None:
    bad = tmp_path / "math.jsonl"
    bad.write_text(json.dumps({"problem": "1+1?", "unique_id": "x"}) + "\n")
    with pytest.raises(TaskLoadError, match=r"row 1 lacks field\(s\) answer"):
        load_tasks("math500", bad)
    broken = tmp_path / "mbpp.jsonl"
    broken.write_text(json.dumps({"task_id": "Mbpp/1", "prompt": "x"}) + "\n")
    with pytest.raises(TaskLoadError, match=r"mbpp\.jsonl"):
        load_tasks("mbppplus", broken)
    with pytest.raises(TaskLoadError, match="unknown benchmark 'gsm8k'"):
        load_tasks("gsm8k")


def test_partition_follows_the_documented_rule(data_dir: Path) -> None:
    ids = [t.task_id for t in load_tasks("mbppplus", data_dir / "mbppplus-v0.1.0.jsonl")[0]]
    for seed in (42, 43, 44):
        chosen = partition(ids, seed, 80)
        assert len(chosen) == 80
        assert set(chosen) == _spec_partition(ids, seed, 80)
        assert chosen == sorted(chosen, key=task_sort_key)
    assert partition(ids, 42, 80) != partition(ids, 43, 80)


def test_partition_is_pinned_and_order_independent() -> None:
    ids = [f"Mbpp/{i}" for i in range(1, 60)]
    # Pinned values: a change here breaks reproducibility of every published partition.
    assert partition(ids, 42, 5) == ["Mbpp/3", "Mbpp/9", "Mbpp/15", "Mbpp/48", "Mbpp/54"]
    assert set(partition(ids, 42, 5)) == _spec_partition(ids, 42, 5)
    assert partition(list(reversed(ids)) + ids[:3], 42, 5) == partition(ids, 42, 5)
    assert hashlib.sha256(b"42:Mbpp/1").hexdigest().startswith("5569d90b")  # guards the key format


def test_partition_rejects_bad_sizes() -> None:
    with pytest.raises(ValueError, match="exceeds the 3 available"):
        partition(["a", "b", "c"], 42, 4)
    with pytest.raises(ValueError, match=">= 1"):
        partition(["a"], 42, 0)

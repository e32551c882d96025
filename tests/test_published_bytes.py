"""Published data stays byte-identical: a cell id and parquet hashes pinned from hand-written input.

The literal values below were computed once, by the code as it was before the column
declaration was refactored into one place, from the fixed configuration and rows written out in
this file. A refactor of the schema, the cell key or the identity columns must leave them
unchanged; a deliberate change to the published data changes them, and the change says why.
Parquet bytes also carry the writer's `created_by` (the pyarrow version), so a pyarrow upgrade
that changes the bytes fails here too: that is a change of the published files as well.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from hf_skillfollow.config import RunConfig, cell_id
from hf_skillfollow.hub._layout import canonical, parquet_bytes
from hf_skillfollow.prompts import prompts_hash
from hf_skillfollow.runner import identity_columns
from hf_skillfollow.schema import traces_from_rows, transitions_from_rows, validate_transitions
from hf_skillfollow.store import RunStore

PINNED_CELL_ID = "6113effee53d84c9"
# re-pinned when transitions gained the import's columns (provenance, harness, agent, backfilled
# run / hf-skillfollow; detector, trigger_kind, arm_integrity, intended_skills, null here; issue 35)
# and again with `judged_by` (the judge of expectations tasks; backfilled empty here; issue 39)
PINNED_TRANSITIONS_SHA256 = "bc126e2677f1fad3ea73d24310b89dd66a0c035bc910701be8b1d0f44ce16d3d"
# re-pinned when traces gained the own-task grading columns (grader, judge, judge_verdicts,
# addresses_grader; issue 22), which are null in these rows
PINNED_TRACES_SHA256 = "0ad1dabddabef8bac9851ef5fe7c36756d4266c55c61ee6aaac749c4f1db6b50"
PINNED_RUN_DIR_TRANSITIONS_SHA256 = (
    "0949009e3bfea516920c0de0302c19990082885561a8f9b1f6e4dea84346f1ac"
)
#: prompts_hash per (domain, access): the search values hash the paper's Listing 1 schema.
PINNED_PROMPTS_HASH = {
    ("coding", "search"): "d9302c04f32c1bbc",
    ("math", "search"): "702343998c1949cc",
    ("coding", "catalog"): "1fb3b3fb2dfd62c4",
    ("math", "catalog"): "0cd66b7d4fe9c596",
}


def _config() -> RunConfig:
    return RunConfig(
        model="org/model-7b",
        backend="openai",
        base_url="http://127.0.0.1:9/v1",
        benchmark="mbppplus",
        partition_seed=7,
        partition_size=20,
        limit=5,
        condition="filler",
        top_k=2,
        max_calls=4,
        temperature=0.2,
        max_tokens=512,
        seed=3,
        concurrency=2,
    )


def _manifest() -> dict[str, Any]:
    return {
        "run_id": "20261130T000000-abcdef12-r1-0a1b2c",
        "cell_id": "abcdef1234567890",
        "repeat_index": 1,
        "created_at": "2026-11-30T00:00:00+00:00",
        "schema_version": 1,
        "config": _config().model_dump(mode="json"),
        "benchmark_version": "mbppplus@v0.2.0+md5.0123456789ab",
        "skill_pool": "coding",
        "skill_pool_hash": "poolhash",
        "prompts_hash": "prompthash",
        "versions": {"hf-skillfollow": "0.1.0"},
    }


def _transition(task_id: str, se: bool, sd: bool, queries: list[str]) -> dict[str, Any]:
    returned = bool(queries)
    return {
        **identity_columns(_manifest()),
        "task_id": task_id,
        "se_correct": se,
        "sd_correct": sd,
        "invoked": returned,
        "returned": returned,
        "n_calls": len(queries),
        "queries": queries,
        "skills_returned": ["binary-search"] if returned else [],
        "se_error": None,
        "sd_error": "timeout" if not sd else None,
        "adherence": True if returned else None,
    }


def _transitions() -> list[dict[str, Any]]:
    return [
        _transition("Mbpp/11", True, False, ["search sorted list"]),
        _transition("Mbpp/2", False, True, []),
        _transition("Mbpp/3", True, True, ["a", "b"]),
    ]


def _traces() -> list[dict[str, Any]]:
    rows = []
    for task_id in ("Mbpp/2", "Mbpp/11"):
        for arm in ("se", "sd"):
            rows.append(
                {
                    "schema_version": 1,
                    "run_id": "20261130T000000-abcdef12-r1-0a1b2c",
                    "cell_id": "abcdef1234567890",
                    "task_id": task_id,
                    "arm": arm,
                    "messages": [
                        {"role": "system", "content": "sys", "tool_calls": None},
                        {"role": "user", "content": f"solve {task_id}"},
                        {"role": "assistant", "content": "def f(): pass", "name": None},
                    ],
                    "final_answer": "def f(): pass",
                    "extracted": "def f(): pass",
                    "correct": arm == "se",
                    "scorer_details": '{"reason": "ok"}',
                    "error": None,
                    "n_calls": 1 if arm == "se" else 0,
                    "latency_s": 1.25,
                    "prompt_tokens": 100,
                    "completion_tokens": 20,
                }
            )
    return rows


def test_identity_columns_of_a_manifest_are_pinned() -> None:
    assert identity_columns(_manifest()) == {
        "schema_version": 1,
        "run_id": "20261130T000000-abcdef12-r1-0a1b2c",
        "cell_id": "abcdef1234567890",
        "repeat_index": 1,
        "created_at": "2026-11-30T00:00:00+00:00",
        "model": "org/model-7b",
        "backend": "openai",
        "tool_mode": "native",
        "retrieval_policy": "auto",
        "benchmark": "mbppplus",
        "benchmark_version": "mbppplus@v0.2.0+md5.0123456789ab",
        "partition_seed": 7,
        "partition_size": 20,
        "skill_pool": "coding",
        "skill_pool_hash": "poolhash",
        "condition": "filler",
        "access": "search",
        "retriever": "bm25s",
        "top_k": 2,
        "max_calls": 4,
        "temperature": 0.2,
        "max_tokens": 512,
        "seed": 3,
        "prompts_hash": "prompthash",
        "toolkit_version": "0.1.0",
        "provenance": "run",
        "harness": "hf-skillfollow",
        "agent": "hf-skillfollow",
        "judged_by": "",  # no judged task: the manifest has no judge
    }
    judged = {**_manifest(), "judge": {"judge": "org/judge-70b@0123abcd", "repeats": 2}}
    assert identity_columns(judged)["judged_by"] == "org/judge-70b@0123abcd"


def test_cell_id_is_pinned() -> None:
    cid = cell_id(
        _config().protocol_dict(),
        skill_pool_hash="poolhash",
        prompts_hash="prompthash",
        benchmark_version="mbppplus@v0.2.0+md5.0123456789ab",
    )
    assert cid == PINNED_CELL_ID


def test_prompts_hash_is_pinned() -> None:
    assert {key: prompts_hash(*key) for key in PINNED_PROMPTS_HASH} == PINNED_PROMPTS_HASH


def test_rows_and_files_from_before_the_access_column_read_as_search(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    old_rows = [{k: v for k, v in row.items() if k != "access"} for row in _transitions()]
    new = transitions_from_rows(_transitions())
    assert transitions_from_rows(old_rows).equals(new)
    # a published file written before the column existed
    pq.write_table(new.drop_columns(["access"]), tmp_path / "old.parquet")
    table = validate_transitions(pq.read_table(tmp_path / "old.parquet"))
    assert table.column_names == new.column_names
    assert table.column("access").to_pylist() == ["search"] * 3


def test_rows_and_files_from_before_the_import_columns_read_as_runs(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    added = ["provenance", "harness", "agent", "detector", "trigger_kind", "arm_integrity",
             "intended_skills", "judged_by"]  # fmt: skip
    new = transitions_from_rows(_transitions())
    pq.write_table(new.drop_columns(added), tmp_path / "old.parquet")
    table = validate_transitions(pq.read_table(tmp_path / "old.parquet"))
    assert table.column_names == new.column_names
    assert table.column("provenance").to_pylist() == ["run"] * 3
    assert table.column("agent").to_pylist() == ["hf-skillfollow"] * 3
    assert table.column("detector").null_count == 3
    assert table.column("judged_by").to_pylist() == [""] * 3


def test_published_parquet_bytes_are_pinned() -> None:
    transitions = canonical(transitions_from_rows(_transitions()), "transitions")
    traces = canonical(traces_from_rows(_traces()), "traces")
    assert _sha(parquet_bytes(transitions, "transitions")) == PINNED_TRANSITIONS_SHA256
    assert _sha(parquet_bytes(traces, "traces")) == PINNED_TRACES_SHA256


def test_run_directory_parquet_is_pinned(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    for row in _transitions():
        store.append_record({"task_id": row["task_id"], "transition": row, "traces": []})
    assert store.write_tables() == (3, 0)
    assert (
        _sha((tmp_path / "transitions.parquet").read_bytes()) == PINNED_RUN_DIR_TRANSITIONS_SHA256
    )


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()

"""Row builders for test fixtures (values chosen by the tests, not by the code under test)."""

from __future__ import annotations

from typing import Any


def transition_row(**overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "schema_version": 1,
        "run_id": "run-1",
        "cell_id": "cell-1",
        "repeat_index": 0,
        "created_at": "2026-11-30T00:00:00+00:00",
        "model": "m",
        "backend": "openai",
        "tool_mode": "native",
        "retrieval_policy": "auto",
        "benchmark": "mbppplus",
        "benchmark_version": "v0.1.0",
        "partition_seed": 42,
        "partition_size": 80,
        "skill_pool": "coding",
        "skill_pool_hash": "h",
        "condition": "normal",
        "access": "search",
        "retriever": "bm25s",
        "top_k": 3,
        "max_calls": 3,
        "temperature": 0.7,
        "max_tokens": 8192,
        "seed": 0,
        "prompts_hash": "p",
        "toolkit_version": "0.1.0",
        "provenance": "run",
        "harness": "hf-skillfollow",
        "agent": "hf-skillfollow",
        "judged_by": "",
        "task_id": "t",
        "se_correct": False,
        "sd_correct": False,
        "invoked": False,
        "returned": False,
        "n_calls": 0,
        "queries": [],
        "skills_returned": [],
        "se_error": None,
        "sd_error": None,
        "adherence": None,
    }
    row.update(overrides)
    return row

"""End-to-end: the real embedded model (llama.cpp server over HTTP), real tasks, real scoring.

No model is mocked. The model is tiny (SmolLM2-135M) so answers are mostly wrong; these tests
check the plumbing: pairs recorded, schema, resume after kill -9 without redoing or
duplicating finished pairs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from hf_skillfollow.schema import TRACES_SCHEMA, TRANSITIONS_SCHEMA

CLI = [sys.executable, "-m", "hf_skillfollow.cli"]
FAST = ["--max-tokens", "48", "--concurrency", "1", "--resamples", "200"]


def _run(args: list[str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "run", *args], capture_output=True, text=True, timeout=timeout)


def _only_run_dir(out: Path) -> Path:
    dirs = [p for p in out.iterdir() if p.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def _records(run_dir: Path) -> list[dict]:
    return [
        json.loads(line)
        for line in (run_dir / "records.jsonl").read_text().splitlines()
        if line.strip()
    ]


def test_mbpp_forced_retrieval_end_to_end(tmp_path: Path, data_dir: Path) -> None:
    out = tmp_path / "runs"
    proc = _run(
        [
            "--tasks-file",
            str(data_dir / "mbppplus-v0.1.0.jsonl"),
            "--limit",
            "2",
            "--retrieval-policy",
            "forced",
            "-o",
            str(out),
            *FAST,
        ]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = _only_run_dir(out)
    transitions = pq.read_table(run_dir / "transitions.parquet")
    assert transitions.schema.equals(TRANSITIONS_SCHEMA, check_metadata=False)
    rows = transitions.to_pylist()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert sorted(r["task_id"] for r in rows) == sorted(manifest["task_ids"][:2])
    assert all(r["run_id"] == manifest["run_id"] and r["benchmark"] == "mbppplus" for r in rows)
    # Forced policy: the SE arm's first turn is a search_skills call on every task.
    assert all(r["invoked"] and r["n_calls"] >= 1 for r in rows)
    traces = pq.read_table(run_dir / "traces.parquet")
    assert traces.schema.equals(TRACES_SCHEMA, check_metadata=False)
    assert sorted(traces.column("arm").to_pylist()) == ["sd", "sd", "se", "se"]
    se_trace = next(t for t in traces.to_pylist() if t["arm"] == "se")
    assert (
        se_trace["messages"][0]["role"] == "system"
        and "search_skills" in se_trace["messages"][0]["content"]
    )
    assert any(m["role"] == "tool" for m in se_trace["messages"])
    sd_trace = next(t for t in traces.to_pylist() if t["arm"] == "sd")
    assert "search_skills" not in sd_trace["messages"][0]["content"]
    assert "RAE" in proc.stdout  # the report printed at the end


def test_math_auto_policy_reports_zero_coverage(tmp_path: Path, data_dir: Path) -> None:
    out = tmp_path / "runs"
    proc = _run(
        [
            "--benchmark",
            "math500",
            "--tasks-file",
            str(data_dir / "math500.jsonl"),
            "--limit",
            "2",
            "-o",
            str(out),
            *FAST,
        ]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = pq.read_table(_only_run_dir(out) / "transitions.parquet").to_pylist()
    assert len(rows) == 2 and all(r["benchmark"] == "math500" for r in rows)
    assert all(r["sd_error"] is None for r in rows)


def test_humanevalplus_run_scores_in_the_sandbox(tmp_path: Path, data_dir: Path) -> None:
    out = tmp_path / "runs"
    proc = _run(
        [
            "--benchmark",
            "humanevalplus",
            "--tasks-file",
            str(data_dir / "HumanEvalPlus-v0.1.10.jsonl.gz"),
            "--limit",
            "1",
            "-o",
            str(out),
            *FAST,
        ]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = _only_run_dir(out)
    rows = pq.read_table(run_dir / "transitions.parquet").to_pylist()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["benchmark_version"].startswith("humanevalplus@file:HumanEvalPlus-v0.1.10")
    assert len(rows) == 1 and rows[0]["benchmark"] == "humanevalplus"
    assert rows[0]["task_id"].startswith("HumanEval/")
    assert rows[0]["sd_error"] is None and rows[0]["se_error"] is None
    # both answers went through the code scorer (sandboxed), whatever their verdict
    for trace in pq.read_table(run_dir / "traces.parquet").to_pylist():
        details = json.loads(trace["scorer_details"])
        assert details["reason"] and "extracted" in details
        assert "isolation" in details or details["reason"] == "no code in the answer"


def test_kill_then_resume_neither_redoes_nor_duplicates(tmp_path: Path, data_dir: Path) -> None:
    out = tmp_path / "runs"
    args = [
        *CLI,
        "run",
        "--tasks-file",
        str(data_dir / "mbppplus-v0.1.0.jsonl"),
        "--limit",
        "4",
        "-o",
        str(out),
        "--no-report",
        *FAST,
    ]
    proc = subprocess.Popen(
        args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    deadline = time.monotonic() + 400
    run_dir = None
    while time.monotonic() < deadline:
        dirs = [p for p in out.glob("*") if p.is_dir()] if out.exists() else []
        if dirs and (dirs[0] / "records.jsonl").exists() and _records(dirs[0]):
            run_dir = dirs[0]
            break
        assert proc.poll() is None, proc.stderr.read().decode()[-3000:] if proc.stderr else ""
        time.sleep(0.2)
    assert run_dir is not None, "no pair finished before the deadline"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    before = _records(run_dir)
    assert 1 <= len(before) < 4

    resumed = _run(["--resume", str(run_dir), "--no-report"])
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    after = _records(run_dir)
    assert after[: len(before)] == before  # finished pairs untouched, not redone
    task_ids = [r["task_id"] for r in after]
    assert len(task_ids) == len(set(task_ids)) == 4
    table = pq.read_table(run_dir / "transitions.parquet")
    assert sorted(table.column("task_id").to_pylist()) == sorted(
        json.loads((run_dir / "manifest.json").read_text())["task_ids"]
    )


def test_bad_pool_directory_fails_fast_with_the_path(tmp_path: Path, data_dir: Path) -> None:
    proc = _run(
        [
            "--tasks-file",
            str(data_dir / "mbppplus-v0.1.0.jsonl"),
            "--skills",
            str(tmp_path / "nope"),
            "-o",
            str(tmp_path / "r"),
        ],
        timeout=120,
    )
    assert proc.returncode != 0
    assert str(tmp_path / "nope") in proc.stderr


@pytest.mark.parametrize(
    "flag,value", [("--top-k", "0"), ("--partition-size", "-1"), ("--temperature", "5")]
)
def test_invalid_flags_name_the_flag(tmp_path: Path, flag: str, value: str) -> None:
    proc = _run([flag, value, "-o", str(tmp_path)], timeout=120)
    assert proc.returncode != 0
    assert flag in proc.stderr

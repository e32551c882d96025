"""Own tasks end to end on the real embedded model (SmolLM2-135M through llama.cpp), no double.

The model is tiny: its answers are mostly wrong and its verdicts poor. These tests check that
the pipeline is real: tests and answer graders score its answers, and as the judge of a
skill-evals run it returns schema-valid verdicts through the forced-tool path (or a recorded
grading failure, never a silent pass).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

OWN = Path(__file__).parent / "own_tasks"
CLI = [sys.executable, "-m", "hf_skillfollow.cli"]
FAST = ["--max-tokens", "48", "--concurrency", "1", "--resamples", "200"]

pytestmark = pytest.mark.slow


def _run(args: list[str], out: Path) -> Path:
    proc = subprocess.run(
        [*CLI, "run", *FAST, "-o", str(out), *args], capture_output=True, text=True, timeout=1500
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    return run_dir


def test_custom_tests_and_answer_graders_on_the_embedded_model(
    tmp_path: Path, private_score_cache: Path
) -> None:
    lines = (OWN / "tasks.jsonl").read_text().splitlines()
    graded = tmp_path / "graded.jsonl"
    graded.write_text("\n".join(ln for ln in lines if '"expectations"' not in ln) + "\n")
    run_dir = _run(
        ["--benchmark", "custom", "--tasks-file", str(graded), "--skills", "coding",
         "--partition-size", "4"],
        tmp_path / "runs",
    )  # fmt: skip
    traces = pq.read_table(run_dir / "traces.parquet").to_pylist()
    assert {t["grader"] for t in traces} == {"tests", "answer"}
    for t in traces:
        details = json.loads(t["scorer_details"])
        assert t["judge"] is None and isinstance(t["addresses_grader"], bool)
        if t["grader"] == "tests":
            assert "python" in t["messages"][0]["content"]  # the coding instructions
            assert details["reason"]  # a sandbox verdict (or "no code in the answer")
        else:
            assert "boxed" in t["messages"][0]["content"] and "reference" in details


def test_skill_evals_judged_by_the_embedded_model(tmp_path: Path) -> None:
    run_dir = _run(
        ["--benchmark", "skill-evals", "--skills", str(OWN / "skills"), "--partition-size", "3",
         "--judge-max-tokens", "512"],
        tmp_path / "runs",
    )  # fmt: skip
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["judge"]["judge"].startswith("SmolLM2-135M-Instruct.Q4_1.gguf@")
    traces = pq.read_table(run_dir / "traces.parquet").to_pylist()
    assert len(traces) == 6
    valid = 0
    for t in traces:
        record = json.loads(t["judge_verdicts"])
        n = record["n_expectations"]
        for repeat in record["repeats"]:
            if repeat["verdicts"] is None:  # a recorded failure, with its reason
                assert repeat["failure"] and "attempt" in repeat["failure"]
                continue
            valid += 1
            assert len(repeat["verdicts"]) == n
            assert all(isinstance(v["passed"], bool) for v in repeat["verdicts"])
        if record["grading_failure"]:
            assert t["correct"] is False
    assert valid > 0, "the embedded judge produced no schema-valid verdict at all"

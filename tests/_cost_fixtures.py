"""Run folders with hand-chosen token, latency and judge figures, for the cost figures of the
Space's drill-down and of the dataset card (values chosen here, not by the code under test)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from hf_skillfollow.schema import traces_from_rows, transitions_from_rows
from tests._rows import transition_row

# (task, se_correct, sd_correct): t1 a helpful flip (b), t2 a harmful one (c), t3 concordant.
TASKS = [("t1", True, False), ("t2", False, True), ("t3", True, True)]


def record(majority, unanimous, *, ties=0, fragile=False) -> str:
    return json.dumps({"judge": "judge-double@h", "majority": majority, "unanimous": unanimous,
                       "n_valid": 2, "ties": ties, "fragile": fragile, "grading_failure": False})  # fmt: skip


def trace(run: str, cell: str, task: str, arm: str, prompt: int, completion: int, seconds: float,
           verdicts: str | None = None, addresses: bool | None = None) -> dict:  # fmt: skip
    return {"schema_version": 1, "run_id": run, "cell_id": cell, "task_id": task, "arm": arm,
            "messages": [], "final_answer": "x", "extracted": "x", "correct": False,
            "scorer_details": "{}", "error": None, "n_calls": 0, "latency_s": seconds,
            "prompt_tokens": prompt, "completion_tokens": completion,
            "grader": "expectations" if verdicts else None, "judge": "judge-double@h" if verdicts else None,
            "judge_verdicts": verdicts, "addresses_grader": addresses}  # fmt: skip


def write_run(root: Path, run: str, cell: str, model: str, traces: list[dict]) -> str:
    run_dir = root / run
    run_dir.mkdir(parents=True)
    rows = [transition_row(run_id=run, cell_id=cell, model=model, task_id=t, se_correct=se,
                           sd_correct=sd, invoked=True, returned=True, n_calls=1,
                           skills_returned=["s"]) for t, se, sd in TASKS]  # fmt: skip
    pq.write_table(transitions_from_rows(rows), run_dir / "transitions.parquet")
    pq.write_table(traces_from_rows(traces), run_dir / "traces.parquet")
    (run_dir / "manifest.json").write_text(json.dumps({"run_id": run}))
    return str(root)


def two_sources(tmp: Path) -> tuple[str, str]:
    judged = [
        trace(
            "r1",
            "cellK",
            "t1",
            "se",
            100,
            20,
            2.0,
            record([True, True], [True, False], fragile=True),
            True,
        ),
        trace(
            "r1",
            "cellK",
            "t1",
            "sd",
            50,
            10,
            1.0,
            record([False, False], [True, True], ties=1),
            False,
        ),
        trace("r1", "cellK", "t2", "se", 80, 40, 3.0, record([False, False], [True, True]), False),
        trace("r1", "cellK", "t2", "sd", 40, 20, 0.5, record([True, True], [False, True]), False),
    ]  # t3 has no traces: the means are over the traced tasks
    first = write_run(tmp / "first", "r1", "cellK", "m-first", judged)
    # Another source publishes the same run id with costly traces: they must not count.
    costly = [
        trace("r1", "cellZ", t, a, 10_000, 0, 99.0) for t, _, _ in TASKS for a in ("se", "sd")
    ]
    second = write_run(tmp / "second", "r1", "cellZ", "m-second", costly)
    return first, second

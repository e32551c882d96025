"""Run directories with hand-chosen paired outcomes, for the hub tests.

Counts are fixed here by the tests, and the expected headline numbers below are computed by
hand from them (the formulas of docs/design.md, "Metrics"), never by the code under test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from hf_skillfollow.schema import traces_from_rows, transitions_from_rows
from tests._rows import transition_row

# (se_correct, sd_correct, returned) -> how many tasks
CELL_A = {  # n=20, n_cond=12 (b=5 c=1 a=4 d=2), n_skip=8 (b=1 c=2 a=3 d=2)
    (True, False, True): 5, (False, True, True): 1, (True, True, True): 4, (False, False, True): 2,
    (True, False, False): 1, (False, True, False): 2, (True, True, False): 3, (False, False, False): 2,
}  # fmt: skip
#: RAE = 100*(5-1)/12, OAE = 100*(6-3)/20, Δskip = 100*(1-2)/8, coverage = 60,
#: agg lift = 100*(9/12 - 4/8).
CELL_A_EXPECTED = {"n": "20", "n_cond": "12", "coverage": "60.0", "rae": "+33.3", "oae": "+15.0",
                   "delta_skip": "-12.5", "agg_lift": "+25.0", "sign_disagree": "no"}  # fmt: skip

CELL_B = {  # n=20, n_cond=10 (b=1 c=3 a=6 d=0), n_skip=10 (a=2 d=8)
    (True, False, True): 1, (False, True, True): 3, (True, True, True): 6,
    (True, True, False): 2, (False, False, False): 8,
}  # fmt: skip
#: RAE = 100*(1-3)/10, OAE = 100*(1-3)/20, Δskip = 0, coverage = 50, agg lift = 100*(7/10 - 2/10):
#: positive aggregate lift with negative RAE, reportable at n_cond = 10 -> sign disagreement.
CELL_B_EXPECTED = {"n": "20", "n_cond": "10", "coverage": "50.0", "rae": "-20.0", "oae": "-10.0",
                   "delta_skip": "+0.0", "agg_lift": "+50.0", "sign_disagree": "**yes**"}  # fmt: skip


def outcome_rows(
    counts: dict[tuple[bool, bool, bool], int], **identity: Any
) -> list[dict[str, Any]]:
    rows = []
    for (se, sd, returned), n in counts.items():
        for _ in range(n):
            i = len(rows)
            rows.append(
                transition_row(
                    **identity,
                    task_id=f"Mbpp/{i + 2}",
                    se_correct=se,
                    sd_correct=sd,
                    invoked=returned,
                    returned=returned,
                    n_calls=1 if returned else 0,
                    queries=[f"query {i}"] if returned else [],
                    skills_returned=["prefix-sum", "two-pointer-pair-sum"] if returned else [],
                    adherence=(i % 2 == 0) if returned else None,
                    se_error="timeout" if i == 11 else None,  # one in a 20-pair cell: 5%
                )
            )
    return rows


def trace_rows(transitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for t in transitions:
        for arm in ("se", "sd"):
            messages = [
                {
                    "role": "system",
                    "content": f"{arm} prompt",
                    "tool_calls": None,
                    "tool_call_id": None,
                    "name": None,
                },
                {
                    "role": "user",
                    "content": f"Solve {t['task_id']}",
                    "tool_calls": None,
                    "tool_call_id": None,
                    "name": None,
                },
            ]
            if arm == "se" and t["invoked"]:
                call = [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "search_skills", "arguments": '{"query": "x"}'},
                    }
                ]
                messages.append(
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": json.dumps(call),
                        "tool_call_id": None,
                        "name": None,
                    }
                )
                messages.append(
                    {
                        "role": "tool",
                        "content": "skill text",
                        "tool_calls": None,
                        "tool_call_id": "c1",
                        "name": "search_skills",
                    }
                )
            correct = t[f"{arm}_correct"]
            rows.append(
                {
                    "schema_version": 1,
                    "run_id": t["run_id"],
                    "cell_id": t["cell_id"],
                    "task_id": t["task_id"],
                    "arm": arm,
                    "messages": messages,
                    "final_answer": "```python\ndef f(): ...\n```",
                    "extracted": "def f(): ...",
                    "correct": correct,
                    "scorer_details": json.dumps({"reason": "passed" if correct else "failed"}),
                    "error": None,
                    "n_calls": t["n_calls"] if arm == "se" else 0,
                    "latency_s": 1.25,
                    "prompt_tokens": 120,
                    "completion_tokens": 40,
                }  # fmt: skip
            )
    return rows


def write_run_dir(
    root: Path,
    run_id: str,
    counts: dict[tuple[bool, bool, bool], int],
    *,
    traces: bool = True,
    **identity: Any,
) -> Path:
    """A finished run directory: manifest.json, transitions.parquet and (optionally) traces.parquet."""
    run_dir = root / run_id
    run_dir.mkdir(parents=True)
    rows = outcome_rows(counts, run_id=run_id, **identity)
    pq.write_table(transitions_from_rows(rows), run_dir / "transitions.parquet")
    if traces:
        pq.write_table(traces_from_rows(trace_rows(rows)), run_dir / "traces.parquet")
    manifest = {
        "run_id": run_id,
        "cell_id": rows[0]["cell_id"],
        "prompts_hash": rows[0]["prompts_hash"],
    }
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    return run_dir


def two_cell_runs(root: Path) -> list[Path]:
    """Cell A split over two repeats (pooled by summing counts) and cell B in one run."""
    a_items = list(CELL_A.items())
    first = dict(a_items[:4])
    second = dict(a_items[4:])
    a = {"cell_id": "cellA0000000000", "model": "org/model-a", "skill_pool": "coding"}
    b = {
        "cell_id": "cellB0000000000",
        "model": "org/model-b",
        "skill_pool": "coding",
        "condition": "filler",
    }
    return [
        write_run_dir(root, "run-a0", first, repeat_index=0, seed=0, **a),
        write_run_dir(root, "run-a1", second, repeat_index=1, seed=1, **a),
        write_run_dir(root, "run-b0", CELL_B, **b),
    ]

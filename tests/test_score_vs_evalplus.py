"""`hf-skillfollow score` agrees with `evalplus.evaluate` verdict for verdict.

Both tools score the same samples file: every canonical solution plus two mutants per task
(the output perturbed off by one, and `return None`). EvalPlus runs as its own CLI with
`MBPP_OVERRIDE_PATH` and a private cache, exactly as a user would run it.

EvalPlus's own documented flaky failures are allowed to differ, and only in one direction
(EvalPlus fails, we pass): Mbpp/255 fails with MemoryError because EvalPlus forks each test
from a parent holding all expected outputs; Mbpp/599, 630 and 392 exceed EvalPlus's 1-second
wall-clock floor per input when the machine is busy (all four pass when run alone); Mbpp/271
flipped between two EvalPlus runs of bench/score.py on a busy machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EVALPLUS_FLAKY = {
    "Mbpp/255": "MemoryError: test process forked from a parent holding every expected output",
    "Mbpp/599": "timeout at EvalPlus's 1 s wall-clock floor under load",
    "Mbpp/630": "timeout at EvalPlus's 1 s wall-clock floor under load",
    "Mbpp/392": "timeout at EvalPlus's 1 s wall-clock floor under load",
    # Not in the data README; seen failing in one of two EvalPlus runs of bench/score.py here
    # (same samples, same machine), passing in the other.
    "Mbpp/271": "intermittent EvalPlus failure under load (observed in bench/score.py)",
}

# Default-suite subset: special oracles (2, 164, 295, 558, 581, 737), float tolerances (82, 85,
# 98, 120), tuple-deserialised inputs (63, 106, 115) and plain tasks.
FAST_TASKS = [
    "Mbpp/2",
    "Mbpp/3",
    "Mbpp/17",
    "Mbpp/63",
    "Mbpp/82",
    "Mbpp/85",
    "Mbpp/98",
    "Mbpp/106",
    "Mbpp/115",
    "Mbpp/120",
    "Mbpp/164",
    "Mbpp/295",
    "Mbpp/558",
    "Mbpp/581",
    "Mbpp/737",
]

_PERTURB = """
def _perturb(x):
    if isinstance(x, bool):
        return not x
    if isinstance(x, (int, float)):
        return x + 1
    if isinstance(x, str):
        return x + "_"
    if isinstance(x, (list, tuple)):
        return x[:-1] if x else type(x)([0])
    if isinstance(x, (set, dict)):
        return None
    return 0 if x is None else None
"""


def _off_by_one(code: str, entry: str) -> str:
    # The canonical runs in its own namespace so its recursive calls are not perturbed.
    return f"_ns = {{}}\nexec({code!r}, _ns)\n{_PERTURB}\ndef {entry}(*args):\n    return _perturb(_ns[{entry!r}](*args))\n"


def _samples(rows: list[dict], path: Path) -> list[tuple[str, str]]:
    """Canonical, off-by-one and return-None variant for every task; returns (task_id, kind)."""
    kinds = []
    with path.open("w") as fh:
        for row in rows:
            code = row["prompt"] + row["canonical_solution"]
            entry = row["entry_point"]
            variants = {
                "canonical": code,
                "off-by-one": _off_by_one(code, entry),
                "none": f"def {entry}(*args):\n    return None\n",
            }
            for kind, solution in variants.items():
                fh.write(json.dumps({"task_id": row["task_id"], "solution": solution}) + "\n")
                kinds.append((row["task_id"], kind))
    return kinds


def _evalplus(samples: Path, data: Path, cache: Path) -> list[bool]:
    env = {**os.environ, "MBPP_OVERRIDE_PATH": str(data), "XDG_CACHE_HOME": str(cache)}
    cmd = [
        sys.executable,
        "-m",
        "evalplus.evaluate",
        "--dataset",
        "mbpp",
        "--samples",
        str(samples),
        "--parallel",
        "2",
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(Path(str(samples).replace(".jsonl", "_eval_results.json")).read_text())[
        "eval"
    ]
    # EvalPlus groups by task in sample order; flatten back to sample order.
    seen: dict[str, int] = {}
    verdicts = []
    for line in samples.read_text().splitlines():
        task_id = json.loads(line)["task_id"]
        r = results[task_id][seen.get(task_id, 0)]
        seen[task_id] = seen.get(task_id, 0) + 1
        verdicts.append(r["base_status"] == "pass" and r["plus_status"] == "pass")
    return verdicts


def _ours(samples: Path, data: Path, out: Path, cache: Path) -> list[dict]:
    env = {**os.environ, "SKILLFOLLOW_CACHE_DIR": str(cache)}
    cmd = [
        sys.executable,
        "-m",
        "hf_skillfollow.cli",
        "score",
        "--benchmark",
        "mbppplus",
        "--samples",
        str(samples),
        "--output",
        str(out),
        "--tasks-file",
        str(data),
        "--workers",
        "2",
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in out.read_text().splitlines()]


def _compare(data: Path, tmp_path: Path) -> None:
    rows = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    samples = tmp_path / "samples.jsonl"
    kinds = _samples(rows, samples)
    theirs = _evalplus(samples, data, tmp_path / "evalplus-cache")
    ours = _ours(samples, data, tmp_path / "verdicts.jsonl", tmp_path / "our-cache")
    assert [v["task_id"] for v in ours] == [task_id for task_id, _ in kinds]
    disagreements = []
    for (task_id, kind), mine, their in zip(kinds, ours, theirs, strict=True):
        if mine["passed"] == their:
            continue
        if task_id in EVALPLUS_FLAKY and kind == "canonical" and mine["passed"] and not their:
            continue  # EvalPlus's documented flaky failure; we pass the canonical solution
        disagreements.append((task_id, kind, mine["passed"], their, mine["reason"]))
    assert disagreements == []
    canonical = [v for v, (_, kind) in zip(ours, kinds, strict=True) if kind == "canonical"]
    assert all(v["passed"] for v in canonical), [v for v in canonical if not v["passed"]]
    assert not any(
        v["passed"]
        for v, (t, k) in zip(ours, kinds, strict=True)
        if k == "none" and t != "Mbpp/164"
    )


def test_agrees_with_evalplus_on_a_subset(data_dir: Path, tmp_path: Path) -> None:
    lines = [
        ln for ln in (data_dir / "mbppplus-v0.1.0.jsonl").read_text().splitlines() if ln.strip()
    ]
    subset = [ln for ln in lines if json.loads(ln)["task_id"] in FAST_TASKS]
    assert len(subset) == len(FAST_TASKS)
    data = tmp_path / "mbppplus-subset.jsonl"
    data.write_text("\n".join(subset) + "\n")
    _compare(data, tmp_path)


@pytest.mark.slow
def test_agrees_with_evalplus_on_every_mbppplus_task(data_dir: Path, tmp_path: Path) -> None:
    _compare(data_dir / "mbppplus-v0.1.0.jsonl", tmp_path)

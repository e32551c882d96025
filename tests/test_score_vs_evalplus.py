"""`hf-skillfollow score` agrees with `evalplus.evaluate` verdict for verdict.

Both tools score the same samples file: every canonical solution plus two mutants per task
(the output perturbed off by one, and `return None`), on MBPP+ v0.1.0 and HumanEval+
v0.1.10. EvalPlus runs as its own CLI with `MBPP_OVERRIDE_PATH` / `HUMANEVAL_OVERRIDE_PATH`
and a private cache, exactly as a user would run it.

EvalPlus's own documented failures of canonical solutions are allowed to differ, and only in
one direction (EvalPlus fails, we pass): HumanEval/32, which EvalPlus 0.3.1 fails for every
solution (below); Mbpp/255 fails with MemoryError because EvalPlus forks each test
from a parent holding all expected outputs; Mbpp/599, 630 and 392 exceed EvalPlus's 1-second
wall-clock floor per input when the machine is busy (all four pass when run alone); Mbpp/271
flipped between two EvalPlus runs of bench/score.py on a busy machine, and so did
HumanEval/15, 36, 130 and 139.

Where this scorer is deliberately stricter (docs/sandbox.md lists each task and why), a
mutant may pass EvalPlus and fail here, never the other way round: Mbpp/164, whose EvalPlus
oracle accepts any output, fails the off-by-one and return-None mutants here.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from dataclasses import dataclass
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
    # Not flaky: EvalPlus 0.3.1's find_zero oracle `continue`s before counting the input as
    # passed, so untrusted_check sees fewer results than inputs and fails every solution.
    "HumanEval/32": "EvalPlus 0.3.1 fails every find_zero solution (its oracle skips the count)",
    # Seen failing in EvalPlus runs of bench/score.py on a busy machine (load average 13),
    # passing in others: its per-input wall-clock limits (HumanEval/139 failed in both runs).
    "HumanEval/15": "timeout at EvalPlus's wall-clock limits under load",
    "HumanEval/36": "timeout at EvalPlus's wall-clock limits under load",
    "HumanEval/130": "timeout at EvalPlus's wall-clock limits under load",
    "HumanEval/139": "timeout at EvalPlus's wall-clock limits under load",
}


# Tasks whose special oracle is stricter here than in EvalPlus 0.3.1 (docs/sandbox.md).
STRICTER = {
    "Mbpp/164": "EvalPlus accepts any output (exact or True); here a bool, correct on every "
    "input where the two readings of 'sum of divisors' agree",
    "Mbpp/295": "EvalPlus accepts 0 for any input; here a number equal to the expected output",
    "Mbpp/581": "a number (EvalPlus checks no type)",
    "Mbpp/558": "an int (EvalPlus checks no type)",
    "Mbpp/2": "set tasks: a collection (EvalPlus accepts any iterable, a dict or a string)",
    "Mbpp/737": "not-None tasks: a match, None or a bool (EvalPlus accepts any non-None value)",
    "HumanEval/32": "a number (EvalPlus accepts anything math.pow takes)",
}


@dataclass(frozen=True)
class Suite:
    benchmark: str  # ours
    dataset: str  # EvalPlus's --dataset
    override_env: str
    file: str


MBPP = Suite("mbppplus", "mbpp", "MBPP_OVERRIDE_PATH", "mbppplus-v0.1.0.jsonl")
HUMANEVAL = Suite(
    "humanevalplus", "humaneval", "HUMANEVAL_OVERRIDE_PATH", "HumanEvalPlus-v0.1.10.jsonl.gz"
)

# HumanEval+ default-suite subset: find_zero's special oracle (32), float tolerances (2, 4),
# lists, strings and plain tasks.
FAST_HUMANEVAL = ["HumanEval/0", "HumanEval/2", "HumanEval/4", "HumanEval/12", "HumanEval/32"]

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


def _rows(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _evalplus(suite: Suite, samples: Path, data: Path, cache: Path) -> list[bool]:
    env = {**os.environ, suite.override_env: str(data), "XDG_CACHE_HOME": str(cache)}
    cmd = [
        sys.executable,
        "-m",
        "evalplus.evaluate",
        "--dataset",
        suite.dataset,
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


def _ours(suite: Suite, samples: Path, data: Path, out: Path, cache: Path) -> list[dict]:
    env = {**os.environ, "SKILLFOLLOW_CACHE_DIR": str(cache)}
    cmd = [
        sys.executable,
        "-m",
        "hf_skillfollow.cli",
        "score",
        "--benchmark",
        suite.benchmark,
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


def _compare(suite: Suite, data: Path, tmp_path: Path) -> None:
    rows = _rows(data)
    samples = tmp_path / "samples.jsonl"
    kinds = _samples(rows, samples)
    theirs = _evalplus(suite, samples, data, tmp_path / "evalplus-cache")
    ours = _ours(suite, samples, data, tmp_path / "verdicts.jsonl", tmp_path / "our-cache")
    assert [v["task_id"] for v in ours] == [task_id for task_id, _ in kinds]
    disagreements = []
    for (task_id, kind), mine, their in zip(kinds, ours, theirs, strict=True):
        if mine["passed"] == their:
            continue
        if task_id in EVALPLUS_FLAKY and kind == "canonical" and mine["passed"] and not their:
            continue  # EvalPlus's documented flaky failure; we pass the canonical solution
        if task_id in STRICTER and kind != "canonical" and their and not mine["passed"]:
            continue  # deliberately stricter here (docs/sandbox.md)
        disagreements.append((task_id, kind, mine["passed"], their, mine["reason"]))
    assert disagreements == []
    canonical = [v for v, (_, kind) in zip(ours, kinds, strict=True) if kind == "canonical"]
    assert all(v["passed"] for v in canonical), [v for v in canonical if not v["passed"]]
    if suite is MBPP:  # no MBPP+ task passes `return None` here (EvalPlus passes Mbpp/164)
        assert not any(v["passed"] for v, (_, k) in zip(ours, kinds, strict=True) if k == "none")


def _subset(data: Path, ids: list[str], out: Path) -> Path:
    rows = [row for row in _rows(data) if row["task_id"] in ids]
    assert len(rows) == len(ids)
    out.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return out


def test_agrees_with_evalplus_on_a_subset(data_dir: Path, tmp_path: Path) -> None:
    data = _subset(data_dir / MBPP.file, FAST_TASKS, tmp_path / "mbppplus-subset.jsonl")
    _compare(MBPP, data, tmp_path)


def test_agrees_with_evalplus_on_a_humanevalplus_subset(data_dir: Path, tmp_path: Path) -> None:
    data = _subset(data_dir / HUMANEVAL.file, FAST_HUMANEVAL, tmp_path / "he-subset.jsonl")
    _compare(HUMANEVAL, data, tmp_path)


# Two full CLI runs of a whole benchmark: far beyond the default per-test limit on a busy machine.
@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_agrees_with_evalplus_on_every_mbppplus_task(data_dir: Path, tmp_path: Path) -> None:
    _compare(MBPP, data_dir / MBPP.file, tmp_path)


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_agrees_with_evalplus_on_every_humanevalplus_task(data_dir: Path, tmp_path: Path) -> None:
    _compare(HUMANEVAL, data_dir / HUMANEVAL.file, tmp_path)

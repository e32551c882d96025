"""`run` on a maintainer's own tasks, end to end against a scripted agent-and-judge double.

The double (tests/_judge_double.py) stands in for the model under test and for the judge; the
run, the sandboxed tests grader, the math check, the judge's structured-output path, the
records, the report and the figures are real. Expected figures are computed by hand below.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests._judge_double import AgentAndJudgeDouble

OWN = Path(__file__).parent / "own_tasks"
CLI = [sys.executable, "-m", "hf_skillfollow.cli"]

#: (prompt start, arm) -> answer. add: SE right, SD wrong (b). square: both right.
#: two-plus-two: both right. half: SE wrong, SD right (c). thanks: SE meets all, SD lacks
#: "review" (b, judged).
_ANSWERS = {
    ("Write a Python function add", "se"): "```python\ndef add(a, b):\n    return a + b\n```",
    ("Write a Python function add", "sd"): "```python\ndef add(a, b):\n    return a - b\n```",
    ("Write a Python function square", "se"): "```python\ndef square(x):\n    return x * x\n```",
    ("Write a Python function square", "sd"): "```python\ndef square(x):\n    return x ** 2\n```",
    ("What is 2 + 2", "se"): "It is $\\boxed{4}$.",
    ("What is 2 + 2", "sd"): "$\\boxed{4}$",
    ("What is one half", "se"): "$\\boxed{5}$",
    ("What is one half", "sd"): "$\\boxed{\\frac{9}{2}}$",
    ("Write a two-line thank-you note to a colleague", "se"):
        "Dear Ada, thank you for the careful review of my code.",
    ("Write a two-line thank-you note to a colleague", "sd"): "Thanks a lot, Ada!",
    # skill evals: the polite-email/2 answers are identical in both arms (blinding check)
    ("Write a two-line thank-you note to Grace", "se"): "Grace, thank you for covering my shift.",
    ("Write a two-line thank-you note to Grace", "sd"): "Thank you, Grace.",
    ("Write a one-line apology to Linus", "se"): "Sorry, Linus, I missed the meeting.",
    ("Write a one-line apology to Linus", "sd"): "Sorry, Linus, I missed the meeting.",
    ("Which city", "se"): "Tokyo has the largest population (37).",
    ("Which city", "sd"): "Lima.",
}  # fmt: skip


def answerer(prompt: str, arm: str) -> str:
    return next(
        a for (start, a_arm), a in _ANSWERS.items() if prompt.startswith(start) and a_arm == arm
    )


def _run(args: list[str], url: str, out: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DOUBLE_KEY": "k"}
    cmd = [*CLI, "run", "--backend", "openai", "--model", "double-model", "--base-url", url,
           "--api-key-env", "DOUBLE_KEY", "--resamples", "200", "-o", str(out), *args]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)


def _run_dir(out: Path) -> Path:
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    return run_dir


@pytest.fixture(scope="module")
def custom_run(tmp_path_factory: pytest.TempPathFactory, private_score_cache: Path):
    out = tmp_path_factory.mktemp("runs")
    with AgentAndJudgeDouble(answerer, invalid_first=True) as double:
        proc = _run(
            ["--benchmark", "custom", "--tasks-file", str(OWN / "tasks.jsonl"),
             "--skills", str(OWN / "skills"), "--partition-size", "5", "--judge-repeats", "3"],
            double.url, out,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return _run_dir(out), proc, double


def test_each_grader_decides_its_tasks(custom_run) -> None:
    run_dir, _, _ = custom_run
    rows = {r["task_id"]: r for r in pq.read_table(run_dir / "transitions.parquet").to_pylist()}
    outcomes = {t: (r["se_correct"], r["sd_correct"]) for t, r in rows.items()}
    assert outcomes == {
        "add": (True, False),  # tests, in the sandbox
        "square": (True, True),
        "two-plus-two": (True, True),  # answer, like MATH-500
        "half": (False, True),
        "thanks": (True, False),  # judge: SD's note never mentions the review
    }
    traces = pq.read_table(run_dir / "traces.parquet").to_pylist()
    assert {(t["task_id"], t["grader"]) for t in traces} == {
        ("add", "tests"), ("square", "tests"), ("two-plus-two", "answer"), ("half", "answer"),
        ("thanks", "expectations"),
    }  # fmt: skip
    sd_add = next(t for t in traces if t["task_id"] == "add" and t["arm"] == "sd")
    details = json.loads(sd_add["scorer_details"])
    assert details["failed_input"] == 0 and details["isolation"]  # judged outside the program


def test_judge_verdicts_identity_and_retries_are_recorded(custom_run) -> None:
    run_dir, _, _ = custom_run
    manifest = json.loads((run_dir / "manifest.json").read_text())
    judge = manifest["judge"]
    assert judge["judge"].startswith("double-model@") and judge["repeats"] == 3
    traces = pq.read_table(run_dir / "traces.parquet").to_pylist()
    for t in traces:
        if t["grader"] != "expectations":
            assert t["judge"] is None and t["judge_verdicts"] is None
            continue
        assert t["judge"] == judge["judge"]
        record = json.loads(t["judge_verdicts"])
        assert record["n_valid"] == 3 and len(record["repeats"]) == 3
        if t["task_id"] == "thanks":  # tests/own_tasks/tasks.jsonl, published with the verdicts
            assert record["expectations"] == ["mentions Ada", "mentions review", "is written politely"]
        # the first reply of each distinct request was invalid JSON: retried, then valid
        assert sorted(r["attempts"] for r in record["repeats"]) == [1, 1, 2]
        assert all(
            len(r["verdicts"]) == 3 and r["verdicts"][0]["evidence"] for r in record["repeats"]
        )
        # repeats 0 and 2 say the noisy expectation is met, repeat 1 not: 2 of 3, not unanimous
        assert record["unanimous"][2] is False and record["majority"][2] is True


def test_judge_noise_figures_match_a_hand_count(custom_run) -> None:
    from hf_skillfollow.metrics import _own
    from hf_skillfollow.report_own import read_trace_rows

    run_dir, proc, _ = custom_run
    transitions = pq.read_table(run_dir / "transitions.parquet").to_pylist()
    traces = read_trace_rows([run_dir])
    (noise,) = _own.judge_noise(transitions, traces).values()
    # Judged items: 3 expectations x 2 answers = 6; the noisy one disagrees in both: 2 of 6.
    assert noise["items"] == 6 and noise["disagreeing"] == 2
    assert noise["self_disagreement"] == pytest.approx(100 * 2 / 6)
    assert (noise["ties"], noise["grading_failures"]) == (0, 0)
    # Flips between two judged answers only: thanks (b; SE passes with a non-unanimous
    # expectation, so one disagreement could turn it). add (tests, b) and half (answer, c)
    # have no judge and are not in the tally.
    assert (noise["b"], noise["b_explainable"], noise["c"], noise["c_explainable"]) == (1, 1, 0, 0)
    assert "Judge noise" in proc.stdout and "33.3" in proc.stdout and "1/1" in proc.stdout
    assert "Cost per task" in proc.stdout


def test_answers_and_cost_figures(custom_run) -> None:
    from hf_skillfollow.metrics import _own
    from hf_skillfollow.report_own import read_trace_rows

    run_dir, _, _ = custom_run
    traces = read_trace_rows([run_dir])
    (cost,) = _own.cost(traces).values()
    # The double reports 18 tokens per turn; SE takes two turns (search, answer), SD one.
    assert (cost["se_tokens"], cost["sd_tokens"], cost["d_tokens"]) == (36.0, 18.0, 18.0)
    assert _own.addressing(traces) == {traces[0]["cell_id"]: {"se": 0, "sd": 0}}


def test_judge_identity_is_part_of_the_cell(tmp_path: Path, private_score_cache: Path) -> None:
    lines = (OWN / "tasks.jsonl").read_text().splitlines()
    only_thanks = tmp_path / "thanks.jsonl"
    only_thanks.write_text(lines[-1] + "\n")
    cells = []
    with AgentAndJudgeDouble(answerer) as double:
        for repeats in ("2", "3"):
            out = tmp_path / f"runs{repeats}"
            proc = _run(["--benchmark", "custom", "--tasks-file", str(only_thanks), "--skills",
                         str(OWN / "skills"), "--partition-size", "1", "--judge-repeats", repeats,
                         "--no-report"], double.url, out)  # fmt: skip
            assert proc.returncode == 0, proc.stderr[-2000:]
            cells.append(json.loads((_run_dir(out) / "manifest.json").read_text())["cell_id"])
    assert cells[0] != cells[1]


def test_skill_evals_run_blinds_the_judge_and_reports_per_skill(
    tmp_path: Path, private_score_cache: Path
) -> None:
    from hf_skillfollow.metrics import _own
    from hf_skillfollow.report_own import read_trace_rows

    out = tmp_path / "runs"
    with AgentAndJudgeDouble(answerer) as double:
        proc = _run(["--benchmark", "skill-evals", "--skills", str(OWN / "skills"),
                     "--partition-size", "3"], double.url, out)  # fmt: skip
        requests = list(double.judge_requests)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = _run_dir(out)
    # polite-email/2 has the same answer in both arms: its judge requests are byte-identical
    # pairs (one per arm and repeat), so nothing in them can tell the arms apart.
    linus = [r for r in requests if b"Linus" in r]
    assert len(linus) == 4 and len(set(linus)) == 2 and all(linus.count(r) == 2 for r in linus)
    assert not any(b"search_skills" in r or b"polite-email" in r for r in requests)
    # the attached CSV reached the model in both arms (and the judge)
    traces = pq.read_table(run_dir / "traces.parquet").to_pylist()
    csv_prompts = {
        t["arm"]: t["messages"][1]["content"]
        for t in traces
        if t["task_id"] == "csv-summary/largest"
    }
    assert csv_prompts["se"] == csv_prompts["sd"] and "Tokyo,37" in csv_prompts["se"]
    transitions = pq.read_table(run_dir / "transitions.parquet").to_pylist()
    rows = {r["skill"]: r for r in _own.per_skill(transitions, read_trace_rows([run_dir]))}
    assert set(rows) == {"csv-summary", "polite-email"} and rows["polite-email"]["n"] == 2
    assert "Per skill, on its own evals" in proc.stdout
    for name, r in rows.items():
        retrieved = [
            t
            for t in transitions
            if t["task_id"].startswith(name + "/") and name in t["skills_returned"]
        ]
        assert r["coverage"] == pytest.approx(100 * len(retrieved) / r["n"])


def _verify(run_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DOUBLE_KEY": "k"}
    cmd = [*CLI, "verify", str(run_dir), "--tasks-file", f"custom={OWN / 'tasks.jsonl'}",
           "--no-record", "--fresh", "--state", str(run_dir.parent / "verify-state.jsonl"), *extra]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)


def test_verify_regrades_with_the_recorded_judge(custom_run) -> None:
    run_dir, _, _ = custom_run
    with AgentAndJudgeDouble(answerer) as judge:  # the same judge, served anew
        proc = _verify(run_dir, "--judge-base-url", judge.url, "--judge-api-key-env", "DOUBLE_KEY")
        regraded = len(judge.judge_requests)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert regraded == 2 * 3  # both answers of the judged task, three repeats each


def test_verify_says_plainly_when_the_judge_cannot_be_reached(custom_run) -> None:
    run_dir, _, _ = custom_run
    proc = _verify(run_dir)
    assert proc.returncode == 2
    assert "graded by the judge double-model@" in proc.stderr and "--judge-base-url" in proc.stderr
    proc = _verify(
        run_dir, "--judge-base-url", "http://127.0.0.1:9/v1", "--judge-api-key-env", "DOUBLE_KEY"
    )
    assert proc.returncode == 2 and "is not reachable at http://127.0.0.1:9/v1" in proc.stderr


def test_custom_tasks_run_in_the_catalog_protocol(
    tmp_path: Path, private_score_cache: Path
) -> None:
    lines = (OWN / "tasks.jsonl").read_text().splitlines()
    graded = tmp_path / "graded.jsonl"
    graded.write_text("\n".join(lines[:4]) + "\n")  # tests and answer tasks
    out = tmp_path / "runs"
    with AgentAndJudgeDouble(answerer, search=False) as double:
        proc = _run(["--benchmark", "custom", "--tasks-file", str(graded), "--skills",
                     str(OWN / "skills"), "--partition-size", "4", "--access", "catalog",
                     "--judge-repeats", "3", "--no-report"], double.url, out)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "--judge-repeats: no task of this run is graded by the judge; not used" in proc.stderr
    run_dir = _run_dir(out)
    rows = {r["task_id"]: r for r in pq.read_table(run_dir / "transitions.parquet").to_pylist()}
    assert {t: (r["se_correct"], r["sd_correct"]) for t, r in rows.items()} == {
        "add": (True, False), "square": (True, True), "two-plus-two": (True, True),
        "half": (False, True),
    }  # fmt: skip
    se = next(t for t in pq.read_table(run_dir / "traces.parquet").to_pylist() if t["arm"] == "se")
    assert "<available_skills>" in se["messages"][0]["content"]


def test_report_json_carries_the_own_figures(custom_run) -> None:
    run_dir, _, _ = custom_run
    proc = subprocess.run(
        [*CLI, "report", str(run_dir), "--format", "json", "--resamples", "200"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    (cell,) = json.loads(proc.stdout)
    own = cell["own"]
    assert own["judge_noise"]["self_disagreement"] == pytest.approx(100 * 2 / 6)
    assert (own["cost"]["se_tokens"], own["cost"]["sd_tokens"]) == (36.0, 18.0)
    assert own["addresses_grader"] == {"se": 0, "sd": 0} and "per_skill" not in own


def test_an_interrupted_judged_run_resumes_without_redoing_pairs(
    tmp_path: Path, private_score_cache: Path
) -> None:
    out = tmp_path / "runs"
    args = ["--benchmark", "custom", "--tasks-file", str(OWN / "tasks.jsonl"), "--skills",
            str(OWN / "skills"), "--partition-size", "5", "--no-report"]  # fmt: skip
    with AgentAndJudgeDouble(answerer) as double:
        assert _run(args, double.url, out).returncode == 0
    run_dir = _run_dir(out)
    records = (run_dir / "records.jsonl").read_text().splitlines(keepends=True)
    kept = [r for r in records if json.loads(r)["task_id"] != "thanks"]
    (run_dir / "records.jsonl").write_text("".join(kept))  # the judged pair never finished
    env = {**os.environ, "DOUBLE_KEY": "k"}
    with AgentAndJudgeDouble(answerer) as moved:  # the judge moved: a neutral flag
        resume = [*CLI, "run", "--resume", str(run_dir), "--base-url", moved.url,
                  "--judge-base-url", moved.url, "--no-report"]  # fmt: skip
        proc = subprocess.run(resume, capture_output=True, text=True, timeout=600, env=env)
        judged = len(moved.judge_requests)
        refused = subprocess.run([*resume, "--judge-repeats", "5"], capture_output=True,
                                 text=True, timeout=600, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert judged == 2 * 2  # only the pending judged pair: two answers, two repeats
    tasks = [json.loads(r)["task_id"] for r in (run_dir / "records.jsonl").read_text().splitlines()]
    assert sorted(tasks) == ["add", "half", "square", "thanks", "two-plus-two"]
    assert refused.returncode != 0 and "--judge-repeats 5 (run: 2)" in refused.stderr

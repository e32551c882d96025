"""Fixtures shared by the board's provenance, bounds and browser tests."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from hf_skillfollow.schema import annotations_from_rows

VICTIM = {"cell_id": "cellV", "model": "org/victim", "skill_pool": "coding"}


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's headless Chromium through Playwright (never `playwright install`)."""
    from playwright.sync_api import sync_playwright

    from tests.test_space_browser import CHROMIUM, CHROMIUM_ARGS

    assert CHROMIUM.is_file(), f"{CHROMIUM} is missing: apt-get install -y chromium"
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def start_board(tmp: Path, sources: list[str], cache: str) -> tuple[subprocess.Popen, str]:
    """`hf-skillfollow leaderboard SOURCES` on a free 127.0.0.1 port (500 resamples, the
    start-up cache in `cache` or `off`), once it answers; its log is tmp/server.log."""
    from tests.test_space_client import _free_port

    port = _free_port()
    env = dict(os.environ, GRADIO_ANALYTICS_ENABLED="False", HF_HUB_OFFLINE="1",
               SKILLFOLLOW_BOARD_CACHE=cache)  # fmt: skip
    cmd = [sys.executable, "-m", "hf_skillfollow.cli", "leaderboard", *sources,
           "--port", str(port), "--no-discover", "--resamples", "500"]  # fmt: skip
    log = open(tmp / "server.log", "w")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert proc.poll() is None, (tmp / "server.log").read_text()[-3000:]
        try:
            with urllib.request.urlopen(url, timeout=2):
                break
        except OSError:
            time.sleep(0.2)
    return proc, url


def write_annotations(run_dir: Path, annotator: str, *, bad_column: bool = False) -> Path:
    """RUN_DIR/annotations.parquet labelling every S_call flip of the run (`bad_column`: with
    a column the schema does not know)."""
    rows = []
    for t in pq.read_table(run_dir / "transitions.parquet").to_pylist():
        if t["returned"] and t["se_correct"] != t["sd_correct"]:
            rows.append(
                {
                    "schema_version": 1, "run_id": t["run_id"], "cell_id": t["cell_id"],
                    "task_id": t["task_id"], "repeat_index": t["repeat_index"],
                    "annotator": annotator, "annotator_model": "m", "annotator_backend": "openai",
                    "prompt_hash": "h", "flip": "helpful" if t["se_correct"] else "harmful",
                    "label": "misapplied/overapplied", "rationale": "r", "failure": None,
                    "attempts": 1, "raw_output": "{}", "annotated_at": "2025-01-01T00:00:00Z",
                }
            )  # fmt: skip
    table = annotations_from_rows(rows)
    if bad_column:
        table = table.append_column("extra", pa.array(["x"] * table.num_rows))
    path = run_dir / "annotations.parquet"
    pq.write_table(table, path)
    return path


# --- issue 39: rows that differ only in what they measured --------------------------------
# (se_correct, sd_correct, returned) -> tasks, as in tests/_fixtures_hub.py.
#: Significant help: S_call b=9 c=1 a=2 (n_cond 12), S_skip a=4 d=4. RAE = 100·8/12 = +66.7,
#: McNemar p = 2·(1 + 10)/2^10 = 0.0215; lift = 11/12 − 4/8 = +41.7 (signs agree).
HELPS = {(True, False, True): 9, (False, True, True): 1, (True, True, True): 2,
         (True, True, False): 4, (False, False, False): 4}  # fmt: skip
#: Harm: S_call b=1 c=3 a=6 (n_cond 10), S_skip a=2 d=8. RAE = 100·(1−3)/10 = −20,
#: McNemar p = 2·5/16 = 0.625; lift = 7/10 − 2/10 = +50: a reportable sign disagreement.
HURTS = {(True, False, True): 1, (False, True, True): 3, (True, True, True): 6,
         (True, True, False): 2, (False, False, False): 8}  # fmt: skip
#: Too few retrievals to report: S_call b=1 c=3 a=2 (n_cond 6 < 10), S_skip a=2 d=12.
#: RAE = −33.3, lift = 3/6 − 2/14 = +35.7: the signs disagree, but the cell is not reportable.
#: 20 pairs, so `outcome_rows`' one errored pair is 5%, not error-heavy.
FEW = {(True, False, True): 1, (False, True, True): 3, (True, True, True): 2,
       (True, True, False): 2, (False, False, False): 12}  # fmt: skip
#: Never retrieved: S_skip a=5 b=3 c=1 d=11; RAE and McNemar p undefined.
NEVER = {(True, True, False): 5, (True, False, False): 3, (False, True, False): 1,
         (False, False, False): 11}  # fmt: skip
HELPER = "acme/helper-7b"
TASKS_A = "custom@file:tasks-a.jsonl+sha256.1111aaaa2222bbbb+graders.expectations"
TASKS_B = "custom@file:tasks-b.jsonl+sha256.3333cccc4444dddd+graders.expectations"


JUDGE = "acme/judge-70b@p1"
SELF_JUDGE = f"{HELPER}@p1"
EXPECTATION = "The answer names the function it defines"


def write_judged_traces(run_dir: Path, judge: str, *, fragile: bool) -> None:
    """traces.parquet of a judged run: every answer graded by `judge` on one expectation,
    two repeats; `fragile`: each verdict one disagreement away from the other (so every flip
    is one a single judge disagreement could explain), else unanimous."""
    import json

    from hf_skillfollow.schema import traces_from_rows
    from tests._fixtures_hub import trace_rows

    rows = trace_rows(pq.read_table(run_dir / "transitions.parquet").to_pylist())
    for row in rows:
        passed = bool(row["correct"])
        votes = [passed, not passed] if fragile else [passed, passed]
        record = {
            "judge": judge, "settings": {"repeats": 2}, "n_expectations": 1,
            "expectations": [EXPECTATION], "n_valid": 2, "majority": [passed], "ties": 0,
            "unanimous": [not fragile], "fragile": fragile,
            "repeats": [{"verdicts": [{"passed": v, "evidence": f"seen: {v}"}]} for v in votes],
        }  # fmt: skip
        row.update(grader="expectations", judge=judge, judge_verdicts=json.dumps(record))
    pq.write_table(traces_from_rows(rows), run_dir / "traces.parquet")


SKILL_EVALS_VERSION = "skill-evals@pool:coding+sha256.5555eeee6666ffff"
#: task id -> (se_correct, sd_correct, skills returned) of the skill-evals run (cellE).
#: prefix-sum alone on its 4 evals: b, b, c, a (alone n 4, b 2, c 1, RAE +25.0; 4/4 own);
#: binary-search never comes back on its 3 evals (0/3); two-pointer-pair-sum with
#: prefix-sum on its 2 (a, c; 2/2 own, never alone). S_call n_cond 6: b 2, c 2, a 2.
SKILL_EVAL_TASKS = {
    "prefix-sum/1": (True, False, ["prefix-sum"]),
    "prefix-sum/2": (True, False, ["prefix-sum"]),
    "prefix-sum/3": (False, True, ["prefix-sum"]),
    "prefix-sum/4": (True, True, ["prefix-sum", "prefix-sum"]),  # twice: still alone
    "binary-search/1": (False, False, []),
    "binary-search/2": (False, False, []),
    "binary-search/3": (False, False, []),
    "two-pointer-pair-sum/1": (True, True, ["two-pointer-pair-sum", "prefix-sum"]),
    "two-pointer-pair-sum/2": (False, True, ["two-pointer-pair-sum", "prefix-sum"]),
}


def write_skill_evals(run_dir: Path, **identity: object) -> Path:
    """A skill-evals run (cellE) with the outcomes of `SKILL_EVAL_TASKS`."""
    from hf_skillfollow.schema import transitions_from_rows
    from tests._rows import transition_row

    rows = [
        transition_row(
            run_id=run_dir.name,
            cell_id="cellE",
            benchmark="skill-evals",
            benchmark_version=SKILL_EVALS_VERSION,
            task_id=task,
            se_correct=se,
            sd_correct=sd,
            invoked=bool(got),
            returned=bool(got),
            n_calls=len(got),
            queries=[f"activate_skill({g})" for g in got],
            skills_returned=got,
            **identity,
        )  # fmt: skip
        for task, (se, sd, got) in SKILL_EVAL_TASKS.items()
    ]
    run_dir.mkdir(parents=True)
    pq.write_table(transitions_from_rows(rows), run_dir / "transitions.parquet")
    return run_dir


#: An imported Harbor cell (cellH, org/agent-model, two trials of each task):
#: task -> ((se, sd, returned) of trial 1, of trial 2). Trial 2 of t6 has an arm-integrity
#: violation, so it is left out: 11 pairs, S_call 8 (b 3, c 2, a 3), RAE = 100·1/8 = +12.5,
#: n_cond 8 (not reportable at 10); A/A flips over the 5 tasks with two trials: SE 0 of 5,
#: SD 1 of 5 (t2) = 20%; the detector decided every row (100%).
IMPORTED_TRIALS = {
    "t1": ((True, False, True), (True, False, True)),
    "t2": ((True, False, True), (True, True, True)),
    "t3": ((True, True, True), (True, True, True)),
    "t4": ((False, True, True), (False, True, True)),
    "t5": ((False, False, False), (False, False, False)),
    "t6": ((True, True, False), (True, True, False)),
}
IMPORTED = {"model": "org/agent-model", "benchmark": "skillsbench",
            "benchmark_version": "skillsbench@1.0", "access": "on-demand",
            "provenance": "imported:harbor", "harness": "harbor", "agent": "claude-code@2.0.1"}  # fmt: skip


def write_imported(root: Path) -> None:
    """Two imported runs of cellH (`IMPORTED_TRIALS`), one row an arm-integrity violation."""
    from hf_skillfollow.schema import transitions_from_rows
    from tests._rows import transition_row

    for trial in (0, 1):
        rows = []
        for task, outcomes in IMPORTED_TRIALS.items():
            se, sd, got = outcomes[trial]
            bad = trial == 1 and task == "t6"
            rows.append(
                transition_row(
                    run_id=f"run-h{trial + 1}", cell_id="cellH", repeat_index=trial, seed=trial,
                    task_id=task, se_correct=se, sd_correct=sd, invoked=got, returned=got,
                    n_calls=int(got), queries=["Skill(prefix-sum)"] if got else [],
                    skills_returned=["prefix-sum"] if got else [], detector="claude-code",
                    trigger_kind="instructions" if got else None,
                    arm_integrity="violation: SKILL.md read in the SD trial" if bad else "ok",
                    **IMPORTED,
                )
            )  # fmt: skip
        run_dir = root / f"run-h{trial + 1}"
        run_dir.mkdir(parents=True)
        pq.write_table(transitions_from_rows(rows), run_dir / "transitions.parquet")


def write_readable_sources(root: Path) -> list[str]:
    """Two sources whose rows differ only in what they measured (issue 39):

    `lab`: acme/helper-7b on mbppplus by search (HURTS, cellS) and by catalog (HELPS, cellK),
    on two custom task files (HELPS as cellJ1 on tasks-a, HURTS as cellJ2 on tasks-b) and on
    its pool's skill evals (cellE, `SKILL_EVAL_TASKS`);
    `community`: org/small-1b (FEW, cellN) and org/never-1b (NEVER, cellZ) on mbppplus, and
    an imported Harbor cell (cellH, `IMPORTED_TRIALS`)."""
    from tests._fixtures_hub import write_run_dir

    lab, community = root / "lab", root / "community"
    helper = {"model": HELPER, "skill_pool": "coding"}
    write_run_dir(lab, "run-s1", HURTS, cell_id="cellS", **helper)
    write_run_dir(lab, "run-k1", HELPS, cell_id="cellK", access="catalog", **helper)
    custom = {"benchmark": "custom", "skill_pool": "coding", "model": HELPER, "traces": False}
    j1 = write_run_dir(lab, "run-j1", HELPS, cell_id="cellJ1", benchmark_version=TASKS_A,
                       judged_by=JUDGE, **custom)  # fmt: skip
    j2 = write_run_dir(lab, "run-j2", HURTS, cell_id="cellJ2", benchmark_version=TASKS_B,
                       judged_by=SELF_JUDGE, **custom)  # fmt: skip
    write_judged_traces(j1, JUDGE, fragile=False)
    write_judged_traces(j2, SELF_JUDGE, fragile=True)
    write_skill_evals(lab / "run-e1", model=HELPER)
    write_run_dir(community, "run-n1", FEW, cell_id="cellN", model="org/small-1b")
    write_run_dir(community, "run-z1", NEVER, cell_id="cellZ", model="org/never-1b")
    write_imported(community)
    return [str(lab), str(community)]


# --- issue 38: errored pairs ---------------------------------------------------------------
#: 40 pairs, S_call b=12 c=2 a=6 (n_cond 20), S_skip a=10 d=10: RAE = 100·10/20 = +50.0.
FORTY = {(True, False, True): 12, (False, True, True): 2, (True, True, True): 6,
         (True, True, False): 10, (False, False, False): 10}  # fmt: skip
OUTAGE = "HTTP 503 from the provider: Service Unavailable"


def write_error_source(root: Path) -> str:
    """One source with two 40-pair cells of `FORTY`'s outcomes (rows written here, so the
    errors are exactly these): cellDOWN, every pair of which ended in a provider error in
    both arms (a model that failed every request: each empty answer scored wrong, so every
    pair is d, none retrieved), and cellONE, one pair of which errored in the SD arm
    (2.5%: reportable, RAE +50.0)."""
    from hf_skillfollow.schema import transitions_from_rows
    from tests._rows import transition_row

    def rows(run_id: str, cell_id: str, model: str, down: bool) -> list[dict]:
        out = []
        for (se, sd, got), n in FORTY.items():
            for _ in range(n):
                i = len(out)
                got = got and not down
                out.append(transition_row(
                    run_id=run_id, cell_id=cell_id, model=model, task_id=f"Mbpp/{i + 2}",
                    se_correct=se and not down, sd_correct=sd and not down, invoked=got,
                    returned=got, n_calls=int(got), queries=[f"query {i}"] if got else [],
                    skills_returned=["prefix-sum"] if got else [],
                    se_error=OUTAGE if down else None,
                    sd_error=OUTAGE if down or i == 7 else None,
                ))  # fmt: skip
        return out

    source = root / "errors"
    for run_id, cell_id, model, down in (("run-down", "cellDOWN", "org/down-7b", True),
                                         ("run-one", "cellONE", "org/flaky-7b", False)):  # fmt: skip
        run_dir = source / run_id
        run_dir.mkdir(parents=True)
        table = transitions_from_rows(rows(run_id, cell_id, model, down))
        pq.write_table(table, run_dir / "transitions.parquet")
    return str(source)

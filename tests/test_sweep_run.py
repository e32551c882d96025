"""Sweeps end to end against `ScriptedModelServerDouble` (tests/_model_double.py), an
OpenAI-compatible HTTP server standing in for the model provider; the runner, the skill
search, sandboxed scoring, the run store and the folder repo push are the real code.

Expected counts come from the double's script (one `search_skills` call then an answer on
SE, one answer on SD; 11 + 7 tokens per request) and from the sweep file, never from the
code under test. MATH-500 keeps scoring cheap; the data is the shared benchmark file.
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
from click.testing import CliRunner

from hf_skillfollow.cli import cli
from hf_skillfollow.tasks import load_tasks
from tests._http_double import Reply
from tests._model_double import ScriptedModelServerDouble

CLI = [sys.executable, "-m", "hf_skillfollow.cli"]
#: requests per pair (SE: search, answer; SD: answer) x tokens per request (11 + 7)
TOKENS_PER_PAIR = 3 * 18


def sweep_file(tmp_path: Path, url: str, math_file: Path, *, models: str | None = None,
               limit: int = 3, extra: str = "", name: str = "s.yaml") -> Path:  # fmt: skip
    models = models or "  - {name: M1, model: double-model}\n  - {name: M2, model: other-model}\n"
    text = (
        "name: t\n"
        "max_cells: 2\n"
        "retry: {attempts: 2, base_delay_s: 0.05, max_delay_s: 0.1}\n"
        f"model_defaults: {{backend: openai, base_url: '{url}', concurrency: 2}}\n"
        f"models:\n{models}"
        f"benchmarks:\n  - {{benchmark: math500, tasks_file: '{math_file}', limit: {limit}, partition_seeds: [42]}}\n"
        f"{extra}"
    )
    path = tmp_path / name
    path.write_text(text)
    return path


def invoke(*args: str) -> tuple[int, str]:
    out = CliRunner().invoke(cli, ["sweep", *args, "--plain"], catch_exceptions=False)
    return out.exit_code, out.output


def records(run_dir: Path) -> list[dict]:
    lines = (run_dir / "records.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def run_dirs(out: Path) -> list[Path]:
    return sorted(p for p in out.iterdir() if p.is_dir() and not p.name.startswith("."))


def test_a_sweep_runs_every_cell_to_the_exact_count(
    tmp_path: Path, math_file: Path, math_tasks: list
) -> None:
    with ScriptedModelServerDouble(math_tasks) as double:
        path = sweep_file(tmp_path, double.url, math_file, extra="conditions: [normal, filler]\n")
        code, output = invoke(str(path), "-o", str(tmp_path / "out"))
    assert code == 0, output
    dirs = run_dirs(tmp_path / "out")
    assert len(dirs) == 4  # 2 models x 2 conditions
    for d in dirs:
        manifest = json.loads((d / "manifest.json").read_text())
        ids = [r["task_id"] for r in records(d)]
        assert sorted(ids) == sorted(manifest["task_ids"]) and len(manifest["task_ids"]) == 3
        assert pq.read_table(d / "transitions.parquet").num_rows == 3
    assert double.requests == 4 * 3 * 3
    assert "cells 4/4 done, 0 running, 0 failed, 0 pending" in output
    assert f"{4 * 3 * TOKENS_PER_PAIR:,} tokens" in output
    # the same command again finds everything done and contacts nobody (the endpoint is part
    # of the cell: the same address, served again)
    with _at(ScriptedModelServerDouble(math_tasks), double.url) as again:
        path = sweep_file(tmp_path, again.url, math_file, extra="conditions: [normal, filler]\n")
        code, output = invoke(str(path), "-o", str(tmp_path / "out"))
    assert code == 0 and again.requests == 0 and "0 run(s) to do, 4 already done" in output


def _at(double: ScriptedModelServerDouble, url: str) -> ScriptedModelServerDouble:
    """`double`, listening at `url`'s port (a restarted endpoint at the same address)."""
    from http.server import ThreadingHTTPServer

    from tests._http_double import _handler

    double.server.server_close()
    double.server = ThreadingHTTPServer(("127.0.0.1", int(url.split(":")[2].split("/")[0])),
                                        _handler(double))  # fmt: skip
    double.server.daemon_threads = True
    double.url = url
    return double


def _comparable_manifest(run_dir: Path) -> dict:
    m = json.loads((run_dir / "manifest.json").read_text())
    for key in ("run_id", "created_at"):
        m.pop(key)
    return m


def _comparable_records(run_dir: Path) -> list[dict]:
    out = []
    for r in sorted(records(run_dir), key=lambda r: r["task_id"]):
        r["transition"].pop("run_id"), r["transition"].pop("created_at")
        for t in r["traces"]:
            t.pop("run_id"), t.pop("latency_s")
        out.append(r)
    return out


def test_each_cell_is_the_run_the_run_command_makes(
    tmp_path: Path, math_file: Path, math_tasks: list
) -> None:
    models = "  - {name: M1, model: double-model}\n"
    with ScriptedModelServerDouble(math_tasks) as double:
        path = sweep_file(tmp_path, double.url, math_file, models=models, extra="top_k: [2]\n")
        code, output = invoke(str(path), "-o", str(tmp_path / "sweep"))
        assert code == 0, output
        ran = CliRunner().invoke(cli, [
            "run", "--model", "double-model", "--base-url", double.url, "--concurrency", "2",
            "--benchmark", "math500", "--tasks-file", str(math_file), "--limit", "3",
            "--partition-seed", "42", "--top-k", "2", "-o", str(tmp_path / "run"), "--no-report",
        ], catch_exceptions=False)  # fmt: skip
        assert ran.exit_code == 0, ran.output
    (swept,) = run_dirs(tmp_path / "sweep")
    (alone,) = run_dirs(tmp_path / "run")
    assert _comparable_manifest(swept) == _comparable_manifest(alone)
    assert (
        _comparable_manifest(swept)["cell_id"]
        == json.loads((alone / "manifest.json").read_text())["cell_id"]
    )
    assert _comparable_records(swept) == _comparable_records(alone)
    a, b = (
        pq.read_table(d / "transitions.parquet").drop(["run_id", "created_at"])
        for d in (swept, alone)
    )
    assert a.sort_by("task_id").equals(b.sort_by("task_id"))


def test_kill_then_the_same_command_again_neither_redoes_nor_duplicates(
    tmp_path: Path, math_file: Path, math_tasks: list
) -> None:
    out = tmp_path / "out"
    with ScriptedModelServerDouble(math_tasks, latency_s=0.25) as double:
        path = sweep_file(tmp_path, double.url, math_file, limit=6)
        proc = subprocess.Popen([*CLI, "sweep", str(path), "-o", str(out), "--plain"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)  # fmt: skip
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            done = [
                d
                for d in (run_dirs(out) if out.exists() else [])
                if (d / "records.jsonl").is_file() and records(d)
            ]
            if len(done) == 2:
                break
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:] if proc.stderr else ""
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        before = {d: records(d) for d in run_dirs(out)}
        assert all(1 <= len(r) < 6 for r in before.values()), {
            d.name: len(r) for d, r in before.items()
        }
        requests_before = double.requests
        code, output = invoke(str(path), "-o", str(out))
        assert code == 0, output
    for d, old in before.items():
        new = records(d)
        assert new[: len(old)] == old  # finished pairs untouched
        ids = [r["task_id"] for r in new]
        assert len(ids) == len(set(ids)) == 6
    # only the missing pairs were asked for (a pair cut off mid-flight is asked for again)
    missing = sum(6 - len(r) for r in before.values())
    assert double.requests - requests_before == 3 * missing


class _DownAtFirst(ScriptedModelServerDouble):
    """The endpoint answers 503 to its first model-list checks, then works."""

    def __init__(self, tasks: list, down_for: int) -> None:
        super().__init__(tasks)
        self.down_for = down_for

    def models(self) -> Reply:
        if self.down_for > 0:
            self.down_for -= 1
            return Reply(status=503, body={"error": {"message": "warming up"}})
        return super().models()


def test_a_failing_cell_is_retried_and_a_dead_one_marked_failed_while_the_rest_go_on(
    tmp_path: Path, math_file: Path, math_tasks: list
) -> None:
    out = tmp_path / "out"
    with _DownAtFirst(math_tasks, down_for=1) as double:
        models = ("  - {name: Flaky, model: double-model}\n"
                  "  - {name: Dead, model: x, base_url: 'http://u:sekrit@127.0.0.1:9/v1'}\n")  # fmt: skip
        path = sweep_file(tmp_path, double.url, math_file, models=models)
        code, output = invoke(str(path), "-o", str(out))
    assert code == 1
    assert "retry  Flaky math500-42 r0: try 1 failed" in output and "503" in output
    assert "retry  Dead math500-42 r0: try 1 failed" in output
    assert "FAILED Dead math500-42 r0" in output and "cannot reach" in output
    assert "1 run(s) failed" in output
    flaky = next(d for d in run_dirs(out) if d.name.startswith("Flaky"))
    assert len(records(flaky)) == 3
    status = json.loads((out / "sweep-status.json").read_text())["jobs"]
    assert sorted(e["status"] for e in status.values()) == ["done", "failed"]
    dead = next(e for e in status.values() if e["status"] == "failed")
    assert dead["attempts"] == 2 and "cannot reach" in dead["reason"]
    assert "sekrit" not in output and "sekrit" not in (out / "sweep-status.json").read_text()
    code, plan = invoke(str(path), "-o", str(out), "--plan")
    assert code == 0 and "(last session: failed, " in plan and "done       3/3" in plan


def test_push_as_each_run_finishes_and_report_over_the_sweep(
    tmp_path: Path, math_file: Path, math_tasks: list
) -> None:
    out, repo = tmp_path / "out", tmp_path / "repo"
    with ScriptedModelServerDouble(math_tasks) as double:
        path = sweep_file(tmp_path, double.url, math_file)
        path.write_text(path.read_text().replace("max_cells: 2", "max_cells: 1"))
        code, output = invoke(
            str(path), "-o", str(out), "--push", "org/board", "--push-dry-run", str(repo)
        )
    assert code == 0, output
    lines = output.splitlines()
    done = [i for i, ln in enumerate(lines) if "] done   " in ln]
    pushed = [i for i, ln in enumerate(lines) if "] pushed " in ln]
    assert len(done) == len(pushed) == 2
    assert pushed[0] < done[1]  # the first run was on the board before the second finished
    run_ids = {json.loads((d / "manifest.json").read_text())["run_id"] for d in run_dirs(out)}
    published = {p.stem for p in (repo / "data" / "transitions").glob("*.parquet")}
    assert published == run_ids
    code, report = invoke(str(path), "-o", str(out), "--report")
    assert code == 0 and "report over 2 of the sweep's 2 runs" in report and "RAE" in report


def test_plan_counts_done_work_and_estimates_tokens_from_recorded_usage(
    tmp_path: Path, math_file: Path, math_tasks: list
) -> None:
    out = tmp_path / "out"
    with ScriptedModelServerDouble(math_tasks) as double:
        one = sweep_file(
            tmp_path, double.url, math_file, models="  - {name: M1, model: double-model}\n"
        )
        assert invoke(str(one), "-o", str(out))[0] == 0
    grown = sweep_file(tmp_path, double.url, math_file, limit=3, name="g.yaml",
                       models="  - {name: M1, model: double-model}\n  - {name: M2, model: m2}\n")  # fmt: skip
    code, plan = invoke(str(grown), "-o", str(out), "--plan", "--json")
    assert code == 0
    data = json.loads(plan)
    assert [j["status"] for j in data["jobs"]] == ["done", "pending"]
    assert data["done_pairs"] == 3 and data["pairs"] == 6 and data["conversations"] == 12
    assert data["estimated_tokens"] == 3 * TOKENS_PER_PAIR


# --- issue 38, item 2: a cell of errors is not a measurement


class _Refusing(ScriptedModelServerDouble):
    """Answers chat requests for the tasks in `refused` with an error, the others normally.

    `kind` "outage": HTTP 429 with a Retry-After past the backend's patience (the provider is
    down; the backend gives up at once, a transport error); "overflow": HTTP 400 "maximum
    context length" (the conversation outgrew the model: part of the measurement); "all":
    HTTP 500 to every request is not used (its retries take seconds), HTTP 404 "no such
    model" stands for a model that answers nothing."""

    def __init__(self, tasks: list, kind: str, refused: set[str] | None = None) -> None:
        super().__init__(tasks)
        self.kind, self.refused = kind, refused

    def answer(self, raw: bytes) -> Reply:
        body = json.loads(raw or b"{}")
        prompt = next(
            (m["content"] for m in body.get("messages", []) if m.get("role") == "user"), ""
        )
        task = self.by_prompt[prompt]
        if self.refused is not None and task.task_id not in self.refused:
            return super().answer(raw)
        self.requests += 1
        if self.kind == "outage":
            return Reply(status=429, headers={"retry-after": "100000"},
                         body={"error": {"message": "provider overloaded"}})  # fmt: skip
        if self.kind == "overflow":
            return Reply(status=400, body={"error": {"message": "This model's maximum context "
                                                     "length is 8192 tokens"}})  # fmt: skip
        return Reply(status=404, body={"error": {"message": "no endpoint serves this model"}})


def test_a_model_failing_every_request_is_error_heavy_not_a_zero_effect(
    tmp_path: Path, math_file: Path, math_tasks: list
) -> None:
    """On main this cell was "done", exited 0, and reported `OAE +0.0 [+0.0, +0.0]`, "the model
    never retrieved a skill"."""
    out = tmp_path / "out"
    with _Refusing(math_tasks, "dead") as double:
        path = sweep_file(
            tmp_path, double.url, math_file, models="  - {name: M1, model: double-model}\n"
        )
        code, output = invoke(str(path), "-o", str(out))
    assert code == 1, output
    assert "1 run(s) error-heavy (more than 5% of pairs ended in a provider error: " in output
    assert "M1 math500-42 r0 (100%)" in output
    status = json.loads((out / "sweep-status.json").read_text())["jobs"]
    assert [e["errored_pairs"] for e in status.values()] == [3]
    code, report = invoke(str(path), "-o", str(out), "--report")
    assert code == 0 and "error-heavy" in report, report
    md = CliRunner().invoke(cli, ["report", str(out), "--format", "markdown", "--resamples", "50"])
    (row,) = [ln for ln in md.output.splitlines() if ln.startswith("| double-model")]
    assert "| 100.0% (3) |" in row and row.count("not reported: 100.0% of pairs errored") == 2
    assert "never retrieved a skill" not in row and "+0.0" not in row
    from hf_skillfollow.metrics import compute_cells
    from hf_skillfollow.sources import read_transitions

    (cell,) = compute_cells(read_transitions(out), resamples=50).to_dict("records")
    assert (cell["n_errored"], cell["error_rate"], cell["error_heavy"], cell["reportable"]) == (
        3, 100.0, True, False,
    )  # fmt: skip
    flagged = compute_cells(read_transitions(out), resamples=50, max_error_rate=100.0)
    assert not flagged["error_heavy"].iloc[0]  # asked for: reported


def test_errored_pairs_of_an_outage_run_again_on_resume_and_overflows_do_not(
    tmp_path: Path, math_file: Path, math_tasks: list
) -> None:
    """On main error rows of a short outage stayed scored incorrect: resume never retried."""
    out = tmp_path / "out"
    ids = [t.task_id for t in load_tasks("math500", math_file)[0]]
    models = "  - {name: M1, model: double-model}\n  - {name: M2, model: other-model}\n"
    with _Refusing(math_tasks, "outage", refused=set(ids)) as down:
        path = sweep_file(tmp_path, down.url, math_file, models=models.split("  - {name: M2")[0])
        code, output = invoke(str(path), "-o", str(out))
    assert code == 1 and "error-heavy" in output
    (run,) = run_dirs(out)
    assert all(r["transition"]["sd_error"].startswith("HTTP 429") for r in records(run))
    code, plan = invoke(str(path), "-o", str(out), "--plan")
    assert "partial" in plan and "[3 errored pair(s), 3 to retry]" in plan
    with _at(ScriptedModelServerDouble(math_tasks), down.url) as up:
        code, output = invoke(str(path), "-o", str(out))
    assert code == 0, output
    assert up.requests == 3 * 3  # the three pairs, asked for again
    fresh = records(run)
    assert len(fresh) == 3 and not any(
        r["transition"]["se_error"] or r["transition"]["sd_error"] for r in fresh
    )
    kept = (run / "records.rejected").read_text().splitlines()
    assert len(kept) == 3 and all("HTTP 429" in line for line in kept)  # nothing lost
    # a context overflow is part of the measurement: kept on resume unless asked
    other = tmp_path / "other"
    with _Refusing(math_tasks, "overflow") as full:
        path = sweep_file(tmp_path, full.url, math_file, name="o.yaml",
                          models=models.split("  - {name: M2")[0])  # fmt: skip
        invoke(str(path), "-o", str(other))
        asked = full.requests
        code, output = invoke(str(path), "-o", str(other))
        assert full.requests == asked and code == 1  # nothing run again; still error-heavy
        assert "0 run(s) to do, 1 already done" in output
        code, output = invoke(str(path), "-o", str(other), "--retry-errors", "all")
        assert full.requests > asked and "run(s) to do" in output


class _PushFails:
    """Stands in for the Hub upload (huggingface.co cannot be written from here)."""

    def __call__(self, *args: object, **kwargs: object) -> None:
        raise OSError("the Hub refused the upload (double)")


def test_a_failed_push_is_a_failed_exit_status(
    tmp_path: Path, math_file: Path, math_tasks: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 5: on main a push that failed left exit status 0."""
    import hf_skillfollow.hub

    monkeypatch.setattr(hf_skillfollow.hub, "push_runs", _PushFails())
    with ScriptedModelServerDouble(math_tasks) as double:
        path = sweep_file(
            tmp_path, double.url, math_file, models="  - {name: M1, model: double-model}\n"
        )
        code, output = invoke(str(path), "-o", str(tmp_path / "out"), "--push", "org/board")
    assert code == 1 and "1 push(es) failed" in output and "the Hub refused" in output

"""`hf-skillfollow verify` end to end on real runs: MATH-500 and MBPP+.

The runs are real paired runs (the runner, the openai backend over HTTP, skill retrieval,
sandboxed scoring, the run store) against `ScriptedModelServerDouble`, an OpenAI-compatible
HTTP server standing in for the model provider (tests/_model_double.py), so that which
answers are right is known in advance; pushing into a folder repo, flipping a published bit
and re-scoring are all the real code. The expected verdicts come from the double's script (a
reference answer or canonical solution is right, a wrong constant or a stub is wrong), never
from the code under test. The commands run in-process through click (one check runs the
real process for its exit status); the Space runs as its own server process.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from hf_skillfollow.cli import cli as main_cli
from hf_skillfollow.scoring._version import SCORER_VERSION
from hf_skillfollow.tasks import load_tasks
from tests._model_double import ScriptedModelServerDouble, bucket

CLI = [sys.executable, "-m", "hf_skillfollow.cli"]


class Result:
    def __init__(self, code: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = code, stdout, stderr


def cli(*args: str) -> Result:
    out = CliRunner().invoke(main_cli, list(args), catch_exceptions=False)
    return Result(out.exit_code, out.stdout, out.stderr)


def real_run(out: Path, url: str, benchmark: str, tasks_file: Path, **settings: object) -> Path:
    """One paired run through the runner, exactly as `hf-skillfollow run` drives it."""
    from hf_skillfollow.backends import open_backend
    from hf_skillfollow.config import RunConfig
    from hf_skillfollow.runner import execute, plan_new_run

    config = RunConfig(backend="openai", model="double-model", base_url=url, benchmark=benchmark,
                       tasks_file=str(tasks_file), concurrency=4, **settings)  # fmt: skip
    plan = plan_new_run(config, out)

    async def go() -> None:
        async with open_backend(config) as backend:
            await execute(plan, backend)

    asyncio.run(go())
    plan.store.write_tables()
    return plan.store.root


def verify(*args: str, state: Path) -> tuple[int, dict, str]:
    proc = cli("verify", *args, "--format", "json", "--state", str(state))
    data = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}
    return proc.returncode, data, proc.stderr


@pytest.fixture(scope="module")
def math_runs(tmp_path_factory, data_dir):
    """Three real MATH-500 runs of 8 tasks in three cells (partition seeds 42, 7, 3)."""
    root = tmp_path_factory.mktemp("math-runs")
    tasks_file = data_dir / "math500.jsonl"
    tasks, _ = load_tasks("math500", tasks_file)
    with ScriptedModelServerDouble(tasks) as double:
        runs = [
            real_run(root, double.url, "math500", tasks_file, partition_size=8, partition_seed=seed)
            for seed in (42, 7, 3)
        ]
    return runs


def _rows(run_dir: Path) -> list[dict]:
    return pq.read_table(run_dir / "transitions.parquet").to_pylist()


def test_untouched_run_verifies_and_the_double_scripted_both_verdicts(math_runs, tmp_path):
    run = math_runs[0]
    rows = _rows(run)
    # the double's script decides every bit: the run recorded exactly that
    for r in rows:
        assert r["se_correct"] == (bucket(r["task_id"], "se") != 0)
        assert r["sd_correct"] == (bucket(r["task_id"], "sd") != 0)
    assert {r["se_correct"] for r in rows} | {r["sd_correct"] for r in rows} == {True, False}
    code, data, err = verify(
        str(run), "--record-dir", str(tmp_path / "rec"), state=tmp_path / "s.jsonl"
    )
    assert code == 0, err
    assert data["rows_checked"] == data["rows_agreeing"] == 8 and data["disagreements"] == []
    assert data["cells"] == [{"cell_id": rows[0]["cell_id"], "benchmark": "math500", "rows_checked": 8,
                              "rows_agreeing": 8, "rows_without_traces": 0}]  # fmt: skip
    assert data["scorer_version"] == SCORER_VERSION and data["toolkit_version"]
    assert list(data["benchmark_releases"]) == [rows[0]["benchmark_version"]]
    (record,) = (tmp_path / "rec").glob("*.parquet")
    table = pq.read_table(record)
    assert table.num_rows == 8 and set(table["verified_by"].to_pylist()) == {data["verified_by"]}


def _flip(parquet: Path, task_id: str) -> None:
    table = pq.read_table(parquet)
    mask = pc.equal(table["task_id"], task_id)
    flipped = pc.if_else(mask, pc.invert(table["se_correct"]), table["se_correct"])
    i = table.schema.get_field_index("se_correct")
    pq.write_table(table.set_column(i, table.schema.field(i), flipped), parquet)


def _push(*paths: Path, folder: Path) -> None:
    proc = cli("push", *map(str, paths), "--repo", "org/verify-test", "--dry-run", str(folder))
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope="module")
def flipped_repo(math_runs, tmp_path_factory):
    """A folder repo of the three runs (the third without traces) with one se_correct flipped."""
    tmp = tmp_path_factory.mktemp("flipped")
    third = tmp / math_runs[2].name
    shutil.copytree(math_runs[2], third)
    (third / "traces.parquet").unlink()
    folder = tmp / "repo"
    _push(math_runs[0], math_runs[1], third, folder=folder)
    run_id = math_runs[0].name
    target = sorted(_rows(math_runs[0]), key=lambda r: r["task_id"])[3]
    _flip(folder / "data" / "transitions" / f"{run_id}.parquet", target["task_id"])
    return folder, run_id, target


def test_flipped_bit_is_named_exactly_and_exits_1(flipped_repo, math_runs, tmp_path):
    folder, run_id, target = flipped_repo
    state = tmp_path / "s.jsonl"
    code, data, err = verify(str(folder), "--record-dir", str(tmp_path / "rec"), state=state)
    assert code == 1, err
    assert data["disagreements"] == [
        {"run_id": run_id, "cell_id": target["cell_id"], "task_id": target["task_id"], "arm": "se",
         "recorded": not target["se_correct"], "rescored": target["se_correct"],
         "reason": data["disagreements"][0]["reason"]}
    ]  # fmt: skip
    by_run = {r["run_id"]: r for r in data["runs"]}
    assert (by_run[run_id]["rows_checked"], by_run[run_id]["rows_agreeing"]) == (8, 7)
    assert (
        by_run[math_runs[1].name]["rows_checked"],
        by_run[math_runs[1].name]["rows_agreeing"],
    ) == (8, 8)
    assert (
        by_run[math_runs[2].name]["rows_checked"],
        by_run[math_runs[2].name]["rows_without_traces"],
    ) == (0, 8)
    # the human-readable forms name the same row; the real process exits with status 1
    table = subprocess.run([*CLI, "verify", str(folder), "--state", str(state), "--no-record"],
                           capture_output=True, text=True, timeout=600)  # fmt: skip
    assert table.returncode == 1 and target["task_id"] in table.stdout and run_id in table.stdout
    markdown = cli(
        "verify", str(folder), "--state", str(state), "--no-record", "--format", "markdown"
    )
    task = target["task_id"].replace("_", "\\_")  # Markdown-escaped (docs/design.md)
    assert f"| {run_id} | {task} | se |" in markdown.stdout


@pytest.mark.slow
def test_resume_rescored_nothing_twice_and_survives_a_torn_state(math_runs, tmp_path):
    state = tmp_path / "s.jsonl"
    code, first, _ = verify(str(math_runs[1]), "--no-record", state=state)
    assert code == 0 and first["answers_rescored"] > 3
    code, again, _ = verify(str(math_runs[1]), "--no-record", state=state)
    assert code == 0 and again["answers_rescored"] == 0 and again["rows_agreeing"] == 8
    lines = state.read_text().splitlines(keepends=True)
    state.write_text("".join(lines[:3]) + lines[3][:10])  # killed mid-write
    code, resumed, _ = verify(str(math_runs[1]), "--no-record", state=state)
    assert code == 0 and resumed["answers_rescored"] == first["answers_rescored"] - 3


def test_refuses_another_benchmark_release(math_runs, tmp_path, data_dir):
    other = tmp_path / "math500.jsonl"
    lines = (data_dir / "math500.jsonl").read_text().splitlines()
    row = json.loads(lines[0])
    row["answer"] = "42"
    other.write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n")
    code, data, err = verify(str(math_runs[0]), "--tasks-file", f"math500={other}", "--no-record",
                             state=tmp_path / "s.jsonl")  # fmt: skip
    recorded = _rows(math_runs[0])[0]["benchmark_version"]
    assert code == 2 and data == {}
    assert (
        f"benchmark release {recorded} is not available here" in err
        and "--tasks-file math500=" in err
    )
    assert not (tmp_path / "s.jsonl").exists() or (tmp_path / "s.jsonl").read_text() == ""


def test_refuses_another_scorer_version(math_runs, tmp_path):
    run = tmp_path / math_runs[0].name
    shutil.copytree(math_runs[0], run)
    traces = pq.read_table(run / "traces.parquet")
    details = [
        json.dumps({**json.loads(d), "scorer_version": "0"})
        for d in traces["scorer_details"].to_pylist()
    ]
    i = traces.schema.get_field_index("scorer_details")
    pq.write_table(
        traces.set_column(i, traces.schema.field(i), pa.array(details)), run / "traces.parquet"
    )
    code, _, err = verify(str(run), "--no-record", state=tmp_path / "s.jsonl")
    assert code == 2
    assert "scored with scorer version 0" in err
    assert f"this toolkit has scorer version {SCORER_VERSION}" in err


def test_bad_sources_exit_2_with_the_name(math_runs, tmp_path):
    code, _, err = verify(str(tmp_path / "nope"), state=tmp_path / "s.jsonl")
    assert code == 2 and str(tmp_path / "nope") in err
    bare = tmp_path / "bare"
    shutil.copytree(math_runs[0], bare)
    (bare / "traces.parquet").unlink()
    code, _, err = verify(str(bare), state=tmp_path / "s.jsonl")
    assert code == 2 and "nothing to verify" in err


@pytest.mark.slow
def test_mbpp_code_benchmark_verifies(tmp_path, data_dir, private_score_cache):
    tasks_file = data_dir / "mbppplus-v0.1.0.jsonl"
    tasks, _ = load_tasks("mbppplus", tasks_file)
    with ScriptedModelServerDouble(tasks) as double:
        run = real_run(
            tmp_path, double.url, "mbppplus", tasks_file, partition_size=4, partition_seed=5
        )
    rows = _rows(run)
    for r in rows:  # the canonical solution passes, the stub fails
        assert r["se_correct"] == (bucket(r["task_id"], "se") != 0)
        assert r["sd_correct"] == (bucket(r["task_id"], "sd") != 0)
    code, data, err = verify(str(run), "--no-record", state=tmp_path / "s.jsonl")
    assert code == 0, (err, data.get("disagreements"))
    assert data["rows_checked"] == data["rows_agreeing"] == 4
    _flip(run / "transitions.parquet", rows[0]["task_id"])
    code, data, err = verify(str(run), "--no-record", state=tmp_path / "s.jsonl")
    assert code == 1 and [(d["task_id"], d["arm"]) for d in data["disagreements"]] == [
        (rows[0]["task_id"], "se")
    ]
    assert data["answers_rescored"] == 0  # the verdicts came from the state file


def _start_leaderboard(source: Path, tmp: Path):
    import os
    import socket
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, GRADIO_ANALYTICS_ENABLED="False", HF_HUB_OFFLINE="1")
    log = open(tmp / "server.log", "w")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(
        [*CLI, "leaderboard", str(source), "--port", str(port), "--no-discover", "--resamples", "200"],
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"leaderboard exited: {(tmp / 'server.log').read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise AssertionError(f"leaderboard did not start: {(tmp / 'server.log').read_text()[-3000:]}")


@pytest.fixture(scope="module")
def published(flipped_repo, tmp_path_factory):
    """The flipped repo after `verify` and `push` of its verification record."""
    folder, run_id, target = flipped_repo
    tmp = tmp_path_factory.mktemp("published")
    code, _, err = verify(str(folder), "--record-dir", str(tmp / "rec"), state=tmp / "s.jsonl")
    assert code == 1, err
    records = sorted((tmp / "rec").glob("*.parquet"))
    assert len(records) == 2  # one per verified run; the run without traces has none
    _push(*records, folder=folder)
    return folder, run_id, target


def test_card_marks_the_cells_and_lists_the_disagreeing_row(published, math_runs):
    folder, run_id, target = published
    card = (folder / "README.md").read_text()
    assert "config_name: verifications" in card
    rows = [line for line in card.splitlines() if line.startswith("| ") and ", 8 tasks |" in line]
    marks = sorted(line.rsplit("|", 2)[1].strip() for line in rows)
    assert marks == ["not re-scored", "✓ 8/8", "✗ 7/8"]
    published_bit = "pass" if not target["se_correct"] else "fail"
    rescored_bit = "pass" if target["se_correct"] else "fail"
    task = target["task_id"].replace("_", "\\_")  # Markdown-escaped (docs/design.md)
    assert f"| `{run_id}` | {task} | se | {published_bit} | {rescored_bit} |" in card
    # the record is append-only: pushing it again adds nothing
    again = sorted((folder / "data" / "verifications").glob("*.parquet"))
    proc = cli("push", *map(str, again), str(math_runs[1]), "--repo", "org/verify-test",
               "--dry-run", str(folder))  # fmt: skip
    assert proc.returncode == 0 and "nothing new to add" in proc.stdout, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def space(published, tmp_path_factory):
    from gradio_client import Client

    proc, url = _start_leaderboard(published[0], tmp_path_factory.mktemp("space"))
    try:
        yield Client(url, verbose=False), published
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _cells(client, rescored_only: bool) -> list[dict]:
    show = ["non-reportable cells"] + (["re-scored only"] if rescored_only else [])
    return client.predict([], [], [], "", "5", show, "rae:desc", api_name="/cells")


@pytest.mark.slow
def test_space_marks_the_flipped_cell_and_lists_the_row(space, math_runs):
    client, (folder, run_id, target) = space
    by_cell = {r["cell_id"]: r["rescored"] for r in _cells(client, rescored_only=False)}
    cells = [_rows(run)[0]["cell_id"] for run in math_runs]
    assert [by_cell[c] for c in cells] == ["✗ 7/8", "✓ 8/8", "not re-scored"]
    assert sorted(r["cell_id"] for r in _cells(client, rescored_only=True)) == sorted(cells[:2])
    # the page's table shows the same marks
    _, table, _ = client.predict([], [], [], "", "5", ["non-reportable cells"], "rae:desc",
                                 api_name="/refresh")  # fmt: skip
    assert "✗ 7/8" in table and "✓ 8/8" in table and "not re-scored" in table
    header = client.predict(cells[0], api_name="/cell")[0]
    published_bit = "pass" if not target["se_correct"] else "fail"
    rescored_bit = "pass" if target["se_correct"] else "fail"
    row = f"<tr><td>{target['task_id']}</td><td>{run_id}</td><td>SE</td><td>{published_bit}</td><td>{rescored_bit}</td>"
    assert "✗ 7/8" in header and row in header
    assert header.count("<td>SE</td>") + header.count("<td>SD</td>") == 1
    assert "✓ 8/8" in client.predict(cells[1], api_name="/cell")[0]
    assert "not re-scored" in client.predict(cells[2], api_name="/cell")[0]


# ---------------------------------------------------------------- hostile run ids and folders


def _set_column(parquet: Path, name: str, value: str) -> None:
    table = pq.read_table(parquet)
    i = table.schema.get_field_index(name)
    column = pa.array([value] * table.num_rows, table.schema.field(i).type)
    pq.write_table(table.set_column(i, table.schema.field(i), column), parquet)


def _state_is_empty(state: Path) -> bool:
    return not state.exists() or state.read_text() == ""


@pytest.mark.parametrize("run_id", ["../escaped", "a/b", "nul\x00byte", "back\\slash"])
def test_a_run_id_that_cannot_name_a_record_is_refused_before_any_scoring(
    math_runs, tmp_path, run_id
):
    run = tmp_path / "run"
    shutil.copytree(math_runs[0], run)
    for name in ("transitions.parquet", "traces.parquet"):
        _set_column(run / name, "run_id", run_id)
    state = tmp_path / "s.jsonl"
    code, data, err = verify(str(run), state=state)
    assert code == 2 and data == {}, err
    assert repr(run_id) in err and "--no-record" in err and str(run) in err
    assert _state_is_empty(state)  # refused before the first answer was scored
    assert not list(tmp_path.rglob("*.parquet.tmp")) and not (tmp_path / "escaped").exists()
    code, data, err = verify(str(run), "--no-record", state=state)  # rows still checkable
    assert code == 0 and data["rows_agreeing"] == 8, err


def test_a_planted_verifications_symlink_is_never_followed(math_runs, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(math_runs[0], run)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (run / "verifications").symlink_to(elsewhere, target_is_directory=True)
    state = tmp_path / "s.jsonl"
    code, _, err = verify(str(run), state=state)
    assert code == 2 and "is a symbolic link" in err and str(run / "verifications") in err
    assert list(elsewhere.iterdir()) == [] and _state_is_empty(state)
    (run / "verifications").unlink()  # the plain folder works
    code, _, err = verify(str(run), state=state)
    assert code == 0 and len(list((run / "verifications").glob("*.parquet"))) == 1, err


def test_a_symlink_planted_after_the_check_is_not_followed_either(math_runs, tmp_path):
    from hf_skillfollow.verify._write import _write_new

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "verifications").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ValueError, match="not a plain folder"):
        _write_new(tmp_path / "verifications", "r.parquet", b"x")
    assert list(elsewhere.iterdir()) == []
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "r.parquet").symlink_to(elsewhere / "target")
    with pytest.raises(FileExistsError):
        _write_new(tmp_path / "plain", "r.parquet", b"x")
    assert list(elsewhere.iterdir()) == []


def test_strict_fails_unless_every_row_was_rescored_and_the_summary_counts_them(
    math_runs, tmp_path
):
    bare = tmp_path / math_runs[2].name
    shutil.copytree(math_runs[2], bare)
    (bare / "traces.parquet").unlink()
    state = tmp_path / "s.jsonl"
    sources = [str(math_runs[1]), str(bare)]
    plain = cli("verify", *sources, "--state", str(state), "--no-record")
    assert plain.returncode == 0, plain.stderr
    assert "8/8 rows agree (all agree); 8 of 16 row(s) not re-scored (no traces)" in plain.stdout
    strict = cli("verify", *sources, "--state", str(state), "--no-record", "--strict")
    assert strict.returncode == 3, strict.stderr
    assert "8 of 16 row(s) not re-scored" in strict.stdout
    whole = cli("verify", str(math_runs[1]), "--state", str(state), "--no-record", "--strict")
    assert whole.returncode == 0 and "0 of 8 row(s) not re-scored" in whole.stdout


def test_markup_and_escape_sequences_in_ids_are_shown_as_text(math_runs, tmp_path):
    from tests._payloads import TERMINAL_FORBIDDEN

    run = tmp_path / "run"
    shutil.copytree(math_runs[0], run)
    cell_id = "[/] [bold red]FAKE[/bold red] \x1b]0;title\x07\x1b[2J"
    _set_column(run / "transitions.parquet", "cell_id", cell_id)
    state = tmp_path / "s.jsonl"
    out = cli("verify", str(run), "--state", str(state))
    assert out.returncode == 0, out.stderr  # the record is written, the exit status is honest
    assert "[/] [bold red]FAKE[/bold red]" in out.stdout
    assert not [ch for ch in TERMINAL_FORBIDDEN if ch in out.stdout]
    assert len(list((run / "verifications").glob("*.parquet"))) == 1
    markdown = cli("verify", str(run), "--state", str(state), "--no-record", "--format", "markdown")
    assert "\\[/\\] \\[bold red\\]FAKE\\[/bold red\\]" in markdown.stdout

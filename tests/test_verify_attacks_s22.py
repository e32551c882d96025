"""`hf-skillfollow verify` against hostile published runs (session 22).

Everything in a published run is its publisher's: these tests take a real run (the runner,
the openai backend over HTTP, sandboxed scoring, the run store, against
`ScriptedModelServerDouble` standing in for the model provider, as tests/test_verify.py does)
or a real judged run (tests/test_own_run.py's `AgentAndJudgeDouble` standing in for the model
and the judge), change the bytes a publisher controls, and run the real `verify` command.
"""

from __future__ import annotations

import json
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from hf_skillfollow.cli import cli as main_cli
from hf_skillfollow.tasks import load_tasks
from tests._model_double import ScriptedModelServerDouble
from tests.test_verify import real_run


def verify(*args: str) -> tuple[int, str, str]:
    out = CliRunner().invoke(main_cli, ["verify", *args], catch_exceptions=False)
    return out.exit_code, out.stdout, out.stderr


@pytest.fixture(scope="module")
def math_run(tmp_path_factory, data_dir) -> Path:
    """One real MATH-500 run of 4 tasks."""
    root = tmp_path_factory.mktemp("math-run")
    tasks_file = data_dir / "math500.jsonl"
    tasks, _ = load_tasks("math500", tasks_file)
    with ScriptedModelServerDouble(tasks) as double:
        return real_run(
            root, double.url, "math500", tasks_file, partition_size=4, partition_seed=11
        )


def _copy(run: Path, to: Path) -> Path:
    shutil.copytree(run, to)
    return to


def _keep_tasks(run: Path, task_ids: list[str]) -> None:
    for name in ("transitions.parquet", "traces.parquet"):
        table = pq.read_table(run / name)
        pq.write_table(table.filter(pc.is_in(table["task_id"], pa.array(task_ids))), run / name)


def _records(folder: Path) -> list[Path]:
    return sorted((folder / "verifications").glob("*.parquet"))


# ------------------------------------------------------------- one run id in two sources


def test_a_run_id_claimed_by_two_sources_is_refused_not_recorded_in_one_of_them(math_run, tmp_path):
    """Before: `verify A/run B/run`, where B holds other tasks under A's run id, passed the
    (run_id, task_id) check and wrote ONE record of all four rows into B's run directory
    (the last source's folder): A's rows recorded in the folder of whoever claimed A's id."""
    tasks = sorted(pq.read_table(math_run / "transitions.parquet")["task_id"].to_pylist())
    a = _copy(math_run, tmp_path / "a" / math_run.name)
    b = _copy(math_run, tmp_path / "b" / math_run.name)
    _keep_tasks(a, tasks[:2])
    _keep_tasks(b, tasks[2:])
    code, out, err = verify(str(a), str(b), "--state", str(tmp_path / "s.jsonl"))
    assert code == 2, out + err
    assert f"run_id {math_run.name!r} is in both {a} and {b}" in err
    assert _records(a) == [] and _records(b) == []
    assert not (tmp_path / "s.jsonl").exists()  # refused before anything was scored
    # each on its own verifies, and each record holds its own rows only
    for run, own in ((a, tasks[:2]), (b, tasks[2:])):
        code, out, err = verify(str(run), "--state", str(tmp_path / "s.jsonl"))
        assert code == 0, out + err
        (record,) = _records(run)
        assert sorted(pq.read_table(record)["task_id"].to_pylist()) == own


# ------------------------------------------------------------- hostile bytes in the fields


def _set_trace(run: Path, column: str, value: object, row: int = 0) -> None:
    table = pq.read_table(run / "traces.parquet")
    rows = table.to_pylist()
    rows[row][column] = value
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), run / "traces.parquet")


def test_scorer_details_nested_past_the_recursion_limit_is_one_error_naming_the_field(
    math_run, tmp_path
):
    """Before: a trace whose `scorer_details` is 200,000 `[` (200 KB) made `verify` end in a
    RecursionError traceback from `json.loads` (exit 1, no message of its own)."""
    run = _copy(math_run, tmp_path / "run")
    _set_trace(run, "scorer_details", "[" * 200_000)
    first = pq.read_table(run / "traces.parquet").slice(0, 1).to_pylist()[0]
    code, out, err = verify(str(run), "--state", str(tmp_path / "s.jsonl"))
    assert code == 2, out + err
    assert "Traceback" not in err and "RecursionError" not in err
    assert (
        f"{run}: the traces of run {first['run_id']!r}, task {first['task_id']!r}, arm "
        f"{first['arm']!r}: scorer_details is JSON nested too deeply to read"
    ) in err
    assert _records(run) == []


def test_a_string_that_is_not_utf8_is_one_error_naming_the_file(math_run, tmp_path):
    """Parquet keeps whatever bytes a writer puts in a string column. Before: a `cell_id` of
    b'\\xff\\xfe' gave `cannot verify: 'utf-8' codec can't decode byte 0xff in position 0:
    invalid start byte`, naming neither the source nor the file."""
    run = _copy(math_run, tmp_path / "run")
    table = pq.read_table(run / "transitions.parquet")
    i = table.schema.get_field_index("cell_id")
    bad = pa.array([b"\xff\xfe cell"] * table.num_rows, pa.binary()).view(pa.string())
    pq.write_table(table.set_column(i, table.schema.field(i), bad), run / "transitions.parquet")
    code, out, err = verify(str(run), "--state", str(tmp_path / "s.jsonl"))
    assert code == 2, out + err
    assert (
        f"cannot verify: {run}: transitions: a string column holds bytes that are not UTF-8" in err
    )
    assert _records(run) == []


# ------------------------------------------------------------- judged rows: the recorded judge

OWN = Path(__file__).parent / "own_tasks"


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory, private_score_cache) -> Path:
    """A real run of the own tasks, one of them graded by a judge (3 repeats), against
    `AgentAndJudgeDouble` standing in for the model under test and the judge."""
    from tests._judge_double import AgentAndJudgeDouble
    from tests.test_own_run import _run, _run_dir, answerer

    out = tmp_path_factory.mktemp("judged")
    with AgentAndJudgeDouble(answerer) as double:
        proc = _run(
            ["--benchmark", "custom", "--tasks-file", str(OWN / "tasks.jsonl"),
             "--skills", str(OWN / "skills"), "--partition-size", "5", "--judge-repeats", "3"],
            double.url, out,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return _run_dir(out)


def _edit_judge_records(run: Path, edit) -> dict:  # noqa: ANN001
    """Apply `edit` to every judge record of the run's traces; the last record as edited."""
    table = pq.read_table(run / "traces.parquet")
    rows = table.to_pylist()
    last = None
    for r in rows:
        if r["judge_verdicts"]:
            last = edit(json.loads(r["judge_verdicts"]))
            r["judge_verdicts"] = json.dumps(last)
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), run / "traces.parquet")
    assert last is not None
    return last


def _verify_judged(run: Path, tmp_path: Path, *extra: str) -> tuple[int, str, str]:
    return verify(str(run), "--tasks-file", f"custom={OWN / 'tasks.jsonl'}", "--no-record",
                  "--fresh", "--state", str(tmp_path / "s.jsonl"), *extra)  # fmt: skip


def _without_judge(record: dict) -> dict:
    record.pop("judge")
    return record


def _too_many_repeats(record: dict) -> dict:
    record["settings"]["repeats"] = 10**6
    return record


def test_a_judge_record_naming_no_judge_is_one_error_naming_the_row(judged_run, tmp_path):
    """Before: a judge record without its `judge` key made `verify` end in `KeyError: 'judge'`
    (a traceback, exit 1); a setting out of bounds was refused without naming the row."""
    run = _copy(judged_run, tmp_path / "run")
    _edit_judge_records(run, _without_judge)
    code, out, err = _verify_judged(run, tmp_path, "--judge-base-url", "http://127.0.0.1:9/v1")
    assert code == 2, out + err
    assert f"run {judged_run.name}: task thanks (se): its judge record names no judge" in err
    assert "Traceback" not in err and "KeyError" not in err
    run = _copy(judged_run, tmp_path / "run2")
    _edit_judge_records(run, _too_many_repeats)
    code, out, err = _verify_judged(run, tmp_path, "--judge-base-url", "http://127.0.0.1:9/v1")
    assert code == 2, out + err
    assert f"run {judged_run.name}: task thanks (se): judge record: setting 'repeats'" in err


def _local_judge(model: str):  # noqa: ANN202
    def edit(record: dict) -> dict:
        record["settings"]["backend"] = "local"
        record["settings"]["model"] = model
        record["judge"] = f"{model}@{record['judge'].rsplit('@', 1)[1]}"
        return record

    return edit


@pytest.mark.parametrize("where", ["absolute", "relative"])
def test_a_local_judge_model_named_by_path_is_never_loaded(judged_run, tmp_path, where):
    """Before: a judge record saying backend `local`, model `/abs/file` (or `../../x`, which
    resolves out of the GGUF package's folder) made `verify` start the embedded llama.cpp
    server on that file of the verifier's machine: seen with /etc/passwd, the server's own
    traceback 'Failed to load model from file: /etc/passwd' on stderr, then exit 2."""
    target = tmp_path / "not-a-model.gguf"
    target.write_bytes(b"GGUF" + b"\0" * 64)
    model = str(target) if where == "absolute" else "../" * 12 + str(target).lstrip("/")
    run = _copy(judged_run, tmp_path / "run")
    _edit_judge_records(run, _local_judge(model))
    code, out, err = _verify_judged(run, tmp_path)
    assert code == 2, out + err
    assert f"graded by the local judge model {model!r}, a path" in err
    assert "--judge-backend openai --judge-base-url" in err
    assert "Failed to load model" not in err and "llama" not in err.lower()


def _vllm_server_judge(record: dict) -> dict:
    record["settings"]["backend"] = "vllm-server"
    record["settings"]["model"] = "someone/else"
    record["judge"] = f"someone/else@{record['judge'].rsplit('@', 1)[1]}"
    return record


def test_a_recorded_vllm_judge_is_loaded_here_only_on_the_verifiers_own_flag(judged_run, tmp_path):
    """Guard: a judge recorded on `vllm-server` would have the toolkit start vLLM with the
    model the record names; `verify` says so and asks for --judge-backend instead."""
    run = _copy(judged_run, tmp_path / "run")
    _edit_judge_records(run, _vllm_server_judge)
    code, out, err = _verify_judged(run, tmp_path, "--judge-base-url", "http://127.0.0.1:9/v1")
    assert code == 2, out + err
    assert "on backend vllm-server, which would load the model the published record names" in err
    assert "pass --judge-backend vllm-server to load it here" in err


# ------------------------------------------------------------- interrupted writes and resume


def _verify_process(*args: str, fsize: int | None = None) -> subprocess.CompletedProcess[str]:
    """The real `verify` process; `fsize`: its files may grow to that many bytes (a disk that
    fills up), the write failing with EFBIG instead of the process being killed."""

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, resource.RLIM_INFINITY))

    return subprocess.run(
        [sys.executable, "-m", "hf_skillfollow.cli", "verify", *args],
        capture_output=True, text=True, timeout=600,
        preexec_fn=limit if fsize is not None else None,
    )  # fmt: skip


def test_a_record_whose_write_fails_leaves_no_torn_file(math_run, tmp_path):
    """Before: the record was written straight into its final name, so a write that failed
    part-way (the disk full: here the process may write 4,096 bytes per file, the record is
    ~7 KB) left a 4,096-byte `<id>--<run>.parquet` in RUN_DIR/verifications/, a file with no
    parquet footer that `push RUN_DIR` skipped without a word. Now a record appears whole
    or not at all."""
    run = _copy(math_run, tmp_path / "run")
    state = tmp_path / "s.jsonl"
    proc = _verify_process(str(run), "--state", str(state), fsize=4096)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "the verification ran but its record was not written" in proc.stderr
    assert list((run / "verifications").iterdir()) == []  # nothing torn, nothing temporary
    proc = _verify_process(str(run), "--state", str(state))  # with room: the whole record
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (record,) = _records(run)
    assert pq.read_table(record).num_rows == 4


def test_each_verdict_is_in_the_state_file_before_the_next_is_scored(tmp_path):
    """docs/verify.md: each verdict is appended to the state file as soon as it is known, so
    an interrupted verify re-scores nothing. Before: verdicts sat in the file object's buffer
    until 64 had arrived or verify ended, so a verify killed (SIGKILL, the OOM killer, a lost
    machine) after 63 verdicts had to score all 63 again. Here a real process adds three
    verdicts through `VerifyState` and is killed."""
    state = tmp_path / "s.jsonl"
    code = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from hf_skillfollow.verify._state import VerifyState\n"
        "s = VerifyState(Path(sys.argv[1])).__enter__()\n"
        "for i in range(3):\n"
        "    s.add(f'key{i}', i % 2 == 0, 'reason')\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(state)], timeout=120)
    assert proc.returncode == -signal.SIGKILL
    from hf_skillfollow.verify._state import VerifyState

    assert VerifyState(state).done == {
        "key0": {"passed": True, "reason": "reason"},
        "key1": {"passed": False, "reason": "reason"},
        "key2": {"passed": True, "reason": "reason"},
    }


def _as_run(run: Path, run_id: str) -> None:
    """The run under another run id (rows, traces and manifest alike)."""
    for name in ("transitions.parquet", "traces.parquet"):
        table = pq.read_table(run / name)
        i = table.schema.get_field_index("run_id")
        column = pa.array([run_id] * table.num_rows, table.schema.field(i).type)
        pq.write_table(table.set_column(i, table.schema.field(i), column), run / name)
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**manifest, "run_id": run_id}))


def _two_repeats(record: dict) -> dict:
    record["settings"]["repeats"] = 2
    return record


def test_an_answer_is_regraded_with_each_rows_own_judge_settings(judged_run, tmp_path):
    """Before: a judged verdict was keyed by (judge name, release, task, answer) only. Two
    runs whose judged task got the same answers, one recorded with 3 repeats and one with 2,
    were re-graded once: the second run's rows took the first's verdicts (6 judge requests,
    exit 0), verdicts of settings its rows never recorded (in one state file, a stranger's
    run decides the verdict of yours). The double's judge says met on repeat 0 and not met
    on repeat 1 for "is written politely" (tests/_judge_double.py): with 3 repeats the SE
    answer meets all three expectations (2:1), with 2 it ties, not met: so re-graded with
    its own 2 repeats, the second run's SE bit (copied from the 3-repeat run) disagrees."""
    from tests._judge_double import AgentAndJudgeDouble
    from tests.test_own_run import answerer

    first = _copy(judged_run, tmp_path / "first")
    second = _copy(judged_run, tmp_path / "second")
    _as_run(second, "second-run")
    _edit_judge_records(second, _two_repeats)
    with AgentAndJudgeDouble(answerer) as judge:
        env = {"DOUBLE_KEY": "k"}
        out = CliRunner(env=env).invoke(
            main_cli,
            ["verify", str(first), str(second), "--tasks-file", f"custom={OWN / 'tasks.jsonl'}",
             "--no-record", "--fresh", "--state", str(tmp_path / "s.jsonl"), "--format", "json",
             "--judge-base-url", judge.url, "--judge-api-key-env", "DOUBLE_KEY"],
            catch_exceptions=False,
        )  # fmt: skip
        requests = len(judge.judge_requests)
    assert requests == 2 * 3 + 2 * 2  # both answers, with each run's own repeats
    assert out.exit_code == 1, out.stdout + out.stderr
    result = json.loads(out.stdout)
    assert [(d["run_id"], d["task_id"], d["arm"], d["recorded"], d["rescored"], d["reason"])
            for d in result["disagreements"]] == [
        ("second-run", "thanks", "se", True, False, "judge: 2 of 3 expectation(s) met")
    ]  # fmt: skip
    assert (result["rows_checked"], result["rows_agreeing"]) == (10, 9)


def _set_rows(run: Path, column: str, value: str) -> None:
    table = pq.read_table(run / "transitions.parquet")
    i = table.schema.get_field_index(column)
    values = pa.array([value] * table.num_rows, table.schema.field(i).type)
    pq.write_table(table.set_column(i, table.schema.field(i), values), run / "transitions.parquet")


def test_a_failed_record_write_keeps_none_so_the_rerun_writes_each_once(math_run, tmp_path):
    """A folder of two runs: run-a's record is ~6.7 KB, run-b's ~11 KB (its cell_id is 6,000
    random characters), the process may write 8,000 bytes per file (a disk that fills up).
    Before: run-a's record was written, run-b's failed (exit 2), and the rerun with room
    wrote a second record of run-a (same verdicts, a new verification id): two records of
    one verification in run-a/verifications/. Now a failed write removes the records that
    verification wrote, and the rerun writes each run's record once."""
    import secrets

    folder = tmp_path / "runs"
    a = _copy(math_run, folder / "run-a")
    b = _copy(math_run, folder / "run-b")
    _as_run(a, "run-a")
    _as_run(b, "run-b")
    _set_rows(b, "cell_id", secrets.token_urlsafe(4500)[:6000])
    state = tmp_path / "s.jsonl"
    proc = _verify_process(str(folder), "--state", str(state), fsize=8000)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "the verification ran but its record was not written" in proc.stderr
    assert _records(a) == [] and list((b / "verifications").iterdir()) == []
    proc = _verify_process(str(folder), "--state", str(state))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(_records(a)) == 1 and len(_records(b)) == 1
    assert "0 answer(s) re-scored now" in proc.stdout  # the verdicts came from the state


def test_judge_verdicts_reached_before_the_judge_fails_are_kept_for_the_rerun(judged_run, tmp_path):
    """Before: the judged answers' verdicts were saved only after the judge had graded all
    of them, so a judge that stopped answering part-way (here: after the first answer's 3
    repeats it answers HTTP 400) lost every verdict it had given, and the rerun sent all
    6 requests again (with a frontier judge: paid for twice). Now each judged verdict is in
    the state file as it arrives; the rerun sends only the other answer's 3 requests."""
    from tests._http_double import Reply
    from tests._judge_double import AgentAndJudgeDouble
    from tests.test_own_run import answerer

    class JudgeDoubleThatStopsAnswering(AgentAndJudgeDouble):
        """The judge (a frontier model's endpoint, which a test cannot reach) answering its
        first `budget` requests and refusing the rest."""

        budget = 3

        def answer(self, raw: bytes) -> Reply:
            if len(self.judge_requests) >= self.budget:
                return Reply(status=400, body={"error": {"message": "quota exhausted"}})
            return super().answer(raw)

    run = _copy(judged_run, tmp_path / "run")
    state = tmp_path / "s.jsonl"
    args = ["verify", str(run), "--tasks-file", f"custom={OWN / 'tasks.jsonl'}", "--no-record",
            "--state", str(state), "--judge-api-key-env", "DOUBLE_KEY"]  # fmt: skip
    with JudgeDoubleThatStopsAnswering(answerer) as judge:
        out = CliRunner(env={"DOUBLE_KEY": "k"}).invoke(
            main_cli, [*args, "--judge-base-url", judge.url], catch_exceptions=False
        )
        assert out.exit_code == 2 and "is not reachable at" in out.stderr, out.stdout + out.stderr
        # the same endpoint answers again (its quota renewed): a verdict is keyed by it
        judge.budget = 10**9
        before = len(judge.judge_requests)
        out = CliRunner(env={"DOUBLE_KEY": "k"}).invoke(
            main_cli, [*args, "--judge-base-url", judge.url], catch_exceptions=False
        )
        requests = len(judge.judge_requests) - before
    assert out.exit_code == 0, out.stdout + out.stderr
    assert requests == 3  # the answer graded before the judge stopped was not sent again


# ------------------------------------------------------------- a record naming another cell


def test_a_record_naming_another_cell_marks_the_cell_its_run_is_in(tmp_path):
    """A verification record of run-a0 (cell A) whose rows say cell_id = cell B's. Before:
    the card took the record's word, marking cell B '◐ 12/20 (partly re-scored)' though none
    of B's rows was re-scored, and cell A 'not re-scored' (the Space, which joins records
    with the rows, marked A). Now the card puts each record row under the cell its run is
    published in. The repo is the recording HfApi double of test_hub_push_double
    (huggingface.co cannot be reached from here)."""
    from hf_skillfollow.hub import push_runs
    from hf_skillfollow.schema import verifications_from_rows
    from hf_skillfollow.verify._record import record_bytes
    from tests._fixtures_hub import two_cell_runs
    from tests.test_hub_push_double import RecordingHfApiDouble

    runs = two_cell_runs(tmp_path / "runs")
    api = RecordingHfApiDouble(tmp_path)
    push_runs(runs, "org/results", api=api)
    rows = [
        {
            "schema_version": 1, "verification_id": "20250101T000000-abcdef12",
            "verified_at": "2025-01-01T00:00:00+00:00", "verified_by": "mallory@lab",
            "machine": "lab-1 (Linux)", "toolkit_version": "0.1.0", "scorer_version": "1",
            "benchmark": t["benchmark"], "benchmark_version": t["benchmark_version"],
            "benchmark_release": t["benchmark_version"], "run_id": t["run_id"],
            "cell_id": "cellB0000000000", "task_id": t["task_id"],
            "se_recorded": t["se_correct"], "se_rescored": t["se_correct"],
            "sd_recorded": t["sd_correct"], "sd_rescored": t["sd_correct"],
            "se_reason": "ok", "sd_reason": "ok",
        }
        for t in pq.read_table(runs[0] / "transitions.parquet").to_pylist()
    ]  # fmt: skip
    assert {r["run_id"] for r in rows} == {"run-a0"} and len(rows) == 12
    record = runs[0] / "verifications" / "20250101T000000-abcdef12--run-a0.parquet"
    record.parent.mkdir()
    record.write_bytes(record_bytes(verifications_from_rows(rows)))
    push_runs([record], "org/results", api=api)
    card = api.files["README.md"].decode()
    cells = card.split("### Cost per task")[0]
    marks = {
        model: line.rsplit("|", 2)[1].strip()
        for line in cells.splitlines()
        for model in ("org/model-a", "org/model-b")
        if model in line
    }
    partly = "◐ 12/20 \\(partly re-scored\\)"  # Markdown-escaped on the card
    assert marks == {"org/model-a": partly, "org/model-b": "not re-scored"}


@pytest.mark.parametrize("where", ["absolute", "relative", "an existing folder"])
def test_a_recorded_vllm_judge_named_by_path_is_never_loaded_even_on_the_flag(
    judged_run, tmp_path, where, monkeypatch
):
    """Before: with --judge-backend vllm-server (the verifier's own choice of backend), the
    model a judge record names went to vLLM as it was: `/abs/dir`, `../../x` or a folder of
    the verifier's machine was loaded from disk. Only a Hub model id is loaded now."""
    folder = tmp_path / "weights"
    folder.mkdir()
    monkeypatch.chdir(tmp_path)  # a bare name that is a folder where verify runs
    model = {"absolute": str(folder), "relative": "../" * 12 + str(folder).lstrip("/"),
             "an existing folder": "weights"}[where]  # fmt: skip

    def edit(record: dict) -> dict:
        record = _vllm_server_judge(record)
        record["settings"]["model"] = model
        record["judge"] = f"{model}@{record['judge'].rsplit('@', 1)[1]}"
        return record

    run = _copy(judged_run, tmp_path / "run")
    _edit_judge_records(run, edit)
    code, out, err = _verify_judged(
        run, tmp_path, "--judge-backend", "vllm-server", "--judge-base-url", "http://127.0.0.1:9/v1"
    )
    assert code == 2, out + err
    assert f"graded by the judge model {model!r} on backend vllm-server, which is no Hub" in err
    assert "Traceback" not in err


def test_a_judged_verdict_is_not_reused_when_the_judge_is_reached_elsewhere(judged_run, tmp_path):
    """Before: a judged verdict's key held no endpoint, so a verify whose --judge-base-url
    served the wrong model, then a verify of the same run against the right one, reused the
    first one's verdicts from the state file (no judge request; only --fresh helped). The
    second endpoint is asked again; a third verify at the same endpoint reuses its verdicts."""
    from tests._judge_double import AgentAndJudgeDouble
    from tests.test_own_run import answerer

    run = _copy(judged_run, tmp_path / "run")
    state = tmp_path / "s.jsonl"
    asked = []
    with AgentAndJudgeDouble(answerer) as first, AgentAndJudgeDouble(answerer) as second:
        for judge in (first, second, second):
            before = len(judge.judge_requests)
            out = CliRunner(env={"DOUBLE_KEY": "k"}).invoke(
                main_cli,
                ["verify", str(run), "--tasks-file", f"custom={OWN / 'tasks.jsonl'}",
                 "--no-record", "--state", str(state), "--judge-base-url", judge.url,
                 "--judge-api-key-env", "DOUBLE_KEY"],
                catch_exceptions=False,
            )  # fmt: skip
            assert out.exit_code == 0, out.stdout + out.stderr
            asked.append(len(judge.judge_requests) - before)
    assert asked[0] > 0 and asked[1] == asked[0] and asked[2] == 0, asked
    assert "127.0.0.1" not in state.read_text()  # keyed by a digest, never the URL


def test_a_judged_verdicts_key_changes_with_every_judge_field_and_the_endpoint() -> None:
    """The key of a judged verdict (`verify._core._judged_version`), field by field: each
    recorded setting of the judge and the endpoint it is reached at gives another key, and
    the same ones give the same key; the endpoint appears only as a digest."""
    import dataclasses

    from hf_skillfollow.judge._grade import JudgeSettings
    from hf_skillfollow.verify._core import _judged_version

    base = JudgeSettings(model="org/judge", backend="openai")
    endpoint = "openai http://127.0.0.1:8000/v1"
    key = _judged_version(base, endpoint)
    assert key == _judged_version(JudgeSettings(model="org/judge", backend="openai"), endpoint)
    other = {"model": "org/other", "backend": "local", "temperature": 0.5, "max_tokens": 7,
             "seed": 1, "max_attempts": 1, "repeats": 3}  # fmt: skip
    assert set(other) == {f.name for f in dataclasses.fields(JudgeSettings)}  # none left out
    for name, value in other.items():
        assert _judged_version(dataclasses.replace(base, **{name: value}), endpoint) != key, name
    assert _judged_version(base, "openai http://127.0.0.1:8001/v1") != key
    assert _judged_version(base, "vllm http://127.0.0.1:8000/v1") != key
    assert "127.0.0.1" not in key

"""Bad input gets one clear line naming the file, field or flag, and nothing is written half.

Every case goes through the real command line (click's runner, in process) on the real
benchmark files; no model is started: each case fails, or has nothing left to run, before that.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from hf_skillfollow.cli import cli


def _invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def _one_clear_line(res: Result, *needles: str) -> str:
    """The command failed with a handled error (no traceback) whose message names `needles`."""
    assert res.exit_code == 1, res.output
    assert isinstance(res.exception, SystemExit), repr(res.exception)
    message = res.output.strip()
    assert message.startswith("Error: ") and "\n" not in message, message
    for needle in needles:
        assert needle in message, (needle, message)
    return message


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


# --- score: samples file -----------------------------------------------------------------


@pytest.mark.parametrize(
    "content,needle",
    [
        (b'{"task_id": "Mbpp/2", "solution": "x = 1"}\n{"task_id": "Mbpp/3\xff"}\n', "line 2"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "line 1"),
        (b"\xfe\xff\x00{\x00}", "line 1"),  # UTF-16
    ],
    ids=["invalid-utf8", "binary", "utf16"],
)
def test_score_refuses_non_utf8_or_binary_samples(
    tmp_path: Path, data_dir: Path, content: bytes, needle: str
) -> None:
    samples = tmp_path / "samples.jsonl"
    samples.write_bytes(content)
    out = tmp_path / "out"
    res = _invoke(
        "score", "--tasks-file", data_dir / "mbppplus-v0.1.0.jsonl", "--samples", samples,
        "--output", out / "verdicts.jsonl",
    )  # fmt: skip
    _one_clear_line(res, str(samples), needle)
    assert _files(out) == []


# --- --benchmark against the tasks file ---------------------------------------------------


@pytest.mark.parametrize(
    "benchmark,file,task_id,owner",
    [
        ("mbppplus", "HumanEvalPlus-v0.1.10.jsonl.gz", "HumanEval/0", "humanevalplus"),
        ("mbppplus", "humaneval.jsonl.gz", "HumanEval/0", "humanevalplus"),
        ("mbppplus", "math500.jsonl", "test/precalculus/807.json", "math500"),
        ("humanevalplus", "mbppplus-v0.1.0.jsonl", "Mbpp/2", "mbppplus"),
        ("math500", "mbppplus-v0.1.0.jsonl", "Mbpp/2", "mbppplus"),
    ],
)
def test_score_refuses_a_tasks_file_of_another_benchmark(
    tmp_path: Path, data_dir: Path, benchmark: str, file: str, task_id: str, owner: str
) -> None:
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": task_id, "solution": "x = 1"}) + "\n")
    res = _invoke(
        "score", "--benchmark", benchmark, "--tasks-file", data_dir / file, "--samples", samples,
        "--output", tmp_path / "out" / "v.jsonl",
    )  # fmt: skip
    _one_clear_line(res, "--tasks-file", file, repr(task_id), f"--benchmark {owner}")
    assert _files(tmp_path / "out") == []


def test_run_refuses_a_tasks_file_of_another_benchmark(tmp_path: Path, data_dir: Path) -> None:
    res = _invoke(
        "run", "--benchmark", "mbppplus", "--tasks-file", data_dir / "humaneval.jsonl.gz",
        "-o", tmp_path / "runs",
    )  # fmt: skip
    _one_clear_line(res, "humaneval.jsonl.gz", "'HumanEval/0'", "--benchmark humanevalplus")
    assert _files(tmp_path / "runs") == []


def test_score_names_the_benchmark_of_a_foreign_sample_id(tmp_path: Path, data_dir: Path) -> None:
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": "HumanEval/0", "completion": "pass"}) + "\n")
    res = _invoke(
        "score", "--tasks-file", data_dir / "mbppplus-v0.1.0.jsonl", "--samples", samples,
        "--output", tmp_path / "v.jsonl",
    )  # fmt: skip
    _one_clear_line(res, f"{samples}: line 1", "'HumanEval/0'", "--benchmark humanevalplus")


# --- resume: records.jsonl and flags ------------------------------------------------------


def _finished_run(root: Path, data_dir: Path) -> tuple[Path, bytes]:
    """A run directory of one task (nothing pending) and the valid record line of that task."""
    from hf_skillfollow.config import RunConfig
    from hf_skillfollow.runner import identity_columns, plan_new_run

    config = RunConfig(tasks_file=data_dir / "mbppplus-v0.1.0.jsonl", limit=1, max_tokens=48)
    plan = plan_new_run(config, root)
    task_id = plan.manifest["task_ids"][0]
    transition = {
        **identity_columns(plan.manifest), "task_id": task_id, "se_correct": False,
        "sd_correct": True, "invoked": False, "returned": False, "n_calls": 0, "queries": [],
        "skills_returned": [], "se_error": None, "sd_error": None, "adherence": None,
    }  # fmt: skip
    record = {"task_id": task_id, "transition": transition, "traces": []}
    return plan.store.root, json.dumps(record).encode() + b"\n"


@pytest.mark.parametrize(
    "bad", [b"garbage", b"{}", b'{"task_id": "\xff"}'], ids=["garbage", "empty", "utf8"]
)
def test_resume_refuses_a_bad_record_line_then_sets_it_aside_on_request(
    tmp_path: Path, data_dir: Path, bad: bytes
) -> None:
    run_dir, good = _finished_run(tmp_path / "runs", data_dir)
    records = run_dir / "records.jsonl"
    records.write_bytes(good + bad + b"\n")
    res = _invoke("run", "--resume", run_dir, "--no-report")
    _one_clear_line(res, f"{records}:2:", "--set-aside-bad-records")
    assert records.read_bytes() == good + bad + b"\n"
    assert not (run_dir / "transitions.parquet").exists()

    res = _invoke("run", "--resume", run_dir, "--no-report", "--set-aside-bad-records")
    assert res.exit_code == 0, res.output
    assert "set aside 1 bad line(s) (line 2)" in res.output
    assert (run_dir / "records.rejected").read_bytes() == bad + b"\n"
    assert records.read_bytes() == good
    assert f"wrote 1 transitions to {run_dir}" in res.output
    # and the run is healthy again: a later plain resume is not refused
    assert _invoke("run", "--resume", run_dir, "--no-report").exit_code == 0


def test_resume_recovers_a_torn_last_line_and_says_so(tmp_path: Path, data_dir: Path) -> None:
    run_dir, good = _finished_run(tmp_path / "runs", data_dir)
    records = run_dir / "records.jsonl"
    records.write_bytes(good + good[:40])  # kill -9 in the middle of an append
    res = _invoke("run", "--resume", run_dir, "--no-report")
    assert res.exit_code == 0, res.output
    assert f"{records}: the last line (40 bytes) was cut off" in res.output
    assert records.read_bytes() == good
    assert (run_dir / "records.rejected").read_bytes() == good[:40] + b"\n"


def test_resume_refuses_flags_that_differ_from_the_manifest(tmp_path: Path, data_dir: Path) -> None:
    run_dir, good = _finished_run(tmp_path / "runs", data_dir)
    (run_dir / "records.jsonl").write_bytes(good)
    res = _invoke(
        "run", "--resume", run_dir, "--top-k", "5", "--seed", "3", "--max-tokens", "48",
        "--concurrency", "2", "--no-report",
    )  # fmt: skip
    message = _one_clear_line(res, str(run_dir), "--top-k 5 (run: 3)", "--seed 3 (run: 0)")
    # equal values and protocol-neutral flags are not reported
    assert "--max-tokens" not in message.split("differ")[1].split("Drop")[0]
    assert "--concurrency 2" not in message
    assert not (run_dir / "transitions.parquet").exists()


def test_resume_accepts_protocol_neutral_flags(tmp_path: Path, data_dir: Path) -> None:
    from hf_skillfollow.runner import plan_resume

    run_dir, good = _finished_run(tmp_path / "runs", data_dir)
    (run_dir / "records.jsonl").write_bytes(good)
    plan = plan_resume(run_dir, {"concurrency": 7, "request_timeout": 30.0, "max_tokens": 48})
    assert (plan.config.concurrency, plan.config.request_timeout) == (7, 30.0)
    res = _invoke("run", "--resume", run_dir, "--concurrency", "7", "--no-report")
    assert res.exit_code == 0, res.output
    assert f"wrote 1 transitions to {run_dir}" in res.output


# --- corrupt parquet ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["transitions.parquet", "traces.parquet"])
def test_push_dry_run_names_a_corrupt_parquet_and_writes_nothing(tmp_path: Path, name: str) -> None:
    from tests._fixtures_hub import CELL_A, write_run_dir

    run = write_run_dir(tmp_path / "runs", "run-a0", CELL_A)
    good = (run / name).read_bytes()
    (run / name).write_bytes(good[: len(good) // 2])  # truncated copy
    out = tmp_path / "repo"
    res = _invoke("push", run, "--repo", "org/results", "--dry-run", out)
    _one_clear_line(res, str(run / name), "parquet")
    assert _files(out) == []


@pytest.mark.parametrize("garbage", [b"", b"PAR1 not really", b"\x00" * 64])
def test_report_names_a_corrupt_parquet(tmp_path: Path, garbage: bytes) -> None:
    from tests._fixtures_hub import CELL_A, write_run_dir

    run = write_run_dir(tmp_path / "runs", "run-a0", CELL_A)
    (run / "transitions.parquet").write_bytes(garbage)
    for source in (run, run / "transitions.parquet"):
        res = _invoke("report", source)
        _one_clear_line(res, str(run / "transitions.parquet"))


# --- offline first run ----------------------------------------------------------------------


def _offline_env(tmp_path: Path) -> dict[str, str]:
    """No local benchmark file and every download really failing: the Hub endpoint and the
    HTTP(S) proxy point at a local port nobody listens on; caches are empty folders."""
    import os

    from hf_skillfollow.backends._server import free_port

    closed = f"http://127.0.0.1:{free_port()}"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SKILLFOLLOW_", "HF_", "HUGGINGFACE_"))
        and k not in {"MBPP_OVERRIDE_PATH", "HUMANEVAL_OVERRIDE_PATH"}
        and k.lower() not in {"no_proxy", "http_proxy", "https_proxy", "all_proxy"}
    }
    cache = tmp_path / "cache"
    env.update(
        HF_ENDPOINT=closed, HF_HOME=str(cache / "hf"), XDG_CACHE_HOME=str(cache),
        HTTP_PROXY=closed, HTTPS_PROXY=closed, http_proxy=closed, https_proxy=closed,
        SKILLFOLLOW_CACHE_DIR=str(cache / "skillfollow"),
    )  # fmt: skip
    return env


@pytest.mark.parametrize(
    "benchmark,variable,extra",
    [
        ("mbppplus", "SKILLFOLLOW_MBPP_FILE", {}),
        ("math500", "SKILLFOLLOW_MATH500_FILE", {"HF_HUB_OFFLINE": "1"}),
        # huggingface_hub retries a refused connection for ~40 s: the slow suite covers it
        pytest.param(
            "math500", "SKILLFOLLOW_MATH500_FILE", {}, marks=pytest.mark.slow, id="math500-refused"
        ),
    ],
)
def test_failed_official_download_says_how_to_use_a_local_file(
    tmp_path: Path, benchmark: str, variable: str, extra: dict[str, str]
) -> None:
    import subprocess
    import sys

    samples = tmp_path / "samples.jsonl"
    samples.write_text('{"task_id": "x", "solution": "1"}\n')
    proc = subprocess.run(
        [sys.executable, "-m", "hf_skillfollow.cli", "score", "--benchmark", benchmark,
         "--samples", str(samples), "--output", str(tmp_path / "v.jsonl")],
        capture_output=True, text=True, timeout=300, env=_offline_env(tmp_path) | extra,
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: cannot load"), proc.stderr[-2000:]
    assert "--tasks-file FILE" in last and f"{variable}=FILE" in last
    assert not (tmp_path / "v.jsonl").exists()


def test_report_names_the_line_of_a_non_utf8_jsonl(tmp_path: Path) -> None:
    from tests._rows import transition_row

    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(json.dumps(transition_row()).encode() + b"\n" + b'{"task_id": "\xff"}\n')
    _one_clear_line(_invoke("report", rows), f"{rows}:2: not UTF-8 text (byte 0xff at column 14)")


def test_resume_with_an_invalid_flag_value_names_the_flag(tmp_path: Path, data_dir: Path) -> None:
    run_dir, good = _finished_run(tmp_path / "runs", data_dir)
    (run_dir / "records.jsonl").write_bytes(good)
    res = _invoke("run", "--resume", run_dir, "--concurrency", "0", "--no-report")
    _one_clear_line(res, str(run_dir), "--concurrency: Input should be greater than or equal to 1")

"""Hostile trial folders against `hf-skillfollow import`, second round (session 21): numbers
the run folder cannot hold, mixed time zones, lone surrogates in names, and a second job of
the same cell. Each gives one error line naming the file and field, or the documented outcome
(docs/import.md, "Hostile input", "Idempotence and resume"); expectations written by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from click.testing import CliRunner  # noqa: E402

from hf_skillfollow.cli import cli  # noqa: E402
from tests._trial_fixtures import (  # noqa: E402
    build_skill_creator,
    cc_stream,
    write_job,
    write_rollout,
    write_trial,
)


def _invoke(*args: str):  # noqa: ANN202
    return CliRunner().invoke(cli, ["import", *args])


def _harbor(se: Path, sd: Path, out: Path):  # noqa: ANN202
    return _invoke("harbor", "--with-skills", str(se), "--without-skills", str(sd), "-o", str(out))


def _error_line(result) -> str:  # noqa: ANN001
    assert result.exit_code == 1, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


def _traces(out: Path) -> list[dict]:
    return [t for d in sorted(out.iterdir())
            for t in pq.read_table(d / "traces.parquet").to_pylist()]  # fmt: skip


def _arms(root: Path) -> tuple[Path, Path]:
    return write_job(root / "se"), write_job(root / "sd")


def _edit(result_json: Path, **changes: object) -> None:
    data = json.loads(result_json.read_text())
    data.update(changes)
    result_json.write_text(json.dumps(data))


# ---------------------------------------------- numbers a run folder's tables cannot hold


def test_a_token_count_past_int64_is_no_count(tmp_path: Path) -> None:
    # pyarrow cannot hold 10**20 in the int64 token column: the record was appended, then
    # every write of the tables (this import and each one after) raised OverflowError.
    se, sd = _arms(tmp_path)
    trial = write_trial(se, "a__1", "task-a", stream=cc_stream())
    _edit(trial / "result.json", agent_result={"n_input_tokens": 10**20, "n_output_tokens": 7})
    write_trial(sd, "a__2", "task-a", reward=0.0, stream=cc_stream(init=False))
    out = tmp_path / "runs"
    for _ in range(2):  # and the folder stays importable
        result = _harbor(se, sd, out)
        assert result.exit_code == 0, result.output
    tokens = {t["arm"]: (t["prompt_tokens"], t["completion_tokens"]) for t in _traces(out)}
    assert tokens == {"se": (0, 7), "sd": (1000, 200)}


def test_an_infinite_benchflow_agent_time_is_no_time(tmp_path: Path) -> None:
    # timing.json's `1e400` parses as inf: the schema refused the appended record, a
    # traceback, and the folder could not be imported again
    se, sd = tmp_path / "se", tmp_path / "sd"
    rollout = write_rollout(se, "r1", "task-a")
    (rollout / "timing.json").write_text('{"agent_execution": 1e400}')
    write_rollout(sd, "r2", "task-a", reward=0.0)
    out = tmp_path / "runs"
    for _ in range(2):
        result = _invoke("benchflow", "--with-skills", str(se), "--without-skills", str(sd),
                         "-o", str(out))  # fmt: skip
        assert result.exit_code == 0, result.output
    assert sorted((t["arm"], t["latency_s"]) for t in _traces(out)) == [("sd", 42.0), ("se", 0.0)]


def test_an_infinite_skill_creator_duration_is_no_time(tmp_path: Path) -> None:
    ws = build_skill_creator(tmp_path)
    run = ws / "iteration-2" / "eval-1-forms" / "with_skill"
    (run / "timing.json").write_text(
        '{"executor_start": "2026-01-01T00:00:00", "executor_duration_seconds": 1e400}'
    )
    out = tmp_path / "runs"
    result = _invoke("skill-creator", str(ws), "-o", str(out))
    assert result.exit_code == 0, result.output
    forms = [t["latency_s"] for t in _traces(out) if t["task_id"] == "eval-1-forms"]
    assert forms == [0.0, 0.0]


def test_agent_times_in_mixed_time_zones_are_no_traceback(tmp_path: Path) -> None:
    # a naive start and an aware end: subtracting them raised TypeError
    se, sd = _arms(tmp_path)
    trial = write_trial(se, "a__1", "task-a", stream=cc_stream())
    _edit(trial / "result.json", agent_execution={"started_at": "2026-01-26T03:00:00+00:00",
                                                  "finished_at": "2026-01-26T03:01:00"})  # fmt: skip
    write_trial(sd, "a__2", "task-a", reward=0.0, stream=cc_stream(init=False))
    out = tmp_path / "runs"
    result = _harbor(se, sd, out)
    assert result.exit_code == 0, result.output
    assert sorted((t["arm"], t["latency_s"]) for t in _traces(out)) == [("sd", 90.0), ("se", 0.0)]


# ------------------------------------------------------ a second run of the same cell


def _run_of(root: Path, tag: str, se_reward: float, started: str) -> tuple[Path, Path]:
    se, sd = _arms(root / tag)
    write_trial(se, f"a__{tag}1", "task-a", reward=se_reward, started=started, stream=cc_stream())
    write_trial(sd, f"a__{tag}2", "task-a", reward=1.0 - se_reward, started=started,
                stream=cc_stream(init=False))  # fmt: skip
    return se, sd


def test_another_run_of_the_same_cell_is_not_taken_as_already_recorded(tmp_path: Path) -> None:
    # Run B repeats run A (same agent, model, task and checksum: the same cell) with the
    # opposite outcome. Imported into the same folder it was counted "1 already there" and
    # nothing said that A's row stood for B's trials. The recorded pair is kept (a trial
    # Harbor redid after a kill is no new pair: tests/test_harbor_terminus.py), and said.
    a = _run_of(tmp_path, "A", 1.0, "2026-01-26T03:00:00")
    b = _run_of(tmp_path, "B", 0.0, "2026-01-27T03:00:00")
    out = tmp_path / "runs"
    assert _harbor(*a, out).exit_code == 0
    second = _harbor(*b, out)
    assert second.exit_code == 0, second.output
    (run,) = out.iterdir()
    assert (
        "note: 1 recorded pair(s) are of other trials than this import's (task 'task-a' repeat "
        "0: recorded a__A1 and a__A2, here a__B1 and a__B2): kept as recorded; nothing new of "
        "this cell written (0 pair(s)): its pairs would take a trial twice; import these trials "
        "into another output folder (-o) to record them"
    ) in second.output
    assert len((run / "records.jsonl").read_text().splitlines()) == 1
    # both runs in one import: A's pair stays repeat 0, B's is repeat 1
    both = _invoke("harbor", "--with-skills", str(a[0]), "--with-skills", str(b[0]),
                   "--without-skills", str(a[1]), "--without-skills", str(b[1]), "-o", str(out))  # fmt: skip
    assert both.exit_code == 0, both.output
    assert "(1 written, 1 already there)" in both.output
    rows = {(r["repeat_index"], r["se_correct"], r["sd_correct"]) for d in out.iterdir()
            for r in pq.read_table(d / "transitions.parquet").to_pylist()}  # fmt: skip
    assert rows == {(0, True, False), (1, False, True)}


# ------------------------------------------- lone surrogates: names UTF-8 cannot encode


def _surrogate(path: Path, text: str) -> None:
    """Write the JSON escape `\\ud800` (a lone surrogate once parsed) in place of `text`."""
    path.write_text(path.read_text().replace(text, text + "\\ud800"))


def _records(out: Path) -> list[str]:
    return [json.loads(line)["task_id"] for d in sorted(out.iterdir())
            for line in (d / "records.jsonl").read_text().splitlines()]  # fmt: skip


def test_a_task_name_with_a_lone_surrogate_is_recorded_once(tmp_path: Path) -> None:
    # The run store writes "\ud800" as its escape; the pairs kept the raw name, so a second
    # import found no recorded pair of that name and appended the row again, and the
    # violation line's print raised UnicodeEncodeError after the writing.
    se, sd = _arms(tmp_path)
    _surrogate(write_trial(se, "a__1", "task-a", stream=cc_stream()) / "result.json", "task-a")
    _surrogate(write_trial(sd, "a__2", "task-a", stream=cc_stream()) / "result.json", "task-a")
    out = tmp_path / "runs"
    first, second = _harbor(se, sd, out), _harbor(se, sd, out)
    assert first.exit_code == 0, first.output
    assert "arm-integrity violation: task-a\\ud800 (repeat 0, a__2): listed" in first.output
    assert second.exit_code == 0 and "(0 written, 1 already there)" in second.output
    assert _records(out) == ["task-a\\ud800"]


def test_a_non_utf8_eval_folder_is_recorded_once(tmp_path: Path) -> None:
    import os

    ws = build_skill_creator(tmp_path)
    it = ws / "iteration-2"
    os.rename(it / "eval-2-empty", os.fsencode(it) + b"/eval-2-\xff")
    out = tmp_path / "runs"
    first = _invoke("skill-creator", str(ws), "-o", str(out))
    second = _invoke("skill-creator", str(ws), "-o", str(out))
    assert first.exit_code == 0, first.output
    assert second.exit_code == 0 and "(0 written, 4 already there)" in second.output
    assert sorted(_records(out)) == ["eval-0-ocean", "eval-0-ocean", "eval-1-forms",
                                     "eval-2-\\udcff"]  # fmt: skip


def _violation_quoting_a_surrogate(tmp_path: Path) -> tuple[Path, Path]:
    """Two arms whose without-skills trial reads SKILL.md (a violation) through a call whose
    input holds a lone surrogate (`X\\ud800`), which the violation's evidence quotes."""
    se, sd = _arms(tmp_path)
    write_trial(se, "a__1", "task-a", stream=cc_stream())
    read = (
        "Read",
        {"file_path": "/root/.claude/skills/pdf-tools/SKILL.md", "x": "X"},
        "---",
        False,
    )
    trial = write_trial(sd, "a__2", "task-a", reward=0.0, stream=cc_stream(read, init=False))
    _surrogate(trial / "agent" / "claude-code.txt", '"X')
    return se, sd


def test_a_violation_quoting_a_lone_surrogate_prints(tmp_path: Path) -> None:
    se, sd = _violation_quoting_a_surrogate(tmp_path)
    result = _harbor(se, sd, tmp_path / "runs")
    assert result.exit_code == 0, result.output
    assert "X\\ud800" in result.output and "arm-integrity violation: task-a" in result.output


def test_a_line_break_in_a_trial_folder_name_keeps_the_error_one_line(tmp_path: Path) -> None:
    se, sd = _arms(tmp_path)
    trial = write_trial(se, "a\nEVIL \x1b[31m", "task-a", stream=cc_stream())
    _edit(trial / "result.json", started_at=5)
    write_trial(sd, "a__2", "task-a", reward=0.0, stream=cc_stream(init=False))
    line = _error_line(_harbor(se, sd, tmp_path / "runs"))
    assert (
        line
        == f"Error: {se}/a\\nEVIL \\x1b[31m/result.json: field 'started_at' is a int, expected str"
    )


# ------------------------------------------ two jobs whose agents differ beyond the skills


def _agent(trial: Path, **agent: object) -> None:
    """Set fields of the trial's recorded agent, in config.json and result.json's copy."""
    for name, config in (("config.json", None), ("result.json", "config")):
        data = json.loads((trial / name).read_text())
        entry = (data[config] if config else data)["agent"]
        entry.update(agent)
        (trial / name).write_text(json.dumps(data))


def test_two_jobs_whose_agents_differ_beyond_the_skills_are_refused(tmp_path: Path) -> None:
    # With --with-skills/--without-skills only the agent's name, version and model were
    # compared: a without-skills job run with 1 turn and a 10 s timeout imported as a pair.
    se, sd = _arms(tmp_path)
    _agent(write_trial(se, "a__1", "task-a", stream=cc_stream()), skills=["/skills"],
           kwargs={"max_turns": 100})  # fmt: skip
    plain = write_trial(sd, "a__2", "task-a", reward=0.0, stream=cc_stream(init=False))
    _agent(plain, kwargs={"max_turns": 1}, override_timeout_sec=10)
    line = _error_line(_harbor(se, sd, tmp_path / "runs"))
    assert line == (
        f"Error: {plain}/result.json: field 'config.agent.kwargs' differs from "
        f"{se}/a__1/result.json's: the arms must differ only in the skills"
    )


def test_two_jobs_whose_agents_differ_only_in_the_skills_import(tmp_path: Path) -> None:
    se, sd = _arms(tmp_path)
    # how many ran at once, and the endpoint (a resumed `run --harness harbor` serves its
    # model on a new port; result.json keeps the one each trial used): not what the agent does
    _agent(write_trial(se, "a__1", "task-a", stream=cc_stream()), skills=["/skills"],
           n_concurrent=8, base_url="http://127.0.0.1:4001/v1")  # fmt: skip
    _agent(write_trial(sd, "a__2", "task-a", reward=0.0, stream=cc_stream(init=False)),
           n_concurrent=2, base_url="http://127.0.0.1:4002/v1", model_api_key_name="K2")  # fmt: skip
    result = _harbor(se, sd, tmp_path / "runs")
    assert result.exit_code == 0, result.output


# ------------------------------------------------------------------ bounded listing


def _many_files(folder: Path, n: int) -> None:
    import os

    folder.mkdir(parents=True)
    for i in range(n):
        os.close(os.open(folder / f"f{i:06d}", os.O_CREAT | os.O_WRONLY))


def _peak_bytes(call) -> int:  # noqa: ANN001
    import tracemalloc

    tracemalloc.start()
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - the bound's refusal is expected here
        assert "more than 100 entries" in str(exc), exc
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def test_a_folder_past_the_entry_bound_is_refused_before_it_is_listed_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The bound was checked after the whole folder was listed and sorted: memory grew with
    # the folder (about 100 MB at 300,000 entries against a 200,000 bound), not the bound.
    from hf_skillfollow.importers import _skill_creator, _walk

    monkeypatch.setattr(_walk, "MAX_ENTRIES", 100)
    monkeypatch.setattr(_skill_creator, "MAX_ENTRIES", 100)
    _many_files(tmp_path / "job" / "junk", 5_000)  # listed whole: about 1.4 MB
    assert _peak_bytes(lambda: list(_walk.walk_files(tmp_path / "job", "result.json"))) < 400_000
    assert _peak_bytes(lambda: _skill_creator._dirs(tmp_path / "job" / "junk")) < 400_000


# ------------------------------------------------ skill-creator's benchmark.json cross-check


def _benchmark(ws: Path, runs: list) -> None:  # noqa: ANN001
    path = ws / "iteration-2" / "benchmark.json"
    data = json.loads(path.read_text())
    data["runs"] = runs
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("bad", [{"run_number": [1]}, {"configuration": {"a": 1}}])
def test_a_benchmark_run_with_an_unhashable_field_is_a_note(tmp_path: Path, bad: dict) -> None:
    # run_number [1] made the lookup key unhashable: TypeError, a traceback
    ws = build_skill_creator(tmp_path)
    run = {"eval_id": 1, "eval_name": "forms", "configuration": "with_skill", "run_number": 1,
           "result": {"passed": 2, "total": 2}}  # fmt: skip
    _benchmark(ws, [{**run, **bad}])
    result = _invoke("skill-creator", str(ws), "-o", str(tmp_path / "runs"))
    assert result.exit_code == 0, result.output
    assert "benchmark.json: runs[0] (forms, " in result.output
    assert "has no graded run" in result.output


def test_a_huge_benchmark_json_cross_check_is_bounded(tmp_path: Path) -> None:
    # each of benchmark.json's runs was compared with every graded run: 600,000 runs against
    # 300 evals did not finish in 2 minutes. Matched by id in one look-up; by name within a
    # bounded number of comparisons, the rest counted in one note.
    import time

    from hf_skillfollow.importers._base import Trial
    from hf_skillfollow.importers._skill_creator import _cross_check

    it = tmp_path / "iteration-1"
    trials = []
    for i in range(300):
        for arm, config in (("se", "with_skill"), ("sd", "without_skill")):
            folder = it / f"eval-{i}-n{i}" / config
            folder.mkdir(parents=True)
            (folder / "grading.json").write_text('{"expectations": []}')
            trials.append(Trial(arm, f"eval-{i}-n{i}", "", "", False, None, folder))
    runs = [{"eval_id": 7, "configuration": "with_skill", "result": {"passed": 1, "total": 1}}]
    runs += [{"eval_name": f"zz{i}"} for i in range(100_000)]
    (it / "benchmark.json").write_text(json.dumps({"runs": runs}))
    began = time.monotonic()
    notes = _cross_check(it, trials, "without_skill")
    assert time.monotonic() - began < 10
    bench = it / "benchmark.json"
    assert notes[0] == (f"{bench}: runs[0] (eval-7-n7, with_skill, run 1) says 1/1 expectations "
                        "passed, its grading.json 0/0; the grading counts")  # fmt: skip
    assert notes[1] == f"{bench}: runs[1] (zz0, None, run 1) has no graded run"
    # 2,000,000 comparisons of 300 folders: runs[1] to runs[6666] matched by name, 49 listed
    assert notes[50:] == [
        f"{bench}: 6,617 more run(s) disagree with the gradings or have none",
        f"{bench}: 93,334 run(s) not cross-checked (matching them by eval_name took over "
        "2,000,000 comparisons)",
    ]


@pytest.mark.parametrize("where", ["a-file", "a-file/below"])
def test_an_output_folder_that_cannot_be_made_is_one_line(tmp_path: Path, where: str) -> None:
    # -o naming a file (or a folder below one) raised NotADirectoryError / FileExistsError
    se, sd = _run_of(tmp_path, "A", 1.0, "2026-01-26T03:00:00")
    (tmp_path / "a-file").write_text("x")
    out = tmp_path / where
    line = _error_line(_harbor(se, sd, out))
    assert line.startswith(f"Error: output folder (-o) {out}: cannot make imported-")
    assert line.endswith("(Not a directory)")


# ------------------------------------------------------------- strings kept in every row


@pytest.mark.parametrize(
    ("fmt", "name", "value"),
    [("harbor", "task_checksum", "c" * 1_000_000), ("harbor", "started_at", "2026" + "x" * 300),
     ("benchflow", "started_at", "s" * 1_000_000)],
)  # fmt: skip
def test_a_megabyte_checksum_or_start_time_is_one_line(
    tmp_path: Path, fmt: str, name: str, value: str
) -> None:
    # Both were kept whole: a 5 MB task_checksum and started_at made a 10 MB manifest and
    # 20 MB of records for one pair (the manifest lists every task's two checksums).
    se, sd = _arms(tmp_path)
    if fmt == "harbor":
        trial = write_trial(se, "a__1", "task-a", stream=cc_stream())
        write_trial(sd, "a__2", "task-a", reward=0.0, stream=cc_stream(init=False))
    else:
        trial = write_rollout(se, "r1", "task-a")
        write_rollout(sd, "r2", "task-a", reward=0.0)
    _edit(trial / "result.json", **{name: value})
    line = _error_line(_invoke(fmt, "--with-skills", str(se), "--without-skills", str(sd),
                               "-o", str(tmp_path / "runs")))  # fmt: skip
    assert line == f"Error: {trial}/result.json: field {name!r} is longer than 200 characters"
    assert not (tmp_path / "runs").exists()


def test_a_megabyte_executor_start_is_one_line(tmp_path: Path) -> None:
    ws = build_skill_creator(tmp_path)
    timing = ws / "iteration-2" / "eval-1-forms" / "with_skill" / "timing.json"
    timing.write_text(json.dumps({"executor_start": "t" * 1_000_000}))
    line = _error_line(_invoke("skill-creator", str(ws), "-o", str(tmp_path / "runs")))
    assert line == f"Error: {timing}: field 'executor_start' is longer than 200 characters"


def test_megabyte_reward_names_are_bounded_in_the_error_row(tmp_path: Path) -> None:
    se, sd = _arms(tmp_path)
    trial = write_trial(se, "a__1", "task-a", stream=cc_stream())
    _edit(trial / "result.json", verifier_result={"rewards": {"k" * 1_000_000: 1, "b": 0}})
    write_trial(sd, "a__2", "task-a", reward=0.0, stream=cc_stream(init=False))
    out = tmp_path / "runs"
    assert _harbor(se, sd, out).exit_code == 0
    (run,) = out.iterdir()
    (row,) = pq.read_table(run / "transitions.parquet").to_pylist()
    assert row["se_error"].startswith("no 'reward' among the verifier's rewards ['b', 'kkk")
    assert len(row["se_error"]) == 500


# ------------------------------------------------ a trial that finishes after a later one


def test_a_trial_finishing_after_a_later_one_keeps_the_pairs(tmp_path: Path) -> None:
    # SD's 03:00 trial was still running when its 04:00 one had finished: the first import
    # paired SE's 03:00 trial with SD's 04:00 one; once the 03:00 one finished, the ordinal
    # pairs shifted (03:00 with 03:00, 04:00 with 04:00), the recorded pair stood and SD's
    # 04:00 trial went into a second pair too. Trials of an arm started at or after one of
    # its trials still running are held back until it finishes.
    se, sd = _arms(tmp_path)
    three, four = "2026-01-26T03:00:00", "2026-01-26T04:00:00"
    write_trial(se, "a__1", "task-a", started=three, stream=cc_stream())
    write_trial(se, "a__3", "task-a", started=four, reward=0.0, stream=cc_stream())
    running = write_trial(sd, "a__2", "task-a", started=three, reward=None, stream=cc_stream(init=False))  # fmt: skip
    _edit(running / "result.json", finished_at=None)
    write_trial(sd, "a__4", "task-a", started=four, reward=1.0, stream=cc_stream(init=False))
    write_trial(se, "b__1", "task-b", stream=cc_stream())
    write_trial(sd, "b__2", "task-b", reward=0.0, stream=cc_stream(init=False))
    out = tmp_path / "runs"
    first = _harbor(se, sd, out)
    assert first.exit_code == 0, first.output
    assert ("1 trial(s) still running (no finished_at, verdict or exception) left out, and 1 "
            "finished trial(s) of their task and arm started at or after them held back") in first.output  # fmt: skip
    assert "1 pair(s) in 1 run folder(s)" in first.output  # task-b only
    _edit(running / "result.json", finished_at=three, verifier_result={"rewards": {"reward": 0.0}})
    later = _harbor(se, sd, out)
    assert later.exit_code == 0, later.output
    pairs = {}
    for trace in _traces(out):
        details = json.loads(trace["scorer_details"])
        pairs.setdefault((trace["run_id"][-2:], trace["task_id"]), {})[trace["arm"]] = details[
            "trial"
        ]
    assert pairs == {
        ("r0", "task-a"): {"se": "a__1", "sd": "a__2"},
        ("r0", "task-b"): {"se": "b__1", "sd": "b__2"},
        ("r1", "task-a"): {"se": "a__3", "sd": "a__4"},
    }


# ----------------------------------------------------------------------------- progress


@pytest.mark.parametrize("pool", [False, True])
def test_the_progress_bar_ends_with_the_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pool: bool
) -> None:
    # Without --skills every transcript is read first (the offered skills are what they
    # list), and the bar followed only that reading: it showed every pair done while the
    # records, most of the time (8.9 s of 17 s at 3,000 pairs, profiled), were still written.
    from hf_skillfollow.importers import ImportOptions, import_runs
    from hf_skillfollow.store import RunStore
    from tests._trial_fixtures import write_pool

    se, sd = _arms(tmp_path)
    for i in range(3):
        write_trial(se, f"t{i}__1", f"task-{i}", stream=cc_stream())
        write_trial(sd, f"t{i}__2", f"task-{i}", reward=None, stream=cc_stream(init=False))
    events: list[str] = []
    totals: list[int] = []
    append = RunStore.append_record
    monkeypatch.setattr(RunStore, "append_record",
                        lambda self, r: (events.append("write"), append(self, r))[1])  # fmt: skip
    options = ImportOptions(skills=write_pool(tmp_path / "pool") if pool else None)
    import_runs("harbor", [se], [sd], options, output_dir=tmp_path / "runs",
                on_total=totals.append, on_pair=lambda error: events.append(f"step {error}"))  # fmt: skip
    steps = [e for e in events if e.startswith("step")]
    assert totals == [len(steps)] and events[-1].startswith("step")
    # each pair's error (its SD trial has no verifier result) is counted once
    assert steps.count("step True") == 3 and events.count("write") == 3


# ------------------------------------------------------------- --tasks and the cell


def test_tasks_naming_other_intended_skills_is_another_cell(tmp_path: Path) -> None:
    # Without --skills, --tasks' intended skills are the skills offered: the read of x's
    # SKILL.md activates x without them (the trial lists none) and nothing with them (x is
    # not offered). The cell id did not change, so the second import kept the first's row
    # ("1 already there", returned true) for a measurement that says otherwise.
    from tests._trial_fixtures import write_tasks

    se, sd = _arms(tmp_path)
    read = ("Read", {"file_path": "/root/.claude/skills/x/SKILL.md"}, "---\nname: x", False)
    write_trial(se, "a__1", "task-a", stream=cc_stream(read, init=False))
    write_trial(sd, "a__2", "task-a", reward=0.0, stream=cc_stream(init=False))
    tasks = write_tasks(tmp_path / "tasks", {"task-a": ["y"]})
    out = tmp_path / "runs"
    assert _harbor(se, sd, out).exit_code == 0
    again = _invoke("harbor", "--with-skills", str(se), "--without-skills", str(sd),
                    "--tasks", str(tasks), "-o", str(out))  # fmt: skip
    assert again.exit_code == 0, again.output
    assert "(1 written, 0 already there)" in again.output
    rows = {(r["returned"], tuple(r["intended_skills"] or ())) for d in out.iterdir()
            for r in pq.read_table(d / "transitions.parquet").to_pylist()}  # fmt: skip
    assert rows == {(True, ()), (False, ("y",))}


# ------------------------------------------------------------ two imports at once


def test_a_second_import_writing_the_same_run_folder_at_once_is_one_line(tmp_path: Path) -> None:
    # Two imports of the same trials into one folder at the same time each found no pair
    # recorded and appended every one: 3,000 pairs gave 5,943 records, both saying
    # "3000 written". The run folder is held by the import writing it.
    import fcntl
    import os

    se, sd = _run_of(tmp_path, "A", 1.0, "2026-01-26T03:00:00")
    out = tmp_path / "runs"
    assert _harbor(se, sd, out).exit_code == 0
    (run,) = out.iterdir()
    held = os.open(run, os.O_RDONLY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running import holds it
        line = _error_line(_harbor(se, sd, out))
    finally:
        os.close(held)
    assert line == (f"Error: {run}: another import is writing this run folder; import again "
                    "once it has finished")  # fmt: skip
    assert "(0 written, 1 already there)" in _harbor(se, sd, out).output


def test_two_workspaces_with_the_same_eval_folder_are_one_line(tmp_path: Path) -> None:
    # skill-creator names evals eval-0, eval-1, ...: two workspaces' eval-0 were merged into
    # one task, their runs paired by start time across the workspaces as its repeats (8
    # pairs of 3 tasks in 4 run folders), though they may be two skills' different evals.
    a = build_skill_creator(tmp_path / "a")
    b = build_skill_creator(tmp_path / "b")
    line = _error_line(_invoke("skill-creator", str(a), str(b), "-o", str(tmp_path / "runs")))
    assert line == (
        f"Error: WORKSPACE {b}: eval folder 'eval-0-ocean' is also in {a / 'iteration-2'}; "
        "import the workspaces apart (their evals are not repeats of one task)"
    )


def test_a_running_trial_of_a_job_of_both_arms_holds_back_both(tmp_path: Path) -> None:
    # In a job of both arms (--job) a running trial's arm is not read (its recorded agent is
    # checked once it has finished; Harbor may not have written all of it): the trials of its
    # task in both arms that started at or after it wait with it.
    from tests.test_harbor_import_job import _job

    job = _job(tmp_path)
    running = job / "task-a__0"
    running.mkdir()
    (running / "result.json").write_text(json.dumps(
        {"trial_name": "task-a__0", "task_name": "task-a", "started_at": "2026-01-26T03:00:00"}))  # fmt: skip
    result = _invoke("harbor", "--job", str(job), "-o", str(tmp_path / "runs"))
    assert result.exit_code == 0, result.output
    assert ("1 trial(s) still running (no finished_at, verdict or exception) left out, and 2 "
            "finished trial(s) of their task and arm started at or after them held back") in result.output  # fmt: skip
    assert "1 pair(s) in 1 run folder(s)" in result.output  # task-b only


def test_a_trial_folder_whose_name_is_not_utf8_imports_again(tmp_path: Path) -> None:
    # the traces' JSON keeps the name's lone surrogate, the check compared it with its escape
    import os

    se, sd = _arms(tmp_path)
    write_trial(se, "a__1", "task-a", stream=cc_stream())
    trial = write_trial(sd, "a__2", "task-a", reward=0.0, stream=cc_stream(init=False))
    os.rename(trial, os.fsencode(sd) + b"/a\xff")
    out = tmp_path / "runs"
    assert _harbor(se, sd, out).exit_code == 0
    again = _harbor(se, sd, out)
    assert again.exit_code == 0, again.output
    assert "(0 written, 1 already there)" in again.output


def test_the_results_lines_print_for_the_harbor_runner_too(tmp_path: Path) -> None:
    # `run --harness harbor` prints an import's violations and notes itself: they are made
    # printable where they are made, not only by `import`'s own printing
    from hf_skillfollow._text import utf8_encodable
    from hf_skillfollow.importers import import_runs

    se, sd = _violation_quoting_a_surrogate(tmp_path)
    result = import_runs("harbor", [se], [sd], output_dir=tmp_path / "runs")
    assert len(result.violations) == 1 and "X\\ud800" in result.violations[0]
    assert all(utf8_encodable(line) for line in result.violations + result.notes)


def test_an_earlier_trial_given_later_pairs_no_trial_twice(tmp_path: Path) -> None:
    # The first import pairs SE 03:00 with SD 05:00 (SE 04:00 unpaired). An SD trial of 02:00
    # given later shifts the ordinal pairs: repeat 0 (SE 03:00, SD 02:00) differs from the
    # recorded one, which stays, and repeat 1 (SE 04:00, SD 05:00) was written: SD 05:00 in
    # two pairs. Where a recorded pair differs, nothing new of that cell is written.
    se, sd, late = (
        write_job(tmp_path / "se"),
        write_job(tmp_path / "sd"),
        write_job(tmp_path / "late"),
    )
    for name, hour in (("a__1", "03"), ("a__3", "04")):
        write_trial(se, name, "task-a", started=f"2026-01-26T{hour}:00:00", stream=cc_stream())
    write_trial(sd, "a__5", "task-a", started="2026-01-26T05:00:00", reward=0.0,
                stream=cc_stream(init=False))  # fmt: skip
    write_trial(late, "a__0", "task-a", started="2026-01-26T02:00:00", reward=0.0,
                stream=cc_stream(init=False))  # fmt: skip
    out = tmp_path / "runs"
    assert _harbor(se, sd, out).exit_code == 0
    again = _invoke("harbor", "--with-skills", str(se), "--without-skills", str(sd),
                    "--without-skills", str(late), "-o", str(out))  # fmt: skip
    assert again.exit_code == 0, again.output
    assert "(0 written, 1 already there)" in again.output
    assert ("recorded a__1 and a__5, here a__1 and a__0): kept as recorded; nothing new of "
            "this cell written (1 pair(s)):") in again.output  # fmt: skip
    sd_trials = [json.loads(t["scorer_details"])["trial"] for t in _traces(out) if t["arm"] == "sd"]
    assert sd_trials == ["a__5"]


# ------------------------------------------------ attack pass (IMP2): rollouts, gaps, order


@pytest.mark.parametrize("name", ["rollout_name", "trial_name"])
def test_import_harbor_on_benchflow_rollouts_points_to_import_benchflow(
    tmp_path: Path, name: str
) -> None:
    # A BenchFlow rollout (`rollout_name`, or SkillsBench's 2026-05 OpenCode rollouts that say
    # `trial_name` but have none of Harbor's verifier_result/agent_info/exception_info) given to
    # `import harbor` was read as a Harbor trial: both arms "no verifier result", agent
    # unknown@unknown, exit 0. `import benchflow` reads them (tests/test_import_formats.py).
    se, sd = tmp_path / "se", tmp_path / "sd"
    rollouts = [write_rollout(se, "r1", "task-a"), write_rollout(sd, "r2", "task-a", reward=0.0)]
    for rollout in rollouts:
        data = json.loads((rollout / "result.json").read_text())
        data[name] = data.pop("rollout_name")
        data["finished_at"] = "2026-05-02 15:40:40.144961"
        (rollout / "result.json").write_text(json.dumps(data))
    line = _error_line(_harbor(se, sd, tmp_path / "runs"))
    assert str(rollouts[0] / "result.json") in line
    assert "a BenchFlow rollout" in line and "hf-skillfollow import benchflow" in line
    assert not (tmp_path / "runs").exists()
    ok = _invoke("benchflow", "--with-skills", str(se), "--without-skills", str(sd),
                 "-o", str(tmp_path / "runs"))  # fmt: skip
    assert ok.exit_code == 0, ok.output
    assert "1 pair(s) in 1 run folder(s)" in ok.output


def test_trial_folders_without_a_result_are_counted(tmp_path: Path) -> None:
    # A trial killed before it wrote result.json (its config.json and agent/ are there) was
    # passed over with no word: the user lost a trial silently. A running trial (result.json,
    # no finished_at) is the note of its own (test_a_trial_finishing_after_a_later_one_...).
    se, sd = _arms(tmp_path)
    write_trial(se, "a__1", "task-a", stream=cc_stream())
    write_trial(sd, "a__2", "task-a", reward=0.0, stream=cc_stream(init=False))
    for job, name in ((se, "b__1"), (sd, "c__2")):
        killed = write_trial(job, name, "task-b", stream=cc_stream())
        (killed / "result.json").unlink()
    result = _harbor(se, sd, tmp_path / "runs")
    assert result.exit_code == 0, result.output
    assert (f"note: 2 trial folder(s) without a result.json (still running, or killed before "
            f"writing it), e.g. {se / 'b__1'}: 0 finished trial(s) of their task and arm held "
            "back") in " ".join(result.output.split())  # fmt: skip
    assert "1 pair(s) in 1 run folder(s)" in result.output
    # a job whose trials all lack it (only the job's own result.json): the error says why
    empty = _arms(tmp_path / "empty")
    for job in empty:
        (write_trial(job, "d__1", "task-d") / "result.json").unlink()
    line = _error_line(_harbor(*empty, tmp_path / "runs2"))
    assert "2 trial folder(s) without a result.json (still running" in line
    assert str(empty[0] / "d__1") in line


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("2026-01-26T05:00:00+02:00", "2026-01-26T04:00:00Z"),  # 03:00 UTC, then 04:00 UTC
        ("2026-01-26T03:00:00Z", "2026-01-26T03:00:00.500000Z"),  # '.' sorts before 'Z'
        ("2026-01-26T04:00:00+02:00", "2026-01-26T03:30:00"),  # a time without a zone is UTC
    ],
)
def test_trials_pair_by_the_instant_they_started(tmp_path: Path, first: str, second: str) -> None:
    # Start times were compared as text: a zone, or a fraction of a second, put the later
    # with-skills trial first, and each was paired with the other's without-skills trial.
    se, sd = _arms(tmp_path)
    write_trial(se, "a__late", "task-a", started=second, reward=0.0, stream=cc_stream())
    write_trial(se, "a__early", "task-a", started=first, stream=cc_stream())
    write_trial(sd, "a__sd1", "task-a", started="2026-01-26T01:00:00Z", stream=cc_stream(init=False))  # fmt: skip
    write_trial(sd, "a__sd2", "task-a", started="2026-01-26T06:00:00Z", stream=cc_stream(init=False))  # fmt: skip
    out = tmp_path / "runs"
    result = _harbor(se, sd, out)
    assert result.exit_code == 0, result.output
    pairs: dict[str, dict[str, str]] = {}
    for trace in _traces(out):
        pairs.setdefault(trace["run_id"][-2:], {})[trace["arm"]] = json.loads(
            trace["scorer_details"]
        )["trial"]
    assert pairs == {"r0": {"se": "a__early", "sd": "a__sd1"},
                     "r1": {"se": "a__late", "sd": "a__sd2"}}  # fmt: skip


def test_reading_the_trial_folders_is_counted(tmp_path: Path) -> None:
    # Reading the trial folders showed nothing (about 5 s at 6,000 trials) before the bar of
    # the pairs began: `on_read(n)` counts the result.json files read, before `on_total`.
    from hf_skillfollow.importers import import_runs

    se, sd = _arms(tmp_path)
    for i in range(3):
        write_trial(se, f"t{i}__1", f"task-{i}", stream=cc_stream())
        write_trial(sd, f"t{i}__2", f"task-{i}", reward=0.0, stream=cc_stream(init=False))
    events: list[str] = []
    import_runs("harbor", [se], [sd], output_dir=tmp_path / "runs",
                on_read=lambda n: events.append(f"read {n}"),
                on_total=lambda n: events.append(f"total {n}"))  # fmt: skip
    # each job's own result.json is read too (and passed over)
    assert events == [f"read {n}" for n in range(1, 9)] + ["total 6"]


def test_a_bad_line_amid_the_records_names_a_way_out_of_import(tmp_path: Path) -> None:
    # A bad line in the middle of records.jsonl stopped `import` with file:line, and the
    # store's way out elsewhere named --set-aside-bad-records, a flag of `run` only.
    se, sd = _arms(tmp_path)
    for task in ("task-a", "task-b"):
        write_trial(se, f"{task}__1", task, stream=cc_stream())
        write_trial(sd, f"{task}__2", task, reward=0.0, stream=cc_stream(init=False))
    out = tmp_path / "runs"
    assert _harbor(se, sd, out).exit_code == 0
    (run,) = out.iterdir()
    lines = (run / "records.jsonl").read_text().splitlines()
    (run / "records.jsonl").write_text("{not json\n" + lines[1] + "\n")
    line = _error_line(_harbor(se, sd, out))
    assert line.startswith(f"Error: {run / 'records.jsonl'}:1: ")
    assert line.endswith("import again with --set-aside-bad-records")
    again = _invoke("harbor", "--with-skills", str(se), "--without-skills", str(sd),
                    "--set-aside-bad-records", "-o", str(out))  # fmt: skip
    assert again.exit_code == 0, again.output
    assert "(1 written, 1 already there)" in again.output
    assert (run / "records.rejected").read_text() == "{not json\n"
    assert sorted(json.loads(x)["task_id"] for x in (run / "records.jsonl").read_text().splitlines()) == ["task-a", "task-b"]  # fmt: skip


def test_a_run_folders_date_is_its_earliest_start_as_an_instant(tmp_path: Path) -> None:
    # created_at (on every row) is the earliest with-skills start of the repeat: it was the
    # least as text, so 04:00Z came before 05:00+02:00 (03:00 UTC).
    se, sd = _arms(tmp_path)
    for task, started in (("task-a", "2026-01-26T04:00:00Z"), ("task-b", "2026-01-26T05:00:00+02:00")):  # fmt: skip
        write_trial(se, f"{task}__1", task, started=started, stream=cc_stream())
        write_trial(sd, f"{task}__2", task, started=started, stream=cc_stream(init=False))
    out = tmp_path / "runs"
    assert _harbor(se, sd, out).exit_code == 0
    (run,) = out.iterdir()
    assert (
        json.loads((run / "manifest.json").read_text())["created_at"] == "2026-01-26T05:00:00+02:00"
    )


def test_a_trial_folder_harbor_has_not_finished_holds_back_its_task(tmp_path: Path) -> None:
    # Harbor 0.26 writes a trial's result.json only when the trial ends (trial.py `_finalize`):
    # while it runs, its folder holds config.json and agent/. Such a folder was only counted,
    # so the SD trial of 04:00 was paired in place of the running one of 03:00; once that one
    # finished, the recorded pair contradicted the new ones and nothing of the cell was
    # written. Its task (config.json `task.path`, as Harbor's TrialConfig names it) is held
    # back until it finishes; the other tasks import.
    se, sd = _arms(tmp_path)
    three, four = "2026-01-26T03:00:00", "2026-01-26T04:00:00"
    write_trial(se, "task-a__1", "task-a", started=three, stream=cc_stream())
    write_trial(se, "task-a__3", "task-a", started=four, reward=0.0, stream=cc_stream())
    running = write_trial(sd, "task-a__2", "task-a", started=three, reward=0.0,
                          stream=cc_stream(init=False))  # fmt: skip
    finished = (running / "result.json").read_text()
    (running / "result.json").unlink()
    config = json.loads((running / "config.json").read_text())
    config["task"] = {"path": "/data/tasks/task-a", "git_url": None, "name": None}
    (running / "config.json").write_text(json.dumps(config))
    write_trial(sd, "task-a__4", "task-a", started=four, reward=1.0, stream=cc_stream(init=False))
    write_trial(se, "b__1", "task-b", stream=cc_stream())
    write_trial(sd, "b__2", "task-b", reward=0.0, stream=cc_stream(init=False))
    out = tmp_path / "runs"
    first = _harbor(se, sd, out)
    assert first.exit_code == 0, first.output
    assert "1 pair(s) in 1 run folder(s)" in first.output  # task-b only
    note = " ".join(first.output.split())
    assert (f"1 trial folder(s) without a result.json (still running, or killed before writing "
            f"it), e.g. {running}: 1 finished trial(s) of their task and arm held back") in note  # fmt: skip
    assert ("import again once they finish, or resume the Harbor job, or remove the folder of "
            "a trial that was killed and will not be redone") in note  # fmt: skip
    assert {t["task_id"] for t in _traces(out)} == {"task-b"}
    (running / "result.json").write_text(finished)
    later = _harbor(se, sd, out)
    assert later.exit_code == 0, later.output
    assert "without a result.json" not in later.output
    # the task set is part of the cell: the first import's cell (task-b) stays as it was,
    # the second's holds both tasks, each row once
    cells: dict[str, dict[tuple[str, str], dict[str, str]]] = {}
    rows = [(t["run_id"], t["task_id"], t["arm"]) for t in _traces(out)]
    assert len(rows) == len(set(rows)) == 8, rows
    for trace in _traces(out):
        pair = cells.setdefault(trace["cell_id"], {}).setdefault(
            (trace["run_id"][-2:], trace["task_id"]), {})  # fmt: skip
        pair[trace["arm"]] = json.loads(trace["scorer_details"])["trial"]
    assert sorted(cells.values(), key=len) == [
        {("r0", "task-b"): {"se": "b__1", "sd": "b__2"}},
        {
            ("r0", "task-a"): {"se": "task-a__1", "sd": "task-a__2"},
            ("r0", "task-b"): {"se": "b__1", "sd": "b__2"},
            ("r1", "task-a"): {"se": "task-a__3", "sd": "task-a__4"},
        },
    ]
    assert "(0 written" not in later.output


def test_an_unreadable_config_of_a_result_less_trial_folder_holds_back_its_arm(
    tmp_path: Path,
) -> None:
    # A hostile config.json (not JSON, a list, a task that is no object) must not stop the
    # import: the task is then the folder name's part before '__', else unknown (every task
    # of its arm held back).
    for n, (name, text) in enumerate((("zz__9", "{not json"), ("zz", "[1, 2]"),
                                      ("zz", '{"task": {"path": 7}}'))):  # fmt: skip
        se, sd = _arms(tmp_path / str(n))
        write_trial(se, "a__1", "task-a", stream=cc_stream())
        write_trial(sd, "a__2", "task-a", reward=0.0, stream=cc_stream(init=False))
        write_trial(se, "b__1", "task-b", stream=cc_stream())
        write_trial(sd, "b__2", "task-b", reward=0.0, stream=cc_stream(init=False))
        hostile = sd / name
        (hostile / "agent").mkdir(parents=True)
        (hostile / "config.json").write_text(text)
        result = _harbor(se, sd, tmp_path / str(n) / "runs")
        note = " ".join(result.output.split())
        if name == "zz__9":  # task 'zz': no trial of it, nothing held back
            assert result.exit_code == 0, result.output
            assert "2 pair(s) in 1 run folder(s)" in result.output
        else:  # every task of the SD arm held back: nothing to import, one line saying why
            line = _error_line(result)
            assert "without a result.json" in line and str(hostile) in line
            assert "2 finished trial(s) of their task and arm held back" in note


def test_a_result_less_trial_takes_the_task_name_its_finished_trials_record(
    tmp_path: Path,
) -> None:
    # A task.toml may name its task otherwise than its folder (Harbor's Task.name): the
    # finished trials of the same recorded `config.task` give the name it will finish under.
    se, sd = _arms(tmp_path)
    task = {"path": "/data/tasks/folder-x", "git_url": None, "name": None}
    for job, name, started in ((se, "a__1", "03"), (se, "a__3", "04"), (sd, "a__4", "04")):
        trial = write_trial(job, name, "task-a", started=f"2026-01-26T{started}:00:00",
                            stream=cc_stream(init=job == se))  # fmt: skip
        _edit(trial / "result.json", config={"trial_name": name, "task": task})
    running = sd / "folder-x__2"
    (running / "agent").mkdir(parents=True)
    (running / "config.json").write_text(json.dumps({"trial_name": running.name, "task": task}))
    write_trial(se, "b__1", "task-b", stream=cc_stream())
    write_trial(sd, "b__2", "task-b", reward=0.0, stream=cc_stream(init=False))
    result = _harbor(se, sd, tmp_path / "runs")
    assert result.exit_code == 0, result.output
    assert "1 finished trial(s) of their task and arm held back" in " ".join(result.output.split())
    assert {t["task_id"] for t in _traces(tmp_path / "runs")} == {"task-b"}


def test_a_result_less_trial_without_a_config_task_holds_back_by_its_name(
    tmp_path: Path,
) -> None:
    # Without a readable config.json the trial name stands for its task: Harbor cuts the task
    # name to 32 characters in it, so a long task's trials are held back too.
    long = "a-task-whose-name-runs-past-thirty-two-characters"
    se, sd = _arms(tmp_path)
    write_trial(se, "t__1", long, stream=cc_stream())
    write_trial(sd, "t__2", long, reward=0.0, stream=cc_stream(init=False))
    write_trial(se, "b__1", "task-b", stream=cc_stream())
    write_trial(sd, "b__2", "task-b", reward=0.0, stream=cc_stream(init=False))
    running = se / f"{long[:32]}__abc1234"
    (running / "agent").mkdir(parents=True)
    (running / "config.json").write_text("{")
    result = _harbor(se, sd, tmp_path / "runs")
    assert result.exit_code == 0, result.output
    assert "1 finished trial(s) of their task and arm held back" in " ".join(result.output.split())
    assert {t["task_id"] for t in _traces(tmp_path / "runs")} == {"task-b"}

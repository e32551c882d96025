"""Skill evals as Harbor workspace tasks, without Harbor: the conversion, the guards, the
outputs collector, what the judge reads of a trial, and the judged import.

Every expected string and count below is written by hand from the fixtures in this file.
The end-to-end run through Harbor's Terminus is `test_harbor_evals_terminus.py` (marker
`harbor`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from hf_skillfollow.cli import cli
from hf_skillfollow.harness import _evals_tasks, _judged, _outputs_collector
from hf_skillfollow.harness._evals_tasks import EvalTaskError, EvalTasks
from hf_skillfollow.skills import load_pool
from tests._http_double import ChatServerDouble, Reply

CSV = "city,population\nDelhi,33\nTokyo,37\nParis,11\n"
BINARY = b"\x89PNG\x00\x01\x02binary"
EVALS = {
    "skill_name": "city-facts",
    "evals": [
        {"id": 1, "prompt": "Which city in the table is largest? Write its name to a file.",
         "expected_output": "A file naming Tokyo.",
         "files": ["evals/files/cities.csv", "./evals/files/map.png"],
         "expectations": ["mentions Tokyo", "names the file it wrote"]},
        {"id": "units", "prompt": "How far is it from Paris to Lyon?",
         "expectations": ["mentions kilometres"]},
    ],
}  # fmt: skip


def _pool(root: Path, evals: dict | None = None) -> Path:
    folder = root / "pool" / "city-facts"
    (folder / "evals" / "files").mkdir(parents=True)
    (folder / "references").mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: city-facts\ndescription: Facts about cities from tables.\n---\n"
        "# City facts\n\nSort the table by population with `sort -t, -k2 -n`.\n"
    )
    (folder / "references" / "guide.md").write_text("How this skill reads city tables, in full.")
    (folder / "evals" / "evals.json").write_text(json.dumps(evals or EVALS))
    (folder / "evals" / "files" / "cities.csv").write_text(CSV)
    (folder / "evals" / "files" / "map.png").write_bytes(BINARY)
    return root / "pool"


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# --- the conversion ----------------------------------------------------------------------


def test_each_eval_becomes_a_workspace_task_without_its_answer_key(tmp_path: Path) -> None:
    evals = EvalTasks.of(load_pool(_pool(tmp_path)))
    out = evals.write(tmp_path / "tasks")
    assert sorted(p.name for p in out.iterdir()) == ["city-facts-1", "city-facts-units"]
    one = out / "city-facts-1"
    files = _files(one)
    assert sorted(files) == [
        "environment/Dockerfile",
        "environment/files/evals/files/cities.csv",
        "environment/files/evals/files/map.png",
        "instruction.md",
        "task.toml",
        "tests/collect.py",
        "tests/test.sh",
    ]
    assert (one / "environment" / "files" / "outputs").is_dir()
    assert files["environment/files/evals/files/cities.csv"] == CSV.encode()
    assert files["environment/files/evals/files/map.png"] == BINARY  # binary files are copied
    assert files["instruction.md"].decode() == (
        "Which city in the table is largest? Write its name to a file.\n\n---\n"
        "You work in `/app`. The files of this task are there: `evals/files/cities.csv`, "
        "`evals/files/map.png`. Save every file you produce for this task in `/app/outputs/`: "
        "those files and your final message are what is evaluated.\n"
    )
    assert files["environment/Dockerfile"].decode().splitlines()[1:] == [
        "FROM python:3.12-slim", "WORKDIR /app", "COPY files/ /app/"]  # fmt: skip
    assert files["tests/collect.py"] == Path(_outputs_collector.__file__).read_bytes()
    meta = tomllib.loads(files["task.toml"].decode())["metadata"]
    assert meta["hf_skillfollow_task_id"] == "city-facts/1"
    assert meta["hf_skillfollow_grader"] == "judge" and meta["skill"] == "city-facts"
    assert meta["hf_skillfollow_source"] == evals.version
    # the answer key never reaches a task folder: the agent could read it
    for task in (one, out / "city-facts-units"):
        blob = b"".join(_files(task).values())
        for secret in ("mentions Tokyo", "names the file it wrote", "A file naming Tokyo",
                       "mentions kilometres"):  # fmt: skip
            assert secret.encode() not in blob
    units = _files(out / "city-facts-units")
    assert "environment/files/evals/files/cities.csv" not in units
    assert units["instruction.md"].decode() == (
        "How far is it from Paris to Lyon?\n\n---\nYou work in `/app`. Save every file you "
        "produce for this task in `/app/outputs/`: those files and your final message are "
        "what is evaluated.\n"
    )


def test_the_served_pool_and_the_judge_view(tmp_path: Path) -> None:
    pool = load_pool(_pool(tmp_path))
    assert "evals/evals.json" in pool.get("city-facts").resources
    evals = EvalTasks.of(pool)
    # the skill-enabled arm is given the skill without its evals (the answer keys)
    assert evals.served.get("city-facts").resources == ("references/guide.md",)
    assert evals.served.content_hash != pool.content_hash
    task = evals.tasks["city-facts-1"]
    assert task.task_id == "city-facts/1" and task.grader == "expectations"
    assert task.problem["expectations"] == ("mentions Tokyo", "names the file it wrote")
    # the judge is shown the agent's instruction and each text file as the chat loop shows it
    assert task.prompt.endswith(
        'what is evaluated.\n\n<file name="evals/files/cities.csv">\n' + CSV + "\n</file>\n\n"
        '<file name="evals/files/map.png" bytes="13">(binary file)</file>'
    )
    # one more byte in an input file is another task set
    (tmp_path / "pool" / "city-facts" / "evals" / "files" / "map.png").write_bytes(BINARY + b"!")
    assert EvalTasks.of(load_pool(tmp_path / "pool")).version != evals.version


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("evals/evals.json", "an answer key"),
        ("references/guide.md", "only the skill-enabled arm may read"),
        ("SKILL.md", "only the skill-enabled arm may read"),
        ("../other.txt", "not a relative path inside the skill folder"),
        ("evals/../evals/files/cities.csv", "not a relative path inside the skill folder"),
        ("/etc/hostname", "not a relative path inside the skill folder"),
        ("evals/files/out-link", "outside"),
        ("evals/files/missing.csv", "missing.csv"),
    ],
)
def test_an_eval_file_is_refused_as_the_chat_loop_refuses_it(
    tmp_path: Path, name: str, expected: str
) -> None:
    evals = {"evals": [{"id": 7, "prompt": "p", "files": [name], "expectations": ["e"]}]}
    pool = _pool(tmp_path, evals)
    (tmp_path / "other.txt").write_text("outside the skill")
    os.symlink(tmp_path / "other.txt", pool / "city-facts" / "evals" / "files" / "out-link")
    with pytest.raises(EvalTaskError) as err:
        _evals_tasks.load(load_pool(pool))
    message = str(err.value)
    assert "\n" not in message and "eval '7'" in message and expected in message


def test_written_eval_tasks_given_as_tasks_are_refused(tmp_path: Path) -> None:
    # their verifier grades nothing: run without the judge, every trial would read as failed
    out = EvalTasks.of(load_pool(_pool(tmp_path))).write(tmp_path / "tasks")
    with pytest.raises(EvalTaskError, match=r"city-facts-1 is a skill eval written by hf-skill"):
        _evals_tasks.refuse_judged(sorted(out.iterdir()))
    examples = Path(_evals_tasks.__file__).parent.parent / "_data" / "harbor_tasks" / "tasks"
    _evals_tasks.refuse_judged(sorted(examples.iterdir()))  # ordinary tasks pass


def test_two_evals_that_give_one_folder_are_one_error(tmp_path: Path) -> None:
    evals = {"evals": [{"id": "a b", "prompt": "p", "expectations": ["e"]},
                       {"id": "a-b", "prompt": "q", "expectations": ["e"]}]}  # fmt: skip
    with pytest.raises(EvalTaskError, match="'city-facts/a b' and 'city-facts/a-b' both become"):
        _evals_tasks.load(load_pool(_pool(tmp_path, evals)))


# --- the collector (it runs in the environment) ---------------------------------------------


def test_the_collector_keeps_bounded_regular_files_and_says_what_it_left_out(
    tmp_path: Path,
) -> None:
    out = tmp_path / "outputs"
    (out / "sub").mkdir(parents=True)
    (out / "answer.txt").write_text("Tokyo\n")
    (out / "sub" / "data.bin").write_bytes(b"\x00\x01")
    (out / "big.txt").write_text("x" * (64 * 1024 + 1))
    (tmp_path / "secret").write_text("host file")
    os.symlink(tmp_path / "secret", out / "link.txt")
    logs = tmp_path / "logs"
    script = tmp_path / "collect.py"
    script.write_bytes(Path(_outputs_collector.__file__).read_bytes())
    done = subprocess.run([sys.executable, "-I", str(script), str(out), str(logs)], timeout=60)
    assert done.returncode == 0
    assert (logs / "reward.txt").read_text() == "0\n"
    assert json.loads((logs / "outputs.json").read_text()) == {
        "files": [{"name": "answer.txt", "bytes": 6, "text": "Tokyo\n"},
                  {"name": "sub/data.bin", "bytes": 2, "text": None}],
        "left_out": [{"name": "big.txt", "why": "65537 bytes, over the 65536-byte limit per file"},
                     {"name": "link.txt", "why": "a symbolic link (not followed)"}],
    }  # fmt: skip


def test_the_collector_caps_the_count_and_the_total(tmp_path: Path) -> None:
    for i in range(40):
        (tmp_path / f"f{i:02}.txt").write_text("y" * 10_000)
    found = _outputs_collector.collect(str(tmp_path))
    # 256 KiB hold 26 files of 10,000 bytes; the rest are named with why
    assert [f["name"] for f in found["files"]] == [f"f{i:02}.txt" for i in range(26)]
    assert found["left_out"][0] == {
        "name": "f26.txt", "why": "the files together exceed 262144 bytes"}  # fmt: skip
    assert len(found["left_out"]) == 14
    assert _outputs_collector.collect(str(tmp_path / "absent")) == {"files": [], "left_out": []}


def test_the_collector_follows_no_linked_outputs_folder_and_bounds_names(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "answer.txt").write_text("Tokyo")
    os.symlink(tmp_path / "real", tmp_path / "outputs")
    assert _outputs_collector.collect(str(tmp_path / "outputs")) == {
        "files": [],
        "left_out": [{"name": ".", "why": "the outputs folder is a symbolic link (not followed)"}],
    }
    deep = tmp_path / "real" / ("d" * 120) / ("e" * 120)
    deep.mkdir(parents=True)
    (deep / "x.txt").write_text("x")
    found = _outputs_collector.collect(str(tmp_path / "real"))
    assert found["files"] == [{"name": "answer.txt", "bytes": 5, "text": "Tokyo"}]
    assert found["left_out"] == [
        {"name": f"{'d' * 120}/{'e' * 79}...", "why": "a name longer than 240 characters"}
    ]


# --- what the judge reads of a trial ---------------------------------------------------------


def _trial(root: Path, steps: list[dict] | None, outputs: object) -> Path:
    trial = root / "trial"
    (trial / "agent").mkdir(parents=True)
    (trial / "verifier").mkdir()
    if steps is not None:
        (trial / "agent" / "trajectory.json").write_text(json.dumps({"steps": steps}))
    if outputs is not None:
        (trial / "verifier" / "outputs.json").write_text(json.dumps(outputs))
    return trial


STEPS = [
    {"step_id": 1, "source": "user", "message": "Which city is largest?"},
    {"step_id": 2, "source": "agent", "message": "Analysis: reading.\nPlan: sort."},
    {"step_id": 3, "source": "agent", "message": "Analysis: Tokyo is largest.\nPlan: done."},
    {"step_id": 4, "source": "agent", "message": ""},
]


def test_the_answer_is_the_final_message_and_the_output_files(tmp_path: Path) -> None:
    outputs = {"files": [{"name": "answer.txt", "bytes": 6, "text": "Tokyo\n"},
                         {"name": 'a"b.bin', "bytes": 2, "text": None}],
               "left_out": [{"name": "big.txt", "why": "too <large>"}]}  # fmt: skip
    trial = _trial(tmp_path, STEPS, outputs)
    answer = _judged.answer_text(_judged.final_message(trial), _judged.read_outputs(trial))
    assert answer == (
        "Analysis: Tokyo is largest.\nPlan: done.\n\n"
        '<file name="outputs/answer.txt">\nTokyo\n\n</file>\n\n'
        '<file name="outputs/a&quot;b.bin" bytes="2">(binary file, not shown)</file>\n\n'
        '<file name="outputs/big.txt">(not collected: too &lt;large&gt;)</file>'
    )


@pytest.mark.parametrize(
    ("outputs", "problem"),
    [
        (None, "the verifier collected no outputs.json"),
        ({"files": "x", "left_out": []}, "outputs.json is not the collector's"),
        ({"files": [{"name": "a", "bytes": -1, "text": "t"}], "left_out": []}, "not a count"),
        ({"files": [{"name": "a", "bytes": 1, "text": "t" * 70_000}], "left_out": []},
         "not a bounded string"),
        ({"files": [{"name": "n", "bytes": 1, "text": ""}] * 33, "left_out": []},
         "at most 32"),
    ],
)  # fmt: skip
def test_a_malformed_outputs_file_is_said_not_trusted(
    tmp_path: Path, outputs: object, problem: str
) -> None:
    trial = _trial(tmp_path, STEPS, outputs)
    read = _judged.read_outputs(trial)
    assert read.files == () and read.problem is not None and problem in read.problem
    assert _judged.answer_text("msg", read).startswith("msg\n\n(output files not read: ")


def test_links_out_of_the_trial_are_not_read(tmp_path: Path) -> None:
    trial = _trial(tmp_path, None, None)
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps({"steps": STEPS, "files": [], "left_out": []}))
    os.symlink(outside, trial / "agent" / "trajectory.json")
    os.symlink(outside, trial / "verifier" / "outputs.json")
    assert _judged.final_message(trial) == ""
    assert _judged.read_outputs(trial).problem == "the verifier collected no outputs.json"
    # no message and no file: the empty answer the chat loop never sends to the judge
    assert _judged.answer_text("", _judged.Outputs()) == ""


def test_the_judge_defaults_to_the_agents_model_at_its_endpoint() -> None:
    choice = _judged.judge_config("openai/double-model", "http://127.0.0.1:9/v1", "KEY", {}, False)
    judge = choice.config.judge_config()
    assert (judge.model, judge.backend, judge.base_url, judge.api_key_env) == (
        "double-model", "openai", "http://127.0.0.1:9/v1", "KEY")  # fmt: skip
    # the agent's own model judging: recorded under the rows' model name (self-judged)
    assert choice.settings.model == "openai/double-model" and choice.settings.repeats == 2
    other = _judged.judge_config("openai/m", "http://127.0.0.1:9/v1", "KEY",
                                 {"judge_model": "judge-x", "judge_repeats": 3}, False)  # fmt: skip
    assert (other.config.judge_config().model, other.settings.repeats) == ("judge-x", 3)
    assert other.settings.model == "judge-x"
    with pytest.raises(_judged.JudgeRunError, match=r"^--judge-repeats: "):
        _judged.judge_config("openai/m", None, None, {"judge_repeats": 0}, False)
    # an agent on an Anthropic endpoint gives the judge no OpenAI-compatible model
    with pytest.raises(_judged.JudgeRunError, match=r"^--judge-model: the agent's model "):
        _judged.judge_config("anthropic/claude-x", None, None, {}, False)
    named = _judged.judge_config("anthropic/claude-x", None, None, {"judge_model": "j"}, False)
    assert named.config.judge_config().model == "j"


# --- the command line ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--benchmark", "mbppplus"], "--benchmark mbppplus: with --harness, only skill-evals"),
        (["--judge-model", "j"], "--judge-model: only with --benchmark skill-evals"),
        (["--benchmark", "skill-evals", "--tasks", "x"], "--tasks: not with --benchmark skill-evals"),
        (["--benchmark", "skill-evals"], "--benchmark skill-evals: name the skill pool with --skills"),
    ],
)  # fmt: skip
def test_bad_flags_are_one_line(tmp_path: Path, extra: list[str], expected: str) -> None:
    argv = ["run", "--harness", "harbor", "--model", "openai/m", "--base-url",
            "http://127.0.0.1:9/v1", "-o", str(tmp_path), *extra]  # fmt: skip
    out = CliRunner().invoke(cli, argv)
    assert out.exit_code != 0
    assert out.output.strip().splitlines()[-1].startswith(f"Error: {expected}")


def test_a_pool_without_evals_is_one_line(tmp_path: Path) -> None:
    pool = tmp_path / "pool" / "plain"
    pool.mkdir(parents=True)
    (pool / "SKILL.md").write_text("---\nname: plain\ndescription: d\n---\nbody\n")
    argv = ["run", "--harness", "harbor", "--model", "openai/m", "--base-url",
            "http://127.0.0.1:9/v1", "--benchmark", "skill-evals", "--skills",
            str(tmp_path / "pool"), "-o", str(tmp_path / "runs")]  # fmt: skip
    out = CliRunner().invoke(cli, argv)
    assert out.exit_code != 0
    assert out.output.strip().splitlines()[-1] == (
        "Error: skill pool pool: no skill has evals/evals.json (see docs/tasks.md, 'Skill evals')"
    )


# --- the judged import ----------------------------------------------------------------------


def test_the_judges_verdicts_replace_the_placeholder_rewards(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    from hf_skillfollow.importers import Graded, ImportOptions, Judging, import_runs
    from tests._trial_fixtures import atif, write_job, write_pool, write_trial

    pool = write_pool(tmp_path / "pool")
    se, sd = write_job(tmp_path / "se", "terminus-2"), write_job(tmp_path / "sd", "terminus-2")
    common = {"reward": 0.0, "agent": "terminus-2", "version": "2.0.0", "model": "openai/m"}
    se_a = write_trial(se, "a__1", "task-a", atif=atif(["cat /x/pdf-tools/SKILL.md\n"]), **common)
    sd_a = write_trial(sd, "a__2", "task-a", atif=atif([], listed=()), **common)
    se_b = write_trial(se, "b__1", "task-b", atif=atif([]), **common)
    timeout = {"exception_type": "AgentTimeoutError", "exception_message": "timed out"}
    write_trial(sd, "b__2", "task-b", exception=timeout, **{**common, "reward": None})
    record = {"judge": "judge-x@abc", "majority": [True], "repeats": []}
    graded = {
        se_a.resolve(): Graded(True, "Tokyo", "judge: 1 of 1 expectation(s) met", record),
        sd_a.resolve(): Graded(False, "Delhi", "judge: 0 of 1 expectation(s) met", record),
        se_b.resolve(): Graded(True, "kilometres", "judge: 1 of 1 expectation(s) met", record),
    }
    identity = {"judge": "judge-x@abc", "backend": "openai", "repeats": 2}
    options = ImportOptions(skills=pool, benchmark="harbor:skill-evals")
    judged = import_runs("harbor", [se], [sd], options, output_dir=tmp_path / "runs",
                         provenance="run:harbor", judging=Judging(identity, graded, {"task-a": "s/a"}))  # fmt: skip
    plain = import_runs("harbor", [se], [sd], options, output_dir=tmp_path / "plain",
                        provenance="run:harbor")  # fmt: skip
    (run,) = judged.run_dirs
    rows = {r["task_id"]: r for r in pq.read_table(run / "transitions.parquet").to_pylist()}
    # the rows carry the ids given for the harness's task names; a name not given is kept
    assert {t: (r["se_correct"], r["sd_correct"]) for t, r in rows.items()} == {
        "s/a": (True, False), "task-b": (True, False)}  # fmt: skip
    assert rows["task-b"]["sd_error"] == "AgentTimeoutError: timed out"
    assert {r["judged_by"] for r in rows.values()} == {"judge-x@abc"}
    assert rows["s/a"]["skills_returned"] == ["pdf-tools"]  # activation still from the trial
    traces = {
        (t["task_id"], t["arm"]): t for t in pq.read_table(run / "traces.parquet").to_pylist()
    }
    assert traces[("s/a", "se")]["final_answer"] == "Tokyo"
    assert traces[("s/a", "sd")]["grader"] == "expectations"
    assert json.loads(traces[("s/a", "sd")]["judge_verdicts"]) == record
    assert json.loads(traces[("s/a", "sd")]["scorer_details"])["reward"] == 0.0
    assert traces[("task-b", "sd")]["judge"] is None and not traces[("task-b", "sd")]["correct"]
    # the judge is part of the cell: the same trials unjudged are another cell (rewards 0)
    (other,) = plain.run_dirs
    plain_rows = pq.read_table(other / "transitions.parquet").to_pylist()
    assert sorted(r["task_id"] for r in plain_rows) == ["task-a", "task-b"]
    assert plain_rows[0]["cell_id"] != rows["s/a"]["cell_id"]
    assert {(r["se_correct"], r["sd_correct"]) for r in plain_rows} == {(False, False)}
    assert {r["judged_by"] for r in plain_rows} == {""}


# --- judging a run's trials (the judge over HTTP: a model-provider double) -------------------

SIMPLE = {
    "evals": [
        {"id": 1, "prompt": "Which city in the table is largest?", "expected_output": "Tokyo.",
         "files": ["evals/files/cities.csv"], "expectations": ["mentions Tokyo"]},
    ]
}  # fmt: skip


def _work(root: Path) -> Path:
    """A run's work folder as Harbor leaves it: one trial per arm of task `city-facts-1`
    (SE left "Tokyo" in outputs/, SD "Delhi"), and one SE trial that ended in an exception."""
    work = root / "work"
    for arm, trial, city, exception in (
        ("se", "city-facts-1__a", "Tokyo", None),
        ("sd", "city-facts-1__b", "Delhi", None),
        ("se", "city-facts-1__c", "", {"exception_type": "AgentTimeoutError"}),
    ):
        folder = work / "jobs" / arm / trial
        (folder / "agent").mkdir(parents=True)
        (folder / "verifier").mkdir()
        result = {"trial_name": trial, "task_name": "city-facts-1", "exception_info": exception}
        (folder / "result.json").write_text(json.dumps(result))
        steps = [{"step_id": 1, "source": "agent", "message": "Analysis: done.\nPlan: stop."}]
        (folder / "agent" / "trajectory.json").write_text(json.dumps({"steps": steps}))
        files = [{"name": "answer.txt", "bytes": len(city), "text": city}]
        outputs = {"files": files, "left_out": []}
        (folder / "verifier" / "outputs.json").write_text(json.dumps(outputs))
    return work


def test_judging_the_trials_keeps_each_verdict_for_the_next_run(
    tmp_path: Path, monkeypatch
) -> None:
    from tests._judge_double import AgentAndJudgeDouble

    monkeypatch.setenv("DOUBLE_API_KEY", "double-key")
    tasks = EvalTasks.of(load_pool(_pool(tmp_path, SIMPLE))).tasks
    work = _work(tmp_path)
    with AgentAndJudgeDouble(lambda prompt, arm: "") as judge:
        choice = _judged.judge_config("openai/double-model", judge.url, "DOUBLE_API_KEY", {}, False)
        judging = _judged.judge_trials(work, tasks, choice, 2, lambda line: None)
        assert len(judge.judge_requests) == 4  # 2 answers x 2 repeats; the errored trial none
    by_trial = {path.name: graded for path, graded in judging.verdicts.items()}
    assert {name: g.passed for name, g in by_trial.items()} == {
        "city-facts-1__a": True, "city-facts-1__b": False}  # fmt: skip
    assert by_trial["city-facts-1__b"].answer == (
        'Analysis: done.\nPlan: stop.\n\n<file name="outputs/answer.txt">\nDelhi\n</file>'
    )
    assert judging.task_ids == {"city-facts-1": "city-facts/1"}
    assert judging.identity["judge"].startswith("openai/double-model@")
    # the request is the chat loop's: the task as the judge sees it, the answer delimited
    request = json.loads(judge.judge_requests[0])
    assert '<file name="evals/files/cities.csv">' in request["messages"][1]["content"]
    # The next run reads the verdicts back: no judge is asked (none is listening now).
    again = _judged.judge_trials(work, tasks, choice, 2, lambda line: None)
    assert again.verdicts == judging.verdicts


class _Outage(ChatServerDouble):
    """A judge endpoint in an outage: every request is HTTP 503 with a Retry-After too long to
    wait for (a model-provider double: an outage cannot be had on demand)."""

    def answer(self, raw: bytes) -> Reply:
        return Reply(
            status=503, headers={"retry-after": "100000"}, body={"error": {"message": "overloaded"}}
        )


def test_an_unreachable_judge_stops_the_run_and_keeps_nothing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("DOUBLE_API_KEY", "double-key")
    tasks = EvalTasks.of(load_pool(_pool(tmp_path, SIMPLE))).tasks
    work = _work(tmp_path)
    with _Outage() as judge:
        choice = _judged.judge_config("openai/double-model", judge.url, "DOUBLE_API_KEY", {}, False)
        with pytest.raises(_judged.JudgeRunError) as err:
            _judged.judge_trials(work, tasks, choice, 2, lambda line: None)
    assert "could not be reached for 2 trial(s)" in str(err.value)
    assert "\n" not in str(err.value)
    assert not (work / "judged").exists() or not list((work / "judged").rglob("*.json"))

"""Red team, round 3 (issue 37 items 14-18): bad files are one line, defaults a maintainer expects.

Every input is a real file read by the real loaders and CLI; the one `run` uses the scripted
agent double of tests/_judge_double.py only to show that no model turn happens before the
refusal (a model cannot be made to "not be called" otherwise).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hf_skillfollow.skills import load_pool, validate_pool
from hf_skillfollow.tasks import TaskLoadError, load_tasks, task_sort_key

CLI = [sys.executable, "-m", "hf_skillfollow.cli"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300)


# --- item 14: front matter read as skills-ref reads it ----------------------------------------


@pytest.mark.parametrize(
    ("line", "field", "value"),
    [
        ("description: 2024-02-30", "description", "2024-02-30"),
        ("license: 2024-02-30", "license", "2024-02-30"),
        ("description: " + "7" * 5000, "description", "7" * 5000),
        ("description: 59:59:59:59:59:59:59:59", "description", "59:59:59:59:59:59:59:59"),
        ("compatibility: 2024-02-30", "compatibility", "2024-02-30"),
    ],
    ids=["impossible-date", "date-in-license", "5000-digits", "sexagesimal", "date-compat"],
)
def test_a_scalar_is_the_string_it_is_written_as(
    tmp_path: Path, line: str, field: str, value: str
) -> None:
    # before: a traceback (ValueError: day is out of range; Exceeds the limit (4300 digits)) in
    # `skills validate`, `skills list` and `run`
    folder = tmp_path / "pool" / "dated"
    folder.mkdir(parents=True)
    head = "" if field == "description" else "description: d\n"
    (folder / "SKILL.md").write_text(f"---\nname: dated\n{head}{line}\n---\nbody\n")
    skill = load_pool(tmp_path / "pool").get("dated")
    assert getattr(skill, field) == value
    for command in ("validate", "list"):
        proc = _cli("skills", command, str(tmp_path / "pool"))
        assert "Traceback" not in proc.stderr and proc.returncode in (0, 1), proc.stderr[-2000:]


def test_metadata_values_are_the_strings_written(tmp_path: Path) -> None:
    folder = tmp_path / "pool" / "meta"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: meta\ndescription: d\nmetadata:\n  released: 2024-02-30\n"
        f"  big: {'9' * 5000}\n  clock: 59:59\n  flag: yes\n---\nbody\n"
    )
    metadata = load_pool(tmp_path / "pool").get("meta").metadata
    assert metadata == {
        "released": "2024-02-30",
        "big": "9" * 5000,
        "clock": "59:59",
        "flag": "yes",
    }


@pytest.mark.parametrize("name", ["on", "yes", "no", "off", "null", "true"])
def test_a_name_that_yaml_1_1_reads_as_a_boolean_is_a_string(tmp_path: Path, name: str) -> None:
    # before: `name: on` was refused ("must be a non-empty string, got True"); skills-ref reads "on"
    folder = tmp_path / "pool" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: d\n---\nbody\n")
    assert load_pool(tmp_path / "pool").names == [name]


def test_an_explicit_tag_is_still_refused_as_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "pool" / "t"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: t\ndescription: !!int 5\n---\nbody\n")
    report = validate_pool(tmp_path / "pool")
    (error,) = report.errors
    assert error.field == "front matter" and "explicit tag" in error.message


# --- item 15: task files ------------------------------------------------------------------------


def _task_file(tmp_path: Path, bad: dict) -> Path:
    path = tmp_path / "tasks.jsonl"
    good = {"id": "fine", "prompt": "What is 1 + 1?", "answer": "2"}
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    return path


@pytest.mark.parametrize(
    ("row", "field", "reason"),
    [
        ({"tests": "assert f(b'x') == 1"}, "tests", "holds bytes"),
        ({"tests": "assert f(...) == 1"}, "tests", "holds ellipsis"),
        ({"tests": "assert f(1) == ..."}, "tests", "holds ellipsis"),
        ({"answer": "4", "prompt": "p\ud800"}, "prompt", "lone surrogate"),
        ({"answer": "4\udc00"}, "answer", "lone surrogate"),
        ({"answer": "4", "id": "x\ud800"}, "id", "lone surrogate"),
        ({"expectations": ["ok", "bad\ud800"]}, "expectations", "lone surrogate"),
        ({"tests": "assert f(0x" + "f" * 4000 + ") == 1"}, "tests", "more digits"),
        ({"tests": "assert f(" + "-" * 50_000 + "1) == 1"}, "tests", "not valid Python"),
        ({"tests": "assert f(1) == " + "[" * 199 + "]" * 199}, "tests", "nests deeper than 100"),
    ],
    ids=["bytes", "ellipsis-arg", "ellipsis-result", "surrogate-prompt", "surrogate-answer",
         "surrogate-id", "surrogate-expectation", "hex-4000", "unary-50000", "nested-199"],
)  # fmt: skip
def test_a_bad_task_is_one_line_naming_file_line_and_field(
    tmp_path: Path, row: dict, field: str, reason: str
) -> None:
    # before: loaded and crashed scoring after the model was called (bytes, `...`, surrogates),
    # or a traceback / an error naming no file (the hex literal, the minus signs); a result
    # nested 199 deep loaded but could never be scored (the scorer's wire carries 200 levels,
    # the cases around a result included)
    path = _task_file(tmp_path, {"id": "bad", "prompt": "p", **row})
    with pytest.raises(TaskLoadError) as info:
        load_tasks("custom", path)
    message = str(info.value)
    assert message.startswith(f"{path}:2: field '{field}': ") and reason in message
    assert "\n" not in message and len(message) < 400


def test_a_bad_task_stops_the_run_before_any_model_turn(tmp_path: Path) -> None:
    from tests._judge_double import AgentAndJudgeDouble

    path = _task_file(tmp_path, {"id": "bad", "prompt": "p", "tests": "assert f(b'x') == 1"})
    turns: list[str] = []
    with AgentAndJudgeDouble(lambda prompt, arm: turns.append(arm) or "2") as double:
        proc = subprocess.run(
            [*CLI, "run", "--backend", "openai", "--model", "m", "--base-url", double.url,
             "--benchmark", "custom", "--tasks-file", str(path), "--skills", "coding",
             "-o", str(tmp_path / "runs")],
            capture_output=True, text=True, timeout=300, env={**os.environ, "OPENAI_API_KEY": "k"},
        )  # fmt: skip
    assert proc.returncode != 0 and turns == []
    (line,) = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert line.startswith("Error: ") and f"{path}:2: field 'tests': " in line


def test_an_id_with_a_superscript_digit_sorts_and_loads(tmp_path: Path) -> None:
    # before: ValueError: invalid literal for int() with base 10: '²' in task_sort_key
    assert task_sort_key("task1²") == ((1, 0, "task"), (0, 1, ""), (1, 0, "²"))
    path = _task_file(tmp_path, {"id": "task1²", "prompt": "p", "answer": "4"})
    assert [t.task_id for t in load_tasks("custom", path)[0]] == ["fine", "task1²"]


def test_a_thousand_near_identical_asserts_load_in_linear_time(tmp_path: Path) -> None:
    # before: 52 s of CPU (each assert compared with every earlier one to de-duplicate)
    big = "[" + ", ".join(str(i) for i in range(30)) + "]"
    tests = "\n".join(f"assert f({big}, {i % 2}) == {big}" for i in range(1000))
    path = _task_file(tmp_path, {"id": "many", "prompt": "p", "tests": tests})
    start = time.process_time()
    tasks, _ = load_tasks("custom", path)
    assert time.process_time() - start < 5.0
    assert len(next(t for t in tasks if t.task_id == "many").problem["base_input"]) == 1000


# --- item 16: nothing dropped silently ------------------------------------------------------------


def test_every_skipped_skill_file_gets_a_finding(tmp_path: Path) -> None:
    # before: only a lower-case `skill.md` got a warning; these three were ignored silently
    root = tmp_path / "pool"
    good = root / "good"
    good.mkdir(parents=True)
    (good / "SKILL.md").write_text("---\nname: good\ndescription: d\n---\nbody\n")
    deep = root.joinpath(*"abcdefg")  # seven levels down
    deeper = root.joinpath(*"hijklmnop")  # nine
    hidden = root / ".drafts"
    hidden_nested = root / ".archive" / "old" / "nested"
    mixed = root / "mixed"
    skipped = [(deep, "SKILL.md"), (deeper, "SKILL.md"), (hidden, "SKILL.md"),
               (hidden_nested, "SKILL.md"), (mixed, "Skill.md")]  # fmt: skip
    for folder, name in skipped:
        folder.mkdir(parents=True)
        (folder / name).write_text("---\nname: x\ndescription: d\n---\nbody\n")
    report = validate_pool(root)
    assert [s.skill.name for s in report.skills if s.skill] == ["good"]
    found = {f.file: f.message for f in report.findings}
    assert set(found) == {folder / name for folder, name in skipped}
    for far in (deep, deeper):
        assert "deeper than the 6 folder levels searched; not loaded" in found[far / "SKILL.md"]
    assert "hidden folder" in found[hidden / "SKILL.md"]
    assert "hidden folder" in found[hidden_nested / "SKILL.md"]
    assert "(upper case); not loaded" in found[mixed / "Skill.md"]


@pytest.mark.parametrize("target", ["/dev/zero", "fifo"])
def test_a_task_file_that_is_not_a_regular_file_says_so(tmp_path: Path, target: str) -> None:
    # before: `--tasks-file: task file ... does not exist` (Path.is_file() is False for both)
    if target == "fifo":
        os.mkfifo(tmp_path / "fifo")
        target = str(tmp_path / "fifo")
    (tmp_path / "t.jsonl").symlink_to(target)
    with pytest.raises(TaskLoadError, match=r"t\.jsonl: not a regular file"):
        load_tasks("custom", tmp_path / "t.jsonl")  # a FIFO without a writer: no blocking


def test_a_renamed_task_file_is_the_same_cell(tmp_path: Path) -> None:
    from hf_skillfollow.config import RunConfig
    from hf_skillfollow.runner import plan_new_run

    first = _task_file(tmp_path, {"id": "b", "prompt": "p", "answer": "4"})
    renamed = tmp_path / "moved" / "renamed.jsonl"
    renamed.parent.mkdir()
    renamed.write_bytes(first.read_bytes())
    cells = []
    for path in (first, renamed):
        config = RunConfig(backend="openai", model="m", benchmark="custom", tasks_file=path,
                           skills_dir=Path("coding"))  # fmt: skip
        cells.append(plan_new_run(config, tmp_path / "runs").manifest["cell_id"])
    assert cells[0] == cells[1]
    renamed.write_text(renamed.read_text().replace('"4"', '"5"'))
    config = RunConfig(backend="openai", model="m", benchmark="custom", tasks_file=renamed,
                       skills_dir=Path("coding"))  # fmt: skip
    assert plan_new_run(config, tmp_path / "runs").manifest["cell_id"] != cells[0]


# --- item 17: the terminal ----------------------------------------------------------------------


@pytest.mark.parametrize("tail", ["\\", "\\\\", "\\\\\\"])
def test_a_name_ending_in_backslashes_keeps_validate_readable(tmp_path: Path, tail: str) -> None:
    # before: rich.errors.MarkupError (the backslash escaped the closing [/bold] tag)
    folder = tmp_path / "pool" / "slash"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: 'pdf{tail}'\ndescription: d\n---\nbody\n")
    proc = _cli("skills", "validate", str(tmp_path / "pool"))
    assert "Traceback" not in proc.stderr and "MarkupError" not in proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith(f"pdf{tail} {folder / 'SKILL.md'}: ")
    assert "[/" not in proc.stdout


# --- item 18: every own task by default ------------------------------------------------------


def test_own_tasks_run_every_task_unless_a_partition_is_asked(tmp_path: Path) -> None:
    from hf_skillfollow.cli._run import _build_config
    from hf_skillfollow.runner import select_tasks

    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps({"id": f"t{i}", "prompt": "p", "answer": str(i)}) + "\n"
                            for i in range(12)))  # fmt: skip
    for backend in ("local", "openai"):  # the local backend's 10-task default is the benchmarks'
        config = _build_config({"backend": backend, "model": None if backend == "local" else "m",
                                "benchmark": "custom", "tasks_file": path})  # fmt: skip
        tasks, _, size = select_tasks(config)
        assert (len(tasks), size) == (12, 12)
    asked = _build_config({"backend": "openai", "model": "m", "benchmark": "custom",
                           "tasks_file": path, "partition_size": 5})  # fmt: skip
    assert len(select_tasks(asked)[0]) == 5
    skills = Path(__file__).parent / "own_tasks" / "skills"
    evals = _build_config({"backend": "local", "model": None, "benchmark": "skill-evals",
                           "skills_dir": skills})  # fmt: skip
    every = load_tasks("skill-evals", None, skills)[0]
    assert len(every) > 1 and select_tasks(evals)[2] == len(every)
    bench = _build_config({"backend": "local", "model": None, "benchmark": "mbppplus"})
    assert bench.partition_size == 10  # the benchmarks keep their sampled partition

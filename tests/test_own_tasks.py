"""A maintainer's own tasks: the JSONL task file, the skills' evals.json, bad input, the tests grader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hf_skillfollow.scoring._custom import UnsupportedTests, problem_from_tests
from hf_skillfollow.tasks import TaskLoadError, load_tasks

OWN = Path(__file__).parent / "own_tasks"


def _file(tmp_path: Path, *rows: object) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def test_fixture_file_has_each_grader_kind() -> None:
    tasks, version = load_tasks("custom", OWN / "tasks.jsonl")
    by_id = {t.task_id: t for t in tasks}
    assert {t.grader for t in tasks} == {"tests", "answer", "expectations"}
    assert version.startswith("custom@sha256.")  # the content, not the file name
    assert version.endswith("+graders.answer,expectations,tests")
    add = by_id["add"]
    assert (add.entry_point, add.problem["base_input"], add.domain) == (
        "add",
        [[1, 2], [-4, 4], [10, 5]],
        "coding",
    )
    assert add.problem["domain_tag"] == "arith"
    square = by_id["square"]
    assert square.problem["base_input"] == [[3], [1.5]] and square.problem["atol"] == 0
    assert square.problem["checks"] == [["==", 0, False], ["abs<", 1e-9, False]]
    assert by_id["half"].reference == "\\frac{9}{2}" and by_id["half"].domain == "math"
    thanks = by_id["thanks"]
    assert thanks.domain == "general" and len(thanks.problem["expectations"]) == 3
    assert thanks.problem["expected_output"].startswith("A short note")


def test_content_hash_changes_the_version(tmp_path: Path) -> None:
    row = {"id": "a", "prompt": "p", "answer": "1"}
    v1 = load_tasks("custom", _file(tmp_path, row))[1]
    v2 = load_tasks("custom", _file(tmp_path, {**row, "answer": "2"}))[1]
    assert v1 != v2 and v1.split("sha256.")[0] == v2.split("sha256.")[0] == "custom@"


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (({"id": "a", "prompt": "p", "answer": "1"}, {"id": "a", "prompt": "q", "answer": "2"}),
         r"tasks.jsonl:2: field 'id': duplicate id 'a' \(first on line 1\)"),
        (({"id": "a", "prompt": "p"},), r"tasks.jsonl:1: no grader: give exactly one of tests, answer, expectations"),
        (({"id": "a", "prompt": "p", "answer": "1", "expectations": ["x"]},),
         r"tasks.jsonl:1: two graders \(answer, expectations\)"),
        (({"id": "a", "prompt": "  ", "answer": "1"},), r"tasks.jsonl:1: field 'prompt': empty"),
        (({"id": "a", "answer": "1"},), r"tasks.jsonl:1: field 'prompt': missing"),
        (('{"id": "a", "prompt": ',), r"tasks.jsonl:1: invalid JSON"),
        (("[1, 2]",), r"tasks.jsonl:1: expected a JSON object, got list"),
        (({"id": "a", "prompt": "p", "expectations": []},), r"tasks.jsonl:1: field 'expectations': a non-empty list"),
        (({"id": "a", "prompt": "p", "tests": "import os\nos.system('x')"},), r"tasks.jsonl:1: field 'tests': line 2: only asserts"),
        (({"id": "a", "prompt": "p", "tests": "assert f(x) == 1"},), r"field 'tests': line 1: 'x' is not a literal"),
    ],
)  # fmt: skip
def test_bad_task_file_is_one_line_naming_file_line_and_field(
    tmp_path: Path, rows: tuple, message: str
) -> None:
    with pytest.raises(TaskLoadError, match=message) as info:
        load_tasks("custom", _file(tmp_path, *rows))
    assert "\n" not in str(info.value)


def test_unknown_key_warns_and_loses_nothing(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    tasks, _ = load_tasks(
        "custom", _file(tmp_path, {"id": "a", "prompt": "p", "answer": "1", "hint": 3})
    )
    assert [t.task_id for t in tasks] == ["a"]
    assert "tasks.jsonl:1: unknown key 'hint' (ignored)" in capsys.readouterr().err


def test_custom_needs_a_task_file() -> None:
    with pytest.raises(TaskLoadError, match="give the task file with --tasks-file"):
        load_tasks("custom")


def test_oversized_input_is_bounded(tmp_path: Path) -> None:
    with pytest.raises(TaskLoadError, match=r"field 'prompt': 70000 characters \(at most 65536\)"):
        load_tasks("custom", _file(tmp_path, {"id": "a", "prompt": "x" * 70000, "answer": "1"}))
    deep = '{"id": "a", "prompt": "p", "answer": ' + "[" * 100000 + "]" * 100000 + "}"
    with pytest.raises(TaskLoadError, match="tasks.jsonl:1: invalid JSON"):
        load_tasks("custom", _file(tmp_path, deep))


# --- the tests grader reads asserts, never runs them ------------------------------------------


def test_asserts_become_inputs_and_expected_outputs() -> None:
    p = problem_from_tests(
        "import math\n'''doc'''\nassert f(1, [2]) == (3,)\nassert 'x' == f('a', None)\nassert f(0)\nassert not f(-1)\n",
        None,
    )
    assert p["entry_point"] == "f"
    assert p["base_input"] == [[1, [2]], ["a", None], [0], [-1]]
    namespace: dict = {}
    exec(p["canonical_solution"], namespace)  # our own generated literals only
    f = namespace["f"]
    assert (f(1, [2]), f("a", None), f(0), f(-1)) == ((3,), "x", True, False)
    with pytest.raises(LookupError):
        f(1, (2,))  # a tuple is not the list the test gave


def test_each_assert_is_one_call_with_its_own_comparison() -> None:
    # a repeated call with another result (a counter) is a task, not a contradiction; each
    # assert keeps its own operator and tolerance (none is shared with the others)
    p = problem_from_tests(
        "assert f() == 1\nassert f() == 2\nassert 0.5 == f()\nassert abs(f() - 1) < 0.1\n"
        "assert abs(2 - f()) <= 1\nassert f()\nassert not f()",
        None,
    )
    assert p["base_input"] == [[]] * 7 and p["atol"] == 0
    assert p["checks"] == [["==", 0, False], ["==", 0, False], ["r==", 0, False],
                           ["abs<", 0.1, False], ["abs<=", 1, True], ["truthy", 0, False],
                           ["falsy", 0, False]]  # fmt: skip
    namespace: dict = {}
    exec(p["canonical_solution"], namespace)  # our own generated literals only
    assert [namespace["f"]() for _ in range(7)] == [1, 2, 0.5, 1, 2, True, False]


@pytest.mark.parametrize(
    ("tests", "message"),
    [
        ("assert f(1) == 2\nassert g(1) == 2", "give the function under test as 'entry_point'"),
        ("assert f(1) > 2", "assert form not accepted"),
        ("assert f(y=1) == 2", "only positional literal arguments"),
        ("def check(c):\n    assert f(1) == 2", r"inside check\(\), call c\(...\)"),
        ("x = f(1)\nassert x == 1", "line 1: only asserts"),
        ("assert f(__import__('os')) == 1", "is not a literal"),
        ("def (:", "not valid Python"),
        ("assert _same(1) == 1", "is reserved"),
        ("def check(candidate):\n    assert candidate(1) == 1", "give the function under test"),
    ],
)
def test_tests_outside_the_accepted_form_are_refused(tests: str, message: str) -> None:
    with pytest.raises(UnsupportedTests, match=message):
        problem_from_tests(tests, None)


def test_check_needs_the_entry_point(tmp_path: Path) -> None:
    with pytest.raises(TaskLoadError, match="give the function under test as 'entry_point'"):
        load_tasks(
            "custom",
            _file(
                tmp_path,
                {
                    "id": "a",
                    "prompt": "p",
                    "tests": "def check(candidate):\n    assert candidate(1) == 1",
                },
            ),
        )


# --- skill evals ------------------------------------------------------------------------------


def test_skill_evals_are_every_eval_of_every_skill() -> None:
    tasks, version = load_tasks("skill-evals", skills_dir=OWN / "skills")
    assert [t.task_id for t in tasks] == ["csv-summary/largest", "polite-email/1", "polite-email/2"]
    assert {t.skill for t in tasks} == {"csv-summary", "polite-email"}
    assert all(t.grader == "expectations" and t.domain == "general" for t in tasks)
    assert version.startswith("skill-evals@pool:skills+sha256.")
    csv = tasks[0]
    assert csv.prompt.endswith(
        '<file name="evals/files/cities.csv">\ncity,population\nLima,10\nTokyo,37\nOslo,1\n\n</file>'
    )
    assert csv.problem["expected_output"].startswith("Tokyo")


def test_skill_evals_need_the_pool() -> None:
    with pytest.raises(TaskLoadError, match="name the skill pool with --skills POOL"):
        load_tasks("skill-evals")


def _pool_with_eval(tmp_path: Path, eval_: dict, files: dict[str, bytes] | None = None) -> Path:
    skill = tmp_path / "pool" / "s1"
    (skill / "evals").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        '---\nname: s1\ndescription: d\nsignature: "f()"\ntype: procedure\n---\nbody\n'
    )
    (skill / "evals" / "evals.json").write_text(json.dumps({"skill_name": "s1", "evals": [eval_]}))
    for name, blob in (files or {}).items():
        (skill / name).parent.mkdir(parents=True, exist_ok=True)
        (skill / name).write_bytes(blob)
    return tmp_path / "pool"


@pytest.mark.parametrize(
    ("files", "named", "message"),
    [
        ({}, "evals/files/none.txt", "file 'evals/files/none.txt': missing"),
        ({"evals/files/b.bin": b"ab\x00cd"}, "evals/files/b.bin", "file 'evals/files/b.bin': binary file"),
        ({"evals/files/big.txt": b"x" * (64 * 1024 + 1)}, "evals/files/big.txt", "more than the 65536 allowed"),
        ({"evals/files/l1.txt": b"\xff\xfe"}, "evals/files/l1.txt", "not UTF-8 text"),
        ({}, "../../secret.txt", "outside the skill folder"),
        ({}, "/etc/passwd", "outside the skill folder"),
    ],
)  # fmt: skip
def test_eval_files_other_than_small_text_are_an_error_naming_eval_and_file(
    tmp_path: Path, files: dict, named: str, message: str
) -> None:
    (tmp_path / "secret.txt").write_text("secret")
    pool = _pool_with_eval(
        tmp_path, {"id": 7, "prompt": "p", "files": [named], "expectations": ["e"]}, files
    )
    with pytest.raises(TaskLoadError, match=message) as info:
        load_tasks("skill-evals", skills_dir=pool)
    assert "eval '7'" in str(info.value)


def test_eval_file_symlink_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("secret")
    pool = _pool_with_eval(
        tmp_path, {"id": 1, "prompt": "p", "files": ["evals/link.txt"], "expectations": ["e"]}
    )
    (pool / "s1" / "evals" / "link.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(TaskLoadError, match="outside the skill folder"):
        load_tasks("skill-evals", skills_dir=pool)


def test_duplicate_eval_ids_are_refused(tmp_path: Path) -> None:
    pool = _pool_with_eval(tmp_path, {"id": 1, "prompt": "p", "expectations": ["e"]})
    path = pool / "s1" / "evals" / "evals.json"
    data = json.loads(path.read_text())
    data["evals"].append(dict(data["evals"][0]))
    path.write_text(json.dumps(data))
    with pytest.raises(TaskLoadError, match=r"evals.json: eval '1': field 'id': duplicate id"):
        load_tasks("skill-evals", skills_dir=pool)


def test_skill_evals_withdraw_the_answer_key_from_the_agent() -> None:
    from hf_skillfollow.config import RunConfig
    from hf_skillfollow.runner import resolve_pool
    from hf_skillfollow.skills import load_pool

    served = {r for s in load_pool(OWN / "skills") for r in s.resources}
    assert "evals/evals.json" in served  # the loader serves every file of a skill folder
    pool = resolve_pool(RunConfig(benchmark="skill-evals", skills_dir=OWN / "skills"))
    assert not [r for s in pool for r in s.resources if r.startswith("evals/")]
    assert pool.content_hash != load_pool(OWN / "skills").content_hash
    custom = resolve_pool(RunConfig(benchmark="custom", skills_dir=OWN / "skills"))
    assert custom.content_hash == load_pool(OWN / "skills").content_hash

"""A local MBPP+/HumanEval+ file loaded again decodes its tasks' inputs only when they are read:
its other fields come from the cache (keyed by the file's bytes), the inputs from EvalPlus
on first use; a warm ``score`` never reads them."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hf_skillfollow import _evalplus_files
from hf_skillfollow._evalplus_files import LazyProblem, load_file
from hf_skillfollow.tasks import TaskLoadError, _code_task, load_tasks

pytestmark = pytest.mark.usefixtures("private_score_cache")


def _subset(data_dir: Path, tmp_path: Path, n: int, name: str = "mbpp.jsonl") -> Path:
    """The first ``n`` MBPP+ tasks in a file of their own (bytes no other test loads)."""
    lines = (data_dir / "mbppplus-v0.1.0.jsonl").read_text().splitlines()[:n]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def _entry(benchmark: str, data: bytes) -> Path:
    """The cache file of ``data``'s fields."""
    return _evalplus_files.cache_dir() / f"{_evalplus_files._key(benchmark, data)}.json"


def _evalplus_rows(benchmark: str, path: Path) -> dict[str, dict[str, Any]]:
    return _evalplus_files.problems(benchmark, str(path))[0]


def test_a_second_load_reads_cached_fields_and_decodes_inputs_on_first_read(
    data_dir: Path, tmp_path: Path
) -> None:
    path = _subset(data_dir, tmp_path, 6)
    data = path.read_bytes()
    first, md5 = load_file("mbppplus", str(path), data)
    assert not any(isinstance(p, LazyProblem) for p in first)  # decoded: nothing cached yet
    second, md5_again = load_file("mbppplus", str(path), data)
    assert md5_again == md5
    assert all(isinstance(p, LazyProblem) for p in second)
    official = _evalplus_rows("mbppplus", path)
    p = second[0]
    assert "base_input" in p and "plus_input" in p and "canonical_solution" in p
    assert p._inputs is not None  # `in` and the other fields decode nothing
    assert p["prompt"] == official[p["task_id"]]["prompt"]
    assert p["base_input"] == official[p["task_id"]]["base_input"]  # EvalPlus's tuples
    assert isinstance(p["base_input"][0][0], tuple)
    assert p._inputs is None
    assert [dict(q) for q in second] == list(official.values())


def test_a_lazy_problem_reads_as_the_whole_dict_everywhere(data_dir: Path, tmp_path: Path) -> None:
    path = _subset(data_dir, tmp_path, 13)
    data = path.read_bytes()
    load_file("mbppplus", str(path), data)
    official = _evalplus_rows("mbppplus", path)
    lazy = load_file("mbppplus", str(path), data)[0]
    readers = [
        dict,
        lambda p: {**p},
        lambda p: dict(p.items()),
        lambda p: {k: p[k] for k in p},
        lambda p: dict(zip(p.keys(), p.values(), strict=True)),
        copy.copy,
        copy.deepcopy,
        lambda p: pickle.loads(pickle.dumps(p)),
        lambda p: json.loads(json.dumps(p)),
        lambda p: p.copy(),
        lambda p: dataclasses.asdict(_code_task("mbppplus", p, "md5"))["problem"],
    ]
    for problem, read in zip(lazy, readers, strict=False):
        got = read(problem)
        want = official[problem["task_id"]]
        if read is readers[8]:  # JSON has no tuples
            want = json.loads(json.dumps(want))
        assert got == want, read
        assert problem._inputs is None  # filled in place, once
    assert lazy[11] == official[lazy[11]["task_id"]]
    assert len(lazy[12]) == len(official[lazy[12]["task_id"]])
    assert type(pickle.loads(pickle.dumps(lazy[12]))) is dict


def test_inputs_are_decoded_once_for_the_whole_file(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _subset(data_dir, tmp_path, 5)
    data = path.read_bytes()
    load_file("mbppplus", str(path), data)
    lazy = load_file("mbppplus", str(path), data)[0]
    calls = []
    real = _evalplus_files._decode
    monkeypatch.setattr(_evalplus_files, "_decode", lambda *a: calls.append(a[0]) or real(*a))
    path.write_text("not the file any more\n")  # the bytes read at load time are decoded
    for p in lazy:
        assert p["plus_input"] == p.get("plus_input") and p["base_input"]
    assert calls == ["mbppplus"]


def test_the_cache_is_keyed_by_the_bytes_and_a_bad_entry_is_ignored(
    data_dir: Path, tmp_path: Path
) -> None:
    path = _subset(data_dir, tmp_path, 4)
    data = path.read_bytes()
    load_file("mbppplus", str(path), data)
    other = _subset(data_dir, tmp_path, 3, "other.jsonl")
    problems, _ = load_file("mbppplus", str(other), other.read_bytes())
    assert len(problems) == 3 and not isinstance(problems[0], LazyProblem)
    entry = _entry("mbppplus", data)
    good = entry.read_text()
    for bad in (
        "{not json",
        json.dumps({"key": "another key", "problems": json.loads(good)["problems"]}),
        good.replace('"prompt"', '"base_input": [], "prompt"', 1),
        good.replace('"entry_point": "', '"entry_point": 1, "x": "', 1),
        good.replace('"assertion": "', '"assertion": 5, "y": "', 1),  # not a string
        good.replace('"atol": 0', '"atol": true', 1),  # a tolerance that is no number
        good.replace('"atol": 0', '"atol": [0]', 1),
    ):
        entry.write_text(bad)
        again, _ = load_file("mbppplus", str(path), data)
        assert not isinstance(again[0], LazyProblem), bad  # decoded from the file instead
        assert again == list(_evalplus_rows("mbppplus", path).values())
    assert json.loads(entry.read_text()) == json.loads(good)  # and written again


def test_a_cached_task_that_is_not_in_the_file_is_an_error_naming_it(
    data_dir: Path, tmp_path: Path
) -> None:
    path = _subset(data_dir, tmp_path, 8)  # bytes of its own: their cache entry is poisoned
    data = path.read_bytes()
    load_file("mbppplus", str(path), data)
    entry = _entry("mbppplus", data)
    entry.write_text(entry.read_text().replace('"Mbpp/4"', '"Mbpp/99999"'))
    lazy = load_file("mbppplus", str(path), data)[0]
    assert lazy[0]["base_input"]  # the others are fine
    with pytest.raises(TaskLoadError, match=r"mbpp\.jsonl: task 'Mbpp/99999'.*not in the file"):
        lazy[2]["base_input"]


def test_expected_outputs_key_is_the_same_for_a_lazy_task(data_dir: Path) -> None:
    from hf_skillfollow.scoring import _code

    path = data_dir / "HumanEvalPlus-v0.1.10.jsonl.gz"
    data = path.read_bytes()
    decoded, md5 = load_file("humanevalplus", str(path), data)
    lazy, _ = load_file("humanevalplus", str(path), data)
    assert isinstance(lazy[0], LazyProblem)
    for a, b in zip(decoded, lazy, strict=True):
        full, cached = _code_task("humanevalplus", a, md5), _code_task("humanevalplus", b, md5)
        assert _code.task_key(full) == _code.task_key(cached)
        assert (full.prompt, full.entry_point) == (cached.prompt, cached.entry_point)
        assert _code.scorable(cached, "def f(): pass")
    assert all(p._inputs is not None for p in lazy)  # none of that decoded an input


_KEYS = (
    "import json, sys\n"
    "from hf_skillfollow.tasks import load_tasks\n"
    "from hf_skillfollow.scoring._code import task_key\n"
    "tasks, _ = load_tasks('mbppplus', sys.argv[1])\n"
    "print(json.dumps({'keys': [task_key(t) for t in tasks],\n"
    "    'metadata': 'importlib.metadata' in sys.modules}))\n"
)


def test_the_expected_outputs_key_reads_no_package_metadata(data_dir: Path, tmp_path: Path) -> None:
    """``task_key`` names EvalPlus's version as the tasks' load read it from the package
    (``_evalplus_files.evalplus_version``), the same as its metadata's, so a warm ``score``
    does not import ``importlib.metadata`` (~10 ms of its start) to key its tasks."""
    from importlib.metadata import version

    from hf_skillfollow.scoring._code import task_key

    path = _subset(data_dir, tmp_path, 7, "keys.jsonl")
    run = [sys.executable, "-c", _KEYS, str(path)]
    for _ in range(2):  # the second process reads the fields from the cache
        proc = subprocess.run(run, capture_output=True, text=True, timeout=120, check=True)
    later = json.loads(proc.stdout)
    assert not later["metadata"]
    assert later["keys"] == [task_key(t) for t in load_tasks("mbppplus", path)[0]]
    assert _evalplus_files.evalplus_version() == version("evalplus")


def _load_in_a_fresh_process(benchmark: str, path: Path, cache: Path) -> dict[str, Any]:
    code = (
        "import json, sys\n"
        "from hf_skillfollow.tasks import load_tasks\n"
        "tasks, version = load_tasks(sys.argv[1], sys.argv[2])\n"
        "print(json.dumps({'version': version, 'n': len(tasks),\n"
        "    'type': type(tasks[0].problem).__name__,\n"
        "    'evalplus_data': 'evalplus.data' in sys.modules}))\n"
    )
    env = {**os.environ, "SKILLFOLLOW_CACHE_DIR": str(cache)}
    proc = subprocess.run(
        [sys.executable, "-c", code, benchmark, str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(proc.stdout)


@pytest.mark.parametrize(
    ("benchmark", "name", "count"),
    [
        ("humanevalplus", "HumanEvalPlus-v0.1.10.jsonl.gz", 164),
        ("mbppplus", "mbppplus-v0.1.0.jsonl", 399),
    ],
)
def test_a_later_process_loads_the_file_without_evalplus_decoding_it(
    data_dir: Path, tmp_path: Path, benchmark: str, name: str, count: int
) -> None:
    first = _load_in_a_fresh_process(benchmark, data_dir / name, tmp_path)
    later = _load_in_a_fresh_process(benchmark, data_dir / name, tmp_path)
    assert first["version"] == later["version"] and first["n"] == later["n"] == count
    assert first["type"] == "dict" and first["evalplus_data"]
    assert later["type"] == "LazyProblem" and not later["evalplus_data"]


def test_load_tasks_refuses_the_original_humaneval_from_its_bytes(data_dir: Path) -> None:
    with pytest.raises(TaskLoadError, match="original HumanEval"):
        load_tasks("humanevalplus", data_dir / "humaneval.jsonl.gz")


def test_a_warm_score_decodes_no_inputs_and_a_cold_one_decodes_them_once(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from hf_skillfollow.cli import cli

    lines = (data_dir / "mbppplus-v0.1.0.jsonl").read_text().splitlines()[:4]
    tasks_file = tmp_path / "four.jsonl"
    tasks_file.write_text("\n".join(lines) + "\n\n")  # bytes no other test loads
    samples = tmp_path / "samples.jsonl"
    rows = [json.loads(line) for line in lines]
    samples.write_text(
        "".join(
            json.dumps({"task_id": r["task_id"], "solution": r["prompt"] + r["canonical_solution"]})
            + "\n"
            for r in rows
        )
    )
    args = ["score", "--benchmark", "mbppplus", "--samples", str(samples)]
    args += ["--tasks-file", str(tasks_file), "--output"]
    cache = Path(os.environ["SKILLFOLLOW_CACHE_DIR"])
    # another process fills both caches: the fields and the expected outputs
    subprocess.run(
        [sys.executable, "-m", "hf_skillfollow.cli", *args, str(tmp_path / "first.jsonl")],
        check=True,
        capture_output=True,
        timeout=300,
    )
    decoded: list[str] = []
    real = _evalplus_files._decode
    monkeypatch.setattr(_evalplus_files, "_decode", lambda *a: decoded.append(a[0]) or real(*a))

    def score(name: str) -> list[bool]:
        result = CliRunner().invoke(cli, [*args, str(tmp_path / name)])
        assert result.exit_code == 0, result.output
        return [json.loads(v)["passed"] for v in (tmp_path / name).read_text().splitlines()]

    assert score("warm.jsonl") == [True] * 4
    assert decoded == []  # the expected outputs' payloads hold the inputs
    shutil.rmtree(cache / "expected")
    assert score("cold.jsonl") == [True] * 4  # expected outputs computed from the inputs
    assert decoded == ["mbppplus"]


def test_score_says_in_one_line_when_the_inputs_it_needs_cannot_be_had(
    data_dir: Path, tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from hf_skillfollow.cli import cli

    lines = (data_dir / "mbppplus-v0.1.0.jsonl").read_text().splitlines()[:2]
    tasks_file = tmp_path / "two.jsonl"
    tasks_file.write_text("\n".join(lines) + "\n\n\n")  # bytes no other test loads
    data = tasks_file.read_bytes()
    load_file("mbppplus", str(tasks_file), data)
    entry = _entry("mbppplus", data)
    entry.write_text(entry.read_text().replace('"Mbpp/3"', '"Mbpp/99998"'))
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": "Mbpp/99998", "solution": "x = 1"}) + "\n")
    args = ["score", "--benchmark", "mbppplus", "--samples", str(samples)]
    args += ["--tasks-file", str(tasks_file), "--output", str(tmp_path / "out.jsonl")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    (line,) = [ln for ln in result.output.splitlines() if ln.startswith("Error:")]
    assert "two.jsonl: task 'Mbpp/99998'" in line and "not in the file" in line


def test_a_cache_that_cannot_be_written_costs_only_the_decoding(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("SKILLFOLLOW_CACHE_DIR", str(blocker / "cache"))
    path = _subset(data_dir, tmp_path, 2)
    for _ in range(2):
        problems, _ = load_file("mbppplus", str(path), path.read_bytes())
        assert problems == list(_evalplus_rows("mbppplus", path).values())
        assert not isinstance(problems[0], LazyProblem)

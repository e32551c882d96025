"""Code scoring with EvalPlus semantics on real MBPP+ / HumanEval tasks, in the real sandbox."""

from __future__ import annotations

import dataclasses
import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from hf_skillfollow.scoring import extract_code, score_answer, score_many, score_solution
from hf_skillfollow.scoring._code import ensure_expected
from hf_skillfollow.scoring._oracle import is_floats
from hf_skillfollow.tasks import Task, load_tasks

# Each module scores against a fresh expected-output cache.
pytestmark = pytest.mark.usefixtures("private_score_cache")


@pytest.fixture(scope="module")
def mbpp(data_dir: Path) -> dict[str, Task]:
    return {t.task_id: t for t in load_tasks("mbppplus", data_dir / "mbppplus-v0.1.0.jsonl")[0]}


def _canonical(task: Task) -> str:
    return task.problem["prompt"] + task.problem["canonical_solution"]


def test_extraction_rules() -> None:
    text = "intro\n```\nfirst_plain()\n```\n```python\ndef f():\n    return 1\n```\n```python\nsecond()\n```"
    assert extract_code(text) == "def f():\n    return 1\n"
    assert extract_code("```js\nx = 1\n```\n") == "x = 1\n"
    assert extract_code("def g(): pass") == "def g(): pass"
    assert (
        extract_code("```python\ndef h():\n    return 2\n") == "def h():\n    return 2\n"
    )  # cut at max_tokens


def test_canonical_passes_and_wrong_programs_fail_with_reasons(mbpp: dict[str, Task]) -> None:
    task = mbpp["Mbpp/17"]  # square_perimeter
    ok = score_solution(task, _canonical(task))
    assert ok.passed, ok.reason
    assert (
        ok.reason
        == f"passed all {len(task.problem['base_input'])} base + {len(task.problem['plus_input'])} plus inputs"
    )
    assert ok.details["isolation"] in {"root", "userns", "none"}
    off = score_solution(
        task, "def square_perimeter(a):\n    return 4 * a if a in (10, 5, 4) else 4 * a + 1\n"
    )
    assert (
        not off.passed and off.details["stage"] == "plus" and off.reason.startswith("plus input #")
    )
    none = score_solution(task, "def square_perimeter(a):\n    pass\n")
    assert not none.passed and none.reason == "base input #0: wrong output"
    syntax = score_solution(task, "def square_perimeter(a)\n    return 4*a\n")
    assert not syntax.passed and "SyntaxError" in syntax.reason
    missing = score_solution(task, "def perimeter(a):\n    return 4*a\n")
    assert not missing.passed and "'square_perimeter' is not defined" in missing.reason
    assert not score_solution(task, "   \n").passed


def test_answer_text_is_extracted_before_scoring(mbpp: dict[str, Task]) -> None:
    task = mbpp["Mbpp/17"]
    answer = "Here you go:\n```python\ndef square_perimeter(a):\n    return 4 * a\n```\nThis multiplies by four."
    verdict = score_answer(task, answer)
    assert verdict.passed, verdict.reason
    assert verdict.details["extracted"] == "def square_perimeter(a):\n    return 4 * a\n"


def test_float_outputs_use_evalplus_tolerance(mbpp: dict[str, Task]) -> None:
    task = mbpp["Mbpp/82"]  # volume_sphere, atol 1e-4
    assert task.problem["atol"] > 0
    reordered = "import math\ndef volume_sphere(r):\n    return (4.0 / 3.0) * math.pi * (r ** 3)\n"
    assert score_solution(task, reordered).passed
    rough = "def volume_sphere(r):\n    return (4.0 / 3.0) * 3.14 * (r ** 3)\n"
    assert not score_solution(task, rough).passed


def test_evalplus_special_oracles_apply(mbpp: dict[str, Task]) -> None:
    # Mbpp/2: set comparison, so any element order passes.
    shuffled = (
        "def similar_elements(a, b):\n    return tuple(sorted(set(a) & set(b), reverse=True))\n"
    )
    assert score_solution(mbpp["Mbpp/2"], shuffled).passed
    assert not score_solution(
        mbpp["Mbpp/2"], "def similar_elements(a, b):\n    return (a[0],)\n"
    ).passed
    # Mbpp/737: output only has to be None / not None (or the matching bool).
    as_bool = (
        "import re\ndef check_str(s):\n    return bool(re.match('^[aeiouAEIOU][A-Za-z0-9_]*', s))\n"
    )
    assert score_solution(mbpp["Mbpp/737"], as_bool).passed
    assert not score_solution(mbpp["Mbpp/737"], "def check_str(s):\n    return True\n").passed


def test_is_floats_agrees_with_evalplus() -> None:
    import numpy as np
    from evalplus.eval import is_floats as evalplus_is_floats

    for value in [
        1.0,
        1,
        [1.0, 2.0],
        [1.0, 2],
        (0.5,),
        [],
        "x",
        np.array([1.0]),
        np.array([1]),
        None,
    ]:
        assert is_floats(value) == evalplus_is_floats(value), value


def test_expected_outputs_are_cached_per_task(
    mbpp: dict[str, Task], private_score_cache: Path
) -> None:
    task = mbpp["Mbpp/3"]
    path, header = ensure_expected(task)
    assert path.is_file() and path.parent.parent == private_score_cache / "expected"
    assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0  # not readable by sandboxed uids
    assert header["task_id"] == "Mbpp/3" and header["plus_cpu_s"] >= 0
    mtime = path.stat().st_mtime_ns
    assert score_solution(task, _canonical(task)).passed
    assert ensure_expected(task)[0].stat().st_mtime_ns == mtime


def test_score_many_keeps_order_and_mixes_verdicts(mbpp: dict[str, Task]) -> None:
    ids = ["Mbpp/17", "Mbpp/3", "Mbpp/2", "Mbpp/17"]
    pairs = [(mbpp[i], f"```python\n{_canonical(mbpp[i])}\n```") for i in ids[:3]]
    pairs.append((mbpp["Mbpp/17"], "```python\ndef square_perimeter(a):\n    return 3*a\n```"))
    seen: list[str] = []
    verdicts = score_many(pairs, workers=2, progress=lambda v: seen.append(v.task_id))
    assert [v.task_id for v in verdicts] == ids
    assert [v.passed for v in verdicts] == [True, True, True, False]
    assert sorted(seen) == sorted(ids)


def test_slow_tasks_are_guessed_first_and_cached_ones_measured(mbpp: dict[str, Task]) -> None:
    """Without cached expected outputs, Mbpp/599 (whose canonical solution needs ~25-45 s of
    CPU, the most in MBPP+) is guessed among the first tenth by its inputs; a cached task's
    cost is its canonical solution's measured CPU time."""
    from hf_skillfollow.scoring._code import cached_cost, estimated_cost, task_key

    uncached = [t for t in mbpp.values() if t.task_id != "Mbpp/3"]
    ids = [t.task_id for t in sorted(uncached, key=estimated_cost, reverse=True)]
    assert ids.index("Mbpp/599") < len(ids) // 10
    _, header = ensure_expected(mbpp["Mbpp/3"])
    cost = cached_cost(mbpp["Mbpp/3"], task_key(mbpp["Mbpp/3"]))
    assert cost == header["base_cpu_s"] + header["plus_cpu_s"]
    assert cached_cost(mbpp["Mbpp/599"], task_key(mbpp["Mbpp/599"])) is None


def test_a_failing_reference_is_run_once_for_all_its_programs(
    mbpp: dict[str, Task], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three answers to a task whose canonical solution raises: one reference run (spied,
    not replaced), three "cannot score" verdicts; another task in the batch still scores."""
    from hf_skillfollow.scoring import _code

    task = mbpp["Mbpp/17"]
    broken = dataclasses.replace(
        task,
        problem={
            **task.problem,
            "prompt": "",
            "canonical_solution": "def square_perimeter(a):\n    raise ValueError('broken')\n",
        },
    )
    calls: list[str] = []
    real = _code._reference_outputs

    def spy(job: dict) -> dict:
        calls.append(job["code"])
        return real(job)

    monkeypatch.setattr(_code, "_reference_outputs", spy)
    good = mbpp["Mbpp/3"]
    pairs = [(broken, "def square_perimeter(a):\n    return 4*a\n")] * 3
    pairs.append((good, _canonical(good)))
    verdicts = score_many(pairs, workers=2, extract=False)
    assert [v.passed for v in verdicts] == [False, False, False, True]
    assert all("cannot score" in v.reason and "broken" in v.reason for v in verdicts[:3]), [
        v.reason for v in verdicts
    ]
    assert sum("broken" in code for code in calls) == 1


@pytest.fixture(scope="module")
def humaneval(data_dir: Path) -> dict[str, Task]:
    path = data_dir / "HumanEvalPlus-v0.1.10.jsonl.gz"
    return {t.task_id: t for t in load_tasks("humanevalplus", path)[0]}


def test_humanevalplus_canonical_passes_and_wrong_programs_fail(
    humaneval: dict[str, Task],
) -> None:
    task = humaneval["HumanEval/0"]  # has_close_elements
    p = task.problem
    ok = score_solution(task, _canonical(task))
    assert ok.passed, ok.reason
    assert ok.reason == (
        f"passed all {len(p['base_input'])} base + {len(p['plus_input'])} plus inputs"
    )
    wrong = score_solution(task, task.prompt + "    return False\n")
    assert not wrong.passed and wrong.reason.startswith("base input #")
    # HumanEval/2 (truncate_number) has atol 1e-6: a float off by less passes, more fails
    t2 = humaneval["HumanEval/2"]
    assert t2.problem["atol"] > 0
    near = t2.prompt + "    return number % 1.0 + 1e-9\n"
    assert score_solution(t2, near).passed
    assert not score_solution(t2, t2.prompt + "    return number % 1.0 + 1e-3\n").passed


def test_one_wrong_output_among_batched_right_ones_fails_at_its_input(
    humaneval: dict[str, Task],
) -> None:
    """Right outputs travel in batches that the judge takes whole when they are the expected
    bytes: one wrong output deep inside a batch still fails at exactly its input, and outputs
    of other bytes that pass within the tolerance still pass."""
    task = humaneval["HumanEval/0"]
    p = task.problem
    bad = p["plus_input"][600]
    first = next(i for i, inp in enumerate(p["plus_input"]) if inp == bad)
    assert bad not in p["base_input"]
    wrapped = (
        _canonical(task)
        + f"\n_right, _BAD = has_close_elements, {bad!r}\n"
        + "def has_close_elements(numbers, threshold):\n"
        + "    right = _right(numbers, threshold)\n"
        + "    return (not right) if [numbers, threshold] == _BAD else right\n"
    )
    verdict = score_solution(task, wrapped)
    assert not verdict.passed
    assert verdict.reason.startswith(f"plus input #{first}: wrong output"), verdict.reason
    # HumanEval/2 (atol 1e-6): every third output a little off, the rest the expected bytes
    t2 = humaneval["HumanEval/2"]
    mixed = t2.prompt + (
        "    global _n\n    _n = globals().get('_n', 0) + 1\n"
        "    return number % 1.0 + (1e-9 if _n % 3 == 0 else 0.0)\n"
    )
    verdict = score_solution(t2, mixed)
    assert verdict.passed, verdict.reason
    off = t2.prompt + (
        "    global _n\n    _n = globals().get('_n', 0) + 1\n"
        "    return number % 1.0 + (1e-3 if _n == 700 else 0.0)\n"
    )
    verdict = score_solution(t2, off)
    assert not verdict.passed and "plus input #" in verdict.reason, verdict.reason


def test_humanevalplus_find_zero_accepts_any_root(humaneval: dict[str, Task]) -> None:
    """EvalPlus's special oracle for HumanEval/32: any x with |poly(x)| <= atol passes."""
    task = humaneval["HumanEval/32"]
    # the canonical Newton iteration run to a tighter tolerance: about half of its roots
    # then differ in their last digits from the expected ones, all within the oracle's atol
    tighter = task.prompt + task.problem["canonical_solution"].replace("1e-5", "1e-9")
    assert tighter != _canonical(task)
    assert score_solution(task, _canonical(task)).passed
    verdict = score_solution(task, tighter)
    assert verdict.passed, verdict.reason
    assert not score_solution(task, task.prompt + "    return 0.0\n").passed


def test_rows_without_inputs_are_not_scored(humaneval: dict[str, Task]) -> None:
    """The original HumanEval's check() would run inside the program's process (forgeable):
    such rows are refused at load time, and a task without inputs is never scored."""
    task = humaneval["HumanEval/0"]
    bare = Task(task.benchmark, task.task_id, task.prompt, task.entry_point, problem={})
    verdict = score_solution(bare, _canonical(task))
    assert not verdict.passed and verdict.reason.startswith("cannot score: the task has no")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hf_skillfollow.cli", "score", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_score_command_writes_one_verdict_per_sample(
    mbpp: dict[str, Task], data_dir: Path, tmp_path: Path
) -> None:
    t17, t3 = mbpp["Mbpp/17"], mbpp["Mbpp/3"]
    samples = tmp_path / "samples.jsonl"
    rows = [
        {"task_id": "Mbpp/17", "solution": _canonical(t17)},
        {
            "task_id": "Mbpp/3",
            "completion": t3.problem["canonical_solution"],
        },  # prompt + completion
        {"task_id": "Mbpp/17", "solution": "def square_perimeter(a):\n    return a\n"},
    ]
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "verdicts.jsonl"
    proc = _cli(
        "--samples",
        str(samples),
        "--output",
        str(out),
        "--tasks-file",
        str(data_dir / "mbppplus-v0.1.0.jsonl"),
    )
    assert proc.returncode == 0, proc.stderr
    verdicts = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(v["task_id"], v["passed"]) for v in verdicts] == [
        ("Mbpp/17", True),
        ("Mbpp/3", True),
        ("Mbpp/17", False),
    ]
    assert all(isinstance(v["reason"], str) and v["reason"] for v in verdicts)
    assert "2/3 passed" in proc.stdout


@pytest.mark.parametrize(
    "line,message",
    [
        ('{"task_id": "Mbpp/17"}', "line 1: needs a 'solution' or a 'completion' field"),
        (
            '{"task_id": "Mbpp/99999", "solution": "x"}',
            "line 1: task_id 'Mbpp/99999' is not in the benchmark",
        ),
        ("not json", "line 1: not valid JSON"),
        ('{"solution": "x"}', "line 1: field 'task_id'"),
    ],
)
def test_score_command_rejects_bad_samples(
    line: str, message: str, data_dir: Path, tmp_path: Path
) -> None:
    samples = tmp_path / "bad.jsonl"
    samples.write_text(line + "\n")
    proc = _cli(
        "--samples",
        str(samples),
        "--output",
        str(tmp_path / "v.jsonl"),
        "--tasks-file",
        str(data_dir / "mbppplus-v0.1.0.jsonl"),
    )
    assert proc.returncode != 0
    assert message in proc.stderr and str(samples) in proc.stderr
    assert not (tmp_path / "v.jsonl").exists()


def test_set_iteration_order_agrees_between_reference_and_candidate() -> None:
    """Expected outputs and candidates run in different processes; a canonical solution whose
    output depends on str-set iteration order must still be reproducible by the candidate."""
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]
    code = "def unique_words(ws):\n    return list(set(ws))\n"
    problem = {
        "task_id": "Custom/1",
        "prompt": "",
        "canonical_solution": code,
        "entry_point": "unique_words",
        "base_input": [[words]],
        "plus_input": [[words[::-1]], [words[2:] * 3]],
        "atol": 0,
    }
    task = Task("mbppplus", "Custom/1", "", entry_point="unique_words", problem=problem)
    for _ in range(3):
        verdict = score_solution(task, code)
        assert verdict.passed, verdict.reason
    assert not score_solution(task, "def unique_words(ws):\n    return sorted(set(ws))\n").passed


def test_concurrent_first_runs_probe_the_isolation_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``score_many``'s threads start their first runs together: one probe, not one each."""
    import threading

    from hf_skillfollow.scoring import _sandbox

    probes: list[str] = []
    real = _sandbox._probe

    def counted(mode: str) -> bool:
        probes.append(mode)
        return real(mode)

    monkeypatch.setattr(_sandbox, "_probe", counted)
    _sandbox._isolation_mode.cache_clear()
    try:
        modes: list[str] = []
        threads = [
            threading.Thread(target=lambda: modes.append(_sandbox.isolation_mode()))
            for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        _sandbox._isolation_mode.cache_clear()
    assert modes == ["root"] * 4
    assert probes == ["root"]


def test_a_large_output_passes_or_fails_by_its_bytes() -> None:
    """An output of megabytes is compared with the expected bytes as it arrives: the same
    value passes, one that differs only in its last element fails at that input."""
    code = "def rows(n):\n    return [('Red', 'Green', i) for i in range(n)]\n"
    problem = {
        "task_id": "Custom/2",
        "prompt": "",
        "canonical_solution": code,
        "entry_point": "rows",
        "base_input": [[5], [400_000]],
        "plus_input": [[7]],
        "atol": 0,
    }
    task = Task("mbppplus", "Custom/2", "", entry_point="rows", problem=problem)
    verdict = score_solution(task, code)
    assert verdict.passed, verdict.reason
    wrong = code.replace("return", "out =") + (
        "    if n > 100:\n        out[-1] = ('Red', 'Green', -1)\n    return out\n"
    )
    verdict = score_solution(task, wrong)
    assert not verdict.passed
    assert verdict.reason.startswith("base input #1: wrong output"), verdict.reason


@pytest.mark.parametrize("wait", [True, False])
def test_prepared_zygotes_serve_the_batch(mbpp: dict[str, Task], wait: bool) -> None:
    """``prepare(workers)`` starts the zygotes the batch then uses: whether the batch starts
    after them or while they are still starting, no more zygotes than workers are started."""
    import time

    from hf_skillfollow.scoring import _sandbox, prepare

    _sandbox._zygotes.close()
    prepare(2)
    if wait:
        deadline = time.monotonic() + 60
        while len(_sandbox._zygotes.all) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(_sandbox._zygotes.all) == 2
    started = list(_sandbox._zygotes.all)
    task = mbpp["Mbpp/17"]
    verdicts = score_many([(task, _canonical(task))] * 6, workers=2, extract=False)
    assert all(v.passed for v in verdicts), [v.reason for v in verdicts]
    assert len(_sandbox._zygotes.all) == 2
    if wait:
        assert _sandbox._zygotes.all == started


def test_rlimit_only_fallback_still_scores(
    mbpp: dict[str, Task], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where namespaces are unavailable the scorer degrades to rlimits and says so."""
    from hf_skillfollow.scoring import _sandbox

    monkeypatch.setattr(_sandbox, "isolation_mode", lambda: "none")
    task = mbpp["Mbpp/17"]
    verdict = score_solution(task, _canonical(task))
    assert verdict.passed and verdict.details["isolation"] == "none"
    loop = score_solution(task, "def square_perimeter(a):\n    while True:\n        pass\n")
    assert not loop.passed and "CPU time budget" in loop.reason


def test_toolkit_checked_out_under_tmp_still_scores(data_dir: Path, tmp_path: Path) -> None:
    """The sandbox gives /tmp a fresh tmpfs; a checkout or venv living in /tmp (as CI clones
    may) must stay importable inside it, read-only."""
    import shutil

    import hf_skillfollow

    copy = tmp_path / "checkout"
    shutil.copytree(Path(hf_skillfollow.__file__).parent, copy / "hf_skillfollow", symlinks=True)
    assert str(copy).startswith("/tmp/")
    probe = (
        "import sys, hf_skillfollow\n"
        "from hf_skillfollow.scoring import score_solution\n"
        "from hf_skillfollow.tasks import load_tasks\n"
        f"assert hf_skillfollow.__file__.startswith({str(copy)!r}), hf_skillfollow.__file__\n"
        f"task = {{t.task_id: t for t in load_tasks('mbppplus', {str(data_dir / 'mbppplus-v0.1.0.jsonl')!r})[0]}}['Mbpp/17']\n"
        "v = score_solution(task, task.problem['prompt'] + task.problem['canonical_solution'])\n"
        "print(v.passed, v.reason)\n"
    )
    env = {
        **__import__("os").environ,
        "PYTHONPATH": str(copy),
        "SKILLFOLLOW_CACHE_DIR": str(tmp_path / "cache"),
    }
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("True"), proc.stdout

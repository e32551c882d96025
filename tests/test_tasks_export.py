"""`tasks export-harbor`: a custom task file's `tests` tasks as Harbor tasks (docs/harness.md).

The exported verifier is executed code: each run here is a throwaway `python3 -I` process in
a temporary folder holding only the task's `tests/`, the solution and the log folder, with an
environment of nothing but PATH (tests/test_harbor_export.py runs it in the sandbox
environment, through Harbor).
Expected verdicts are written by hand or come from running the asserts as plain Python.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from click.testing import CliRunner

from hf_skillfollow.cli import cli
from hf_skillfollow.harness._env_recipe import read_dockerfile
from hf_skillfollow.harness._export import ExportError, export_harbor, folder_name

ROOT = Path(__file__).resolve().parents[1]
OWN_TASKS = ROOT / "tests" / "own_tasks" / "tasks.jsonl"
CORPUS = ROOT / "tests" / "grader_corpus" / "tests_grader.jsonl"
#: the python3 a minimal environment has (the sandbox environment's is the host's /usr)
PYTHON = shutil.which("python3", path="/usr/bin:/bin") or sys.executable


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def verify(task: Path, solution: str | None, tmp: Path) -> tuple[str, list[dict], Path]:
    """Run the task's verifier in a throwaway process on `solution` (None: no file).

    The reward file's text, the per-assert verdicts and the folder it ran in."""
    run = Path(os.path.realpath(tempfile.mkdtemp(dir=tmp)))
    (run / "app").mkdir()
    (run / "logs").mkdir()
    shutil.copytree(task / "tests", run / "tests")
    if solution is not None:
        (run / "app" / "solution.py").write_text(solution, encoding="utf-8")
    proc = subprocess.run(
        [PYTHON, "-I", "tests/verify.py", "tests", "app/solution.py", "logs"],
        cwd=run, env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    reward = (run / "logs" / "reward.txt").read_text()
    return reward, json.loads((run / "logs" / "asserts.json").read_text()), run


# --- the repository's own task file ---------------------------------------------------------


def test_own_tasks_export_tests_tasks_and_skip_the_rest(tmp_path: Path) -> None:
    out = tmp_path / "harbor"
    result = CliRunner().invoke(cli, ["tasks", "export-harbor", str(OWN_TASKS), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["add", "square"]
    lines = result.output.splitlines()
    assert [line.split(":")[0] for line in lines if line.startswith("skipped")] == [
        "skipped 'two-plus-two'", "skipped 'half'", "skipped 'thanks'"]  # fmt: skip
    assert "graded by 'answer'" in lines[2] and "graded by 'expectations'" in lines[4]
    assert lines[-1] == f"2 task(s) exported to {out}, 3 skipped"

    config = tomllib.loads((out / "square" / "task.toml").read_text())
    assert config["metadata"]["hf_skillfollow_task_id"] == "square"
    assert config["metadata"]["entry_point"] == "square"
    assert config["metadata"]["solution_file"] == "/app/solution.py"
    assert config["metadata"]["hf_skillfollow_source"].startswith("custom@sha256.")
    assert config["environment"]["workdir"] == "/app"
    assert config["environment"]["network_mode"] == "no-network"
    assert config["verifier"]["timeout_sec"] == 120.0
    assert tomllib.loads((out / "add" / "task.toml").read_text())["metadata"]["domain"] == "arith"
    instruction = (out / "square" / "instruction.md").read_text()
    assert "`/app/solution.py`" in instruction and "function `square`" in instruction
    assert instruction.endswith(
        "\n\nWrite a Python function square(x) that returns x squared.\n")  # fmt: skip
    # the Dockerfile is within what the sandbox environment understands
    recipe = read_dockerfile(out / "square" / "environment")
    assert recipe.workdir == "/app" and recipe.copies == []
    assert os.access(out / "square" / "tests" / "test.sh", os.X_OK)


def test_own_tasks_verifier_rewards_right_and_wrong_solutions(tmp_path: Path) -> None:
    out = tmp_path / "harbor"
    export_harbor(OWN_TASKS, out)
    runs = tmp_path / "runs"
    runs.mkdir()
    add, square = out / "add", out / "square"
    assert verify(add, "def add(a, b):\n    return a + b\n", runs)[0] == "1\n"
    reward, verdicts, _ = verify(add, "def add(a, b):\n    return a + b if a > 0 else 1\n", runs)
    # each assert judged on its own: only `add(-4, 4) == 0` fails for this wrong add
    assert reward == "0\n" and [v["passed"] for v in verdicts] == [True, False, True]
    reward, verdicts, _ = verify(add, "def add(a, b):\n    return a - b\n", runs)
    assert reward == "0\n" and [v["passed"] for v in verdicts] == [False, False, False]
    assert [v["line"] for v in verdicts] == [1, 2, 3]
    # square: `== 9` exact, `abs(square(1.5) - 2.25) < 1e-9` its own tolerance
    assert verify(square, "def square(x):\n    return x * x\n", runs)[0] == "1\n"
    reward, verdicts, _ = verify(square, "def square(x):\n    return round(x * x)\n", runs)
    assert reward == "0\n" and [v["passed"] for v in verdicts] == [True, False]
    assert verdicts[1]["reason"] == "wrong output"
    reward, verdicts, _ = verify(square, None, runs)
    assert reward == "0\n" and "no file" in verdicts[0]["reason"]


# --- agreement with running the asserts -----------------------------------------------------

_TRUTH = """
import json, sys
verdicts = []
for solution, tests in json.load(sys.stdin):
    try:
        exec(compile(solution + "\\n\\n" + tests, "<case>", "exec"), {"__name__": "case"})
        verdicts.append(True)
    except BaseException:
        verdicts.append(False)
print(json.dumps(verdicts))
"""


def test_verifier_agrees_with_running_the_asserts_on_the_grader_corpus(tmp_path: Path) -> None:
    """The `tests` grader's differential corpus (tests/grader_corpus): the exported verifier
    gives what running the solution and its asserts in plain Python gives, except where the
    grader is deliberately stricter (docs/tasks.md), where it fails as the grader does."""
    items = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    rows = [{"id": it["id"], "prompt": "corpus", "tests": it["tests"],
             **({"entry_point": it["entry_point"]} if "entry_point" in it else {})}
            for it in items]  # fmt: skip
    out = tmp_path / "harbor"
    export_harbor(_jsonl(tmp_path / "corpus.jsonl", rows), out)
    cases = [(it, name) for it in items for name in it["solutions"]]
    work = tmp_path / "truth"
    work.mkdir()
    truth = json.loads(subprocess.run(
        [PYTHON, "-I", "-c", _TRUTH], cwd=work, env={"PATH": "/usr/bin:/bin"}, timeout=300,
        input=json.dumps([(it["solutions"][n], it["tests"]) for it, n in cases]),
        capture_output=True, text=True, check=True).stdout)  # fmt: skip
    runs = tmp_path / "runs"
    runs.mkdir()
    with ThreadPoolExecutor(max_workers=4) as pool:  # each run is two processes of its own
        rewards = list(pool.map(
            lambda case: verify(out / folder_name(case[0]["id"]), case[0]["solutions"][case[1]],
                                runs)[0], cases))  # fmt: skip
    disagreements = []
    for (item, name), passed, reward in zip(cases, truth, rewards, strict=True):
        want = False if name in item.get("deliberate", {}) else passed
        if reward != f"{int(want)}\n":
            disagreements.append(f"{item['id']}/{name}: verifier {reward!r}, Python {passed}")
    assert len(cases) >= 64 and 0 < sum(truth) < len(truth)
    assert disagreements == []


def test_verifier_judges_each_assert_with_its_own_operator(tmp_path: Path) -> None:
    tasks = _jsonl(tmp_path / "t.jsonl", [
        {"id": "ops", "prompt": "p", "entry_point": "f", "tests":
         "assert f(1) == 4\nassert 4 == f(2)\nassert f(3)\nassert not f(4)\n"
         "assert abs(f(5) - 1.0) < 0.5\nassert abs(1.0 - f(6)) <= 0.5\nassert f(7) == (1, 2)\n"
         "assert f(8) == {'a': 1}\nassert f(9) == {1, 2}\n"},
        {"id": "counter", "prompt": "p", "tests": "assert tick() == 1\nassert tick() == 2\n"},
        {"id": "fresh-args", "prompt": "p", "tests":
         "assert pop_last([1, 2]) == 2\nassert pop_last([1, 2]) == 2\n"},
    ])  # fmt: skip
    out = tmp_path / "harbor"
    export_harbor(tasks, out)
    runs = tmp_path / "runs"
    runs.mkdir()
    # by hand: 4.0 == 4, [0] truthy, 0 falsy, 1.4 within 0.5, a difference of exactly 0.5
    # passes <=, a tuple, a Counter == dict, a frozenset == set
    good = ("import collections\n"
            "def f(x):\n    return {1: 4.0, 2: 4, 3: [0], 4: 0, 5: 1.4, 6: 0.5, 7: (1, 2),\n"
            "            8: collections.Counter(a=1), 9: frozenset({1, 2})}[x]\n")  # fmt: skip
    reward, verdicts, _ = verify(out / "ops", good, runs)
    assert reward == "1\n", verdicts
    # by hand: 3 fails == 4, [] is falsy, 1.5 is exactly 0.5 off (fails <), 1.6 fails <= 0.5,
    # a list fails == (1, 2), a generator is not plain data
    bad = ("def f(x):\n    return {1: 3, 2: 4, 3: [], 4: 0, 5: 1.5, 6: 1.6, 7: [1, 2],\n"
           "            8: {'a': 1}, 9: (i for i in (1, 2))}[x]\n")  # fmt: skip
    reward, verdicts, _ = verify(out / "ops", bad, runs)
    assert reward == "0\n"
    assert [v["passed"] for v in verdicts] == [False, True, False, True, False, False, False,
                                               True, False]  # fmt: skip
    assert "not plain data" in verdicts[8]["reason"]
    stateful = "n = 0\ndef tick():\n    global n\n    n += 1\n    return n\n"
    assert verify(out / "counter", stateful, runs)[0] == "1\n"
    assert verify(out / "counter", "def tick():\n    return 1\n", runs)[0] == "0\n"
    assert verify(out / "fresh-args", "def pop_last(xs):\n    return xs.pop()\n", runs)[0] == "1\n"


def test_verifier_keeps_the_candidate_apart(tmp_path: Path) -> None:
    """The candidate prints, raises, writes its own reward, looks for the expected results and
    sends a huge output: none of it changes a verdict that only the judge writes."""
    tasks = _jsonl(
        tmp_path / "t.jsonl",
        [
            {
                "id": "apart",
                "prompt": "p",
                "tests": "assert g(1) == 'secret-1'\nassert g(2) == 2\nassert g(3) == 3\n",
            }
        ],
    )
    out = tmp_path / "harbor"
    export_harbor(tasks, out)
    runs = tmp_path / "runs"
    runs.mkdir()
    sneaky = (
        "import glob, json, os\n"
        "print('reward 1')\n"
        "for d in ('../logs', '/logs/verifier'):\n"
        "    try:\n"
        "        open(os.path.join(d, 'reward.json'), 'w').write('{\"reward\": 1}')\n"
        "        open(os.path.join(d, 'reward.txt'), 'w').write('1')\n"
        "    except OSError:\n"
        "        pass\n"
        "def g(x):\n"
        "    if x == 2:\n"
        "        raise ValueError('no')\n"
        "    if x == 3:\n"
        "        return 'x' * (2 << 20)\n"
        "    found = glob.glob('../tests/expected*')\n"
        "    return 'secret-1' if not found else json.load(open(found[0]))[0]['expected']\n"
    )
    reward, verdicts, run = verify(out / "apart", sneaky, runs)
    assert reward == "0\n"
    assert verdicts[0]["passed"] is True  # computed, not read: the file was gone
    assert verdicts[1]["reason"].startswith("raised ValueError: no")
    assert verdicts[2]["reason"] == "output too large"  # over 1 MiB, 64x its expected result
    assert not (run / "logs" / "reward.json").exists()
    assert not (run / "tests" / "expected.json").exists()


# --- hostile task files -------------------------------------------------------------------------

HOSTILE_TEXT = ["$(touch pwned)", "`touch pwned`", "'; touch pwned; '", '"""\n[x]\na = 1\n"""',
                "line\nbreak\r\x7f\x1b[31m", "\\u0000 \\", "[metadata]", "${HOME}", "é ☃ 𝄞"]  # fmt: skip
HOSTILE_IDS = ["$(touch pwned)", "`touch pwned2`", "x'; touch pwned3 #", 'q"""\n[verifier]\nt=1',
               "../../etc/passwd", ".hidden", "UPPER case", "é☃"]  # fmt: skip


def _hostile_rows() -> list[dict]:
    rows = []
    for i, task_id in enumerate(HOSTILE_IDS):
        text = HOSTILE_TEXT[i % len(HOSTILE_TEXT)]
        asserts = "".join(f"assert echo({t!r}) == {t!r}\n" for t in HOSTILE_TEXT)
        rows.append(
            {
                "id": task_id,
                "prompt": f"{text}\nReturn the argument. {text}",
                "domain": HOSTILE_TEXT[(i + 3) % len(HOSTILE_TEXT)][:100],
                "tests": asserts,
            }
        )
    return rows


def test_hostile_task_file_stays_data(tmp_path: Path) -> None:
    out = tmp_path / "harbor"
    result = export_harbor(_jsonl(tmp_path / "hostile.jsonl", _hostile_rows()), out)
    benign = tmp_path / "benign"
    export_harbor(OWN_TASKS, benign)
    assert sorted(result.written) == sorted(HOSTILE_IDS)
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(["touch-pwned", "touch-pwned2", "x-touch-pwned3", "q-verifier-t-1",
                            "etc-passwd", "hidden", "upper-case", "task"])  # fmt: skip
    runs = tmp_path / "runs"
    runs.mkdir()
    for row in _hostile_rows():
        folder = result.written[row["id"]]
        assert folder.parent == out
        config = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))
        assert config["metadata"]["hf_skillfollow_task_id"] == row["id"]
        assert config["metadata"]["domain"] == row["domain"]
        assert set(config) == {"schema_version", "metadata", "verifier", "agent", "environment"}
        assert config["verifier"] == {"timeout_sec": 120.0, "environment_mode": "shared"}
        assert (folder / "instruction.md").read_bytes().decode().endswith(
            "The task:\n\n" + row["prompt"] + "\n")  # fmt: skip
        # the scripts are the same bytes for every task: no task text in them
        for script in ("tests/test.sh", "tests/verify.py", "environment/Dockerfile"):
            assert (folder / script).read_bytes() == (benign / "add" / script).read_bytes()
        reward, verdicts, run = verify(folder, "def echo(s):\n    return s\n", runs)
        assert reward == "1\n" and len(verdicts) == len(HOSTILE_TEXT)
        assert verify(folder, 'def echo(s):\n    return s + " "\n', runs)[0] == "0\n"
        assert not list(run.rglob("pwned*"))
    assert not list(tmp_path.rglob("pwned*")) and not (ROOT / "pwned").exists()


def test_folder_collision_is_one_error_and_writes_nothing(tmp_path: Path) -> None:
    tasks = _jsonl(tmp_path / "t.jsonl", [
        {"id": "ok", "prompt": "p", "tests": "assert f(1) == 1"},
        {"id": "A b", "prompt": "p", "tests": "assert f(1) == 1"},
        {"id": "a\"b", "prompt": "p", "tests": "assert f(1) == 1"},
    ])  # fmt: skip
    out = tmp_path / "harbor"
    result = CliRunner().invoke(cli, ["tasks", "export-harbor", str(tasks), "-o", str(out)])
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"Error: {tasks}: tasks 'A b' and 'a\"b' both become the folder 'a-b': rename one "
        "(a folder keeps only a-z, 0-9, '-' and '_')")  # fmt: skip
    assert not out.exists()


def test_existing_folders_need_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "harbor"
    export_harbor(OWN_TASKS, out)
    (out / "add" / "stale.txt").write_text("old")
    with pytest.raises(ExportError, match="add: exists \\(give --overwrite to replace it\\)"):
        export_harbor(OWN_TASKS, out)
    assert (out / "add" / "stale.txt").exists()
    export_harbor(OWN_TASKS, out, overwrite=True)
    assert not (out / "add" / "stale.txt").exists() and (out / "add" / "task.toml").is_file()
    assert sorted(p.name for p in out.iterdir()) == ["add", "square"]  # no staging left
    shutil.rmtree(out / "square")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "square").symlink_to(elsewhere)
    with pytest.raises(ExportError, match="square: exists and is not a folder"):
        export_harbor(OWN_TASKS, out, overwrite=True)
    assert elsewhere.is_dir() and not list(elsewhere.iterdir())


def test_bad_task_file_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"id": "a", "prompt": "p", "tests": "assert f(1) == 1"}\n{"id": "a", "prompt"\n'
    )
    result = CliRunner().invoke(
        cli, ["tasks", "export-harbor", str(bad), "-o", str(tmp_path / "o")]
    )
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: {bad}:2: invalid JSON")
    assert len(result.output.strip().splitlines()) == 1
    result = CliRunner().invoke(cli, ["tasks", "export-harbor", str(bad)])
    assert result.exit_code == 2 and "-o" in result.output


def _reads(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:  # the process ended meanwhile
        return b""


def test_a_solution_ended_by_the_cpu_limit_reads_as_a_timeout(tmp_path: Path) -> None:
    """Two threads hashing (hashlib lets go of the GIL) use CPU faster than the wall clock runs,
    so the CPU limit, not the wall timer, ends the candidate while it loads: still `timed out`
    (CI once saw `exit status -9` here, when both limits were equal)."""
    tasks = _jsonl(
        tmp_path / "t.jsonl", [{"id": "burn", "prompt": "p", "tests": "assert f(1) == 1\n"}]
    )
    out = tmp_path / "harbor"
    export_harbor(tasks, out)
    script = out / "burn" / "tests" / "verify.py"
    script.write_text(script.read_text().replace("\nWALL_S = 60\n", "\nWALL_S = 3\n"))
    runs = tmp_path / "runs"
    runs.mkdir()
    burn = (
        "import hashlib, threading\n"
        "def spin():\n"
        "    data = bytes(1 << 22)\n"
        "    while True:\n"
        "        hashlib.sha256(data).digest()\n"
        "for _ in range(2):\n"
        "    threading.Thread(target=spin, daemon=True).start()\n"
        "spin()\n"
    )
    reward, verdicts, _ = verify(out / "burn", burn, runs)
    assert reward == "0\n" and "timed out" in verdicts[0]["reason"], verdicts


def test_verifier_stops_a_solution_that_runs_too_long(tmp_path: Path) -> None:
    """Its wall limit shortened to 2 s in this copy of the fixed verifier (60 s shipped): a
    solution that loops in its second call, or on loading, fails with `timeout`; a process it
    started in its session is gone with it."""
    tasks = _jsonl(
        tmp_path / "t.jsonl",
        [{"id": "slow", "prompt": "p", "tests": "assert f(1) == 1\nassert f(2) == 2\n"}],
    )
    out = tmp_path / "harbor"
    export_harbor(tasks, out)
    script = out / "slow" / "tests" / "verify.py"
    text = script.read_text()
    assert "\nWALL_S = 60\n" in text
    script.write_text(text.replace("\nWALL_S = 60\n", "\nWALL_S = 2\n"))
    runs = tmp_path / "runs"
    runs.mkdir()
    loops = (
        "import subprocess\n"
        "def f(x):\n"
        "    if x == 2:\n"
        "        subprocess.Popen(['sleep', '31.4159'])\n"
        "        while True:\n"
        "            pass\n"
        "    return x\n"
    )
    reward, verdicts, _ = verify(out / "slow", loops, runs)
    assert reward == "0\n"
    assert [v["passed"] for v in verdicts] == [True, False] and verdicts[1]["reason"] == "timeout"
    assert not [
        p for p in Path("/proc").glob("[0-9]*/cmdline") if _reads(p) == b"sleep\x0031.4159\x00"
    ]
    reward, verdicts, _ = verify(out / "slow", "while True:\n    pass\n", runs)
    assert reward == "0\n" and "timed out" in verdicts[0]["reason"]

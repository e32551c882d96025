"""The trusted reference workers that compute expected outputs (``scoring._reference``)."""

from __future__ import annotations

import hashlib
import os
import pickle
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hf_skillfollow.scoring import _wire
from hf_skillfollow.scoring._code import ReferenceFailure, ensure_expected
from hf_skillfollow.tasks import Task
from tests._noting import noted

pytestmark = pytest.mark.usefixtures("private_score_cache")


def _task(code: str, base: list, plus: list, entry: str = "f") -> Task:
    problem = {
        "task_id": "Custom/1",
        "prompt": "",
        "canonical_solution": code,
        "entry_point": entry,
        "base_input": base,
        "plus_input": plus,
        "atol": 0,
    }
    return Task("mbppplus", "Custom/1", "", entry_point=entry, problem=problem)


def _payload(path: Path) -> dict:
    """The expected outputs as the judge reads them (after the inputs section)."""
    from hf_skillfollow.scoring._judge import _load_expected

    fd = os.open(path, os.O_RDONLY)
    _wire.read_section(fd, 1 << 30)
    stages = _load_expected(fd)  # closes fd
    out: dict = {}
    for stage, expected in stages.items():
        out[stage] = [bytes(expected.blob(i)) for i in range(expected.count)]
        out[f"{stage}_flags"] = expected.flags
        out[f"{stage}_digests"] = [expected.digest(i) for i in range(expected.count)]
    return out


def test_expected_outputs_are_wire_bytes_with_flags() -> None:
    code = (
        "import numpy as np\n"
        "def f(x):\n"
        "    print('noise on stdout must not break the worker protocol')\n"
        "    return [x, float('nan'), 1.5, [1.0, 2.0], np.array([1.0, 2.0])][x]\n"
    )
    path, header = ensure_expected(_task(code, [[0], [1]], [[2], [3], [4]]))
    payload = _payload(path)
    blobs = payload["base"] + payload["plus"]
    flags = payload["base_flags"] + payload["plus_flags"]
    assert pickle.loads(blobs[0]) == 0 and blobs[0] == _wire.dumps(0)
    same, floats = _wire.SAME_BYTES_PASS, _wire.FLOATS
    # 0: plain; nan: never equal to itself; 1.5 and [1.0, 2.0]: floats (EvalPlus sets atol);
    # a numpy array: its comparison has no truth value
    assert list(flags) == [same, floats, same | floats, same | floats, floats]
    assert header["base_cpu_s"] >= 0 and header["maxrss_bytes"] > 0


def test_each_call_gets_its_own_copy_of_its_input_as_in_evalplus() -> None:
    """EvalPlus deep-copies each input before the call: a canonical solution that mutates
    its argument sees a fresh copy every time, even where inputs share one object, and the
    inputs kept for the programs are the unmutated ones."""
    shared = [1, 2]
    task = _task("def f(xs):\n    xs.append(0)\n    return len(xs)\n", [[shared], [shared]], [])
    path, _ = ensure_expected(task)
    assert [pickle.loads(b) for b in _payload(path)["base"]] == [3, 3]
    with open(path, "rb") as fh:
        inputs = pickle.loads(_wire.read_section(fh.fileno(), 1 << 30))
    assert inputs["base_input"] == [[[1, 2]], [[1, 2]]]


def test_outputs_encoded_into_the_file_are_the_bytes_the_program_sends() -> None:
    """The reference encodes each output straight into the payload file (a large one is never
    held whole as bytes); the judge compares a program's ``_wire.dumps`` bytes with them, so
    they must be those very bytes, and carry the flags the bytes in memory would get, for
    outputs small, past a pickle frame (64 KB: written by the pickler as it goes) and past
    the size kept in memory (1 MB: flags read back from the file)."""
    from hf_skillfollow.scoring._oracle import is_floats
    from hf_skillfollow.scoring._reference import _flags

    code = (
        "import numpy as np\n"
        "def f(i):\n"
        "    big = [(str(k), k, k / 3) for k in range(60_000)]\n"
        "    return [\n"
        "        1, 'x' * 100_000, b'y' * 2_000_000, bytearray(b'z' * 70_000), big,\n"
        "        big[:3000], [float(k) for k in range(200_000)] + [float('nan')],\n"
        "        [float(k) for k in range(200_000)], np.arange(300_000.0), {'k': big},\n"
        "    ][i]\n"
    )
    task = _task(code, [[0], [1], [2]], [[i] for i in range(3, 10)])
    path, _ = ensure_expected(task)
    payload = _payload(path)
    blobs = payload["base"] + payload["plus"]
    flags = payload["base_flags"] + payload["plus_flags"]
    namespace: dict = {}
    exec(code, namespace)
    assert len(blobs) == len(flags) == 10
    for i, (blob, flag) in enumerate(zip(blobs, flags, strict=True)):
        value = namespace["f"](i)
        expected, named = noted(value)
        assert blob == expected, i
        assert flag == _flags(value, expected, named, True, is_floats(value)), i
    same, floats = _wire.SAME_BYTES_PASS, _wire.FLOATS
    # large: a list with a NaN is not its own equal; without, it is (both are floats);
    # a numpy array of floats is floats, and its comparison has no truth value
    assert (flags[6], flags[7], flags[8]) == (floats, same | floats, floats)
    assert len(blobs[4]) > 1 << 20 and flags[4] == same
    # each output past DIGEST_ABOVE, and only those, has the sha256 of its bytes stored
    digests = payload["base_digests"] + payload["plus_digests"]
    large = [hashlib.sha256(b).digest() if len(b) > _wire.DIGEST_ABOVE else None for b in blobs]
    assert digests == large and sum(d is not None for d in digests) == 6


def test_digests_are_stored_exactly_past_the_size_a_program_commits_by_digest() -> None:
    """The program's process sends an output by its digest when ``_wire.commit`` gives one;
    the reference must store a digest for exactly those sizes (one past the threshold in
    each stage, none at it)."""
    overhead = len(_wire.dumps(b"x" * 10**6)) - 10**6  # a large bytes value's opcodes
    at = _wire.DIGEST_ABOVE - overhead
    past = at + 1
    assert len(_wire.dumps(b"x" * at)) == _wire.DIGEST_ABOVE
    assert type(_wire.commit(b"x" * at)) is bytes and type(_wire.commit(b"x" * past)) is tuple
    task = _task("def f(n):\n    return b'x' * n\n", [[at], [past]], [[3], [past], [at]])
    payload = _payload(ensure_expected(task)[0])
    mark = hashlib.sha256(_wire.dumps(b"x" * past)).digest()
    assert payload["base_digests"] == [None, mark]
    assert payload["plus_digests"] == [None, mark, None]


def test_the_index_must_match_its_counts() -> None:
    body = _wire.index(([3, 4], [5]), (b"\x01\x00", b"\x02"))[8:]
    assert _wire.read_index(body) == (([3, 4], [5]), (b"\x01\x00", b"\x02"))
    assert len(_wire.index(([3, 4], [5]), (b"ab", b"c"))) == _wire.index_size(2, 1)
    for broken in (body[:-1], body + b"\x00", body[:10]):
        with pytest.raises(_wire.WireError):
            _wire.read_index(broken)
    with pytest.raises(ValueError, match="one flags byte per output"):
        _wire.index(([3, 4], [5]), (b"\x01", b"\x02"))


def test_a_failing_canonical_solution_is_a_reference_failure() -> None:
    with pytest.raises(ReferenceFailure, match="ZeroDivisionError"):
        ensure_expected(_task("def f(x):\n    return 1 / x\n", [[1]], [[0]]))


def test_state_does_not_leak_between_tasks() -> None:
    """Each task runs in its own forked process: a canonical solution that changes the
    interpreter's state (here a module attribute) leaves the next task unaffected."""
    leaky = "import math\nmath.pi = 3.0\ndef f(x):\n    return math.pi * x\n"
    ensure_expected(_task(leaky, [[1]], [[2]]))
    honest = "import math\ndef f(x):\n    return math.pi * x + 0\n"
    path, _ = ensure_expected(_task(honest, [[1]], [[2]]))
    assert [pickle.loads(b) for b in _payload(path)["base"]] == [3.141592653589793]


_HOLD = """
import sys, time
from hf_skillfollow.scoring import _code, _reference
from hf_skillfollow.tasks import Task
problem = {"task_id": "Custom/2", "prompt": "", "entry_point": "f", "atol": 0,
           "canonical_solution": "import time\\ndef f(x):\\n    time.sleep(600)\\n",
           "base_input": [[1]], "plus_input": []}
import threading
threading.Thread(target=_code.ensure_expected, args=(Task("mbppplus", "Custom/2", "", "f",
                 problem=problem),), daemon=True).start()
while _reference._pool.value is None or not _reference._pool.value.workers.all:
    time.sleep(0.05)
print(_reference._pool.value.workers.all[0].proc.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def test_workers_and_their_tasks_end_with_the_scorer(tmp_path: Path) -> None:
    env = {**os.environ, "SKILLFOLLOW_CACHE_DIR": str(tmp_path / "cache")}
    host = subprocess.Popen(
        [sys.executable, "-c", _HOLD], stdout=subprocess.PIPE, text=True, env=env
    )
    assert host.stdout is not None
    worker = int(host.stdout.readline())
    deadline = time.monotonic() + 60
    tasks: list[int] = []
    while not tasks and time.monotonic() < deadline:  # the forked task, sleeping
        children = Path(f"/proc/{worker}/task/{worker}/children").read_text().split()
        tasks = [int(c) for c in children]
        time.sleep(0.05)
    assert tasks, "the worker never forked the task"
    host.send_signal(signal.SIGKILL)
    host.wait()
    time.sleep(2)
    assert not _alive(worker) and not any(_alive(t) for t in tasks)


def test_the_expected_output_key_changes_with_the_benchmark_file_and_the_inputs(
    data_dir: Path, tmp_path: Path
) -> None:
    """Cached expected outputs are found again only for the same inputs: loaded tasks are
    keyed by their file's digest (a one-input edit anywhere in the file changes every key),
    hand-made tasks by their inputs' values."""
    import json

    from hf_skillfollow.scoring._code import task_key
    from hf_skillfollow.tasks import load_tasks

    source = data_dir / "mbppplus-v0.1.0.jsonl"
    rows = [json.loads(line) for line in source.read_text().splitlines() if line.strip()]
    rows[0]["plus_input"] = rows[0]["plus_input"][:-1]
    edited = tmp_path / "mbppplus-edited.jsonl"
    edited.write_text("".join(json.dumps(r) + "\n" for r in rows))
    keys = [
        {t.task_id: task_key(t) for t in load_tasks("mbppplus", path)[0]}
        for path in (source, source, edited)
    ]
    assert keys[0] == keys[1]
    assert all(keys[0][t] != keys[2][t] for t in keys[0])
    assert len(set(keys[0].values())) == len(keys[0])
    one, other = (
        _task("def f(x):\n    return x\n", [[1]], [[2]]),
        _task("def f(x):\n    return x\n", [[1]], [[3]]),
    )
    assert task_key(one) != task_key(other)
    assert task_key(one) == task_key(_task("def f(x):\n    return x\n", [[1]], [[2]]))


def test_fast_same_bytes_flag_agrees_with_the_exact_check() -> None:
    """``_flags`` skips decoding for outputs whose bytes name no class (noted while writing
    them) and hold no float that could be NaN; the flag must still be what decoding and
    comparing (the exact check) gives, for every NaN bit pattern, infinities, and strings,
    floats and integers whose bytes look like either."""
    import collections
    import decimal
    import fractions

    import numpy as np

    from hf_skillfollow.scoring._reference import _flags

    nan = float("nan")
    values = [
        0,
        -(10**30),
        True,
        None,
        "Green Gauge",
        "ÄÖü 漢字 \x93\x82",
        b"G\x93",
        bytearray(b"GG"),
        [("A", "B"), ("C", "G")],
        {"G": [1, 2]},
        {1, 2, 3},
        frozenset({"x"}),
        ((),),
        1.5,
        [0.0, -0.0, 1e308, -1e-308],
        float("inf"),
        [-float("inf"), 2.5],
        nan,
        -nan,
        struct.unpack(">d", b"\x7f\xf0\x00\x00\x00\x00\x00\x01")[0],  # a signalling NaN
        struct.unpack(">d", b"\xff\xff\xff\xff\xff\xff\xff\xff")[0],
        struct.unpack(">d", b"\xff\xf0\x00\x00\x00\x00\x01\x00")[0],
        struct.unpack(">d", b"\x7f\xf8\x00\x00\x00\x00\x00\x00")[0],
        [float("inf")] * 3 + [-float("inf"), 1e308 * 10],
        [1.0, nan],
        "G\x7f\xf8 looks like a NaN",
        [struct.unpack(">d", b"\x93\x82\x83\x84\x7f\xff\xf8\x01")[0], 0x938283847F],
        looks_nan := struct.unpack(">d", b"\x41\x8a\x47\xff\xf8\x00\x00\x00")[0],
        [1, looks_nan, True],
        (looks_nan, nan),
        [looks_nan, 10**400],
        [looks_nan, nan, 10**400],
        [looks_nan, "x"],
        [[looks_nan]],
        [looks_nan, complex(1, 2)],
        [float("inf"), looks_nan, -float("inf")],  # a sum that is NaN without a NaN
        [nan],
        {nan},
        (1, [nan]),
        complex(nan, 0),
        decimal.Decimal("NaN"),
        decimal.Decimal("1.5"),
        fractions.Fraction(1, 3),
        np.array([1, 2]),
        np.int64(3),
        {1: 2}.values(),
        {1: 2}.keys(),
        collections.Counter("GG"),
        collections.deque([1]),
        collections.OrderedDict(a=1),
    ]
    # each again behind 5000 bytes of text: large outputs are searched another way
    for value in [*values, *(("x" * 5000, v) for v in values)]:
        blob, named = noted(value)
        assert blob == _wire.dumps(value)
        try:
            equal = pickle.loads(blob) == value
            exact = _wire.SAME_BYTES_PASS if type(equal) is bool and equal else 0
        except Exception:
            exact = 0
        assert _flags(value, blob, named, True, False) == exact, value
        assert _flags(value, blob, named, False, False) == 0, value


@pytest.mark.parametrize(
    ("change", "passes"),
    [
        ("", True),  # the very bytes: compared as they arrive, never held whole
        ("out[-1] = 10**6 - 7", False),  # same length, differs in the last chunk
        ("out[3] = 7", False),  # same length, differs in the first chunk
        ("out = tuple(out)", False),  # a tuple's bytes: decoded, and not equal to a list
        ("out[-1] = float(out[-1])", True),  # other bytes, equal value: decoded, then equal
    ],
)
def test_a_multi_megabyte_output_is_judged_by_its_value(change: str, passes: bool) -> None:
    """Expected: a list of 400,000 ints (~2.4 MB, several pipe chunks). Identical bytes pass
    without decoding; bytes that differ anywhere are decoded and compared like EvalPlus."""
    from hf_skillfollow.scoring import score_solution

    canonical = "def f(n):\n    return list(range(10**6 - n, 10**6))\n"
    task = _task(canonical, [[400_000]], [[3]])
    program = f"def f(n):\n    out = list(range(10**6 - n, 10**6))\n    {change or 'pass'}\n    return out\n"
    verdict = score_solution(task, program)
    assert verdict.passed is passes, verdict.reason
    if not passes:
        assert verdict.reason == "base input #0: wrong output", verdict.reason

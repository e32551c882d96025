"""Large outputs judged by their digest (``_wire.DIGEST``), through the real sandbox.

An output longer than ``_wire.DIGEST_ABOVE`` is first sent as its length and sha256; the
judge answers ``MATCH`` (identical to the expected output's bytes, whose digest the reference
stored) or ``SEND``, after which the next message must be bytes matching that digest. These
tests play the program's side as an attacker would: forged digests, digests of wrong
outputs, bytes that do not match their digest, a program that never reads its answers, a
digest for a small expected output; and check that correct large outputs pass, by digest
alone where their bytes are the expected ones, by value where they only compare equal.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hf_skillfollow.scoring import Verdict, _wire, score_solution
from hf_skillfollow.tasks import Task, load_tasks

pytestmark = pytest.mark.usefixtures("private_score_cache")

_BIG = 600_000  # "ab" * _BIG pickles to 1.2 MB, past DIGEST_ABOVE


def _task(code: str, base: list, plus: list, task_id: str = "Digest/1") -> Task:
    problem = {
        "task_id": task_id,
        "prompt": "",
        "canonical_solution": code,
        "entry_point": "f",
        "base_input": base,
        "plus_input": plus,
        "atol": 0,
    }
    return Task("mbppplus", task_id, "", entry_point="f", problem=problem)


STRING = "def f(n):\n    return 'ab' * n\n"


@pytest.fixture(scope="module")
def strings() -> Task:
    """Outputs small (3 and 10 characters) and large (1.2 MB) in both stages."""
    return _task(STRING, [[3], [_BIG]], [[5], [_BIG + 1]])


# A program whose process cannot send a large output's bytes by any path the protocol has
# (``send_dump`` after a ``SEND`` answer, ``send`` for a message of 1 MiB or more): where the
# judge needed them, the process would end (exit status 7 or 8) and the program fail.
_NO_BYTES = """
import os
from hf_skillfollow.scoring import _wire
_send = _wire.send
_wire.send_dump = lambda *args: os._exit(7)
_wire.send = lambda fd, tag, body=b"": os._exit(8) if len(body) >= 1 << 20 else _send(fd, tag, body)
"""

# Helpers for programs that write their own messages on the pipe to the judge and read
# the judge's answers from the other pipe (the two FIFOs the program's process holds).
_RAW = """
import hashlib, os, stat
from hf_skillfollow.scoring import _wire

def _pipes():
    fifos = []
    for fd in range(3, 64):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                fifos.append(fd)
        except OSError:
            pass
    # the message pipe is write-only, the answer pipe read-only
    import fcntl
    out = [fd for fd in fifos if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY]
    ans = [fd for fd in fifos if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY]
    return out[0], ans[0]

OUT, ANS = _pipes()

def put(blob):
    _wire.write_all(OUT, blob)

def ok(value):
    put(_wire.message(_wire.OK, _wire.dumps(value)))

def claim(blob):
    put(_wire.digest_message(len(blob), hashlib.sha256(blob).digest()))

def answer():
    return os.read(ANS, 1)

def f(n):
    return 'ab' * n
"""


def _raw(body: str, task: Task) -> Verdict:
    return score_solution(task, _RAW + body + "\nos._exit(0)\n")


@pytest.fixture(params=["root", "userns", "none"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The protocol is the judge's in every isolation mode: each forced in turn."""
    from hf_skillfollow.scoring import _sandbox

    if request.param != "root":
        monkeypatch.setattr(_sandbox, "isolation_mode", lambda: request.param)
    else:
        assert _sandbox.isolation_mode() == "root", "the test suite runs as root (as CI does)"
    return str(request.param)


def test_a_correct_large_output_passes_by_its_digest_alone(strings: Task, mode: str) -> None:
    verdict = score_solution(strings, _NO_BYTES + STRING)
    assert verdict.details["isolation"] == mode
    assert verdict.passed, verdict.reason
    assert verdict.reason == "passed all 2 base + 2 plus inputs"


def test_the_canonical_program_passes(strings: Task) -> None:
    verdict = score_solution(strings, STRING)
    assert verdict.passed, verdict.reason


def test_a_wrong_large_output_fails(strings: Task) -> None:
    wrong = "def f(n):\n    return 'ab' * n if n < 1000 else 'ba' * n\n"
    verdict = score_solution(strings, wrong)
    assert not verdict.passed
    assert verdict.reason == "base input #1: wrong output"


def test_a_wrong_large_output_cannot_avoid_sending_its_bytes(strings: Task) -> None:
    wrong = "def f(n):\n    return 'ab' * n if n < 1000 else 'ba' * n\n"
    verdict = score_solution(strings, _NO_BYTES + wrong)
    assert not verdict.passed
    assert verdict.reason.startswith("base input #1: the program ended its process")


def test_a_forged_random_digest_fails(strings: Task) -> None:
    # a random claim of the right length: the judge asks for the bytes, none come
    body = """
put(_wire.message(_wire.LOADED))
ok(f(3))
put(_wire.digest_message(len(_wire.dumps(f(600000))), os.urandom(32)))
got = answer()
put(b"" if got == _wire.SEND else _wire.message(_wire.ERR, b"judge said " + got))
"""
    verdict = _raw(body, strings)
    assert not verdict.passed
    assert verdict.reason.startswith("base input #1: the program ended its process"), verdict.reason


def test_bytes_that_do_not_match_their_digest_fail_as_malformed(strings: Task, mode: str) -> None:
    # commit to a wrong output, then reveal the right one: refused
    body = """
put(_wire.message(_wire.LOADED))
ok(f(3))
claim(_wire.dumps('ba' * 600000))
assert answer() == _wire.SEND
ok(f(600000))
"""
    verdict = _raw(body, strings)
    assert verdict.details["isolation"] == mode
    assert not verdict.passed
    assert verdict.reason == (
        "base input #1: malformed output message: an output's bytes do not match the digest "
        "sent for them"
    )


def test_a_digest_followed_by_another_message_fails_as_malformed(strings: Task) -> None:
    body = """
put(_wire.message(_wire.LOADED))
ok(f(3))
claim(_wire.dumps('ba' * 600000))
assert answer() == _wire.SEND
claim(_wire.dumps(f(600000)))
"""
    verdict = _raw(body, strings)
    assert not verdict.passed
    assert "malformed output message: a digest followed by b'D'" in verdict.reason


def test_a_digest_of_the_wrong_size_is_malformed(strings: Task) -> None:
    body = """
put(_wire.message(_wire.LOADED))
ok(f(3))
put(_wire.message(_wire.DIGEST, b"\\x00" * 39))
"""
    verdict = _raw(body, strings)
    assert not verdict.passed
    assert "malformed output message: a digest message of 39 bytes" in verdict.reason


def test_a_digest_for_a_small_expected_output_gets_send_and_is_judged_by_its_bytes(
    strings: Task,
) -> None:
    # output #0 is 'ababab': no digest is stored for it, so the judge never says MATCH
    body = """
put(_wire.message(_wire.LOADED))
blob = _wire.dumps(f(3))
claim(blob)
if answer() != _wire.SEND:
    ok('not what the judge expects')
ok(f(3))
"""
    verdict = _raw(body, strings)
    assert not verdict.passed  # ends after output #0: what matters is how #0 was judged
    assert verdict.reason.startswith("base input #1: the program ended"), verdict.reason
    # and a claim for a small output whose bytes are then wrong fails as a wrong output
    wrong = body.replace("ok(f(3))", "ok(f(4))").replace("claim(blob)", "claim(_wire.dumps(f(4)))")
    verdict = _raw(wrong, strings)
    assert verdict.reason == "base input #0: wrong output", verdict.reason


def test_a_program_that_never_reads_its_answers_cannot_stall_the_judge(mode: str) -> None:
    # 70,000 small outputs, each claimed by a digest and then sent, answers never read: the
    # answer pipe (64 KiB) fills and the judge fails the program instead of blocking
    task = _task("def f(x):\n    return x\n", [[i] for i in range(70_000)], [[0]], "Digest/2")
    body = """
put(_wire.message(_wire.LOADED))
for i in range(70000):
    blob = _wire.dumps(i)
    claim(blob)
    put(_wire.message(_wire.OK, blob))
"""
    start = time.monotonic()
    verdict = _raw(body, task)
    assert time.monotonic() - start < 60
    assert verdict.details["isolation"] == mode
    assert not verdict.passed
    assert "malformed output message: the judge's answer could not be written" in verdict.reason


def test_large_outputs_equal_by_value_but_not_by_bytes_pass_through_send() -> None:
    # a dict built in another order, and floats for ints: other bytes, equal values
    code = "def f(n):\n    return {i: i for i in range(n)}\n"
    task = _task(code, [[200_000]], [[3]], "Digest/3")
    assert len(_wire.dumps({i: i for i in range(200_000)})) > _wire.DIGEST_ABOVE
    other = "def f(n):\n    return {i: i for i in reversed(range(n))}\n"
    assert score_solution(task, other).passed
    assert not score_solution(task, _NO_BYTES + other).passed  # it did need its bytes
    floats = "def f(n):\n    return {i: float(i) for i in range(n)}\n"
    assert score_solution(task, floats).passed
    off = "def f(n):\n    return {i: i + (i == 7) for i in range(n)}\n"
    assert score_solution(task, off).reason == "base input #0: wrong output"


def test_running_out_of_cpu_while_sending_bytes_after_send_is_a_timeout(strings: Task) -> None:
    # the output's second pickling (after SEND, behind a header already written) never ends:
    # the message is cut short, and the judge says why (the CPU budget), not "malformed"
    from hf_skillfollow.scoring._code import CodeBudget, score_program

    program = """
class Slow:
    calls = 0
    def __reduce__(self):
        Slow.calls += 1
        while Slow.calls > 1:
            pass
        return (str, ('ba' * 600000,))

def f(n):
    return 'ab' * n if n < 1000 else Slow()
"""
    verdict = score_program(strings, program, CodeBudget(cpu_floor_s=1.0, cpu_factor=1.0))
    assert verdict.reason == "base input #1: timeout: CPU time budget of 1.0 s exceeded"


@pytest.fixture(scope="module")
def humaneval(data_dir: Path) -> dict[str, Task]:
    tasks = load_tasks("humanevalplus", data_dir / "HumanEvalPlus-v0.1.10.jsonl.gz")[0]
    return {t.task_id: t for t in tasks}


@pytest.mark.parametrize("task_id", ["HumanEval/15", "HumanEval/130"])
def test_real_tasks_with_large_outputs_pass_their_canonical_solution_by_digest(
    humaneval: dict[str, Task], task_id: str
) -> None:
    task = humaneval[task_id]
    program = _NO_BYTES + task.problem["prompt"] + task.problem["canonical_solution"]
    verdict = score_solution(task, program)
    assert verdict.passed, verdict.reason


@pytest.mark.slow
def test_mbpp_255_passes_its_canonical_solution_by_digest(data_dir: Path) -> None:
    tasks = {t.task_id: t for t in load_tasks("mbppplus", data_dir / "mbppplus-v0.1.0.jsonl")[0]}
    task = tasks["Mbpp/255"]
    program = _NO_BYTES + task.problem["prompt"] + task.problem["canonical_solution"]
    verdict = score_solution(task, program)
    assert verdict.passed, verdict.reason

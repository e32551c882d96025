"""Hostile programs against the trusted judge, through the real sandbox and scoring path.

The judge reads what the program's process writes to its pipe. A program that writes its
own bytes there (a crafted message instead of an output) must get a failed verdict that
says the message was malformed, without crashing the judge or making it allocate much; and
reasons are the judge's own: "timeout" only when the CPU budget really ran out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_skillfollow.scoring import Verdict, score_solution
from hf_skillfollow.tasks import Task, load_tasks

pytestmark = pytest.mark.usefixtures("private_score_cache")

SOLUTION = "def square_perimeter(a):\n    return 4 * a\n"

# Writes `body` as the first output message on the program's pipe to the judge, in
# whichever framing the installed judge speaks, then ends the process.
_WRITE_MESSAGE = """
import os, stat, struct
from hf_skillfollow.scoring import _wire

def _pipe():
    for fd in range(3, 64):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                return fd
        except OSError:
            pass

def _frame(tag, body):
    if hasattr(_wire, "message"):
        return _wire.message(tag, body)
    return _wire.section(body)  # older judges: one pickle per message

def send(loaded, output, header=None):
    fd = _pipe()
    _wire.write_all(fd, loaded)
    _wire.write_all(fd, header if header is not None else b"")
    _wire.write_all(fd, output)
    os._exit(0)
"""


@pytest.fixture(scope="module")
def task(data_dir: Path) -> Task:
    tasks = {t.task_id: t for t in load_tasks("mbppplus", data_dir / "mbppplus-v0.1.0.jsonl")[0]}
    return tasks["Mbpp/17"]


def _attack(task: Task, new_body: bytes, old_body: bytes) -> Verdict:
    """Send ``new_body`` as an output (``old_body``: the same value framed as an older
    judge's ``("ok", value)`` pickle, so that the attack also reaches the old judge)."""
    program = (
        _WRITE_MESSAGE
        + f"NEW, OLD = {new_body!r}, {old_body!r}\n"
        + "if hasattr(_wire, 'message'):\n"
        + "    send(_wire.message(_wire.LOADED), _wire.message(_wire.OK, NEW))\n"
        + "else:\n"
        + "    send(_wire.section(_wire.dumps(('ok', None))), _wire.section(OLD))\n"
        + SOLUTION
    )
    return score_solution(task, program)


def _ok(body: bytes) -> bytes:
    """``("ok", <value pickled in body>)`` for the older judge (body without PROTO/STOP)."""
    return b"\x80\x05\x8c\x02ok" + body + b"\x86."


def _global(module: str, name: str) -> bytes:
    return b"".join(b"\x8c" + bytes([len(s)]) + s.encode() for s in (module, name)) + b"\x93"


def test_a_deeply_nested_message_fails_with_a_reason_and_no_crash(task: Task) -> None:
    # a frozenset holding a 10^6-deep tuple: the stock unpickler hashes it and overflows the
    # C stack (SIGSEGV), which killed the judge before
    value = b"(" + b")" + b"\x85" * 10**6 + b"\x91"
    verdict = _attack(task, b"\x80\x05" + value + b".", _ok(value))
    assert not verdict.passed
    assert verdict.reason == "base input #0: malformed output message: nesting deeper than 200"


def test_a_tiny_message_cannot_build_a_huge_set(task: Task) -> None:
    # set(range(6 * 10**7)): a few dozen bytes that unpickle into gigabytes
    value = (
        _global("builtins", "set") + _global("builtins", "range") + b"J\x00\x87\x93\x03\x85R\x85R"
    )
    verdict = _attack(task, b"\x80\x05" + value + b".", _ok(value))
    assert not verdict.passed
    assert verdict.reason == (
        "base input #0: malformed output message: builtins.set is not plain data"
    )


def test_a_message_announcing_gigabytes_is_refused_before_reading(task: Task) -> None:
    program = (
        _WRITE_MESSAGE
        + "import struct\n"
        + "if hasattr(_wire, 'message'):\n"
        + "    send(_wire.message(_wire.LOADED), b'O', struct.pack('<Q', 512 << 20))\n"
        + "else:\n"
        + "    send(_wire.section(_wire.dumps(('ok', None))), b'', struct.pack('<Q', 512 << 20))\n"
        + SOLUTION
    )
    verdict = score_solution(task, program)
    assert not verdict.passed
    assert "malformed output message: a message of" in verdict.reason
    assert "exceeds the 1048576-byte limit" in verdict.reason


def test_sigxcpu_sent_to_the_judge_is_not_a_timeout(task: Task) -> None:
    program = "import os, signal\nos.kill(os.getppid(), signal.SIGXCPU)\n" + SOLUTION
    verdict = score_solution(task, program)
    assert verdict.passed, verdict.reason


def test_sigxcpu_sent_to_itself_is_not_a_timeout(task: Task) -> None:
    program = "import os, signal\nos.kill(os.getpid(), signal.SIGXCPU)\n" + SOLUTION
    verdict = score_solution(task, program)
    assert verdict.passed, verdict.reason
    dies = (
        "import os, signal\nsignal.signal(signal.SIGXCPU, signal.SIG_DFL)\n"
        "os.kill(os.getpid(), signal.SIGXCPU)\n" + SOLUTION
    )
    verdict = score_solution(task, dies)
    assert not verdict.passed
    assert (
        verdict.reason
        == "base: program failed to load: the program ended its process (exit status -24)"
    )


def test_raising_the_scorers_timeout_exception_is_not_a_timeout(task: Task) -> None:
    program = (
        "from hf_skillfollow.scoring._child import CpuTimeout\n"
        "def square_perimeter(a):\n    raise CpuTimeout()\n"
    )
    verdict = score_solution(task, program)
    assert not verdict.passed
    assert not verdict.reason.startswith("base input #0: timeout"), verdict.reason
    assert "CpuTimeout itself, with its CPU budget not used up" in verdict.reason


def test_an_error_text_posing_as_a_timeout_is_marked_as_the_programs(task: Task) -> None:
    program = (
        "def square_perimeter(a):\n"
        "    raise type('timeout', (Exception,), {})('CPU time budget of 4.0 s exceeded')\n"
    )
    verdict = score_solution(task, program)
    assert not verdict.passed
    assert verdict.reason == "base input #0: raised timeout: CPU time budget of 4.0 s exceeded"


def test_an_output_cut_short_inside_the_expected_bytes_is_malformed_not_a_pass(
    task: Task,
) -> None:
    """The judge compares an output with the expected bytes as it arrives: a message that
    announces the expected length and sends only a matching prefix must not pass."""
    program = (
        _WRITE_MESSAGE
        + "import struct\n"
        + "blob = _wire.dumps(40)  # Mbpp/17's expected output for its first input, 10\n"
        + "send(_wire.message(_wire.LOADED), b'O' + blob[:-1],\n"
        + "     struct.pack('<Q', len(blob) + 1))\n"
        + SOLUTION
    )
    verdict = score_solution(task, program)
    assert not verdict.passed
    assert "base input #0: malformed output message: message truncated" in verdict.reason, (
        verdict.reason
    )


def test_a_lone_surrogate_in_a_refused_name_gives_a_reason_safe_to_store(
    task: Task, tmp_path: Path
) -> None:
    """A module name of "\\ud800" (pickle's UTF-8 with surrogatepass) in a class reference:
    the reason quoting it was recorded with the raw surrogate, and writing it as
    ``RunStore.append_record`` does raised UnicodeEncodeError."""
    name = b"\xed\xa0\x80"  # U+D800 as surrogatepass writes it
    value = b"\x8c\x03" + name + b"\x8c\x01x\x93"  # STACK_GLOBAL ("\ud800", "x")
    verdict = _attack(task, b"\x80\x05" + value + b".", _ok(value))
    assert not verdict.passed
    assert verdict.reason == (
        "base input #0: malformed output message: \\ud800.x is not plain data"
    ), verdict.reason
    verdict.reason.encode("utf-8")  # raised UnicodeEncodeError
    from hf_skillfollow.store import RunStore
    from tests._fixtures_hub import trace_rows
    from tests._rows import transition_row

    transition = transition_row(task_id=task.task_id)
    traces = trace_rows([transition])
    for trace in traces:
        trace["error"] = verdict.reason
    store = RunStore(tmp_path)
    store.append_record({"task_id": task.task_id, "transition": transition, "traces": traces})
    assert store.write_tables() == (1, 2)

"""Hostile programs against the real sandbox: each attack is contained AND its side effect is
checked not to have happened on the host.

Every program is scored as an answer to the real task Mbpp/17 (``square_perimeter``) through
the public scoring path, so the attacks run exactly where model answers run.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from hf_skillfollow.scoring import Verdict, score_solution
from hf_skillfollow.scoring._code import ensure_expected
from hf_skillfollow.scoring._sandbox import _UID_BASE, _UID_SPAN, isolation_mode
from hf_skillfollow.tasks import Task, load_tasks

REPO = Path(__file__).resolve().parents[1]
SOLUTION = "def square_perimeter(a):\n    return 4 * a\n"


# Each module scores against a fresh expected-output cache.
pytestmark = pytest.mark.usefixtures("private_score_cache")


@pytest.fixture(scope="module")
def task(data_dir: Path) -> Task:
    tasks = {t.task_id: t for t in load_tasks("mbppplus", data_dir / "mbppplus-v0.1.0.jsonl")[0]}
    return tasks["Mbpp/17"]


@pytest.fixture
def target() -> Iterator[Path]:
    """A world-writable directory on the real filesystem, in the checkout (not /tmp, which the
    sandbox replaces): the sandbox's minimal root does not contain it at all."""
    path = REPO / f".sandbox-target-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    path.chmod(0o777)
    precious = path / "precious.txt"
    precious.write_text("keep me")
    precious.chmod(0o666)
    yield path
    shutil.rmtree(path)


def _processes_of(uid: int | None) -> list[int]:
    pids = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            uid_line = next(ln for ln in status.read_text().splitlines() if ln.startswith("Uid:"))
        except (OSError, StopIteration):
            continue
        if int(uid_line.split()[1]) == uid:
            pids.append(int(status.parent.name))
    return pids


#: what a program gets when it writes to the host: the path is not in its root at all
_UNREACHABLE = ("No such file or directory", "Read-only file system")


def _unreachable(reason: str) -> bool:
    return any(text in reason for text in _UNREACHABLE)


def _score(task: Task, program: str) -> Verdict:
    verdict = score_solution(task, program)
    uid = verdict.details["sandbox_uid"]
    assert uid is None or _UID_BASE <= uid < _UID_BASE + _UID_SPAN
    assert _processes_of(uid) == [], "processes of a sandboxed program outlived it"
    return verdict


def test_the_strongest_isolation_is_in_effect_here() -> None:
    # The adversarial guarantees below are claimed for namespace isolation; this machine has it.
    assert isolation_mode() in {"root", "userns"}
    if os.geteuid() == 0:
        assert isolation_mode() == "root"


def test_fork_bomb_is_contained(task: Task) -> None:
    start = time.monotonic()
    verdict = _score(task, "import os\nwhile True:\n    os.fork()\n" + SOLUTION)
    assert not verdict.passed
    # the program's process cannot create processes at all (tests/test_process_limits.py)
    assert "Operation not permitted" in verdict.reason, verdict.reason
    assert time.monotonic() - start < 60


def test_threads_left_running_die_with_the_program(task: Task) -> None:
    program = (
        "import threading, time\n"
        "for _ in range(2):\n"
        "    threading.Thread(target=time.sleep, args=(10**6,)).start()\n" + SOLUTION
    )
    verdict = _score(task, program)  # _score asserts no sandbox process is left running
    assert verdict.passed, verdict.reason


def test_writing_outside_the_scratch_dir_fails(task: Task, target: Path, tmp_path: Path) -> None:
    program = f"open({str(target / 'pwned.txt')!r}, 'w').write('x')\n" + SOLUTION
    verdict = _score(task, program)
    assert not verdict.passed and _unreachable(verdict.reason), verdict.reason
    assert not (target / "pwned.txt").exists()
    # Host /tmp paths are not reachable either: the sandbox has its own empty /tmp.
    program = (
        f"import os\nos.makedirs({str(tmp_path)!r}, exist_ok=True)\nopen({str(tmp_path / 'pwned.txt')!r}, 'w').write('x')\n"
        + SOLUTION
    )
    _score(task, program)
    assert not (tmp_path / "pwned.txt").exists()


def test_low_level_writes_and_scratch_writes_stay_inside(task: Task, target: Path) -> None:
    program = (
        "import os\n"
        "open('scratch.txt', 'w').write('fine')\n"  # the private scratch dir is writable
        f"fd = os.open({str(target / 'raw.txt')!r}, os.O_WRONLY | os.O_CREAT)\n" + SOLUTION
    )
    verdict = _score(task, program)
    assert not verdict.passed and _unreachable(verdict.reason), verdict.reason
    assert not (target / "raw.txt").exists()


def test_deleting_files_fails(task: Task, target: Path) -> None:
    for attack in (
        f"import os\nos.remove({str(target / 'precious.txt')!r})\n",
        f"import shutil\nshutil.rmtree({str(target)!r})\n",
    ):
        verdict = _score(task, attack + SOLUTION)
        assert not verdict.passed and _unreachable(verdict.reason), verdict.reason
        assert (target / "precious.txt").read_text() == "keep me"


def test_posix_spawn_cannot_touch_the_host(task: Task, target: Path) -> None:
    marker = target / "spawned.txt"
    program = (
        "import os\n"
        f"pid = os.posix_spawn('/bin/sh', ['sh', '-c', 'echo x > {marker}; rm -f {target / 'precious.txt'}'], {{}})\n"
        "os.waitpid(pid, 0)\n" + SOLUTION
    )
    _score(task, program)
    assert not marker.exists()
    assert (target / "precious.txt").read_text() == "keep me"


def test_network_is_unreachable(task: Task) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    accepted: list[object] = []

    def accept() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not accepted:
            try:
                accepted.append(listener.accept())
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    program = (
        f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=5).sendall(b'hi')\n"
        + SOLUTION
    )
    verdict = _score(task, program)
    accepted.append(None) if not accepted else None
    thread.join()
    listener.close()
    assert not verdict.passed
    assert "Network is unreachable" in verdict.reason or "Connection refused" in verdict.reason
    assert accepted == [None], "the sandboxed program reached a socket on the host"


def test_infinite_loop_hits_the_cpu_budget(task: Task) -> None:
    start = time.monotonic()
    verdict = _score(task, "def square_perimeter(a):\n    while True:\n        pass\n")
    assert not verdict.passed and verdict.reason.startswith(
        "base input #0: timeout: CPU time budget"
    )
    assert time.monotonic() - start < 3 * verdict.details["cpu_budget_s"] + 20


def test_a_loop_that_swallows_the_timeout_is_killed(task: Task) -> None:
    program = "def square_perimeter(a):\n    while True:\n        try:\n            while True:\n                pass\n        except BaseException:\n            pass\n"
    verdict = _score(task, program)
    assert not verdict.passed
    assert verdict.reason.startswith("base input #0: timeout: CPU time budget of 4.0 s exceeded")


def test_memory_hog_is_stopped(task: Task) -> None:
    for hog in (
        "x = bytearray(64 * 1024 ** 3)\n",
        "blocks = []\nwhile True:\n    blocks.append(bytearray(256 * 1024 ** 2))\n",
    ):
        start = time.monotonic()
        verdict = _score(task, hog + SOLUTION)
        # Zero-filling gigabytes costs CPU too: the address-space cap or the CPU budget ends it.
        assert not verdict.passed
        assert "MemoryError" in verdict.reason or "CPU time budget" in verdict.reason
        assert time.monotonic() - start < 3 * verdict.details["cpu_budget_s"] + 20


def test_environment_secrets_are_not_visible(task: Task, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"s3cr3t-{uuid.uuid4().hex}"
    monkeypatch.setenv("SKILLFOLLOW_TEST_SECRET", secret)
    program = (
        "import os, glob\n"
        "seen = [f'{k}={v}' for k, v in os.environ.items()]\n"
        f"for path in glob.glob('/proc/*/environ') + ['/proc/{os.getpid()}/environ']:\n"
        "    try:\n"
        "        seen.append(open(path, 'rb').read().decode(errors='replace'))\n"
        "    except OSError:\n"
        "        pass\n"
        "leak = [s for s in seen if 'SKILLFOLLOW_TEST_SECRET' in s]\n"
        "if leak:\n"
        "    raise RuntimeError('LEAK ' + leak[0].split('SKILLFOLLOW_TEST_SECRET=')[1][:60])\n"
        + SOLUTION
    )
    verdict = _score(task, program)
    assert verdict.passed, verdict.reason
    assert secret not in verdict.reason


def test_expected_outputs_and_home_are_hidden(task: Task) -> None:
    payload, _ = ensure_expected(task)
    home_file = Path.home() / f".sandbox-probe-{uuid.uuid4().hex[:8]}"
    home_file.write_text("private")
    home_file.chmod(0o644)
    program = (
        f"for path in ({str(payload)!r}, {str(home_file)!r}):\n"
        "    try:\n"
        "        open(path, 'rb').read(1)\n"
        "        raise RuntimeError('READ ' + path)\n"
        "    except OSError:\n"
        "        pass\n" + SOLUTION
    )
    try:
        verdict = _score(task, program)
    finally:
        home_file.unlink()
    assert verdict.passed, verdict.reason


def test_signalling_host_processes_fails(task: Task) -> None:
    program = f"import os, signal\nos.kill({os.getpid()}, signal.SIGKILL)\n" + SOLUTION
    verdict = _score(task, program)
    assert not verdict.passed and "ProcessLookupError" in verdict.reason


@pytest.mark.slow
def test_sleeping_program_hits_the_wall_clock_backstop(task: Task) -> None:
    verdict = _score(task, "import time\ntime.sleep(3600)\n" + SOLUTION)
    assert not verdict.passed and verdict.reason.startswith("timeout: wall-clock backstop")


# --- attacks on the integrity of the verdict -------------------------------------------------
# A program that cannot solve the task tries to make the scorer say it passed. Each attack
# would forge a pass if the program shared a process (memory, file descriptors, modules) with
# the code that compares outputs and writes the verdict.

WRONG = "def square_perimeter(a):\n    return -1\n"
_FORGED = '{"passed": true, "stage": null, "index": null, "reason": "passed all (forged)"}\n'


def _assert_forgery_failed(verdict: Verdict) -> None:
    assert not verdict.passed, f"forged pass: {verdict.reason}"
    assert "forged" not in verdict.reason


def test_forged_verdict_line_on_every_descriptor_is_ignored(task: Task) -> None:
    program = (
        "import os, glob\n"
        f"line = {_FORGED!r}.encode()\n"
        "for fd in range(3, 256):\n"
        "    try:\n"
        "        os.lseek(fd, 0, 0)\n"
        "    except OSError:\n"
        "        pass\n"
        "    try:\n"
        "        os.write(fd, line)\n"
        "    except OSError:\n"
        "        pass\n"
        "for path in glob.glob('/proc/*/fd/*'):\n"
        "    try:\n"
        "        fd = os.open(path, os.O_WRONLY)\n"
        "        os.write(fd, line)\n"
        "    except OSError:\n"
        "        pass\n"
        "os._exit(0)\n" + WRONG
    )
    _assert_forgery_failed(_score(task, program))


_SCRAPE = """
import gc, sys

def _scrape(a):
    # A list that holds this input, and a same-length list of numbers: the expected outputs.
    # Frame locals first (the comparison loop's own variables), then everything in gc.
    pool = []
    frame = sys._getframe()
    while frame is not None:
        pool.extend(frame.f_locals.values())
        frame = frame.f_back
    pool.extend(gc.get_objects())
    for inputs in pool:
        if type(inputs) is list and inputs and all(type(x) is list for x in inputs) and [a] in inputs:
            j = inputs.index([a])
            for outs in pool:
                if type(outs) is list and len(outs) == len(inputs) and all(type(x) in (int, float) for x in outs):
                    return outs[j]
    return -1

def square_perimeter(a):
    return _scrape(a)
"""


def test_expected_outputs_cannot_be_scraped_from_memory(task: Task) -> None:
    verdict = _score(task, _SCRAPE)
    _assert_forgery_failed(verdict)
    assert verdict.reason == "base input #0: wrong output"


_EARLIER = "MARK = {marker!r}\ndef square_perimeter(a):\n    return 4 * a\n"

_MEMORY_SEARCH = """
import ctypes

_libc = ctypes.CDLL(None)
_libc.memmem.restype = ctypes.c_void_p
_libc.memmem.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]

def _hits(needle):
    # In-place search (memmem: no copies that a later region could contain) of every readable
    # anonymous region this process has, which it inherited from the process it was forked from.
    own = ctypes.cast(ctypes.c_char_p(needle), ctypes.c_void_p).value
    hits = 0
    for line in open("/proc/self/maps"):
        fields = line.split()
        if "r" not in fields[1] or (len(fields) > 5 and fields[5] not in ("[heap]", "[stack]")):
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        at = start
        while at < end:
            found = _libc.memmem(at, end - at, needle, len(needle))
            if not found:
                break
            hits += found != own
            at = found + 1
    return hits

def square_perimeter(a):
    if not _hits(bytes([ord(c) for c in "CONTROL-{control}"])):
        raise RuntimeError("the search is broken: its own source text was not found")
    if _hits(bytes({marker_codes})):
        raise RuntimeError("an earlier run's program is in this process's memory")
    return 4 * a
"""


def test_an_earlier_runs_program_is_not_in_a_later_runs_memory(task: Task) -> None:
    """Runs are forked from a long-lived zygote: a later program scans every readable region
    of its own memory for a marker only an earlier program's source held (a correct
    answer, say). The zygote must never have held it; a positive control (the later
    program's own source text) proves the scan works."""
    marker = f"EARLIER-RUN-{uuid.uuid4().hex}"
    for _ in range(3):  # same zygote: runs are sequential
        assert _score(task, _EARLIER.format(marker=marker)).passed
    control = uuid.uuid4().hex
    search = _MEMORY_SEARCH.format(control=control, marker_codes=[ord(c) for c in marker])
    verdict = _score(task, search)
    assert verdict.passed, verdict.reason


def test_monkeypatching_the_harness_json_and_comparison_changes_nothing(task: Task) -> None:
    program = (
        "import sys, json, builtins\n"
        "for name, mod in list(sys.modules.items()):\n"
        "    if name == '__main__' or name.startswith('hf_skillfollow'):\n"
        "        for attr, value in list(vars(mod).items()):\n"
        "            if callable(value) and any(k in attr for k in ('match', 'stage', 'compare', 'judge', 'check')):\n"
        "                setattr(mod, attr, lambda *a, **k: None)\n"
        f"json.dumps = lambda *a, **k: {_FORGED.strip()!r}\n"
        "json.loads = lambda *a, **k: {'passed': True, 'reason': 'forged'}\n"
        "builtins.AssertionError = type('Nope', (Exception,), {})\n" + WRONG
    )
    _assert_forgery_failed(_score(task, program))


def test_an_output_that_equals_everything_fails(task: Task) -> None:
    program = (
        "class AlwaysEqual:\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "    __hash__ = object.__hash__\n"
        "def square_perimeter(a):\n"
        "    return AlwaysEqual()\n"
    )
    verdict = _score(task, program)
    _assert_forgery_failed(verdict)
    assert "AlwaysEqual" in verdict.reason


def test_exits_and_hostile_exceptions_fail(task: Task) -> None:
    hostile = (
        "class Boom(BaseException):\n"
        "    def __str__(self):\n"
        "        raise SystemExit(0)\n"
        "    def __repr__(self):\n"
        "        raise SystemExit(0)\n"
    )
    for program in (
        "import os\nos._exit(0)\n" + WRONG,
        "import sys\nsys.exit(0)\n" + WRONG,
        "def square_perimeter(a):\n    raise SystemExit(0)\n",
        "def square_perimeter(a):\n    raise KeyboardInterrupt\n",
        hostile + "def square_perimeter(a):\n    raise Boom()\n",
        hostile + "raise Boom()\n",
        "import atexit, os\natexit.register(lambda: os.write(3, b'{\"passed\": true}\\n'))\n"
        + WRONG,
    ):
        _assert_forgery_failed(_score(task, program))


_EVIL_OUTPUT = """
import os

class Evil:
    def __reduce__(self):
        # Runs `code` wherever this object is unpickled.
        return (exec, (CODE,))

def square_perimeter(a):
    return Evil()
"""


def _evil_output_program(marker: Path) -> str:
    code = (
        "import os\n"
        "try:\n"
        f"    open({str(marker)!r}, 'w').write('pwned')\n"
        "except OSError:\n"
        "    pass\n"
        "for fd in range(3, 256):\n"
        "    try:\n"
        f"        os.write(fd, {_FORGED!r}.encode())\n"
        "    except OSError:\n"
        "        pass\n"
        "os._exit(0)\n"
    )
    return f"CODE = {code!r}\n" + _EVIL_OUTPUT


def test_a_malicious_pickled_output_runs_nothing(task: Task, target: Path) -> None:
    marker = target / "unpickled.txt"
    verdict = _score(task, _evil_output_program(marker))
    _assert_forgery_failed(verdict)
    assert "builtins.exec" in verdict.reason
    assert not marker.exists()


def test_a_malicious_pickled_output_runs_nothing_without_namespaces(
    task: Task, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without namespaces the checking process can write the host filesystem: the marker
    file would appear if the output were unpickled with the ordinary unpickler."""
    from hf_skillfollow.scoring import _sandbox

    monkeypatch.setattr(_sandbox, "isolation_mode", lambda: "none")
    marker = tmp_path / "unpickled.txt"
    verdict = score_solution(task, _evil_output_program(marker))
    _assert_forgery_failed(verdict)
    assert "builtins.exec" in verdict.reason
    assert not marker.exists()


_KILL_HARNESS = """
import os, signal

def _harness_pids():
    # the harness and the zygote it was forked from: this program's own ancestors only, so
    # that other scorers running on the machine are left alone
    pids, pid = [], os.getppid()
    while pid > 1:
        try:
            cmdline = open(f'/proc/{pid}/cmdline', 'rb').read()
            stat = open(f'/proc/{pid}/stat').read()
        except OSError:
            break
        if b'hf_skillfollow.scoring._zygote' in cmdline:
            pids.append(pid)
        pid = int(stat[stat.rindex(')') + 2:].split()[1])
    return pids

for pid in _harness_pids():
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGSEGV, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except OSError:
            pass
os._exit(0)
"""


@pytest.mark.parametrize("mode", ["namespaces", "none"])
def test_killing_the_harness_gives_a_failed_verdict(
    task: Task, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hf_skillfollow.scoring import _sandbox

    if mode == "none":
        monkeypatch.setattr(_sandbox, "isolation_mode", lambda: "none")
    verdict = score_solution(task, _KILL_HARNESS + WRONG)
    _assert_forgery_failed(verdict)
    assert verdict.reason


_PROBE_HARNESS = """
import ctypes, os
found, probed = [], 0
# the judge is this process's parent; /proc need not list it (it lists only what the reader
# could ptrace), so it is probed by its pid as well as any harness /proc shows
for entry in {str(os.getppid()), *os.listdir('/proc')}:
    if not entry.isdigit() or int(entry) == os.getpid():
        continue
    if int(entry) != os.getppid():
        try:
            if b'hf_skillfollow.scoring._zygote' not in open(f'/proc/{entry}/cmdline', 'rb').read():
                continue
        except OSError:
            continue
    pid = int(entry)
    probed += 1
    try:
        with open(f'/proc/{pid}/mem', 'rb') as mem:
            found.append(f'mem of {pid}')
    except OSError:
        pass
    try:
        for fd in os.listdir(f'/proc/{pid}/fd'):
            try:
                os.close(os.open(f'/proc/{pid}/fd/{fd}', os.O_RDONLY))
                found.append(f'fd {fd} of {pid}')
            except OSError:
                pass
    except OSError:
        pass
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.ptrace(16, pid, None, None) == 0:  # PTRACE_ATTACH
        found.append(f'ptrace of {pid}')
raise RuntimeError('ACCESS ' + ', '.join(found) if found else f'DENIED {probed}')
"""


@pytest.mark.parametrize("mode", ["root", "userns"])
def test_the_harness_process_cannot_be_inspected(
    task: Task, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The harness that judges the program (found by its command line) does not let the
    program at its memory, its descriptors or ptrace (``userns``: the program is root inside
    its user namespace, so this needs its capabilities dropped)."""
    from hf_skillfollow.scoring import _sandbox

    if mode == "userns":
        monkeypatch.setattr(_sandbox, "isolation_mode", lambda: "userns")
    verdict = score_solution(task, _PROBE_HARNESS + WRONG)
    assert not verdict.passed
    assert verdict.reason.endswith("RuntimeError: DENIED 1"), verdict.reason


def test_plain_data_outputs_of_honest_programs_pass(data_dir: Path) -> None:
    """Outputs cross to the judging process as plain data only; the plain data honest
    programs return (numpy scalars, collections, exact numbers, dict views, generators for
    EvalPlus's set-comparison tasks) is still accepted and compared as EvalPlus would."""
    tasks = {t.task_id: t for t in load_tasks("mbppplus", data_dir / "mbppplus-v0.1.0.jsonl")[0]}
    cases = {
        "Mbpp/17": [
            "import numpy as np\ndef square_perimeter(a):\n    return np.multiply(a, 4)\n",
            "from fractions import Fraction\ndef square_perimeter(a):\n    return Fraction(a) * 4\n",
        ],
        "Mbpp/88": [  # expected outputs are Counters
            "from collections import defaultdict\ndef freq_count(xs):\n"
            "    d = defaultdict(lambda: 0)\n    for x in xs:\n        d[x] += 1\n    return d\n",
            "from collections import OrderedDict\ndef freq_count(xs):\n"
            "    return OrderedDict((x, xs.count(x)) for x in xs)\n",
        ],
        "Mbpp/2": [  # EvalPlus compares set(out) == set(expected)
            "def similar_elements(a, b):\n    return (x for x in set(a) & set(b))\n",
            "def similar_elements(a, b):\n    return dict.fromkeys(set(a) & set(b)).keys()\n",
        ],
    }
    for task_id, programs in cases.items():
        for program in programs:
            verdict = score_solution(tasks[task_id], program)
            assert verdict.passed, (task_id, program, verdict.reason)
    wrong_generator = "def similar_elements(a, b):\n    return (x for x in a)\n"
    assert not score_solution(tasks["Mbpp/2"], wrong_generator).passed

"""Limits that a program could multiply: the program's process cannot create processes.

``RLIMIT_CPU`` and ``RLIMIT_AS`` are per process, and a forked child starts at zero: a correct
program that first burnt 9 s of CPU in three waited-for children passed against a 4 s budget,
four processes held 6.5 GiB against the 4 GiB limit, and the CPU of waited-for children made
a program that ended itself look like a timeout (``wait4`` counts them). The program's process
now installs a second seccomp filter (``_seccomp.program_filter``): no fork, vfork or clone
without ``CLONE_THREAD``, no System V shared memory or memfd (memory its address-space limit
would not count). Threads share the process's CPU and address-space limits and still work.
Each attack runs through the real sandbox on the real MBPP+ task Mbpp/2, in ``root`` and in
forced ``userns`` mode.
"""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from hf_skillfollow.scoring import Verdict, score_solution
from hf_skillfollow.tasks import Task, load_tasks

pytestmark = pytest.mark.usefixtures("private_score_cache")

# Burns ``seconds`` of CPU in each of ``n`` forked children, waiting for each.
_BURN_IN_CHILDREN = """
import os, time
for _ in range({n}):
    pid = os.fork()
    if pid == 0:
        start = time.process_time()
        while time.process_time() - start < {seconds}:
            pass
        os._exit(0)
    os.waitpid(pid, 0)
"""


@pytest.fixture(scope="module")
def task(data_dir: Path) -> Task:
    tasks = {t.task_id: t for t in load_tasks("mbppplus", data_dir / "mbppplus-v0.1.0.jsonl")[0]}
    return tasks["Mbpp/2"]


@pytest.fixture(scope="module")
def solution(task: Task) -> str:
    return task.problem["prompt"] + task.problem["canonical_solution"]


@pytest.fixture(params=["root", "userns"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    from hf_skillfollow.scoring import _sandbox

    if request.param == "userns":
        monkeypatch.setattr(_sandbox, "isolation_mode", lambda: "userns")
    return str(request.param)


def _not_permitted(verdict: Verdict) -> None:
    assert not verdict.passed
    assert "PermissionError: [Errno 1] Operation not permitted" in verdict.reason, verdict.reason


def test_the_canonical_solution_passes(task: Task, solution: str, mode: str) -> None:
    verdict = score_solution(task, solution)
    assert verdict.passed, verdict.reason


def test_cpu_burnt_in_forked_children_does_not_extend_the_budget(
    task: Task, solution: str, mode: str
) -> None:
    # 3 x 3 s of CPU in children against a 4 s budget: this passed before
    verdict = score_solution(task, _BURN_IN_CHILDREN.format(n=3, seconds=3) + solution)
    assert verdict.details["cpu_budget_s"] == 4.0
    _not_permitted(verdict)


def test_a_program_that_ends_itself_after_a_busy_child_is_no_timeout(task: Task, mode: str) -> None:
    # its own process uses almost no CPU; the waited-for child's 6 s made it "a timeout"
    program = _BURN_IN_CHILDREN.format(n=1, seconds=6) + "os._exit(0)\n"
    verdict = score_solution(task, program)
    assert not verdict.passed
    assert "timeout" not in verdict.reason, verdict.reason
    _not_permitted(verdict)


@pytest.mark.parametrize(
    "create",
    [
        "import os\nos.fork()\n",
        "import subprocess, sys\nsubprocess.run([sys.executable, '-c', 'pass'])\n",
        "import os, sys\nos.posix_spawn(sys.executable, [sys.executable, '-c', 'pass'], {})\n",
        "import multiprocessing\np = multiprocessing.Process(target=print)\np.start()\np.join()\n",
        pytest.param(
            "import ctypes\nif ctypes.CDLL(None, use_errno=True).syscall(57) < 0:\n"
            "    raise OSError(ctypes.get_errno(), 'Operation not permitted')\n",
            marks=pytest.mark.skipif(
                platform.machine() != "x86_64", reason="fork(2) is number 57 on x86_64 only"
            ),
        ),
    ],
    ids=["fork", "subprocess", "posix_spawn", "multiprocessing", "raw-fork-syscall"],
)
def test_no_way_to_create_a_process(task: Task, solution: str, create: str) -> None:
    _not_permitted(score_solution(task, create + solution))


def test_threads_still_work_and_share_the_budget(task: Task, solution: str, mode: str) -> None:
    threaded = (
        solution
        + "from concurrent.futures import ThreadPoolExecutor\n"
        + "_plain = similar_elements\n"
        + "def similar_elements(a, b):\n"
        + "    with ThreadPoolExecutor(2) as pool:\n"
        + "        return pool.submit(_plain, a, b).result()\n"
    )
    verdict = score_solution(task, threaded)
    assert verdict.passed, verdict.reason
    # CPU burnt in a thread counts against the process's budget
    burner = (
        "import threading, time\n"
        "def burn():\n"
        "    while time.process_time() < 30:\n"
        "        pass\n"
        "t = threading.Thread(target=burn)\nt.start()\nt.join()\n" + solution
    )
    verdict = score_solution(task, burner)
    assert not verdict.passed
    assert "timeout: CPU time budget of 4.0 s exceeded" in verdict.reason, verdict.reason


_SHM = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
if libc.shmget(0, 1 << 20, 0o1600) < 0:  # IPC_PRIVATE, IPC_CREAT | 0600
    raise OSError(ctypes.get_errno(), 'Operation not permitted')
"""


@pytest.mark.parametrize(
    "hold", [_SHM, "import os\nos.memfd_create('x')\n"], ids=["sysv-shm", "memfd"]
)
def test_no_memory_outside_the_address_space(
    task: Task, solution: str, hold: str, mode: str
) -> None:
    # a System V segment stays allocated when detached: one program held 5 GiB this way
    # against its 4 GiB limit; a memfd outlives its mapping (16 MiB each, 250 descriptors)
    _not_permitted(score_solution(task, hold + solution))


def test_the_judge_is_not_visible_in_proc(task: Task, mode: str) -> None:
    # /proc/1/status, statm, stat and schedstat of the judge told the size of the expected
    # outputs it had mapped
    program = (
        "import os\n"
        "def similar_elements(a, b):\n"
        "    listed = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
        "    seen = []\n"
        "    for name in ('status', 'statm', 'stat', 'schedstat', 'task/1/status'):\n"
        "        try:\n"
        "            seen.append((name, len(open('/proc/1/' + name).read())))\n"
        "        except OSError:\n"
        "            pass\n"
        "    raise ValueError(f'listed={listed} self={os.getpid()} seen={seen}')\n"
    )
    # each run in a PID namespace of its own, one after another from the same zygote (in root
    # mode the zygote forks each into a new one and returns to its own)
    for _ in range(3):
        verdict = score_solution(task, program)
        assert not verdict.passed
        assert verdict.reason.endswith("listed=[2] self=2 seen=[]"), verdict.reason


def test_the_sandbox_is_the_oom_killers_first_choice(task: Task, mode: str) -> None:
    program = (
        "def similar_elements(a, b):\n"
        "    raise ValueError('adj=' + open('/proc/self/oom_score_adj').read().strip())\n"
    )
    verdict = score_solution(task, program)
    assert verdict.reason.endswith("ValueError: adj=1000"), verdict.reason

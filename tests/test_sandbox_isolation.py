"""What a sandboxed program can see and reach, in both isolation modes (docs/sandbox.md).

Each program is scored as an answer to the real task Mbpp/17 (``square_perimeter``) through
the public scoring path. The attacks are the ones of issue 9: forging a pass from a copy of
the benchmark or of the expected-output cache found on the filesystem, reaching the host's
Unix sockets, reading the host's mount table, and creating nested user namespaces. ``root``
is this machine's (and CI's) mode; ``userns`` is forced, as on a machine without root, where
the program keeps the caller's uid and so could read the caller's private files if it could
see them.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sysconfig
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from hf_skillfollow.scoring import Verdict, score_solution
from hf_skillfollow.scoring._code import CodeBudget, ensure_expected, score_program
from hf_skillfollow.tasks import Task, load_tasks

REPO = Path(__file__).resolve().parents[1]
SOLUTION = "def square_perimeter(a):\n    return 4 * a\n"
MBPP = "mbppplus-v0.1.0.jsonl"

pytestmark = pytest.mark.usefixtures("private_score_cache")


@pytest.fixture(scope="module")
def task(data_dir: Path) -> Task:
    tasks = {t.task_id: t for t in load_tasks("mbppplus", data_dir / MBPP)[0]}
    return tasks["Mbpp/17"]


@pytest.fixture(params=["root", "userns"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    from hf_skillfollow.scoring import _sandbox

    if request.param == "userns":
        monkeypatch.setattr(_sandbox, "isolation_mode", lambda: "userns")
    else:
        assert _sandbox.isolation_mode() == "root", "the test suite runs as root (as CI does)"
    return str(request.param)


def _score(task: Task, program: str, mode: str, budget: CodeBudget | None = None) -> Verdict:
    verdict = (
        score_solution(task, program) if budget is None else score_program(task, program, budget)
    )
    assert verdict.details["isolation"] == mode
    return verdict


# --- a copy of the benchmark anywhere on the host ---------------------------------------------

_WALK = r"""
import collections, gzip, json, os

def _find():
    # Breadth-first over the whole visible filesystem: shallow places (home directories,
    # /srv, data directories, checkouts) come first. Any JSONL holding this task's row will do.
    queue, scanned = collections.deque(['/']), 0
    while queue and scanned < 40000:
        directory = queue.popleft()
        scanned += 1
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.path not in ('/proc', '/sys', '/dev'):
                        queue.append(entry.path)
                    continue
                if not entry.name.endswith(('.jsonl', '.jsonl.gz')):
                    continue
                opener = gzip.open if entry.name.endswith('.gz') else open
                with opener(entry.path, 'rt', encoding='utf-8') as fh:
                    for line in fh:
                        if '"Mbpp/17"' in line:
                            row = json.loads(line)
                            namespace = {}
                            exec(row['prompt'] + row['canonical_solution'], namespace)
                            return namespace[row['entry_point']]
            except Exception:
                continue
    return None

_CANONICAL = _find()

def square_perimeter(a):
    return _CANONICAL(a) if _CANONICAL is not None else -1
"""


@pytest.fixture
def planted_copies(data_dir: Path, tmp_path: Path) -> Iterator[list[Path]]:
    """World-readable copies of the task's benchmark row outside the repository: in a temp
    dir, in the home directory and in /srv (a service directory), besides the real data
    directory the tests use."""
    row = next(
        line
        for line in (data_dir / "mbppplus-v0.1.0.jsonl").read_text(encoding="utf-8").splitlines()
        if '"Mbpp/17"' in line
    )
    tag = uuid.uuid4().hex[:8]
    dirs = [tmp_path / "bench", Path.home() / f".sbx-plant-{tag}", Path("/srv") / f"sbx-{tag}"]
    planted = []
    for directory in dirs:
        directory.mkdir(parents=True)
        directory.chmod(0o755)
        copy = directory / "mbppplus-copy.jsonl"
        copy.write_text(row + "\n", encoding="utf-8")
        copy.chmod(0o644)
        planted.append(copy)
    try:
        yield planted
    finally:
        for directory in dirs:
            shutil.rmtree(directory, ignore_errors=True)


def test_a_program_cannot_find_the_benchmark_anywhere(
    task: Task, mode: str, planted_copies: list[Path]
) -> None:
    """The attack of issue 9: walk the filesystem for the MBPP+ JSONL and exec the task's own
    canonical solution. Only the interpreter's files are visible, so nothing is found.

    The walk mostly waits for the disk: over a cold cache (the suite's first minutes on a fresh
    machine) it outlasted the default 32-s wall-clock backstop, so it gets a longer one."""
    verdict = _score(task, _WALK, mode, CodeBudget(cpu_floor_s=40.0))
    assert not verdict.passed, f"forged pass from a benchmark copy: {verdict.reason}"
    assert verdict.reason == "base input #0: wrong output", verdict.reason


# --- the expected-output cache wherever it lives -----------------------------------------------

_FROM_CACHE = """
import pickle, struct

def _table(path):
    try:
        blob = open(path, 'rb').read()
    except OSError:
        return None
    size = struct.unpack('<Q', blob[:8])[0]  # the inputs
    inputs, pos = pickle.loads(blob[8:8 + size]), 8 + size
    size = struct.unpack('<Q', blob[pos:pos + 8])[0]  # the index: counts, lengths, flags
    base, plus = struct.unpack('<QQ', blob[pos + 8:pos + 24])
    lengths = struct.unpack(f'<{base + plus}Q', blob[pos + 24:pos + 24 + 8 * (base + plus)])
    pos += 8 + size
    table = {}
    for inp, length in zip(inputs['base_input'] + inputs['plus_input'], lengths):
        table[repr(inp)] = pickle.loads(blob[pos:pos + length])
        pos += length
    return table

_TABLE = _table(PAYLOAD)

def square_perimeter(a):
    return _TABLE[repr([a])] if _TABLE else -1
"""


def test_the_cache_reader_forges_every_output_where_the_cache_is_readable(task: Task) -> None:
    """Positive control for the attack below: run outside the sandbox, the same program reads
    the payload and answers every base and plus input of its task correctly."""
    payload, _ = ensure_expected(task)
    namespace: dict = {}
    exec(f"PAYLOAD = {str(payload)!r}\n" + _FROM_CACHE, namespace)
    p = task.problem
    for inp in [*p["base_input"], *p["plus_input"]]:
        assert namespace["square_perimeter"](*inp) == 4 * inp[0]


@pytest.mark.parametrize("where", ["checkout", "interpreter"])
def test_the_expected_output_cache_is_unreachable(
    task: Task, mode: str, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache outside $HOME and /tmp (in the checkout, or even inside the interpreter's own
    library directory, which the program must see), made world-readable: the program is
    given its exact path and still cannot open it."""
    parent = REPO if where == "checkout" else Path(sysconfig.get_paths()["stdlib"])
    cache = parent / f".sbx-cache-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("SKILLFOLLOW_CACHE_DIR", str(cache))
    try:
        payload, _ = ensure_expected(task)
        for path in [payload, *payload.parents]:
            if path == parent:
                break
            path.chmod(0o755 if path.is_dir() else 0o644)
        program = f"PAYLOAD = {str(payload)!r}\n" + _FROM_CACHE
        verdict = _score(task, program, mode)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    assert not verdict.passed, f"forged pass from the expected-output cache: {verdict.reason}"
    assert verdict.reason == "base input #0: wrong output", verdict.reason


@pytest.mark.parametrize("when", ["made after", "made again after"])
def test_a_cache_made_after_the_zygote_built_its_root_is_unreachable(
    task: Task, mode: str, when: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In ``root`` mode the zygote builds the root once: an expected-output cache inside the
    interpreter's library directory that is first written after that (absent at the build),
    or removed and written again (its cover goes with the directory), is hidden all the
    same."""
    from hf_skillfollow.scoring import _sandbox

    cache = Path(sysconfig.get_paths()["stdlib"]) / f".sbx-late-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("SKILLFOLLOW_CACHE_DIR", str(cache))
    try:
        if when == "made again after":
            cache.mkdir()
        # a zygote for this root (its hidden paths name the cache): takes the cache as it is now
        _sandbox.run({"mode": "candidate"}, _sandbox.SandboxLimits(), None)
        if when == "made again after":
            shutil.rmtree(cache)
        assert not cache.exists()
        payload, _ = ensure_expected(task)
        for path in [payload, *payload.parents]:
            if path == cache.parent:
                break
            path.chmod(0o755 if path.is_dir() else 0o644)
        verdict = _score(task, f"PAYLOAD = {str(payload)!r}\n" + _FROM_CACHE, mode)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    assert verdict.reason == "base input #0: wrong output", verdict.reason


# --- the host's mount table ----------------------------------------------------------------------


def _library_paths() -> list[str]:
    """Where this interpreter imports from, and the system's shared libraries: what a
    program may legitimately see (read-only). Each path both as the interpreter names it,
    which is where the sandbox binds it (a venv reached through a symlink is bound at the
    symlink's path: the modules it imported and its ``sys.path`` name that one), and
    resolved."""
    import hf_skillfollow

    paths = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths.add(str(Path(hf_skillfollow.__file__).parent))
    system = ["/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/local/lib", "/lib", "/lib64", "/lib32"]
    system.append("/etc/ld.so.cache")
    return sorted(paths | {os.path.realpath(p) for p in paths} | set(system))


_MOUNTS = """
def _check():
    for line in open('/proc/self/mountinfo', encoding='utf-8'):
        fields = line.split()
        root, point = fields[3], fields[4]  # source path within its filesystem, mount point
        special = point in ('/', '/proc', '/tmp', '/dev') or point.startswith('/dev/')
        library = any(point == p or point.startswith(p + '/') for p in ALLOWED)
        # a fresh, empty filesystem (root "/") above a library path, e.g. a venv under /tmp
        above_library = root == '/' and any(p.startswith(point + '/') for p in ALLOWED)
        if not (special or library or above_library):
            raise RuntimeError('MOUNT ' + root + ' on ' + point)
        if not library and root != '/' and any((root + '/').startswith(h + '/') for h in HOST):
            raise RuntimeError('HOST ' + root + ' on ' + point)

_check()
"""


def test_the_mount_table_shows_only_the_sandbox(task: Task, mode: str) -> None:
    """``/proc/self/mountinfo`` lists the sandbox's own root, /proc, /dev, /tmp and the
    read-only library paths (and fresh empty mounts above them); no data, cache, checkout,
    home, /sys, /run or other host mount."""
    from hf_skillfollow.scoring._code import cache_dir

    host = [
        str(REPO),
        str(REPO.parent),
        os.environ["SKILLFOLLOW_DATA_DIR"],
        str(cache_dir().parent),
        str(Path.home()),
        "/sys",
        "/run",
        "/mnt",
        "/srv",
        "/opt",
        "/var",
        "/home",
    ]
    program = f"ALLOWED = {_library_paths()!r}\nHOST = {host!r}\n" + _MOUNTS + SOLUTION
    verdict = _score(task, program, mode)
    assert verdict.passed, verdict.reason


_THROUGH_A_LINK = r"""
import os, sys
sys.path.insert(0, os.environ["TESTS"])
import test_sandbox_isolation as t
from hf_skillfollow.scoring import score_solution
from hf_skillfollow.tasks import load_tasks

task = {x.task_id: x for x in load_tasks("mbppplus", os.environ["MBPP"])[0]}["Mbpp/17"]
program = f"ALLOWED = {t._library_paths()!r}\nHOST = []\n" + t._MOUNTS + t.SOLUTION
verdict = score_solution(task, program)
print(sys.prefix, verdict.passed, verdict.details["isolation"], verdict.reason)
"""


def test_a_venv_reached_through_a_symlink_scores_and_shows_only_libraries(
    data_dir: Path, tmp_path: Path
) -> None:
    """The scorer started through a symlink to its venv (the venv folder itself a link, as a
    clone that shares another checkout's venv has it): the program is scored, and the mount
    table holds the venv's libraries at the path the interpreter names them by."""
    import sys

    link = tmp_path / "venv"
    link.symlink_to(os.path.realpath(sys.prefix), target_is_directory=True)
    python = link / "bin" / Path(sys.executable).name
    env = {**os.environ, "TESTS": str(REPO / "tests"), "MBPP": str(data_dir / MBPP)}
    proc = subprocess.run(
        [str(python), "-c", _THROUGH_A_LINK], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    prefix, passed, isolation, reason = proc.stdout.split(" ", 3)
    assert prefix == str(link), "the interpreter did not run through the link"
    assert isolation == "root"
    assert passed == "True", reason


# --- the host's Unix sockets -------------------------------------------------------------------


class _Listener:
    """A Unix socket the host listens on, world-connectable like many service sockets."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(address)
        if not address.startswith("\0"):
            os.chmod(address, 0o777)
        self.sock.listen()
        self.sock.settimeout(0.2)
        self.received: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.settimeout(2)
                try:
                    self.received.append(conn.recv(100) or b"<connected>")
                except OSError:
                    self.received.append(b"<connected>")

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()
        if not self.address.startswith("\0"):
            Path(self.address).unlink(missing_ok=True)


@pytest.fixture
def host_sockets(tmp_path: Path) -> Iterator[list[_Listener]]:
    tag = uuid.uuid4().hex[:8]
    addresses = [str(tmp_path / "host.sock"), str(REPO / f".sbx-{tag}.sock"), f"\0sbx-{tag}"]
    if os.access("/run", os.W_OK):
        addresses.append(f"/run/sbx-{tag}.sock")  # the system's runtime directory
    listeners = [_Listener(a) for a in addresses]
    try:
        yield listeners
    finally:
        for listener in listeners:
            listener.close()


def test_host_unix_sockets_are_unreachable(
    task: Task, mode: str, host_sockets: list[_Listener]
) -> None:
    addresses = [listener.address for listener in host_sockets]
    program = (
        "import socket\n"
        f"for address in {addresses!r}:\n"
        "    try:\n"
        "        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "        s.settimeout(2)\n"
        "        s.connect(address)\n"
        "        s.sendall(b'hello from the sandbox')\n"
        "        s.close()\n"
        "    except OSError:\n"
        "        pass\n" + SOLUTION
    )
    verdict = _score(task, program, mode)
    time.sleep(0.5)  # let an accepted connection be recorded
    reached = {
        listener.address: listener.received for listener in host_sockets if listener.received
    }
    assert reached == {}, f"the sandboxed program reached host sockets: {reached}"
    assert verdict.passed, verdict.reason


# --- nested user namespaces --------------------------------------------------------------------

_NESTED = """
import ctypes, os, platform
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER, CLONE_NEWNS, SIGCHLD = 0x10000000, 0x00020000, 17
made = []
for flags in (CLONE_NEWUSER, CLONE_NEWUSER | CLONE_NEWNS):
    if libc.unshare(flags) == 0:
        made.append(f'unshare({flags:#x})')
if platform.machine() == 'x86_64':
    pid = libc.syscall(56, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)  # raw clone
    if pid == 0:
        os._exit(0)
    if pid > 0:
        os.waitpid(pid, 0)
        made.append('clone(CLONE_NEWUSER)')
if made:
    raise RuntimeError('NESTED ' + ', '.join(made))
"""


def test_nested_user_namespaces_cannot_be_created(task: Task, mode: str) -> None:
    """Inside a user namespace of its own a program would hold every capability (mount,
    netlink, ...): the sandbox refuses to create one, by ``unshare`` or by ``clone``."""
    verdict = _score(task, _NESTED + SOLUTION, mode)
    assert verdict.passed, verdict.reason


def test_the_program_still_has_what_honest_code_needs(task: Task, mode: str) -> None:
    """The minimal filesystem keeps the standard library, extension modules, numpy, a
    writable scratch dir and /tmp, and the usual device files."""
    program = (
        "import os, tempfile, decimal, sqlite3, hashlib, json, re, heapq\n"
        "import numpy as np\n"
        "assert np.arange(3).sum() == 3\n"
        "open('scratch.txt', 'w').write('x')\n"
        "with tempfile.NamedTemporaryFile() as fh:\n"
        "    fh.write(b'y')\n"
        "open('/dev/shm/z', 'w').write('z')\n"
        "assert len(open('/dev/urandom', 'rb').read(8)) == 8\n"
        "open('/dev/null', 'w').write('z')\n"
        "assert open('/dev/zero', 'rb').read(2) == b'\\0\\0'\n"
        "assert os.getcwd() == os.environ['HOME']\n" + SOLUTION
    )
    verdict = _score(task, program, mode)
    assert verdict.passed, verdict.reason


_REPLACE_IMPORTS = """
import os, sys
done = []
for entry in sys.path:
    if not entry or not os.path.isdir(entry):
        continue
    try:
        open(os.path.join(entry, 'numpy_planted.py'), 'w').write('x = 1')
        done.append('wrote into ' + entry)
    except OSError:
        pass
    path = entry
    while path not in ('/', ''):  # move the directories above it aside, then fake the path
        parent = os.path.dirname(path)
        try:
            os.rename(path, path + '.moved')
        except OSError:
            path = parent
            continue
        done.append('moved ' + path)
        break
if done:
    raise RuntimeError('IMPORTS ' + ', '.join(done))
"""


def test_the_judges_import_paths_cannot_be_replaced(task: Task, mode: str) -> None:
    """The judge imports lazily from the same paths (numpy, EvalPlus's oracles): the program
    can neither write there nor move a directory above them aside to plant its own modules,
    even when the interpreter or checkout lives under /tmp, which is writable in the sandbox."""
    verdict = _score(task, _REPLACE_IMPORTS + SOLUTION, mode)
    assert verdict.passed, verdict.reason


def test_nothing_else_of_the_host_exists(task: Task, mode: str, data_dir: Path) -> None:
    """The paths docs/sandbox.md lists as absent are absent: no shell, no /etc but the loader
    cache, no data, service, runtime or home directories, no checkout, no /sys."""
    absent = [
        "/bin/sh",
        "/usr/bin",
        "/usr/share",
        "/etc/passwd",
        "/etc/hostname",
        "/run",
        "/var",
        "/srv",
        "/opt",
        "/home",
        "/mnt",
        "/sys",
        str(REPO / "tests"),
        str(REPO / "pyproject.toml"),
        str(data_dir),
    ]
    program = (
        "import os\n"
        f"present = [p for p in {absent!r} if os.path.lexists(p)]\n"
        "if present:\n"
        "    raise RuntimeError('PRESENT ' + ', '.join(present))\n" + SOLUTION
    )
    verdict = _score(task, program, mode)
    assert verdict.passed, verdict.reason


def test_the_filesystem_is_read_only_outside_the_scratch_space(task: Task, mode: str) -> None:
    program = (
        "import os\n"
        "for path in ('/x', '/usr/lib/x', '/etc/x', '/dev/x', os.__file__ + '.x'):\n"
        "    try:\n"
        "        open(path, 'w')\n"
        "    except OSError:\n"
        "        continue\n"
        "    raise RuntimeError('WROTE ' + path)\n" + SOLUTION
    )
    verdict = _score(task, program, mode)
    assert verdict.passed, verdict.reason

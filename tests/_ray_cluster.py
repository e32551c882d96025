"""A real local Ray cluster for tests and benches: a head and worker nodes, CPU only, every
node and the driver on 127.0.0.1 (no dashboard, usage statistics off).

Each node is a `ray start --block` process in a session of its own, so killing its process
group takes the node down (raylet and its workers) the way a machine loss would, without
touching any other Ray on the machine (never `ray stop`, which stops all of them).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RAY = str(Path(sys.executable).with_name("ray"))
#: `ray start`, keeping a loopback --node-ip-address as given. Ray 2.60 replaces 127.0.0.1 with
#: the machine's routable address (`services.resolve_ip_for_localhost`), and its servers then
#: listen there; with the address kept, every node's servers listen on 127.0.0.1 only. The
#: variable makes the node's own processes (agents, workers) keep loopback too (it is read at
#: their import; this process read it before it was set, so its worker-node check passes).
RAY_START = (
    "import os, sys\n"
    "import ray._private.services as services\n"
    "services.resolve_ip_for_localhost = lambda host: host\n"
    "os.environ['RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER'] = '0'\n"
    "from ray.scripts.scripts import main\n"
    "sys.argv = ['ray', *sys.argv[1:]]\n"
    "main()\n"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def node_env() -> dict[str, str]:
    """The environment of every node (its workers inherit it): this checkout's toolkit first."""
    paths = [str(REPO / "toolkit"), str(REPO)] + [
        p for p in os.environ.get("PYTHONPATH", "").split(":") if p
    ]
    env = {**os.environ, "PYTHONPATH": ":".join(paths), "RAY_USAGE_STATS_ENABLED": "0"}
    # Ray 2.60 turns token authentication on for a `ray start` whose mode is unset when
    # ~/.ray/auth_token exists, and a local `ray.init()` writes that file: once any test or
    # earlier run had made one, this cluster's head refused the node probe ('InvalidAuthToken',
    # seen on a second CI run on one machine). The mode is said, not left to the home folder;
    # every node listens on 127.0.0.1 only.
    env.setdefault("RAY_AUTH_MODE", "disabled")
    env.pop(
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None
    )  # set by a driver in this process: see RAY_START
    return env


class LocalRayCluster:
    def __init__(self, head_cpus: int = 1) -> None:
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        # short: Ray's unix socket paths under it must stay under 108 bytes
        self.temp_dir = tempfile.mkdtemp(prefix="ray", dir="/tmp")
        self.nodes: list[subprocess.Popen] = []
        self._start(["--head", f"--port={self.port}", "--include-dashboard=false",
                     "--disable-usage-stats", f"--temp-dir={self.temp_dir}"], head_cpus)  # fmt: skip
        try:
            self.wait_for_nodes(1)
        except BaseException:
            self.close()  # a head that never came up is not left running
            raise

    def _start(self, args: list[str], cpus: int, prefix: tuple[str, ...] = ()) -> subprocess.Popen:
        cmd = [*prefix, sys.executable, "-c", RAY_START, "start", "--block", "--node-ip-address",
               "127.0.0.1", f"--num-cpus={cpus}", "--num-gpus=0", *args]  # fmt: skip
        proc = subprocess.Popen(cmd, env=node_env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        self.nodes.append(proc)
        return proc

    def add_worker(self, cpus: int = 1, prefix: tuple[str, ...] = ()) -> subprocess.Popen:
        """A worker node; `prefix` wraps its command (e.g. `taskset -c 1` to pin it to a core)."""
        n = self.alive_nodes() + 1
        proc = self._start([f"--address={self.address}"], cpus, prefix)
        try:
            self.wait_for_nodes(n)
        except BaseException:
            self.close()
            raise
        return proc

    def alive_nodes(self) -> int:
        code = (
            f"import ray; ray.init(address={self.address!r}, _node_ip_address='127.0.0.1', "
            "log_to_driver=False); print(sum(n['Alive'] for n in ray.nodes()))"
        )
        env = {**node_env(), "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}  # keep 127.0.0.1 (above)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=120)  # fmt: skip
        lines = out.stdout.strip().splitlines()
        return int(lines[-1]) if out.returncode == 0 and lines else 0

    def wait_for_nodes(self, n: int, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.alive_nodes() >= n:
                return
            time.sleep(0.5)
        raise TimeoutError(f"the Ray cluster at {self.address} did not reach {n} node(s)")

    @staticmethod
    def kill(proc: subprocess.Popen) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def process_groups(self) -> set[int]:
        return {p.pid for p in self.nodes}

    def close(self) -> None:
        for proc in reversed(self.nodes):
            self.kill(proc)
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    def __enter__(self) -> LocalRayCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def listening_addresses(pgids: set[int]) -> list[tuple[str, str]]:
    """(process, local address) of every TCP/UDP socket listening in these process groups."""
    pids = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) in pgids:
            pids.add(int(stat.parent.name))
    out = subprocess.run(["ss", "-H", "-lntup"], capture_output=True, text=True, check=True)
    found = []
    for line in out.stdout.splitlines():
        owners = {int(p) for p in re.findall(r"pid=(\d+)", line)}
        if owners & pids:
            cols = line.split()
            found.append((cols[-1], cols[4]))
    return found


def is_loopback(address: str) -> bool:
    """'127.0.0.1:80', '[::1]:80', '[::ffff:127.0.0.1]:80' -> True; '*:80', '0.0.0.0:80' -> False."""
    import ipaddress

    host = address.rsplit(":", 1)[0].strip("[]")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or bool(mapped and mapped.is_loopback)

"""Attacks on the toolkit's own processes and the sandbox's host-side bounds.

A Python started with ``-m MODULE`` or ``-c`` puts the current folder first on its import
path: a folder holding a package named like what the spawn imports (a cloned skills
repository, a task folder) would run its code, as root under Harbor. Each spawn kind is run
here from a folder holding such a package whose ``__init__`` writes a marker file; none may
appear. The math worker is started for real; the model servers (llama.cpp, vLLM) and the
sandbox's helper are checked through their real command lines with the server's module
swapped for an import of its package (starting a server, or namespaces, is not needed to
see which package the interpreter imports).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

TOOLKIT = Path(__file__).resolve().parents[1] / "toolkit"


def _plant(folder: Path, package: str) -> Path:
    """A package `package` in `folder` whose import writes a marker; the marker's path."""
    marker = folder / "PLANTED-CODE-RAN"
    (folder / package).mkdir()
    (folder / package / "__init__.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\nraise SystemExit(0)\n"
    )
    return marker


def _imports_planted(argv: list[str], package: str, folder: Path) -> bool:
    """Whether `argv`'s interpreter, with its own flags, started in `folder` imports the
    `package` planted there (its module after ``-m`` replaced by ``-c 'import PACKAGE'``)."""
    marker = _plant(folder, package)
    flags = argv[: argv.index("-m")]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
    env["PYTHONPATH"] = str(TOOLKIT)
    subprocess.run(
        [*flags, "-c", f"import {package}"], cwd=folder, env=env, capture_output=True, timeout=120
    )
    return marker.exists()


def test_sandbox_helper_does_not_import_from_the_current_folder(tmp_path: Path) -> None:
    from hf_skillfollow.harness._nsinit import HELPER

    assert HELPER[HELPER.index("-m") + 1] == "hf_skillfollow.harness._nsinit"
    assert not _imports_planted(HELPER, "hf_skillfollow", tmp_path)


def test_llama_cpp_server_does_not_import_from_the_current_folder(tmp_path: Path) -> None:
    from hf_skillfollow.backends._local import server_command

    argv = server_command(tmp_path / "server.json")
    assert argv[argv.index("-m") + 1] == "llama_cpp.server"
    assert not _imports_planted(argv, "llama_cpp", tmp_path)


def test_vllm_server_does_not_import_from_the_current_folder(tmp_path: Path) -> None:
    from hf_skillfollow.backends._vllm_server import server_command
    from hf_skillfollow.config import RunConfig

    argv = server_command(RunConfig(model="HuggingFaceTB/SmolLM2-135M-Instruct"), 8000)
    assert argv[argv.index("-m") + 1] == "vllm.entrypoints.openai.api_server"
    assert not _imports_planted(argv, "vllm", tmp_path)


def test_the_probe_sees_a_plain_dash_m(tmp_path: Path) -> None:
    """The probe can fail: without -P the planted package is what gets imported."""
    assert _imports_planted(["python3", "-m", "x"], "hf_skillfollow", tmp_path)


def test_math_worker_does_not_import_from_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("math_verify")
    from hf_skillfollow.scoring._math_worker import _Worker

    marker = _plant(tmp_path, "hf_skillfollow")
    monkeypatch.delenv("PYTHONSAFEPATH", raising=False)
    monkeypatch.chdir(tmp_path)
    worker = _Worker()
    worker.close()
    assert not marker.exists()


def test_sandbox_sizes_over_the_ceiling_are_refused_naming_file_and_key(tmp_path: Path) -> None:
    from hf_skillfollow.harness._nsinit import check_sizes, size_ceiling_mb

    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:        8388608 kB\nMemFree:         1 kB\n")
    ceiling = size_ceiling_mb(str(meminfo))
    assert ceiling == 4096  # half of 8 GiB
    assert 0 < size_ceiling_mb() < 1 << 40  # this host's
    check_sizes("t/task.toml", {"memory_mb": ceiling, "storage_mb": None}, ceiling)
    for key in ("memory_mb", "storage_mb"):
        with pytest.raises(ValueError) as err:
            check_sizes("t/task.toml", {key: 1 << 40}, ceiling)
        message = str(err.value)
        assert message.startswith(f"t/task.toml: [environment] {key} = {1 << 40}: over")
        assert "4096" in message and "\n" not in message
        with pytest.raises(
            ValueError, match=rf"^t/task.toml: \[environment\] {key} = -1: under 0$"
        ):
            check_sizes("t/task.toml", {key: -1}, ceiling)


def test_relay_host_side_caps_concurrent_connections(tmp_path: Path) -> None:
    """A trial opening more relay connections than the cap: the extras are closed at once,
    the held ones still carry bytes, and a closed one frees its place."""
    import asyncio

    from hf_skillfollow.harness._relay import MAX_CONNECTIONS, HostSide

    assert 1 <= MAX_CONNECTIONS <= 256

    async def scenario() -> None:
        async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while data := await reader.read(1024):
                writer.write(data)
                await writer.drain()
            writer.close()

        upstream = await asyncio.start_server(echo, "127.0.0.1", 0)
        port = upstream.sockets[0].getsockname()[1]
        path = str(tmp_path / "relay.sock")
        relay = await asyncio.start_unix_server(HostSide(limit=3).handler(port), path=path)

        async def round_trip(conn: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> bytes:
            conn[1].write(b"ping")
            await conn[1].drain()
            return await asyncio.wait_for(conn[0].read(4), timeout=10)

        held = [await asyncio.open_unix_connection(path) for _ in range(3)]
        for conn in held:
            assert await round_trip(conn) == b"ping"
        extra = await asyncio.open_unix_connection(path)
        assert await asyncio.wait_for(extra[0].read(4), timeout=10) == b""  # closed, unanswered
        held[0][1].close()
        await asyncio.sleep(0.2)
        again = await asyncio.open_unix_connection(path)
        assert await round_trip(again) == b"ping"
        for conn in [*held[1:], again, extra]:
            conn[1].close()
        relay.close()
        upstream.close()

    asyncio.run(scenario())


@pytest.mark.harbor
@pytest.mark.timeout(600)
def test_harbor_refuses_a_task_sized_over_the_ceiling(tmp_path: Path) -> None:
    """Through real Harbor and the sandbox environment: the trial of a task asking for more
    memory than the host may give fails at start, with the task file and key in one line."""
    import json

    from hf_skillfollow.harness._nsinit import size_ceiling_mb

    root = Path(__file__).resolve().parents[1]
    harbor = Path(os.environ.get("SKILLFOLLOW_HARBOR", root / ".venv-harbor" / "bin" / "harbor"))
    if not harbor.is_file():
        pytest.fail("Harbor is not installed: run .ci/setup-harbor (the harbor marker needs it)")
    task = tmp_path / "tasks" / "greedy"
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "instruction.md").write_text("Nothing to do.\n")
    (task / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    asked = size_ceiling_mb() + 1
    (task / "task.toml").write_text(
        '[verifier]\ntimeout_sec = 60.0\n[environment]\nworkdir = "/app"\n'
        f'network_mode = "no-network"\nmemory_mb = {asked}\n'
    )
    job = {
        "job_name": "greedy", "jobs_dir": str(tmp_path / "jobs"), "n_attempts": 1, "quiet": True,
        "environment": {"import_path": "hf_skillfollow.harness._env:SandboxEnvironment"},
        "agents": [{"name": "nop"}], "datasets": [{"path": str(tmp_path / "tasks")}],
    }  # fmt: skip
    (tmp_path / "job.json").write_text(json.dumps(job))
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HARBOR_TELEMETRY": "0"}
    subprocess.run([str(harbor), "run", "-c", str(tmp_path / "job.json"), "-y"],
                   env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    (result,) = (tmp_path / "jobs" / "greedy").glob("greedy__*/result.json")
    data = json.loads(result.read_text())
    message = (data.get("exception_info") or {}).get("exception_message", "")
    assert message.startswith(f"{task / 'task.toml'}: [environment] memory_mb = {asked}: over")
    assert data.get("verifier_result") is None


def test_ray_init_does_not_see_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unit level: the folder `ray.init` runs in (which Ray puts first on every worker's path)
    is the toolkit's own, and the caller's folder is back afterwards, also on an error."""
    from hf_skillfollow.sweep._executors._ray import init_away_from_cwd

    monkeypatch.chdir(tmp_path)
    seen: list[str] = []

    def init(**kwargs: object) -> None:
        seen.append(os.getcwd())
        raise ConnectionError(str(kwargs))

    with pytest.raises(ConnectionError):
        init_away_from_cwd(init, address="127.0.0.1:1")
    assert Path(seen[0]) == TOOLKIT or Path(seen[0], "hf_skillfollow").is_dir()
    assert Path(os.getcwd()) == tmp_path


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.timeout(300)
def test_ray_workers_do_not_import_from_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real local Ray instance started through the executor's init, from a folder holding a
    planted package: a worker task cannot import it (Ray alone puts that folder first)."""
    ray = pytest.importorskip("ray")
    from hf_skillfollow.sweep._executors._ray import init_away_from_cwd

    marker = _plant(tmp_path, "planted_probe_pkg")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    init_away_from_cwd(ray.init, num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:

        @ray.remote
        def probe() -> str:
            import importlib.util

            return str(importlib.util.find_spec("planted_probe_pkg"))

        assert ray.get(probe.remote(), timeout=120) == "None"
    finally:
        ray.shutdown()
    assert not marker.exists()


@pytest.mark.harbor
def test_sandbox_cgroup_bounds_swap_too() -> None:
    """The trial's memory cgroup (v1, where the host lets root make one) limits memory and
    swap together where swap is accounted: a trial over memory_mb does not spill into swap."""
    cgroup = Path("/sys/fs/cgroup/memory")
    if not (cgroup / "memory.memsw.limit_in_bytes").exists() or os.geteuid() != 0:
        pytest.fail("needs root and a v1 memory cgroup with swap accounting (as the CI's host)")
    python = Path(__file__).resolve().parents[1] / ".venv-harbor" / "bin" / "python"
    script = (
        "from hf_skillfollow.harness._env import _make_cgroup\n"
        "path = _make_cgroup('pth-swap-probe', 64)\n"
        "try:\n"
        "    print((path / 'memory.limit_in_bytes').read_text().strip(),\n"
        "          (path / 'memory.memsw.limit_in_bytes').read_text().strip())\n"
        "finally:\n"
        "    path.rmdir()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(TOOLKIT)}
    done = subprocess.run(
        [str(python), "-P", "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [str(64 << 20)] * 2


def test_a_library_spawned_python_does_not_import_from_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The console entry point makes every Python started after it safe, a library's too: a
    multiprocessing spawn child (vLLM's engine on a GPU) started from a folder holding a
    `multiprocessing/` package does not run it (without it, the child's ``-c`` puts '' first)."""
    import multiprocessing

    from hf_skillfollow.cli import main

    # empty is unset to Python; setenv (not delenv of an absent name, which records nothing to
    # undo) puts the environment back after main() wrote "1" into it, so later tests' `python
    # -c` children keep the current folder on their path as before
    monkeypatch.setenv("PYTHONSAFEPATH", "")
    monkeypatch.setattr("sys.argv", ["hf-skillfollow", "--version"])
    with pytest.raises(SystemExit):
        main()
    marker = _plant(tmp_path, "multiprocessing")
    monkeypatch.chdir(tmp_path)
    child = multiprocessing.get_context("spawn").Process(target=os.getpid)
    child.start()
    child.join(60)
    assert not marker.exists()
    assert child.exitcode == 0

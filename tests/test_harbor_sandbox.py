"""The sandbox environment holds an untrusted task: its verifier tries to get out and fails.

Marker `harbor` (needs .ci/setup-harbor). The task's own `tests/test.sh` is the attacker: it
runs inside the trial's namespaces like any task file, tries to read and write the host,
reach the model endpoint on the host's loopback, gain privileges and read the init's memory,
and writes reward 1 only when every attempt failed (and lists those that worked).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from hf_skillfollow.cli import cli
from tests._harbor_double import TerminusModelDouble

pytestmark = [pytest.mark.harbor, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[1]
SKILLS = ROOT / "toolkit" / "hf_skillfollow" / "_data" / "harbor_tasks" / "skills"

ATTACKS = """#!/bin/bash
got=""
try() {{ if bash -c "$2" >/dev/null 2>&1; then got="$got $1"; fi; }}
try read-host-file "cat {canary}"
try write-host-file "echo owned > {target}"
try see-host-tree "ls /work/main || ls /root/.pyenv"
try read-shadow "cat /etc/shadow"
try write-usr "touch /usr/bin/owned"
try reach-host-loopback "python3 -c 'import socket; socket.create_connection((\\"127.0.0.1\\", {port}), timeout=3)'"
try mount-tmpfs "mount -t tmpfs none /mnt"
try read-init-memory "cat /proc/1/environ"
try raise-nproc "ulimit -u unlimited"
echo "worked:$got" > /logs/verifier/attacks.txt
if [ -z "$got" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""


def test_untrusted_verifier_stays_inside(tmp_path: Path, monkeypatch) -> None:
    harbor = Path(os.environ.get("SKILLFOLLOW_HARBOR", ROOT / ".venv-harbor" / "bin" / "harbor"))
    if not harbor.is_file():
        pytest.fail("Harbor is not installed: run .ci/setup-harbor (the harbor marker needs it)")
    monkeypatch.setenv("SKILLFOLLOW_HARBOR", str(harbor))
    monkeypatch.setenv("DOUBLE_API_KEY", "double-key")
    canary, target = tmp_path / "canary.txt", tmp_path / "escaped.txt"
    canary.write_text("host secret")
    canary.chmod(0o644)
    task = tmp_path / "tasks" / "hostile"
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "instruction.md").write_text("Nothing to do: the verifier is the test here.\n")
    (task / "task.toml").write_text(
        '[verifier]\ntimeout_sec = 120.0\nenvironment_mode = "shared"\n[agent]\ntimeout_sec = 120.0\n'
        '[environment]\nnetwork_mode = "no-network"\nworkdir = "/app"\n'
    )
    with TerminusModelDouble(tmp_path / "tasks") as model:
        port = model.url.split(":")[-1].split("/")[0]
        (task / "tests" / "test.sh").write_text(
            ATTACKS.format(canary=canary, target=target, port=port)
        )
        out = CliRunner().invoke(cli, [
            "run", "--harness", "harbor", "--model", "openai/double-model", "--base-url", model.url,
            "--api-key-env", "DOUBLE_API_KEY", "--tasks", str(tmp_path / "tasks"), "--skills", str(SKILLS),
            "-o", str(tmp_path / "runs"), "--no-report"])  # fmt: skip
        assert out.exit_code == 0, out.output
    results = sorted((tmp_path / "runs").glob("harbor-*/jobs/*/hostile__*/result.json"))
    assert len(results) == 2  # one trial per arm
    for result in results:
        attacks = (result.parent / "verifier" / "attacks.txt").read_text().strip()
        assert attacks == "worked:", attacks
        assert json.loads(result.read_text())["verifier_result"]["rewards"]["reward"] == 1.0
    assert canary.read_text() == "host secret" and not target.exists()
    assert not Path("/usr/bin/owned").exists()


RELAY_CHECKS = """#!/bin/bash
got=""
ok() {{ if bash -c "$2" >/dev/null 2>&1; then :; else got="$got $1"; fi; }}
no() {{ if bash -c "$2" >/dev/null 2>&1; then got="$got $1"; fi; }}
ok endpoint-through-relay "python3 -c 'import urllib.request; body = urllib.request.urlopen(\\"http://127.0.0.1:{port}/v1/models\\", timeout=10).read(); assert b\\"double-model\\" in body'"
no other-host-port "python3 -c 'import socket; socket.create_connection((\\"127.0.0.1\\", {other}), timeout=3)'"
ok preinstalled-tool-on-path "test \\"$(hello-tool)\\" = 'tool ok'"
no write-preinstalled "touch {tool}/owned"
echo "unexpected:$got" > /logs/verifier/relay.txt
if [ -z "$got" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""


def test_loopback_relay_and_read_only_paths(tmp_path: Path) -> None:
    """The environment's own options: only the allowed port of the host's loopback is reached
    from inside (at the same address), and a pre-installed tool is on PATH, read-only."""
    import socket
    import subprocess

    harbor = Path(os.environ.get("SKILLFOLLOW_HARBOR", ROOT / ".venv-harbor" / "bin" / "harbor"))
    if not harbor.is_file():
        pytest.fail("Harbor is not installed: run .ci/setup-harbor (the harbor marker needs it)")
    tool = tmp_path / "tool"
    tool.mkdir()
    (tool / "hello-tool").write_text("#!/bin/sh\necho 'tool ok'\n")
    (tool / "hello-tool").chmod(0o755)
    task = tmp_path / "tasks" / "relay"
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "instruction.md").write_text("Nothing to do.\n")
    (task / "task.toml").write_text(
        '[verifier]\ntimeout_sec = 120.0\nenvironment_mode = "shared"\n'
        '[environment]\nnetwork_mode = "no-network"\nworkdir = "/app"\n'
    )
    with TerminusModelDouble(tmp_path / "tasks") as model, socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = int(model.url.split(":")[-1].split("/")[0])
        checks = RELAY_CHECKS.format(port=port, other=other.getsockname()[1], tool=tool)
        (task / "tests" / "test.sh").write_text(checks)
        job = {
            "job_name": "relay", "jobs_dir": str(tmp_path / "jobs"), "n_attempts": 1, "quiet": True,
            "environment": {
                "import_path": "hf_skillfollow.harness._env:SandboxEnvironment",
                "kwargs": {"loopback_ports": [port], "read_only_paths": [str(tool)],
                           "path_prepend": [str(tool)]},
            },
            "agents": [{"name": "nop"}], "datasets": [{"path": str(tmp_path / "tasks")}],
        }  # fmt: skip
        (tmp_path / "job.json").write_text(json.dumps(job))
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HARBOR_TELEMETRY": "0"}
        done = subprocess.run([str(harbor), "run", "-c", str(tmp_path / "job.json"), "-y"],
                              env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (result,) = (tmp_path / "jobs" / "relay").glob("relay__*/result.json")
    assert (result.parent / "verifier" / "relay.txt").read_text().strip() == "unexpected:"
    assert json.loads(result.read_text())["verifier_result"]["rewards"]["reward"] == 1.0
    assert not (tool / "owned").exists()

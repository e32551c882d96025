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

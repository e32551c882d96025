"""`run --harness harbor --agent claude-code`: a third-party agent CLI, for real, in the sandbox.

Marker `harbor` (needs .ci/setup-harbor, which also installs Claude Code from the npm registry
into .venv-harbor-agents). Harbor's own claude-code agent runs the real `claude` binary inside
the trial (seen read-only there, so Harbor skips its download); Claude Code calls a scripted
Anthropic Messages endpoint (tests/_harbor_double.py) over the sandbox's loopback relay;
Harbor installs the pool where Claude Code looks for skills in the skill-enabled arm only;
activation is decided from Claude Code's own stream-json transcript. Expected rows written by
hand from CLAUDE_SCRIPTS.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

pq = pytest.importorskip("pyarrow.parquet")

from click.testing import CliRunner  # noqa: E402

from hf_skillfollow.cli import cli  # noqa: E402
from tests._harbor_double import ClaudeModelDouble  # noqa: E402

pytestmark = [pytest.mark.harbor, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "toolkit" / "hf_skillfollow" / "_data" / "harbor_tasks"
AGENTS = Path(os.environ.get("SKILLFOLLOW_HARBOR_AGENTS", ROOT / ".venv-harbor-agents"))


def test_claude_code_paired_run(tmp_path: Path, monkeypatch) -> None:
    harbor = Path(os.environ.get("SKILLFOLLOW_HARBOR", ROOT / ".venv-harbor" / "bin" / "harbor"))
    claude = AGENTS / "node_modules" / ".bin" / "claude"
    if not harbor.is_file() or not claude.exists():
        pytest.fail("Harbor or Claude Code is not installed: run .ci/setup-harbor")
    monkeypatch.setenv("SKILLFOLLOW_HARBOR", str(harbor))
    monkeypatch.setenv("DOUBLE_API_KEY", "double-key")
    tasks = tmp_path / "tasks"
    for name in ("sum-sales", "count-lines"):
        shutil.copytree(DATA / "tasks" / name, tasks / name)
    skills = ["house-slugs", "ledger-totals", "status-report"]
    with ClaudeModelDouble(tasks, skills) as model:
        out = CliRunner().invoke(cli, [
            "run", "--harness", "harbor", "--agent", "claude-code", "--model", "anthropic/claude-double",
            "--base-url", model.url, "--api-key-env", "DOUBLE_API_KEY", "--tasks", str(tasks),
            "--skills", str(DATA / "skills"), "--concurrency", "2", "-o", str(tmp_path / "runs"),
            "--env-option", f"read_only_paths={json.dumps([str(AGENTS)])}",
            "--env-option", f"path_prepend={json.dumps([str(claude.parent)])}", "--no-report",
        ])  # fmt: skip
        assert out.exit_code == 0, out.output
    assert set(model.requests) == {("sum-sales", "se"), ("sum-sales", "sd"),
                                   ("count-lines", "se"), ("count-lines", "sd")}  # fmt: skip
    rows = {}
    for run in (tmp_path / "runs").glob("run-harbor-*"):
        for row in pq.read_table(run / "transitions.parquet").to_pylist():
            rows[row["task_id"]] = row
    assert set(rows) == {"sum-sales", "count-lines"}
    s, c = rows["sum-sales"], rows["count-lines"]
    outcomes = (s["se_correct"], s["sd_correct"], c["se_correct"], c["sd_correct"])
    assert outcomes == (True, False, True, True), model.log  # every request, on a failure
    assert s["se_error"] is None and s["sd_error"] is None
    assert list(s["skills_returned"]) == ["ledger-totals"] and s["trigger_kind"] == "instructions"
    assert list(c["skills_returned"]) == [] and c["returned"] is False
    assert s["detector"] == c["detector"] == "claude-code"
    assert s["arm_integrity"] == c["arm_integrity"] == "ok"
    assert s["agent"].startswith("claude-code@2.1.332")

"""`tasks export-harbor` through Harbor: its own task loader and a Terminus run in the sandbox.

Marker `harbor` (needs .ci/setup-harbor). The default-suite checks of the export are in
tests/test_tasks_export.py; these read the exported tasks with Harbor's `Task` in
.venv-harbor and run one through `run --harness harbor` with the scripted model of
tests/_harbor_double.py, whose keystrokes (and so the rewards) are written here by hand.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from hf_skillfollow.cli import cli
from hf_skillfollow.harness._export import export_harbor
from tests.test_tasks_export import OWN_TASKS, ROOT, _hostile_rows, _jsonl

pytestmark = [pytest.mark.harbor]

_LOAD = """
import json, sys
from harbor.models.task.task import Task
out = []
for d in sys.argv[1:]:
    t = Task(d)
    out.append({"name": t.name, "instruction": t.instruction, "meta": t.config.metadata,
                "workdir": t.config.environment.workdir, "valid": Task.is_valid_dir(d),
                "network": t.config.environment.network_mode.value,
                "test": str(t.paths.discovered_test_path_for(t.config.environment.os))})
print(json.dumps(out))
"""


def _harbor() -> Path:
    harbor = Path(os.environ.get("SKILLFOLLOW_HARBOR", ROOT / ".venv-harbor" / "bin" / "harbor"))
    if not harbor.is_file():
        pytest.fail("Harbor is not installed: run .ci/setup-harbor (the harbor marker needs it)")
    return harbor


def test_harbor_loads_the_exported_tasks(tmp_path: Path) -> None:
    out = tmp_path / "harbor"
    export_harbor(OWN_TASKS, out)
    written = export_harbor(_jsonl(tmp_path / "h.jsonl", _hostile_rows()), out).written
    folders = sorted(out.iterdir())
    proc = subprocess.run(
        [str(_harbor().parent / "python"), "-c", _LOAD, *map(str, folders)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    loaded = {row["name"]: row for row in json.loads(proc.stdout)}
    assert sorted(loaded) == sorted(p.name for p in folders)
    ids = {folder.name: task_id for task_id, folder in written.items()}
    ids.update(add="add", square="square")
    for folder in folders:
        row = loaded[folder.name]
        assert row["valid"] is True
        assert row["meta"]["hf_skillfollow_task_id"] == ids[folder.name]
        assert row["instruction"] == (folder / "instruction.md").read_text(encoding="utf-8")
        assert row["workdir"] == "/app" and row["network"] == "no-network"
        assert row["test"] == str(folder.resolve() / "tests" / "test.sh")


@pytest.mark.timeout(900)
def test_exported_task_runs_through_harbor_in_the_sandbox(tmp_path: Path, monkeypatch) -> None:
    """Real Harbor, real Terminus-2 in the sandbox environment, the scripted model of
    tests/_harbor_double.py typing a correct solution in the skill-enabled arm and a wrong one
    in the other for `add`, a correct one in both for `square`: the exported verifier (its
    fixed test.sh at Harbor's /tests) gives the rewards written here by hand."""
    import tests._harbor_double as double

    monkeypatch.setenv("SKILLFOLLOW_HARBOR", str(_harbor()))
    monkeypatch.setenv("DOUBLE_API_KEY", "double-key")
    out = tmp_path / "tasks"
    export_harbor(OWN_TASKS, out)
    write = "printf 'def {name}(a, b=None):\\n    return {body}\\n' > /app/solution.py\n"
    now = double.IMMEDIATE  # printf into a file
    scripts = {
        ("add", "se"): [[(write.format(name="add", body="a + b"), now)]],
        ("add", "sd"): [[(write.format(name="add", body="a - b"), now)]],
        ("square", "se"): [[(write.format(name="square", body="a * a"), now)]],
        ("square", "sd"): [[(write.format(name="square", body="a ** 2"), now)]],
    }
    for key, script in scripts.items():
        monkeypatch.setitem(double.SCRIPTS, key, script)
    skills = ROOT / "toolkit" / "hf_skillfollow" / "_data" / "harbor_tasks" / "skills"
    with double.TerminusModelDouble(out) as model:
        result = CliRunner().invoke(cli, [
            "run", "--harness", "harbor", "--model", "openai/double-model",
            "--base-url", model.url, "--api-key-env", "DOUBLE_API_KEY", "--tasks", str(out),
            "--skills", str(skills), "--trials", "1", "-o", str(tmp_path / "runs"),
            "--no-report"])  # fmt: skip
        assert result.exit_code == 0, result.output
        assert model.unknown == 0
    rewards = {}
    for path in (tmp_path / "runs").glob("harbor-*/jobs/*/*__*/result.json"):
        # one job runs both arms: a trial's arm is whether its recorded agent had the skills
        agent = json.loads((path.parent / "config.json").read_text())["agent"]
        arm, task = "se" if agent["skills"] else "sd", path.parent.name.split("__")[0]
        rewards[(task, arm)] = json.loads(path.read_text())["verifier_result"]["rewards"]
        verdicts = json.loads((path.parent / "verifier" / "asserts.json").read_text())
        assert len(verdicts) == {"add": 3, "square": 2}[task]
    assert rewards == {("add", "se"): {"reward": 1.0}, ("add", "sd"): {"reward": 0.0},
                       ("square", "se"): {"reward": 1.0}, ("square", "sd"): {"reward": 1.0}}  # fmt: skip

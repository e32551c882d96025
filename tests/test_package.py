"""Packaging and import weight: the public surface stays light and the wheel carries its data."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEAVY = [
    "pandas",
    "pyarrow",
    "datasets",
    "gradio",
    "torch",
    "vllm",
    "jnius",
    "openai",
    "evalplus",
    "llama_cpp",
    "scipy",
]


def _loaded_after(code: str) -> list[str]:
    probe = f"{code}\nimport sys, json\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    return [m for m in json.loads(out.splitlines()[-1]) if m in HEAVY]


def test_import_package_and_cli_group_load_nothing_heavy() -> None:
    assert _loaded_after("import hf_skillfollow, hf_skillfollow.cli") == []


def test_validating_a_config_imports_no_backend_or_retriever() -> None:
    probe = "from hf_skillfollow.config import RunConfig\nRunConfig(backend='vllm', retriever='pyserini')"
    assert _loaded_after(probe) == []


def test_cli_help_lists_commands_without_importing_them() -> None:
    probe = "from click.testing import CliRunner\nfrom hf_skillfollow.cli import cli\nr = CliRunner().invoke(cli, ['--help'])\nassert r.exit_code == 0, r.output\nassert all(c in r.output for c in ('run', 'score', 'report', 'skills', 'push', 'leaderboard'))"
    assert _loaded_after(probe) == []


def test_loading_code_tasks_leaves_datasets_unloaded_and_evalplus_whole(
    data_dir: Path, tmp_path: Path
) -> None:
    """EvalPlus's data package imports `datasets` (~2 s) for its EvalPerf loader only: loading
    MBPP+ or HumanEval+ tasks must not pay it, and that loader must still reach the real library."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"x": 1}\n{"x": 2}\n')
    probe = (
        "from hf_skillfollow.tasks import load_tasks\n"
        f"tasks, _ = load_tasks('mbppplus', {str(data_dir / 'mbppplus-v0.1.0.jsonl')!r})\n"
        "assert len(tasks) == 399\n"
        f"tasks, _ = load_tasks('humanevalplus', {str(data_dir / 'HumanEvalPlus-v0.1.10.jsonl.gz')!r})\n"
        "assert len(tasks) == 164\n"
        "import sys\n"
        "print('datasets loaded:', 'datasets' in sys.modules)\n"
        "import evalplus.data\n"
        f"ds = evalplus.data.load_dataset('json', data_files={str(rows)!r}, split='train',"
        f" cache_dir={str(tmp_path / 'cache')!r})\n"
        "import datasets\n"
        "assert isinstance(ds, datasets.Dataset) and ds['x'] == [1, 2], ds\n"
        "assert sys.modules['datasets'].__file__.endswith('datasets/__init__.py')\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "datasets loaded: False" in out.stdout


def test_lazy_public_names_resolve() -> None:
    import hf_skillfollow

    for name in hf_skillfollow.__all__:
        assert getattr(hf_skillfollow, name) is not None, name


def test_wheel_ships_skill_pools_and_card_templates(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO)],
        check=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("hf_skillfollow-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    skill_files = [n for n in names if n.endswith("/SKILL.md")]
    # the example pool of `run --harness harbor` ships beside its tasks (docs/harness.md)
    examples = {Path(n).parent.name for n in skill_files if "/_data/harbor_tasks/" in n}
    shipped = {Path(n).parent.name for n in skill_files if "/_data/harbor_tasks/" not in n}
    on_disk = {p.parent.name for p in (REPO / "skills").glob("*/*/SKILL.md")}
    assert shipped == on_disk and len(on_disk) == 17
    assert examples == {"house-slugs", "ledger-totals", "status-report"}
    assert any(n.endswith("harbor_tasks/tasks/sum-sales/tests/test.sh") for n in names)
    assert any(n.endswith("dataset_cards/results_card.md.j2") for n in names)

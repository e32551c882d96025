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
    shipped = {Path(n).parent.name for n in names if n.endswith("/SKILL.md")}
    on_disk = {p.parent.name for p in (REPO / "skills").glob("*/*/SKILL.md")}
    assert shipped == on_disk and len(on_disk) == 17
    assert any(n.endswith("dataset_cards/results_card.md.j2") for n in names)

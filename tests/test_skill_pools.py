"""The shipped skill pools (docs/design.md, "Skills") are well-formed and their code actually runs.

Convention for every SKILL.md in ``skills/coding`` and ``skills/math``: concatenating
all ```` ```python ```` fenced blocks of the file, in order, yields one program that
exits with status 0. For coding skills that program is the skill's code followed by
its self-tests (asserts); for math skills it is a sympy script that re-derives each
worked example's answer independently. These tests parse the files directly with
yaml so they do not depend on the package's own skill loader.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

SKILLS_ROOT = Path(__file__).parents[1] / "skills"

EXPECTED = {
    "coding": {
        "binary-search-boundary",
        "counting-hash",
        "dfs-iterative",
        "edge-case-guard",
        "knapsack-01-dp",
        "prefix-sum",
        "rotate-left",
        "sliding-window-longest",
        "two-pointer-pair-sum",
    },
    "math": {
        "algebraic-substitution",
        "case-analysis",
        "check-by-substitution",
        "coordinate-distance",
        "factor-then-solve",
        "modular-arithmetic",
        "sequence-formulae",
        "systematic-enumeration",
    },
}
TYPES = {"utility", "procedure", "guard"}
REQUIRED_KEYS = {"name", "description", "signature", "type"}
ALLOWED_KEYS = REQUIRED_KEYS | {"tags"}
BANNED_WORDS = ("todo", "lorem", "placeholder")
RUN_TIMEOUT_S = 60

_PY_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_ANY_BLOCK = re.compile(r"^```.*?^```[ \t]*$", re.MULTILINE | re.DOTALL)
_HEADING = re.compile(r"^## +(.+?)\s*$", re.MULTILINE)

ALL_SKILLS = [(pool, name) for pool in sorted(EXPECTED) for name in sorted(EXPECTED[pool])]
_IDS = [f"{pool}/{name}" for pool, name in ALL_SKILLS]


def _split(path: Path) -> tuple[dict, str]:
    """Front matter (parsed) and body of a SKILL.md; asserts name the file on failure."""
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), f"{path}: no front matter opening '---'"
    end = text.find("\n---\n", 4)
    assert end != -1, f"{path}: no front matter closing '---'"
    meta = yaml.safe_load(text[4:end])
    assert isinstance(meta, dict), f"{path}: front matter is not a mapping"
    return meta, text[end + len("\n---\n") :]


def _python_program(path: Path) -> str:
    return "\n".join(_PY_BLOCK.findall(path.read_text(encoding="utf-8")))


def _headings(body: str) -> list[str]:
    # headings inside fenced code are not sections
    return _HEADING.findall(_ANY_BLOCK.sub("", body))


def _section(body: str, title: str) -> str:
    """Text of the '## title' section up to the next '## ' heading."""
    match = re.search(rf"^## +{re.escape(title)}\s*$(.*?)(?=^## |\Z)", body, re.M | re.S)
    assert match, f"missing section '## {title}'"
    return match.group(1)


def _run_program(skill_md: Path, workdir: Path) -> subprocess.CompletedProcess[str]:
    program = _python_program(skill_md)
    assert program.strip(), f"{skill_md}: no ```python blocks"
    script = workdir / "skill_program.py"
    script.write_text(program, encoding="utf-8")
    # -I: a fresh, isolated interpreter, independent of the test process's sys.path
    return subprocess.run(
        [sys.executable, "-I", str(script)],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )


def _skill_path(pool: str, name: str) -> Path:
    return SKILLS_ROOT / pool / name / "SKILL.md"


@pytest.mark.parametrize("pool", sorted(EXPECTED))
def test_pool_has_exactly_the_expected_skills(pool: str) -> None:
    folders = {p.name for p in (SKILLS_ROOT / pool).iterdir() if p.is_dir()}
    assert folders == EXPECTED[pool]
    assert all((SKILLS_ROOT / pool / n / "SKILL.md").is_file() for n in folders)


def test_pool_sizes() -> None:
    assert len(EXPECTED["coding"]) == 9 and len(EXPECTED["math"]) == 8


@pytest.mark.parametrize(("pool", "name"), ALL_SKILLS, ids=_IDS)
def test_front_matter(pool: str, name: str) -> None:
    path = _skill_path(pool, name)
    meta, _ = _split(path)
    assert set(meta) >= REQUIRED_KEYS, f"{path}: missing {REQUIRED_KEYS - set(meta)}"
    assert set(meta) <= ALLOWED_KEYS, f"{path}: unknown keys {set(meta) - ALLOWED_KEYS}"
    assert meta["name"] == name, f"{path}: name {meta['name']!r} != folder {name!r}"
    assert meta["type"] in TYPES, f"{path}: type {meta['type']!r}"
    for key in ("description", "signature"):
        assert isinstance(meta[key], str) and meta[key].strip(), f"{path}: empty {key}"
    # one or two sentences: long enough to carry query words, short enough to be a summary
    assert 60 <= len(meta["description"]) <= 400, f"{path}: description length"
    tags = meta.get("tags", [])
    assert isinstance(tags, list) and all(isinstance(t, str) and t for t in tags), path


@pytest.mark.parametrize(("pool", "name"), ALL_SKILLS, ids=_IDS)
def test_body_sections_and_content(pool: str, name: str) -> None:
    path = _skill_path(pool, name)
    _, body = _split(path)
    heads = _headings(body)
    assert "When to apply" in heads, f"{path}: {heads}"
    assert "Procedure" in heads or "Code" in heads, f"{path}: {heads}"
    assert "Invariants" in heads and "Self-tests" in heads, f"{path}: {heads}"
    assert heads.index("When to apply") < heads.index("Invariants") < heads.index("Self-tests")
    assert 40 <= len(body.splitlines()) <= 160, f"{path}: body length"
    lowered = body.lower()
    assert not [w for w in BANNED_WORDS if w in lowered], f"{path}: filler text"
    self_tests = _section(body, "Self-tests")
    blocks = _PY_BLOCK.findall(self_tests)
    assert len(blocks) == 1, f"{path}: Self-tests must hold one ```python block"
    assert "assert" in blocks[0], f"{path}: Self-tests assert nothing"


@pytest.mark.parametrize("name", sorted(EXPECTED["coding"]))
def test_coding_skill_ships_code_before_its_tests(name: str) -> None:
    path = _skill_path("coding", name)
    _, body = _split(path)
    code = _PY_BLOCK.findall(_section(body, "Code"))
    assert code and all("def " in block for block in code), f"{path}: no function in ## Code"


@pytest.mark.parametrize("name", sorted(EXPECTED["math"]))
def test_math_skill_has_worked_examples_checked_by_sympy(name: str) -> None:
    path = _skill_path("math", name)
    _, body = _split(path)
    examples = re.findall(r"^\*\*Example (\d+)\.\*\*", body, re.M)
    assert 2 <= len(examples) <= 4, f"{path}: {len(examples)} worked examples"
    assert examples == [str(i) for i in range(1, len(examples) + 1)], path
    checks = _PY_BLOCK.findall(_section(body, "Self-tests"))[0]
    assert re.search(r"^import sympy|^from sympy", checks, re.M), f"{path}: no sympy"
    for i in range(1, len(examples) + 1):
        assert f"Example {i}" in checks, f"{path}: Example {i} is not checked"


@pytest.mark.parametrize(("pool", "name"), ALL_SKILLS, ids=_IDS)
def test_skill_program_runs(pool: str, name: str, tmp_path: Path) -> None:
    result = _run_program(_skill_path(pool, name), tmp_path)
    assert result.returncode == 0, f"{pool}/{name} exited {result.returncode}:\n{result.stderr}"


def test_runner_detects_a_failing_self_test(tmp_path: Path) -> None:
    """A copy of a real skill with a false assertion appended must fail the runner."""
    broken_dir = tmp_path / "prefix-sum"
    broken_dir.mkdir()
    original = _skill_path("coding", "prefix-sum").read_text(encoding="utf-8")
    broken = broken_dir / "SKILL.md"
    broken.write_text(original + "\n```python\nassert False, 'deliberately broken'\n```\n")
    result = _run_program(broken, tmp_path)
    assert result.returncode != 0
    assert "deliberately broken" in result.stderr


def test_runner_detects_a_wrong_worked_answer(tmp_path: Path) -> None:
    """Changing a worked example's checked answer (23 -> 24) must fail the math run."""
    original = _skill_path("math", "modular-arithmetic").read_text(encoding="utf-8")
    tampered = original.replace(
        "(int(r), int(mod)) == (23, 105)", "(int(r), int(mod)) == (24, 105)"
    )
    assert tampered != original
    path = tmp_path / "SKILL.md"
    path.write_text(tampered, encoding="utf-8")
    result = _run_program(path, tmp_path)
    assert result.returncode != 0 and "AssertionError" in result.stderr

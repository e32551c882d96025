"""Hostile skill libraries, second round (docs/skills.md, "Hostile input").

Each test builds one attack a skill author or library publisher can mount and checks the bound
the docs promise; each failed on the code before its mend.
"""

from __future__ import annotations

import time
from pathlib import Path

from hf_skillfollow.skills import load_pool, validate_pool


def _skill(root: Path, name: str, front: str = "", body: str = "Body.\n") -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    text = f"---\nname: {name}\ndescription: Does {name}.\n{front}---\n{body}"
    (folder / "SKILL.md").write_text(text, encoding="utf-8")
    return folder


def test_a_long_run_of_blanks_in_malformed_front_matter_is_read_in_linear_time(
    tmp_path: Path,
) -> None:
    """The unquoted-colon fallback scanned each line with a lazy `.*?` before `[ \\t]*$`: a value
    holding 60,000 spaces cost ~15 s (quadratic) per SKILL.md, 1,000 skills a pool."""
    folder = tmp_path / "slow"
    folder.mkdir()
    front = "name: slow\ndescription: a" + " " * 60_000 + "b\nbad: [\n"
    (folder / "SKILL.md").write_text(f"---\n{front}---\nBody.\n", encoding="utf-8")
    start = time.perf_counter()
    report = validate_pool(tmp_path)
    elapsed = time.perf_counter() - start
    assert [f.field for f in report.errors] == ["front matter"]
    assert "malformed YAML" in report.errors[0].message
    assert elapsed < 3, f"{elapsed:.1f} s for one 60 KB front-matter block"


def test_the_colon_fallback_still_strips_trailing_blanks(tmp_path: Path) -> None:
    _skill(tmp_path, "colon")
    path = tmp_path / "colon" / "SKILL.md"
    path.write_text(
        "---\nname: colon\ndescription: Use when: asked \t \nbad: x\n---\nBody.\n", encoding="utf-8"
    )
    pool = load_pool(tmp_path)
    assert pool.get("colon").description == "Use when: asked"

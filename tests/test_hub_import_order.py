"""hub/_numbers imports hub/_summary, never the other way round (the circle issue 20 broke:
`_numbers` needed `ListedCell`, `_summary` needed `cell_display_key`)."""

from __future__ import annotations

import ast
from pathlib import Path

HUB = Path(__file__).resolve().parents[1] / "toolkit" / "hf_skillfollow" / "hub"


def _imported(module: str) -> set[str]:
    tree = ast.parse((HUB / f"{module}.py").read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):  # lazy imports inside functions and TYPE_CHECKING blocks too
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_summary_does_not_import_numbers_and_numbers_imports_summary() -> None:
    assert "hf_skillfollow.hub._numbers" not in _imported("_summary")
    assert "hf_skillfollow.hub._summary" in _imported("_numbers")


def test_the_card_key_is_the_same_function_in_both() -> None:
    from hf_skillfollow.hub import _numbers, _summary

    assert _numbers.cell_display_key is _summary.cell_display_key
    assert _numbers.ListedCell is _summary.ListedCell

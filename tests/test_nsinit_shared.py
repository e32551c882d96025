"""`harness/_nsinit`, a sandbox's init, shares the scorer's confinement helpers.

It runs in Harbor's interpreter (`python -m hf_skillfollow.harness._nsinit`), which has the
package but not the toolkit's dependencies: what it imports must be the standard library and
the package. Within that, the libc calls and the mount and namespace flags are the ones
`scoring._confine` and `scoring._namespaces` define, not a second copy of them.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from hf_skillfollow.scoring import _confine, _namespaces

NSINIT = Path(__file__).resolve().parents[1] / "toolkit/hf_skillfollow/harness/_nsinit.py"


def _module_names(tree: ast.Module) -> set[str]:
    """The names `tree` binds at module level by assignment or `def`."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            names.add(node.name)
        for target in node.targets if isinstance(node, ast.Assign) else []:
            elements = target.elts if isinstance(target, ast.Tuple) else [target]
            names.update(e.id for e in elements if isinstance(e, ast.Name))
    return names


def test_nsinit_restates_none_of_the_scorers_confinement_helpers() -> None:
    shared = {n for m in (_confine, _namespaces) for n in vars(m) if not n.startswith("_")}
    source = NSINIT.read_text()
    restated = {n for n in _module_names(ast.parse(source)) if n.lstrip("_") in shared}
    assert restated == set()
    assert "CDLL" not in source  # one handle on the C library: `_confine.libc()`


def test_nsinit_imports_the_standard_library_and_the_package_only() -> None:
    code = (
        "import sys; before = set(sys.modules); import hf_skillfollow.harness._nsinit; "
        "new = {m.split('.')[0] for m in set(sys.modules) - before}; "
        "print(sorted(new - set(sys.stdlib_module_names)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["['hf_skillfollow']"]

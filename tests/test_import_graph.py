"""No import circles in the toolkit (issue 40; docs/design.md, "Code layout").

The graph is built statically from the source with `ast`, not by importing: an edge A -> B for
every `import`/`from ... import` of an `hf_skillfollow` module that A's source holds, at module
level *or inside a function* (a deferred import still makes the two modules depend on each
other; it only hides the circle until the function runs). Imports under `if TYPE_CHECKING:`
are left out: they never run and exist only for annotations. `from P import n` points at the
module `P.n` when there is one, else at `P`. A package's `__init__` is not implied by importing
one of its submodules: the rule is about the modules a maintainer writes, not Python's loading.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "hf_skillfollow"
ROOT = Path(__file__).resolve().parents[1] / "toolkit" / PACKAGE


def _module_name(path: Path, root: Path, package: str) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def _type_checking_block(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    name = test.attr if isinstance(test, ast.Attribute) else getattr(test, "id", None)
    return name == "TYPE_CHECKING"


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of `tree` outside `if TYPE_CHECKING:` blocks, at any depth."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if _type_checking_block(node):
            stack.extend(node.orelse)  # type: ignore[attr-defined]
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def import_graph(root: Path = ROOT, package: str = PACKAGE) -> dict[str, set[str]]:
    """module -> the package's modules it imports (see the module docstring)."""
    files = {_module_name(p, root, package): p for p in sorted(root.rglob("*.py")) if p.is_file()}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    base = name.split(".")[: len(name.split(".")) - node.level + is_package]
                    module = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    module = node.module or ""
                targets = [
                    f"{module}.{alias.name}" if f"{module}.{alias.name}" in files else module
                    for alias in node.names
                ]
            graph[name].update(t for t in targets if t in files and t != name)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def test_no_import_circle_in_the_toolkit() -> None:
    found = circles(import_graph())
    assert not found, "import circles (each a set of modules importing one another):\n" + "\n".join(
        " <-> ".join(c) for c in found
    )


def test_the_graph_sees_a_deferred_import_and_skips_type_checking(tmp_path: Path) -> None:
    # a circle closed only by an import inside a function is a circle; one closed only under
    # TYPE_CHECKING is not (the checker itself must be able to fail)
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.b import x\n")
    (pkg / "b.py").write_text("x = 1\ndef f():\n    from . import a\n")
    (pkg / "c.py").write_text("import pkg.d\n")
    (pkg / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.c import y\n"
    )
    graph = import_graph(pkg, "pkg")
    assert graph["pkg.b"] == {"pkg.a"} and graph["pkg.d"] == set()
    assert circles(graph) == [["pkg.a", "pkg.b"]]

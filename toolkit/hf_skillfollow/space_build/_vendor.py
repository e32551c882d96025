"""Copy the part of the toolkit the board imports into a Space folder.

The Space build installs `requirements.txt` before the repository is copied in, so the
toolkit cannot come from a local wheel listed there, and it is not on PyPI. It travels as
source instead: every `hf_skillfollow` module reachable from `hf_skillfollow.space_app` by
an import statement (lazy imports inside functions included) or a package's lazy re-export
table, found by reading the syntax tree, never by importing anything.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

PACKAGE = "hf_skillfollow"
ROOTS = (f"{PACKAGE}.space_app",)


def package_dir() -> Path:
    return Path(__file__).resolve().parent.parent


def board_modules(root: Path | None = None) -> dict[str, Path]:
    """Module name -> source file of everything the board can import, parents included."""
    base = (root or package_dir()).parent
    found: dict[str, Path] = {}
    todo = list(ROOTS) + [f"{r}.{p.stem}" for r in ROOTS for p in _files_of(base, r)]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        path = _source(base, name)
        if path is None:
            continue  # an attribute imported from a module, not a module itself
        found[name] = path
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        todo += _imports(path, name)
    return found


def vendor(dest: Path, root: Path | None = None) -> list[str]:
    """Copy the board's modules to `dest/hf_skillfollow/`; returns their relative paths."""
    src = root or package_dir()
    target = dest / PACKAGE
    if target.exists():
        shutil.rmtree(target)
    written = []
    for path in sorted(board_modules(src).values()):
        rel = path.relative_to(src.parent)
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, out)
        written.append(rel.as_posix())
    return written


def _files_of(base: Path, package: str) -> list[Path]:
    folder = base.joinpath(*package.split("."))
    return sorted(p for p in folder.glob("*.py") if p.stem != "__init__")


def _source(base: Path, name: str) -> Path | None:
    rel = base.joinpath(*name.split("."))
    if (rel / "__init__.py").is_file():
        return rel / "__init__.py"
    if rel.with_suffix(".py").is_file():
        return rel.with_suffix(".py")
    return None


def _imports(path: Path, module: str) -> list[str]:
    """Toolkit modules named by the import statements of `path` (relative ones resolved)."""
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names if _ours(a.name)]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if _ours(base):
                out.append(base)
                out += [f"{base}.{a.name}" for a in node.names]
        elif is_package and isinstance(node, ast.Constant) and _ours(node.value):
            # A package's lazy re-exports: "hf_skillfollow.x" or "hf_skillfollow.x:attr".
            # (Plugin registries elsewhere name backends and retrievers the board never opens.)
            out.append(node.value.partition(":")[0])
    return out


def _ours(name: object) -> bool:
    return isinstance(name, str) and (name == PACKAGE or name.startswith(PACKAGE + "."))

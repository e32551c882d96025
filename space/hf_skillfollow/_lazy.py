"""Name -> "module:attr" tables whose targets are imported only when first used.

Backends, retrievers, CLI subcommands and the packages' public names are all such tables: the
names are known (and validated, listed, shown in help) without importing what they point to,
which may pull in openai, vLLM, a JVM or gradio.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from importlib import import_module
from typing import Any


class LazyRegistry(Mapping[str, Any]):
    """A read-only mapping of names to "module:attr" targets, each imported on first lookup.

    Membership, iteration and `len` never import anything; `registry[name]` imports and
    caches the target; `resolve(name)` does the same but names the known choices on a miss.
    """

    def __init__(self, kind: str, targets: Mapping[str, str]) -> None:
        for name, target in targets.items():
            if target.count(":") != 1:
                raise ValueError(f"{kind} {name!r}: target {target!r} is not 'module:attr'")
        self.kind = kind
        self._targets = dict(targets)
        self._resolved: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._resolved:
            module, attr = self._targets[name].split(":")
            self._resolved[name] = getattr(import_module(module), attr)
        return self._resolved[name]

    def __contains__(self, name: object) -> bool:
        return name in self._targets

    def __iter__(self) -> Iterator[str]:
        return iter(self._targets)

    def __len__(self) -> int:
        return len(self._targets)

    def target(self, name: str) -> str:
        """The "module:attr" of `name`, without importing it."""
        return self._targets[name]

    def check(self, name: str) -> str:
        """`name` itself if known (nothing is imported); else a ValueError listing the choices."""
        if name not in self._targets:
            raise ValueError(f"unknown {self.kind} {name!r}; choose one of {sorted(self)}")
        return name

    def resolve(self, name: str) -> Any:
        """The object named `name`; an unknown name is a ValueError listing the choices."""
        return self[self.check(name)]


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package` that imports each public name from its module on use.

    `exports` maps a public name to the module defining it under the same name.
    """
    registry = LazyRegistry(
        f"name of {package}", {name: f"{module}:{name}" for name, module in exports.items()}
    )

    def __getattr__(name: str) -> Any:
        if name not in registry:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return registry[name]

    return __getattr__

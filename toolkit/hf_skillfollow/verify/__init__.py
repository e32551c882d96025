"""Re-score what others published: re-extract each SE/SD answer from the traces, score it with
the recorded scorer and benchmark release, and compare with the published bits (docs/verify.md).

Submodules import pyarrow and the scorers, so this package only re-exports lazily.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS: dict[str, str] = {
    "read_rows": "hf_skillfollow.verify._inputs",
    "resolve": "hf_skillfollow.verify._releases",
    "run_verification": "hf_skillfollow.verify._core",
    "Verification": "hf_skillfollow.verify._core",
    "VerifyState": "hf_skillfollow.verify._state",
    "render": "hf_skillfollow.verify._render",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hf_skillfollow.verify' has no attribute {name!r}")
    return getattr(import_module(module), name)

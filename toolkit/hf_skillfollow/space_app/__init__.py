"""The leaderboard app shared by the Hugging Face Space (`space/app.py`) and `hf-skillfollow leaderboard`.

Every number it shows is recomputed at load from `transitions` rows with
`hf_skillfollow.metrics.compute_cells`; nothing pre-aggregated is read. Submodules import
gradio, pandas and pyarrow, so this package only re-exports lazily.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS: dict[str, str] = {
    "build_app": "hf_skillfollow.space_app._ui",
    "load_board": "hf_skillfollow.space_app._board",
    "Board": "hf_skillfollow.space_app._board",
    "resolve_sources": "hf_skillfollow.space_app._sources",
    "launch": "hf_skillfollow.space_app._launch",
    "DEFAULT_RESAMPLES": "hf_skillfollow.space_app._board",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hf_skillfollow.space_app' has no attribute {name!r}")
    return getattr(import_module(module), name)

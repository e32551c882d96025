"""The leaderboard app shared by the Hugging Face Space (`space/app.py`) and `hf-skillfollow leaderboard`.

Every number it shows is computed from `transitions` rows with
`hf_skillfollow.metrics.compute_cells`; nothing pre-aggregated is read. What it computed is
cached keyed by the sources' revisions (`_cache`), so an unchanged start reads no rows. Submodules import
gradio, pandas and pyarrow, so this package only re-exports lazily.
"""

from __future__ import annotations

from hf_skillfollow._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "build_app": "hf_skillfollow.space_app._ui",
    "load_board": "hf_skillfollow.space_app._board",
    "Board": "hf_skillfollow.space_app._board",
    "resolve_sources": "hf_skillfollow.space_app._sources",
    "launch": "hf_skillfollow.space_app._launch",
    "DEFAULT_RESAMPLES": "hf_skillfollow.space_app._board",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)

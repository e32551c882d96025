"""Locations of the data shipped inside the wheel (skill pools, card templates)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def _data_root() -> Path:
    return Path(str(files("hf_skillfollow") / "_data"))


def skills_root() -> Path:
    """Folder holding the shipped pools (`coding/`, `math/`)."""
    return _data_root() / "skills"


def dataset_cards_root() -> Path:
    """Folder holding the dataset-card templates."""
    return _data_root() / "dataset_cards"


def shipped_pool(name: str) -> Path:
    """Path of a shipped pool by name (`coding` or `math`)."""
    path = skills_root() / name
    if not path.is_dir():
        known = sorted(p.name for p in skills_root().iterdir() if p.is_dir())
        raise FileNotFoundError(f"no shipped skill pool named {name!r}; shipped pools: {known}")
    return path

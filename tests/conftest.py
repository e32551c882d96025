"""Shared test set-up: where the real benchmark data lives.

The data files are public benchmark releases kept outside the repository (../shared/data);
tests use them by path. SKILLFOLLOW_DATA_DIR overrides the location. A test that needs them
fails with a clear message when they are missing: it is never skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


DATA_DIR = Path(os.environ.get("SKILLFOLLOW_DATA_DIR") or REPO.parent / "shared" / "data")
os.environ.setdefault("SKILLFOLLOW_DATA_DIR", str(DATA_DIR))
os.environ.setdefault("SKILLFOLLOW_MBPP_FILE", str(DATA_DIR / "mbppplus-v0.1.0.jsonl"))
os.environ.setdefault("SKILLFOLLOW_MATH500_FILE", str(DATA_DIR / "math500.jsonl"))


@pytest.fixture(scope="session", autouse=True)
def _board_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The leaderboard's start-up cache (space_app/_cache.py) of every test, and of every app
    process a test starts, in a temp folder instead of the user's ~/.cache."""
    os.environ["SKILLFOLLOW_BOARD_CACHE"] = str(tmp_path_factory.mktemp("board-cache"))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not (DATA_DIR / "mbppplus-v0.1.0.jsonl").is_file():
        pytest.fail(
            f"benchmark data not found: {DATA_DIR / 'mbppplus-v0.1.0.jsonl'} is missing; set "
            "SKILLFOLLOW_DATA_DIR to the folder holding the shared benchmark files "
            "(default: ../shared/data beside the repository)"
        )
    return DATA_DIR


@pytest.fixture(scope="module")
def private_score_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh expected-output cache for one test module, so scoring tests neither share
    nor pollute the user's cache."""
    cache = tmp_path_factory.mktemp("expected-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SKILLFOLLOW_CACHE_DIR", str(cache))
        yield cache

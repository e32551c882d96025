"""Shared test set-up: where the real benchmark data lives.

The data files are public benchmark releases kept outside the repository: SKILLFOLLOW_DATA_DIR,
else ../shared/data, else a cache that the first test needing them fills through the real
loaders, each file checked against a pinned sha256 (tests/_data.py). A test that needs them
fails with one clear line when they are missing and cannot be fetched: it is never skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import _data

REPO = Path(__file__).resolve().parents[1]


DATA_DIR, _FETCHABLE = _data.locate()
os.environ.setdefault("SKILLFOLLOW_DATA_DIR", str(DATA_DIR))
os.environ.setdefault("SKILLFOLLOW_MBPP_FILE", str(DATA_DIR / "mbppplus-v0.1.0.jsonl"))
os.environ.setdefault("SKILLFOLLOW_MATH500_FILE", str(DATA_DIR / "math500.jsonl"))


@pytest.fixture(scope="session", autouse=True)
def _board_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The leaderboard's start-up cache (space_app/_cache.py) of every test, and of every app
    process a test starts, in a temp folder instead of the user's ~/.cache."""
    os.environ["SKILLFOLLOW_BOARD_CACHE"] = str(tmp_path_factory.mktemp("board-cache"))


@pytest.fixture(scope="session", autouse=True)
def _benchmark_data(request: pytest.FixtureRequest) -> str | None:
    """Fetch the missing benchmark files once, before any test, when a collected test needs
    them (tests use them by path, also through the SKILLFOLLOW_*_FILE variables); the reason
    it could not, for ``data_dir`` to report."""
    if not _data.missing(DATA_DIR):
        return None
    if not _FETCHABLE:
        return (
            "SKILLFOLLOW_DATA_DIR points there, so nothing is fetched "
            "(unset it to fetch into the cache)"
        )
    if not any("data_dir" in item.fixturenames for item in request.session.items):
        return None
    try:
        _data.fetch(DATA_DIR)
    except _data.DataUnavailable as exc:
        return str(exc)
    return None


@pytest.fixture(scope="session")
def data_dir(_benchmark_data: str | None) -> Path:
    if _data.missing(DATA_DIR):
        pytest.fail(_data.unavailable_line(DATA_DIR, _benchmark_data or "was not fetched"))
    return DATA_DIR


@pytest.fixture(scope="module")
def math_file(data_dir: Path) -> Path:
    """MATH-500's task file (the model-double run tests use its first tasks)."""
    return data_dir / "math500.jsonl"


@pytest.fixture(scope="module")
def math_tasks(math_file: Path) -> list:
    from hf_skillfollow.tasks import load_tasks

    return load_tasks("math500", math_file)[0]


@pytest.fixture(scope="module")
def private_score_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh expected-output cache for one test module, so scoring tests neither share
    nor pollute the user's cache."""
    cache = tmp_path_factory.mktemp("expected-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SKILLFOLLOW_CACHE_DIR", str(cache))
        yield cache

"""The benchmark files the tests read, and how a fresh clone gets them.

Where: ``SKILLFOLLOW_DATA_DIR`` when set (used as is: a missing file there is an error);
else ``../shared/data`` beside the repository when it holds every file; else a cache
(``SKILLFOLLOW_DATA_CACHE``, default ``~/.cache/hf-skillfollow/benchmark-data``) that the
first test needing the data fills by fetching the same releases through the real loaders:
EvalPlus's release download (``evalplus.data.utils``: its release URLs, ``make_cache`` and
the ``wget`` it downloads with) for MBPP+ v0.1.0, HumanEval+ v0.1.10 and OpenAI's original
HumanEval, and ``datasets`` for MATH-500 (the data file ``load_dataset`` resolves on the Hub,
fetched by its ``DownloadManager``). Every file must have the sha256 pinned in ``FILES`` (the
values of ../shared/data/README.md), else it is not kept. Offline, the tests that need the
data fail with one line saying so.

``SKILLFOLLOW_DATA_MIRROR`` replaces ``https://github.com`` in the release URLs (the tests
of this module serve the releases from 127.0.0.1); ``HF_ENDPOINT`` does the same for the Hub.

Run as a script (``python -m tests._data [FOLDER]``) to fetch into FOLDER (default: the cache).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"


@dataclass(frozen=True)
class Release:
    sha256: str
    fetch: Callable[[Path], None]  # writes the file to the path given
    source: str  # for messages


def _github(url: str) -> str:
    mirror = os.environ.get("SKILLFOLLOW_DATA_MIRROR")
    return url.replace("https://github.com", mirror.rstrip("/"), 1) if mirror else url


def _evalplus_release(name: str, version: str) -> str:
    from evalplus.data.utils import get_dataset_metadata

    url, _ = get_dataset_metadata(name, version, mini=False)
    return _github(url)


def _decompressed_release(name: str, version: str) -> Callable[[Path], None]:
    def fetch(dest: Path) -> None:
        from evalplus.data.utils import make_cache

        make_cache(_evalplus_release(name, version), str(dest))  # downloads and un-gzips

    return fetch


def _download(url: Callable[[], str]) -> Callable[[Path], None]:
    def fetch(dest: Path) -> None:
        import wget  # EvalPlus's downloader

        wget.download(url(), str(dest), bar=None)

    return fetch


# the URL EvalPlus's get_human_eval() downloads the original HumanEval from
_HUMAN_EVAL = "https://github.com/openai/human-eval/raw/master/data/HumanEval.jsonl.gz"
_MATH500 = "HuggingFaceH4/MATH-500"


def _math500(dest: Path) -> None:
    import datasets

    builder = datasets.load_dataset_builder(_MATH500)
    (source,) = builder.config.data_files["test"]  # the release file load_dataset reads
    local = datasets.DownloadManager().download(source)
    shutil.copyfile(local, dest)


FILES: dict[str, Release] = {
    "mbppplus-v0.1.0.jsonl": Release(
        "08405a4e8764a4941cfe0945d25a956355a0454f364ea902c4020a44e7057973",
        _decompressed_release("MbppPlus", "v0.1.0"),
        "the EvalPlus MBPP+ v0.1.0 release",
    ),
    "HumanEvalPlus-v0.1.10.jsonl.gz": Release(
        "272720b90ac375502c8ed23cd791c2a93dfb22a911641a494da74a426c09f101",
        _download(lambda: _evalplus_release("HumanEvalPlus", "v0.1.10")),
        "the EvalPlus HumanEval+ v0.1.10 release",
    ),
    "humaneval.jsonl.gz": Release(
        "b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef",
        _download(lambda: _github(_HUMAN_EVAL)),
        "OpenAI's HumanEval release",
    ),
    "math500.jsonl": Release(
        "35dc41080a3680858b27fa7e0533d2d547825316fc5dafe5d316f4ccc5a06132",
        _math500,
        f"the Hub dataset {_MATH500}",
    ),
}


class DataUnavailable(Exception):
    """The benchmark files are not here and could not be fetched; the message is one line."""


def cache_dir() -> Path:
    explicit = os.environ.get("SKILLFOLLOW_DATA_CACHE")
    if explicit:
        return Path(explicit)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "hf-skillfollow" / "benchmark-data"


def missing(folder: Path) -> list[str]:
    return [name for name in FILES if not (folder / name).is_file()]


def locate() -> tuple[Path, bool]:
    """The data folder, and whether missing files may be fetched into it."""
    explicit = os.environ.get("SKILLFOLLOW_DATA_DIR")
    if explicit:
        return Path(explicit), False
    if not missing(SHARED):
        return SHARED, False
    return cache_dir(), True


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def fetch(folder: Path, names: list[str] | None = None) -> None:
    """Fetch and check each missing file (all of ``names``, default all) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names if names is not None else missing(folder):
        release = FILES[name]
        with tempfile.TemporaryDirectory(dir=folder, prefix=".fetch-") as tmp:
            part = Path(tmp) / name
            try:
                release.fetch(part)
            except Exception as exc:  # network, HTTP, Hub and datasets errors alike
                raise DataUnavailable(
                    f"cannot fetch {name} from {release.source} ({type(exc).__name__}: "
                    f"{str(exc).splitlines()[0] if str(exc) else ''})"
                ) from exc
            got = sha256(part)
            if got != release.sha256:
                raise DataUnavailable(
                    f"{name} fetched from {release.source} has sha256 {got}, not the pinned "
                    f"{release.sha256}; not kept"
                )
            os.replace(part, folder / name)


def unavailable_line(folder: Path, reason: str) -> str:
    names = ", ".join(missing(folder)) or "none"
    return (
        f"benchmark data not found (missing in {folder}: {names}) and {reason}; set "
        "SKILLFOLLOW_DATA_DIR to a folder holding the files of ../shared/data/README.md, or "
        "run once with network access to fetch them"
    )


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else cache_dir()
    try:
        fetch(target)
    except DataUnavailable as exc:
        sys.exit(str(exc))
    print(f"benchmark data in {target}")

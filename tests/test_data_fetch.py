"""A fresh clone without ../shared/data: the benchmark files are fetched through the real
loaders (EvalPlus's release download, `datasets` for MATH-500) and kept only with the pinned
sha256. The releases are served from 127.0.0.1 with the same bytes: an HTTP server laid out
as github.com's release URLs, and the olah Hub mirror (tests/_olah.py) for MATH-500."""

from __future__ import annotations

import contextlib
import functools
import gzip
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import _data
from tests._olah import git_commit, mirror

REPO = Path(__file__).resolve().parents[1]

#: github.com paths of the releases, as EvalPlus (and its get_human_eval) builds them
RELEASE_PATHS = {
    "mbppplus-v0.1.0.jsonl": "evalplus/mbppplus_release/releases/download/v0.1.0/MbppPlus.jsonl.gz",
    "HumanEvalPlus-v0.1.10.jsonl.gz": (
        "evalplus/humanevalplus_release/releases/download/v0.1.10/HumanEvalPlus.jsonl.gz"
    ),
    "humaneval.jsonl.gz": "openai/human-eval/raw/master/data/HumanEval.jsonl.gz",
}


def _release_bytes(data_dir: Path, name: str) -> bytes:
    raw = (data_dir / name).read_bytes()
    return raw if name.endswith(".gz") else gzip.compress(raw)  # MBPP+ is released gzipped


@contextlib.contextmanager
def _http(root: Path) -> Iterator[str]:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _releases(data_dir: Path, root: Path, tamper: str | None = None) -> Path:
    for name, path in RELEASE_PATHS.items():
        blob = _release_bytes(data_dir, name)
        if name == tamper:
            blob = gzip.compress(gzip.decompress(blob).replace(b"Mbpp/2", b"Mbpp/X", 1))
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(blob)
    return root


def _fetch(dest: Path, tmp: Path, mirror_url: str, hub: str) -> subprocess.CompletedProcess:
    """``python -m tests._data DEST`` in a fresh interpreter (HF_ENDPOINT is read at import)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    env |= {
        "SKILLFOLLOW_DATA_MIRROR": mirror_url,
        "HF_ENDPOINT": hub,
        "HF_HOME": str(tmp / "hf_home"),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
        "XDG_CACHE_HOME": str(tmp / "xdg"),  # EvalPlus creates its cache folder there
    }
    return subprocess.run(
        [sys.executable, "-m", "tests._data", str(dest)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


@pytest.fixture(scope="module")
def hub(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """MATH-500 as the Hub serves it: a dataset repo holding a card and its test.jsonl."""
    root = tmp_path_factory.mktemp("olah")
    repo = root / "mirrors" / "datasets" / "HuggingFaceH4" / "MATH-500"
    repo.mkdir(parents=True)
    (repo / "README.md").write_text("---\nlicense: mit\n---\n# MATH-500\n")
    (repo / "test.jsonl").write_bytes((data_dir / "math500.jsonl").read_bytes())
    git_commit(repo)
    with mirror(root, "HuggingFaceH4/MATH-500") as endpoint:
        yield endpoint


@pytest.mark.slow  # olah and a fresh interpreter importing evalplus and datasets: ~25 s
def test_a_fresh_clone_fetches_each_release_and_checks_its_sha256(
    data_dir: Path, hub: str, tmp_path: Path
) -> None:
    dest = tmp_path / "cache"
    with _http(_releases(data_dir, tmp_path / "www")) as github:
        proc = _fetch(dest, tmp_path, github, hub)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert sorted(p.name for p in dest.iterdir()) == sorted(_data.FILES)
    for name, release in _data.FILES.items():
        assert _data.sha256(dest / name) == release.sha256, name
        assert (dest / name).read_bytes() == (data_dir / name).read_bytes(), name
    # a second run finds every file and fetches nothing (the servers are gone)
    again = _fetch(dest, tmp_path, "http://127.0.0.1:9", "http://127.0.0.1:9")
    assert again.returncode == 0, again.stderr[-2000:]


def test_a_release_with_other_bytes_is_not_kept(data_dir: Path, tmp_path: Path) -> None:
    dest = tmp_path / "cache"
    www = _releases(data_dir, tmp_path / "www", tamper="mbppplus-v0.1.0.jsonl")
    with _http(www) as github:  # MBPP+ is fetched first: the Hub is never asked
        proc = _fetch(dest, tmp_path, github, "http://127.0.0.1:9")
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("mbppplus-v0.1.0.jsonl fetched from the EvalPlus MBPP+ v0.1.0 release")
    assert f"not the pinned {_data.FILES['mbppplus-v0.1.0.jsonl'].sha256}; not kept" in last
    assert not (dest / "mbppplus-v0.1.0.jsonl").exists()
    assert [p.name for p in dest.iterdir()] == []  # no partial download left behind


def test_offline_the_fetch_fails_with_one_line(tmp_path: Path) -> None:
    dest = tmp_path / "cache"
    proc = _fetch(dest, tmp_path, "http://127.0.0.1:9", "http://127.0.0.1:9")
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].startswith(
        "cannot fetch mbppplus-v0.1.0.jsonl from the EvalPlus MBPP+ v0.1.0 release (URLError:"
    ), proc.stderr[-2000:]
    line = _data.unavailable_line(dest, lines[-1])
    assert "\n" not in line and "SKILLFOLLOW_DATA_DIR" in line and "network access" in line


def test_the_suite_fetches_only_where_neither_data_folder_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLFOLLOW_DATA_DIR", str(tmp_path / "mine"))
    assert _data.locate() == (tmp_path / "mine", False)
    monkeypatch.delenv("SKILLFOLLOW_DATA_DIR")
    monkeypatch.setenv("SKILLFOLLOW_DATA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(_data, "SHARED", tmp_path / "no-shared")
    assert _data.locate() == (tmp_path / "cache", True)

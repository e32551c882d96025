"""`hf-skillfollow space build|push`: a Space folder that runs as the Space would run it.

The slow test does what the Space's build does: a fresh venv, `pip install -r
requirements.txt` of the built folder and nothing else, then `python app.py` from the folder,
checked with gradio_client (the hand-counted numbers of test_space_client) and in a real
Chromium. Uploading to huggingface.co cannot happen from here, so `space push` goes through
a recording double at the `HfApi` boundary (named as such below); everything above it is real.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
import venv
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from hf_skillfollow.cli import cli
from hf_skillfollow.hub import HubError
from hf_skillfollow.space_build import build_space, push_space
from hf_skillfollow.space_build._folder import SpaceBuildError

SOURCES = ["org/results", "org/more-results"]
#: Packages the read-only board must never install or import (evaluation-only dependencies).
EVALUATION_ONLY = (
    "evalplus", "openai", "math_verify", "bm25s", "sympy", "llama_cpp", "transformers",
    "anthropic", "google.generativeai", "tree_sitter", "torch", "datasets", "pingouin",
)  # fmt: skip


def _front_matter(readme: str) -> dict[str, Any]:
    assert readme.startswith("---\n")
    return yaml.safe_load(readme.split("---\n")[1])


def test_build_writes_a_complete_space_folder(tmp_path: Path) -> None:
    built = build_space(tmp_path / "space", SOURCES)
    root = tmp_path / "space"
    meta = _front_matter((root / "README.md").read_text())
    pins = (root / "requirements.txt").read_text().split()
    pins = [p for p in pins if "==" in p]
    gradio = next(p.split("==")[1] for p in pins if p.lower().startswith("gradio=="))
    assert meta["sdk"] == "gradio" and meta["sdk_version"] == gradio == built.gradio_version
    assert meta["app_file"] == "app.py" and meta["python_version"] == "3.11"
    assert "skillfollow" in meta["tags"] and meta["datasets"] == SOURCES
    for source in SOURCES:
        assert f"(https://huggingface.co/datasets/{source})" in (root / "README.md").read_text()
    lines = [line for line in (root / "requirements.txt").read_text().splitlines() if line.strip()]
    for line in lines:
        assert line.startswith("#") or (line.count("==") == 1 and " " not in line), line
        assert "git+" not in line and "OWNER" not in line and "/" not in line.split("#")[0]
    names = {p.split("==")[0].lower() for p in pins}
    assert "hf-skillfollow" not in names and not names & set(EVALUATION_ONLY)
    compile((root / "app.py").read_text(), "app.py", "exec")
    assert repr(SOURCES) in (root / "app.py").read_text()
    vendored = {p.relative_to(root).as_posix() for p in (root / "hf_skillfollow").rglob("*.py")}
    assert {"hf_skillfollow/space_app/_launch.py", "hf_skillfollow/hub/_load.py"} <= vendored
    for evaluation_only in ("cli/", "scoring/", "runner.py", "agent.py", "backends/"):
        assert not any(v.startswith(f"hf_skillfollow/{evaluation_only}") for v in vendored)


def test_rebuilding_replaces_the_vendored_toolkit(tmp_path: Path) -> None:
    root = tmp_path / "space"
    build_space(root, SOURCES)
    stale = root / "hf_skillfollow" / "gone.py"
    stale.write_text("raise RuntimeError('stale module')\n")
    (root / "notes.txt").write_text("kept")
    build_space(root, SOURCES[:1])
    assert not stale.exists() and (root / "notes.txt").read_text() == "kept"
    assert _front_matter((root / "README.md").read_text())["datasets"] == SOURCES[:1]


def test_bad_sources_are_refused_naming_the_flag(tmp_path: Path) -> None:
    with pytest.raises(SpaceBuildError, match=r"--sources: 'runs/' is not a Hub dataset repo id"):
        build_space(tmp_path / "s", ["runs/"])
    res = CliRunner().invoke(cli, ["space", "build", str(tmp_path / "s"), "--sources", " , "])
    assert res.exit_code == 1 and "--sources: give at least one Hub dataset repo id" in res.output
    res = CliRunner().invoke(cli, ["space", "build", str(tmp_path / "ok"), "--sources", "a/b,c/d"])
    assert res.exit_code == 0, res.output
    assert "Space folder for a/b, c/d" in res.output


_BOARD_IMPORTS = """
import json, os, sys
sys.path.insert(0, os.getcwd())  # what `python app.py` does: the folder comes first
from hf_skillfollow.space_app._board import load_board
from hf_skillfollow.space_app._ui import build_app
import hf_skillfollow
board = load_board([sys.argv[1]], resamples=200, discover=False)
build_app(board)
print(json.dumps({"file": hf_skillfollow.__file__, "modules": sorted(sys.modules)}))
"""


def test_the_board_imports_no_evaluation_package(tmp_path: Path) -> None:
    """Run the vendored board over a repo folder and list every module it imported."""
    root = tmp_path / "space"
    build_space(root, SOURCES)
    repo = _repo_folder(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {
        "GRADIO_ANALYTICS_ENABLED": "False",
        "HF_HUB_OFFLINE": "1",
        "SKILLFOLLOW_BOARD_CACHE": str(tmp_path / "board-cache"),  # not the user's cache
    }
    proc = subprocess.run(
        [sys.executable, "-c", _BOARD_IMPORTS, str(repo)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["file"].startswith(str(root))  # the vendored copy, not the installed toolkit
    found = sorted(
        m for m in out["modules"] for bad in EVALUATION_ONLY if m == bad or m.startswith(bad + ".")
    )
    assert not found, found


def _repo_folder(tmp: Path) -> Path:
    """The hand-counted runs of test_space_client, pushed into a results repo folder."""
    from hf_skillfollow.hub import build_repo
    from tests.test_space_client import RUNS, build_sources

    build_sources(tmp / "fixture")
    runs = [tmp / "fixture" / "runs" / run_id for run_id in RUNS]
    build_repo(runs, tmp / "repo", repo_id="org/results")
    return tmp / "repo"


class RecordingSpaceApiDouble:
    """Stands in for `huggingface_hub.HfApi` (huggingface.co is unreachable from here).

    Records every call and keeps a copy of each uploaded folder, as the Space repo would.
    """

    def __init__(self, fail_with: str | None = None) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.uploads: list[dict[str, bytes]] = []
        self.variables: dict[str, str] = {}
        self.fail_with = fail_with

    def create_repo(self, repo_id: str, **kwargs: Any) -> str:
        self.calls.append(("create_repo", {"repo_id": repo_id, **kwargs}))
        if self.fail_with:
            raise RuntimeError(self.fail_with)
        return f"https://huggingface.co/spaces/{repo_id}"

    def add_space_variable(self, repo_id: str, key: str, value: str, **kwargs: Any) -> None:
        self.calls.append(("add_space_variable", {"repo_id": repo_id, "key": key, **kwargs}))
        self.variables[key] = value

    def upload_folder(self, *, repo_id: str, folder_path: str, **kwargs: Any) -> str:
        self.calls.append(("upload_folder", {"repo_id": repo_id, **kwargs}))
        root = Path(folder_path)
        self.uploads.append(
            {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
        )
        return f"https://huggingface.co/spaces/{repo_id}/commit/{len(self.uploads):040d}"


def test_space_push_creates_the_space_sets_the_sources_and_uploads_the_build(
    tmp_path: Path,
) -> None:
    api = RecordingSpaceApiDouble()
    result = push_space("org/board", SOURCES, api=api)
    assert [name for name, _ in api.calls] == ["create_repo", "add_space_variable", "upload_folder"]
    assert api.calls[0][1] == {
        "repo_id": "org/board", "repo_type": "space", "space_sdk": "gradio", "private": False,
        "exist_ok": True,
    }  # fmt: skip
    assert api.variables == {"SKILLFOLLOW_SOURCES": "org/results,org/more-results"}
    upload = api.calls[2][1]
    assert upload["repo_type"] == "space" and upload["delete_patterns"] == ["hf_skillfollow/**"]
    build_space(tmp_path / "local", SOURCES)
    local = {
        p.relative_to(tmp_path / "local").as_posix(): p.read_bytes()
        for p in (tmp_path / "local").rglob("*")
        if p.is_file()
    }
    assert api.uploads[0] == local  # exactly what `space build` writes
    assert result.url == "https://huggingface.co/spaces/org/board" and result.commit_url
    push_space("org/board", SOURCES, api=api)  # again: same calls, same bytes
    assert api.uploads[1] == api.uploads[0]
    assert [c[1] for c in api.calls[3:]] == [c[1] for c in api.calls[:3]]


def test_space_push_errors_are_one_line_and_token_free(tmp_path: Path, monkeypatch) -> None:
    token = "hf_TESTSECRETspaceToken1234567890"
    monkeypatch.setenv("HF_TOKEN", token)
    failing = RecordingSpaceApiDouble(fail_with=f"401 Unauthorized: Bearer {token}")
    with pytest.raises(HubError) as info:
        push_space("org/board", SOURCES, api=failing, token=token)
    assert "401 Unauthorized" in str(info.value) and token not in str(info.value)
    with pytest.raises(SpaceBuildError, match=r"SPACE 'board': expected ORG/NAME"):
        push_space("board", SOURCES, api=RecordingSpaceApiDouble())


# --- as the Space runs it ---------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(url: str, proc: subprocess.Popen, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"app.py exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.3)
    pytest.fail(f"app.py did not answer within {timeout:.0f} s:\n{log.read_text()[-3000:]}")


@pytest.mark.slow
@pytest.mark.browser
def test_built_space_runs_from_a_fresh_venv_and_shows_the_right_numbers(tmp_path: Path) -> None:
    from gradio_client import Client

    from tests.test_space_browser import CHROMIUM, CHROMIUM_ARGS, ROWS
    from tests.test_space_client import test_pooled_values_match_hand_counts

    root = tmp_path / "space"
    build_space(root, SOURCES)
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    clean = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "-r", str(root / "requirements.txt")],
        env=clean,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    freeze = subprocess.run(
        [str(python), "-m", "pip", "freeze"], env=clean, capture_output=True, text=True
    ).stdout.lower()
    for name in ("evalplus", "openai", "transformers", "anthropic", "datasets", "hf-skillfollow"):
        assert f"\n{name}==" not in "\n" + freeze, f"{name} installed into the board's venv"

    repo = _repo_folder(tmp_path)
    port = _free_port()
    log = tmp_path / "app.log"
    env = clean | {
        "SKILLFOLLOW_SOURCES": str(repo),  # a local repo folder instead of the Hub ids
        "SKILLFOLLOW_RESAMPLES": "2000",
        "GRADIO_SERVER_PORT": str(port),
        "GRADIO_SERVER_NAME": "127.0.0.1",
        "GRADIO_ANALYTICS_ENABLED": "False",
        "HF_HUB_OFFLINE": "1",
        "SKILLFOLLOW_BOARD_CACHE": str(tmp_path / "board-cache"),  # not the user's cache
    }
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [str(python), "app.py"], cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}/"
    try:
        _wait(url, proc, log, timeout=300)
        test_pooled_values_match_hand_counts(Client(url, verbose=False))
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            browser = pw.chromium.launch_persistent_context(
                str(tmp_path / "chromium-profile"),
                executable_path=str(CHROMIUM),
                args=CHROMIUM_ARGS,
                headless=True,
                viewport={"width": 1440, "height": 1000},
            )
            try:
                page = browser.new_page()
                page.goto(url)
                page.locator(ROWS).first.wait_for(timeout=120_000)
                first = page.locator(ROWS).first.inner_text()
                assert "model-alpha" in first and "35" in first
                page.screenshot(path=str(tmp_path / "space-from-fresh-venv.png"), full_page=True)
            finally:
                browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)

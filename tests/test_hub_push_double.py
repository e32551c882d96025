"""Write path of `push` against a recording double of `HfApi`.

huggingface.co cannot be reached from this machine and the olah mirror refuses writes
(HTTP 405), so the only stand-in in these tests sits exactly at the `HfApi` boundary: it
keeps the committed files in memory, serves them back to `list_repo_files` /
`hf_hub_download`, and records every call. Everything above that boundary is real.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from hf_skillfollow.cli import cli
from hf_skillfollow.hub import HubError, build_repo, push_runs
from tests._fixtures_hub import CELL_A, two_cell_runs, write_run_dir

TOKEN = "hf_TESTSECRETtokenValue1234567890"


class _Info:
    def __init__(self, sha: str | None) -> None:
        self.sha = sha


class _CommitInfo:
    def __init__(self, url: str) -> None:
        self.commit_url = url


class RecordingHfApiDouble:
    """Stands in for `huggingface_hub.HfApi` because huggingface.co is unreachable here."""

    def __init__(self, tmp: Path, token: str | None = None, fail_with: str | None = None) -> None:
        self.token = token
        self.files: dict[str, bytes] = {".gitattributes": b"*.parquet filter=lfs\n"}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.commits: list[dict[str, Any]] = []
        self.tmp = tmp
        self.fail_with = fail_with

    @property
    def head(self) -> str:
        return f"{len(self.commits):040d}"

    def create_repo(self, repo_id: str, **kwargs: Any) -> str:
        self.calls.append(("create_repo", {"repo_id": repo_id, **kwargs}))
        if self.fail_with:
            raise RuntimeError(self.fail_with)
        return f"https://huggingface.co/datasets/{repo_id}"

    def repo_info(self, repo_id: str, **kwargs: Any) -> _Info:
        self.calls.append(("repo_info", {"repo_id": repo_id, **kwargs}))
        return _Info(self.head)

    def list_repo_files(self, repo_id: str, **kwargs: Any) -> list[str]:
        self.calls.append(("list_repo_files", {"repo_id": repo_id, **kwargs}))
        assert kwargs["revision"] == self.head
        return sorted(self.files)

    def hf_hub_download(self, repo_id: str, filename: str, **kwargs: Any) -> str:
        self.calls.append(("hf_hub_download", {"repo_id": repo_id, "filename": filename, **kwargs}))
        path = self.tmp / "download" / filename
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.files[filename])
        return str(path)

    def create_commit(self, repo_id: str, operations: list[Any], **kwargs: Any) -> _CommitInfo:
        self.calls.append(("create_commit", {"repo_id": repo_id, **kwargs}))
        assert kwargs["parent_commit"] == self.head
        kinds = {type(op).__name__ for op in operations}
        added = {}
        for op in operations:
            data = op.path_or_fileobj
            added[op.path_in_repo] = data if isinstance(data, bytes) else Path(data).read_bytes()
        self.commits.append(
            {
                "kinds": kinds,
                "paths": sorted(added),
                "message": kwargs["commit_message"],
                "data": added,
            }
        )
        self.files.update(added)
        return _CommitInfo(f"https://huggingface.co/datasets/{repo_id}/commit/{self.head}")


def _push(runs: list[Path], api: RecordingHfApiDouble, **kwargs: Any):
    return push_runs(runs, "org/results", api=api, **kwargs)


def test_first_push_creates_repo_and_adds_exactly_the_run_files_and_card(tmp_path: Path) -> None:
    runs = two_cell_runs(tmp_path / "runs")
    api = RecordingHfApiDouble(tmp_path, token=TOKEN)
    result = _push(runs, api, private=True)
    create = [c for n, c in api.calls if n == "create_repo"]
    assert create == [
        {"repo_id": "org/results", "repo_type": "dataset", "private": True, "exist_ok": True}
    ]
    assert len(api.commits) == 1
    commit = api.commits[0]
    assert commit["kinds"] == {"CommitOperationAdd"}  # nothing deleted, nothing copied
    assert commit["paths"] == [
        "README.md",
        "data/traces/run-a0.parquet",
        "data/traces/run-a1.parquet",
        "data/traces/run-b0.parquet",
        "data/transitions/run-a0.parquet",
        "data/transitions/run-a1.parquet",
        "data/transitions/run-b0.parquet",
        "stats/card_cells.json",
        "stats/runs.parquet",
        "stats/summary.json",
    ]
    assert result.commit_url and result.commit_url.endswith("/commit/" + api.head)
    assert [c["repo_type"] for n, c in api.calls if n != "create_repo"] == ["dataset"] * (
        len(api.calls) - 1
    )


def test_pushed_bytes_equal_the_dry_run_folder(tmp_path: Path) -> None:
    runs = two_cell_runs(tmp_path / "runs")
    api = RecordingHfApiDouble(tmp_path)
    _push(runs, api)
    build_repo(runs, tmp_path / "dry", repo_id="org/results")
    for path, data in api.commits[0]["data"].items():
        assert (tmp_path / "dry" / path).read_bytes() == data, path


def test_second_push_of_the_same_runs_adds_nothing(tmp_path: Path) -> None:
    runs = two_cell_runs(tmp_path / "runs")
    api = RecordingHfApiDouble(tmp_path)
    _push(runs, api)
    result = _push(runs, api)
    assert len(api.commits) == 1
    assert result.added == {} and not result.card_updated
    assert len(result.skipped) == 6


def test_new_run_appends_only_its_files_and_the_card_covers_all_rows(tmp_path: Path) -> None:
    runs = two_cell_runs(tmp_path / "runs")
    api = RecordingHfApiDouble(tmp_path)
    _push(runs[:2], api)
    first_files = dict(api.files)
    _push(runs, api)
    second = api.commits[1]
    # The new run's counts go to the small recent-counts file; stats/runs.parquet stays.
    assert second["paths"] == [
        "README.md",
        "data/traces/run-b0.parquet",
        "data/transitions/run-b0.parquet",
        "stats/card_cells.json",
        "stats/runs-recent.parquet",
        "stats/summary.json",
    ]
    for path, data in first_files.items():  # published data never rewritten
        if path not in ("README.md", "stats/card_cells.json", "stats/summary.json"):
            assert api.files[path] == data
    card = api.files["README.md"].decode()
    assert "**40** paired task outcomes from **3** run(s)" in card


def test_conflicting_run_id_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    runs = two_cell_runs(tmp_path / "runs")
    api = RecordingHfApiDouble(tmp_path)
    _push(runs, api)
    impostor = write_run_dir(tmp_path / "other", "run-b0", CELL_A)
    with pytest.raises(
        HubError,
        match=r"run id 'run-b0' .*already in hf://datasets/org/results .*never overwritten",
    ):
        _push([impostor], api)
    assert len(api.commits) == 1


def test_token_never_appears_in_logs_errors_or_card(
    tmp_path: Path, caplog, capsys, monkeypatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    caplog.set_level(logging.DEBUG)
    runs = two_cell_runs(tmp_path / "runs")
    api = RecordingHfApiDouble(tmp_path, token=TOKEN)
    _push(runs, api, token=TOKEN)
    failing = RecordingHfApiDouble(
        tmp_path, fail_with=f"401 Unauthorized: Authorization: Bearer {TOKEN}"
    )
    with pytest.raises(HubError) as info:
        _push(runs, failing, token=TOKEN)
    assert "401 Unauthorized" in str(info.value)
    assert TOKEN not in str(info.value) and "***" in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    out = capsys.readouterr()
    assert TOKEN not in out.out + out.err + caplog.text
    assert all(TOKEN.encode() not in data for data in api.files.values())


def test_cli_reports_token_free_error_and_summary(tmp_path: Path, monkeypatch) -> None:
    runs = two_cell_runs(tmp_path / "runs")
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    import hf_skillfollow.hub._push as push_module

    def failing_api(token: str | None) -> RecordingHfApiDouble:
        return RecordingHfApiDouble(
            tmp_path, fail_with=f"cannot reach huggingface.co with token={token}"
        )

    monkeypatch.setattr(push_module, "_hf_api", failing_api)
    res = CliRunner().invoke(
        cli, ["push", *map(str, runs), "--repo", "org/results", "--token", TOKEN]
    )
    assert res.exit_code == 1
    assert "push failed: RuntimeError: cannot reach huggingface.co with token=***" in res.output
    assert TOKEN not in res.output

    res = CliRunner().invoke(
        cli, ["push", *map(str, runs), "--repo", "org/results", "--dry-run", str(tmp_path / "d")]
    )
    assert res.exit_code == 0, res.output
    assert "dry run, nothing uploaded" in res.output
    assert "wrote data/transitions/run-a0.parquet (12 rows)" in res.output
    assert "wrote README.md (card regenerated from all rows)" in res.output
    res = CliRunner().invoke(
        cli, ["push", *map(str, runs), "--repo", "org/results", "--dry-run", str(tmp_path / "d")]
    )
    assert (
        "nothing new to add" in res.output
        and "already published, identical: data/transitions/run-b0.parquet" in res.output
    )


def test_bad_repo_id_is_refused_before_any_call(tmp_path: Path) -> None:
    api = RecordingHfApiDouble(tmp_path)
    with pytest.raises(HubError, match=r"--repo 'results': expected ORG/NAME"):
        push_runs(two_cell_runs(tmp_path / "runs"), "results", api=api)
    assert api.calls == []


def test_card_metadata_in_the_commit(tmp_path: Path) -> None:
    api = RecordingHfApiDouble(tmp_path)
    _push(two_cell_runs(tmp_path / "runs"), api, license="mit")
    meta = yaml.safe_load(api.files["README.md"].decode().split("---")[1])
    assert meta["license"] == "mit"
    assert "skillfollow" in meta["tags"]

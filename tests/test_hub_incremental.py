"""A push costs what it adds: the card comes from published per-run counts, and races land.

Every card checked here is compared with a full recomputation from all rows of the repo
(`compute_cells` over the loaded transitions, the path `report` takes), never with numbers
produced by the incremental path itself. Writes to huggingface.co go through the recording
`HfApi` double of test_hub_push_double.py (the Hub cannot be reached from here).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from hf_skillfollow.hub import _numbers, build_repo, push_runs
from hf_skillfollow.hub._card import render_card
from hf_skillfollow.hub._card_cache import CARD_CELLS_PATH
from hf_skillfollow.hub._numbers import CARD_BOOTSTRAP_SEED, cell_display
from hf_skillfollow.hub._stats import RECENT_PATH, STATS_PATH, run_stats
from hf_skillfollow.hub._summary import MAX_CARD_CELLS, SUMMARY_PATH
from hf_skillfollow.metrics import compute_cells
from hf_skillfollow.schema import transitions_from_rows
from tests._fixtures_hub import CELL_A, CELL_B, outcome_rows, two_cell_runs, write_run_dir
from tests.test_hub_card import CELL_HEADER, _table
from tests.test_hub_push_double import RecordingHfApiDouble

CELL_C = {(True, False, True): 3, (False, False, True): 9, (True, True, False): 4}


def _all_rows(files: dict[str, bytes], folder: str = "data/transitions/"):
    import pyarrow as pa

    tables = [
        pq.read_table(pa.BufferReader(data))
        for path, data in sorted(files.items())
        if path.startswith(folder)
    ]
    return pa.concat_tables(tables)


def _all_traces(files: dict[str, bytes]):
    return _all_rows(files, "data/traces/")


def _expected_cells(transitions) -> list[dict[str, str]]:
    """The card's cell rows recomputed from every row with compute_cells."""
    cells = compute_cells(transitions, seed=CARD_BOOTSTRAP_SEED)
    # pandas holds undefined numbers as NaN; the card shows them (and the flag) as n/a.
    records = [
        {k: None if isinstance(v, float) and v != v else v for k, v in m.items()}
        for m in cells.to_dict("records")
    ]
    rows = [cell_display(m) for m in records]
    rows = sorted(rows, key=lambda r: (r["benchmark"], r["model"], r["pool"], r["partition"]))
    return [
        {
            "model": r["model"], "benchmark": r["benchmark"], "partition": r["partition"],
            "pool / condition": r["pool"], "runs": r["runs"], "n": r["n"], "errors": r["errors"], "n_cond": r["n_cond"],
            "coverage": r["coverage"], "RAE [95% CI]": r["rae"], "OAE [95% CI]": r["oae"],
            "Δskip": r["delta_skip"], "agg lift": r["agg_lift"],
            "sign disagreement": r["sign_disagree"], "reportable": r["reportable"],
            "re-scored": "not re-scored",  # no verification record in these repos
        }
        for r in rows
    ]  # fmt: skip


def _check_card(card: str, transitions, traces, *, repo_id: str = "org/results") -> None:
    assert _table(card, CELL_HEADER) == _expected_cells(transitions)
    n_runs = len(set(transitions.column("run_id").to_pylist()))
    assert f"**{transitions.num_rows}** paired task outcomes from **{n_runs}** run(s)" in card
    # ...and the whole text equals the card rendered from counts of every row at once.
    full = render_card(run_stats(transitions, traces), repo_id=repo_id, has_traces=True)
    assert _strip_tools(card) == _strip_tools(full)


def _strip_tools(card: str) -> str:
    # The protocol table's tool column depends on the manifests pushed, not on the rows.
    return "\n".join(line for line in card.splitlines() if not line.startswith("| `"))


def _more_runs(root: Path) -> list[Path]:
    c = {"cell_id": "cellC0000000000", "model": "org/model-c", "skill_pool": "coding"}
    b = {"cell_id": "cellB0000000000", "model": "org/model-b", "skill_pool": "coding",
         "condition": "filler"}  # fmt: skip
    return [
        write_run_dir(root, "run-c0", CELL_C, **c),
        write_run_dir(root, "run-b1", CELL_B, repeat_index=1, seed=1, **b),  # pools with run-b0
    ]


def test_pushing_a_run_reads_only_the_card_and_the_counts(tmp_path: Path) -> None:
    api = RecordingHfApiDouble(tmp_path)
    push_runs(two_cell_runs(tmp_path / "runs"), "org/results", api=api)
    api.calls.clear()
    push_runs(_more_runs(tmp_path / "more"), "org/results", api=api)
    downloaded = sorted(c["filename"] for n, c in api.calls if n == "hf_hub_download")
    # The main counts file only for its cell keys; the new counts go to the recent file.
    assert downloaded == ["README.md", CARD_CELLS_PATH, STATS_PATH, SUMMARY_PATH]
    assert STATS_PATH not in api.commits[-1]["paths"]
    assert RECENT_PATH in api.commits[-1]["paths"]
    _check_card(api.files["README.md"].decode(), _all_rows(api.files), _all_traces(api.files))


def test_card_after_several_folder_pushes_equals_a_full_recomputation(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    runs = two_cell_runs(tmp_path / "runs") + _more_runs(tmp_path / "more")
    for run in runs:  # one push per run, as shards of a sweep would
        build_repo([run], repo, repo_id="org/results")
    files = {p.relative_to(repo).as_posix(): p.read_bytes() for p in repo.rglob("*.parquet")}
    transitions = _all_rows(files)
    assert transitions.num_rows == 20 + 20 + 20 + 16
    _check_card((repo / "README.md").read_text(), transitions, _all_traces(files))
    assert "org/model-b" in (repo / "README.md").read_text()
    cells = {r["model"]: r for r in _table((repo / "README.md").read_text(), CELL_HEADER)}
    assert cells["org/model-b"]["runs"] == "2" and cells["org/model-b"]["n"] == "40"


def test_missing_or_stale_counts_are_rebuilt_from_the_rows(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    build_repo(two_cell_runs(tmp_path / "runs"), repo, repo_id="org/results")
    (repo / STATS_PATH).unlink()  # a repo published before the counts file existed
    (repo / "data/transitions/run-b0.parquet").unlink()  # a run removed by hand
    (repo / "data/traces/run-b0.parquet").unlink()
    result = build_repo(_more_runs(tmp_path / "more")[:1], repo, repo_id="org/results")
    assert result.stats_updated and result.card_updated
    assert result.stats_paths == [STATS_PATH, SUMMARY_PATH]  # rebuilt: no recent counts
    files = {p.relative_to(repo).as_posix(): p.read_bytes() for p in repo.rglob("*.parquet")}
    transitions = _all_rows(files)
    assert sorted(set(transitions.column("run_id").to_pylist())) == ["run-a0", "run-a1", "run-c0"]
    _check_card((repo / "README.md").read_text(), transitions, _all_traces(files))
    stats = pq.read_table(repo / STATS_PATH)
    assert sorted(stats.column("run_id").to_pylist()) == ["run-a0", "run-a1", "run-c0"]


def _count_computed_cells(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Spy on the card's metric computation: how many cells each render computes."""
    computed: list[int] = []
    real = _numbers.compute_cell_metrics

    def spy(cells):  # noqa: ANN001, ANN202
        records = real(cells)
        computed.append(len(records))
        return records

    monkeypatch.setattr(_numbers, "compute_cell_metrics", spy)
    return computed


def test_a_push_computes_only_the_cells_it_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    computed = _count_computed_cells(monkeypatch)
    repo = tmp_path / "repo"
    a0, a1, b0 = two_cell_runs(tmp_path / "runs")
    c0, b1 = _more_runs(tmp_path / "more")
    pushed, per_push = [], []
    # a new cell, a new cell, the first cell again (a second repeat pools into it), another
    # new cell, then the second cell changed: each push computes exactly one cell.
    for run in (a0, b0, a1, c0, b1):
        computed.clear()
        build_repo([run], repo, repo_id="org/results")
        per_push.append(sum(computed))
        pushed.append(run)
        files = {p.relative_to(repo).as_posix(): p.read_bytes() for p in repo.rglob("*.parquet")}
        card = (repo / "README.md").read_text()
        _check_card(card, _all_rows(files), _all_traces(files))  # renders afresh
    assert per_push == [1, 1, 1, 1, 1]
    import json

    kept = json.loads((repo / CARD_CELLS_PATH).read_text())["rows"]
    assert len(kept) == 3  # the listed cells only; rows of replaced counts are dropped
    computed.clear()
    build_repo(pushed, repo, repo_id="org/results")  # nothing new: nothing computed
    assert computed == []


def test_an_unreadable_card_cache_is_recomputed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    build_repo(two_cell_runs(tmp_path / "runs"), repo, repo_id="org/results")
    (repo / CARD_CELLS_PATH).write_text("{not json")
    computed = _count_computed_cells(monkeypatch)
    build_repo(_more_runs(tmp_path / "more")[:1], repo, repo_id="org/results")
    assert computed == [3]
    files = {p.relative_to(repo).as_posix(): p.read_bytes() for p in repo.rglob("*.parquet")}
    _check_card((repo / "README.md").read_text(), _all_rows(files), _all_traces(files))


def test_card_lists_only_computed_cells_yet_counts_them_all() -> None:
    rows = []
    for i in range(MAX_CARD_CELLS + 5):
        rows += outcome_rows(CELL_A, run_id=f"r{i}", cell_id=f"c{i:04d}", model=f"m{i:04d}")
    transitions = transitions_from_rows(rows)
    card = render_card(run_stats(transitions), repo_id="org/x", has_traces=False)
    assert _table(card, CELL_HEADER) == _expected_cells(transitions)[:MAX_CARD_CELLS]
    assert f"**{MAX_CARD_CELLS + 5}** cell(s)" in card


def test_card_lists_the_first_cells_in_display_order_as_text() -> None:
    # "seed 100" sorts before "seed 42" as text, as the card's key compares them; versions
    # and pools too. The 200 listed cells must be the first 200 of that order.
    rows = []
    for i in range(MAX_CARD_CELLS + 7):
        rows += outcome_rows(
            CELL_B,
            run_id=f"r{i}",
            cell_id=f"c{(i * 37) % 1000:04d}",
            model="org/m",
            partition_seed=i,
            benchmark_version=f"v{i % 3}",
            condition=("normal", "filler")[i % 2],
        )
    transitions = transitions_from_rows(rows)
    card = render_card(run_stats(transitions), repo_id="org/x", has_traces=False)
    assert _table(card, CELL_HEADER) == _expected_cells(transitions)[:MAX_CARD_CELLS]


class ConflictingHfApiDouble(RecordingHfApiDouble):
    """The recording double, plus the Hub's answer to a stale `parent_commit`.

    huggingface.co refuses a commit whose parent_commit is no longer the branch head with
    HTTP 412 Precondition Failed (raised by huggingface_hub as HfHubHTTPError). Before the
    first commit lands, `interloper` runs: another machine's push into the same repo.
    """

    def __init__(self, tmp: Path, interloper: Any = None) -> None:
        super().__init__(tmp)
        self.interloper = interloper
        self.refused = 0

    def create_commit(self, repo_id: str, operations: list[Any], **kwargs: Any):
        if self.interloper is not None:
            other, self.interloper = self.interloper, None
            other()
        if kwargs["parent_commit"] != self.head:
            self.refused += 1
            raise _precondition_failed(repo_id)
        return super().create_commit(repo_id, operations, **kwargs)


def _precondition_failed(repo_id: str) -> Exception:
    import importlib

    from huggingface_hub import errors

    # huggingface_hub's own HTTP client (httpx or its fork), whichever this version uses.
    http = importlib.import_module(errors.Response.__module__.split(".")[0])
    url = f"https://huggingface.co/api/datasets/{repo_id}/commit/main"
    response = http.Response(412, request=http.Request("POST", url))
    return errors.HfHubHTTPError(
        f"412 Client Error: Precondition Failed for url: {url}", response=response
    )


def test_a_push_that_loses_the_race_rereads_and_lands(tmp_path: Path) -> None:
    first, second = two_cell_runs(tmp_path / "runs"), _more_runs(tmp_path / "more")
    api = ConflictingHfApiDouble(tmp_path)
    api.interloper = lambda: push_runs(first, "org/results", api=api)
    result = push_runs(second, "org/results", api=api)
    assert api.refused == 1 and result.attempts == 2
    assert len(api.commits) == 2  # the interloper's commit, then ours on top of it
    assert sorted(p for p in api.files if p.startswith("data/transitions/")) == [
        f"data/transitions/{r}.parquet" for r in ("run-a0", "run-a1", "run-b0", "run-b1", "run-c0")
    ]
    _check_card(api.files["README.md"].decode(), _all_rows(api.files), _all_traces(api.files))


def test_a_push_racing_the_same_runs_adds_nothing_the_second_time(tmp_path: Path) -> None:
    runs = two_cell_runs(tmp_path / "runs")
    api = ConflictingHfApiDouble(tmp_path)
    api.interloper = lambda: push_runs(runs, "org/results", api=api)
    result = push_runs(runs, "org/results", api=api)
    assert api.refused == 1 and len(api.commits) == 1
    assert not result.changed and len(result.skipped) == 6


_PUSHER = """
import sys
from hf_skillfollow.hub import build_repo
start = sys.stdin.readline()  # both processes start together when the parent writes a line
for run in sys.argv[2:]:
    build_repo([run], sys.argv[1], repo_id="org/results")
"""


def test_two_processes_pushing_into_one_folder_both_land(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    runs_a = two_cell_runs(tmp_path / "runs")
    runs_b = _more_runs(tmp_path / "more")
    toolkit = str(Path(__file__).resolve().parents[1] / "toolkit")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([toolkit, os.environ.get("PYTHONPATH", "")]))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _PUSHER, str(repo), *map(str, runs)],
            stdin=subprocess.PIPE,
            env=env,
            text=True,
        )
        for runs in (runs_a, runs_b)
    ]
    for proc in procs:
        proc.stdin.write("go\n")
        proc.stdin.close()
    assert [proc.wait(timeout=300) for proc in procs] == [0, 0]
    files = {p.relative_to(repo).as_posix(): p.read_bytes() for p in repo.rglob("*.parquet")}
    transitions = _all_rows(files)
    assert sorted(set(transitions.column("run_id").to_pylist())) == [
        "run-a0", "run-a1", "run-b0", "run-b1", "run-c0",
    ]  # fmt: skip
    _check_card((repo / "README.md").read_text(), transitions, _all_traces(files))


@pytest.mark.parametrize("space", ["org/board"])
def test_card_links_the_space_and_keeps_the_link(tmp_path: Path, space: str) -> None:
    repo = tmp_path / "repo"
    runs = two_cell_runs(tmp_path / "runs")
    build_repo(runs[:1], repo, repo_id="org/results", space=space)
    link = f"[{space}](https://huggingface.co/spaces/{space})"
    assert link in (repo / "README.md").read_text()
    build_repo(runs[1:], repo, repo_id="org/results")  # a later push without --space
    assert link in (repo / "README.md").read_text()


def _protocol_rows(card: str) -> list[list[str]]:
    """The protocol table's rows without the tool column (which comes from the manifests)."""
    rows = [line.split(" | ") for line in card.splitlines() if line.startswith("| `")]
    return [row[:1] + row[2:] for row in rows]


def test_summary_pushes_keep_the_first_cells_and_every_count_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One run per push into a repo with a summary: cells arrive before, between and after
    the listed ones, repeats pool into listed and unlisted cells, and the recent-counts file
    is merged into the main one on the way; after every push the card equals the card of a
    full recomputation, and only the first push (an empty repo) recounts everything."""
    from hf_skillfollow.hub import _counts, _summary

    monkeypatch.setattr(_summary, "MAX_CARD_CELLS", 2)
    monkeypatch.setattr(_counts, "_MIN_RECENT", 1)
    monkeypatch.setattr(_counts, "_RECENT_SHARE", 1)
    rebuilt: list[bool] = []
    real_rebuilt = _counts._rebuilt

    def spy(*args: Any) -> Any:
        rebuilt.append(True)
        return real_rebuilt(*args)

    monkeypatch.setattr(_counts, "_rebuilt", spy)
    repo, root = tmp_path / "repo", tmp_path / "runs"
    # (run id, model letter, repeat) per push; in the second push the run sorting first by id
    # is the cell sorting last, while the list still has room.
    pushes = [
        [("run-d0", "d", 0)], [("run-x0", "g", 0), ("run-y0", "f", 0)], [("run-b0", "b", 0)],
        [("run-e0", "e", 0)], [("run-a0", "a", 0)], [("run-c0", "c", 0)], [("run-e1", "e", 1)],
        [("run-a1", "a", 1)], [("run-b1", "b", 1)],
    ]  # fmt: skip
    for i, push in enumerate(pushes):
        runs = [
            write_run_dir(
                root, run_id, (CELL_A, CELL_B, CELL_C)[ord(name) % 3],
                cell_id=f"cell{name.upper()}000000000", model=f"org/model-{name}",
                skill_pool="coding", repeat_index=repeat, seed=repeat,
                partition_seed=40 + ord(name) % 2,
            )
            for run_id, name, repeat in push
        ]  # fmt: skip
        rebuilt.clear()
        build_repo(runs, repo, repo_id="org/results")
        assert rebuilt == ([True] if i == 0 else [])
        card = (repo / "README.md").read_text()
        files = {p.relative_to(repo).as_posix(): p.read_bytes() for p in repo.rglob("*.parquet")}
        transitions = _all_rows(files)
        assert _table(card, CELL_HEADER) == _expected_cells(transitions)[:2]
        traces = _all_traces(files)
        full = render_card(run_stats(transitions, traces), repo_id="org/results", has_traces=True)
        assert _strip_tools(card) == _strip_tools(full)
        assert _protocol_rows(card) == _protocol_rows(full)
        if i == 1:
            assert [r["model"] for r in _table(card, CELL_HEADER)] == ["org/model-d", "org/model-f"]
    assert [r["model"] for r in _table(card, CELL_HEADER)] == ["org/model-a", "org/model-b"]
    assert "**7** cell(s)" in card and "from **10** run(s)" in card
    # The recent-counts file was merged into the main one at least once (rows: runs).
    assert pq.read_table(repo / STATS_PATH).num_rows > 1
    assert (
        pq.read_table(repo / STATS_PATH).num_rows + pq.read_table(repo / RECENT_PATH).num_rows == 10
    )


def test_a_summary_that_misses_a_hand_edit_is_rebuilt(tmp_path: Path) -> None:
    """A run removed by hand, and one added by hand, after the summary was written: the
    summary no longer matches the listing, so the push recounts from the rows."""
    repo = tmp_path / "repo"
    a0, a1, b0 = two_cell_runs(tmp_path / "runs")
    c0, b1 = _more_runs(tmp_path / "more")
    for run in (a0, a1, b0):
        build_repo([run], repo, repo_id="org/results")
    assert (repo / SUMMARY_PATH).is_file() and (repo / RECENT_PATH).is_file()
    (repo / "data/transitions/run-a1.parquet").unlink()
    (repo / "data/traces/run-a1.parquet").unlink()
    other = build_repo([c0], tmp_path / "other", repo_id="org/results")
    assert other.added
    (repo / "data/transitions/run-c0.parquet").write_bytes(
        (tmp_path / "other/data/transitions/run-c0.parquet").read_bytes()
    )
    build_repo([b1], repo, repo_id="org/results")
    files = {p.relative_to(repo).as_posix(): p.read_bytes() for p in repo.rglob("*.parquet")}
    transitions = _all_rows(files)
    assert sorted(set(transitions.column("run_id").to_pylist())) == [
        "run-a0", "run-b0", "run-b1", "run-c0",
    ]  # fmt: skip
    _check_card((repo / "README.md").read_text(), transitions, _all_traces(files))

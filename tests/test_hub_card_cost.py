"""The dataset card's cost and judge section, against figures computed by hand from fixture
rows, after one push and after a second push of the same cell (sums kept in `stats/`)."""

from __future__ import annotations

from pathlib import Path

from hf_skillfollow.hub import build_repo
from tests._cost_fixtures import TASKS, trace, two_sources, write_run

COST_HEADER = [
    "model", "benchmark", "pool / condition", "RAE", "traced SE / SD", "SE tokens", "SD tokens",
    "Δ tokens", "SE s", "SD s", "Δ s", "judge self-disagreement", "ties", "grading failures",
    "b / c explainable", "addressing a grader SE / SD",
]  # fmt: skip


def _cost_rows(card: str) -> dict[str, dict[str, str]]:
    lines = card.splitlines()
    start = next(i for i, line in enumerate(lines) if _cells(line) == COST_HEADER)
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        row = dict(zip(COST_HEADER, _cells(line), strict=True))
        rows[row["model"]] = row
    return rows


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split(" | ")]


def test_card_shows_cost_and_judge_noise_per_cell_by_hand(tmp_path: Path) -> None:
    first, _ = two_sources(tmp_path / "runs")
    costly = [
        trace("rz", "cellZ", t, a, 10_000, 0, 99.0) for t, _, _ in TASKS for a in ("se", "sd")
    ]
    other = write_run(tmp_path / "other", "rz", "cellZ", "m-second", costly)
    repo = tmp_path / "repo"
    build_repo([Path(first) / "r1", Path(other) / "rz"], repo, repo_id="org/results")
    rows = _cost_rows((repo / "README.md").read_text())
    judged = rows["m-first"]
    # r1: SE (120 + 120) / 2 tokens, (2.0 + 3.0) / 2 s; SD (60 + 60) / 2, (1.0 + 0.5) / 2
    assert [judged[k] for k in COST_HEADER[4:11]] == [
        "2 / 2", "120", "60", "+60", "2.50", "0.75", "+1.75",
    ]  # fmt: skip
    # 8 repeated items, 2 disagreeing; one tie; b flip t1 has a fragile answer, c flip t2 not
    assert [judged[k] for k in COST_HEADER[11:]] == [
        "25.0 %", "1", "0", "1 of 1 / 0 of 1", "1 / 0",
    ]  # fmt: skip
    plain = rows["m-second"]  # a benchmark-like cell: cost only
    assert [plain[k] for k in COST_HEADER[4:11]] == [
        "3 / 3", "10,000", "10,000", "+0", "99.00", "99.00", "+0.00",
    ]  # fmt: skip
    assert (
        plain["judge self-disagreement"] == "n/a"
        and plain["addressing a grader SE / SD"] == "0 / 0"
    )


def test_a_second_push_pools_the_cost_of_both_runs(tmp_path: Path) -> None:
    first, _ = two_sources(tmp_path / "runs")
    repo = tmp_path / "repo"
    build_repo([Path(first) / "r1"], repo, repo_id="org/results")
    more = [trace("r2", "cellK", t, "se", 200, 0, 4.0) for t, _, _ in TASKS]
    more += [trace("r2", "cellK", t, "sd", 100, 0, 2.0) for t, _, _ in TASKS]
    second = write_run(tmp_path / "more", "r2", "cellK", "m-first", more)
    build_repo([Path(second) / "r2"], repo, repo_id="org/results")
    row = _cost_rows((repo / "README.md").read_text())["m-first"]
    # SE (240 + 600) / 5 tokens and (5 + 12) / 5 s; SD (120 + 300) / 5 and (1.5 + 6) / 5
    assert [row[k] for k in COST_HEADER[4:11]] == [
        "5 / 5", "168", "84", "+84", "3.40", "1.50", "+1.90",
    ]  # fmt: skip
    # the judge figures are r1's; both runs' flips count in b and c
    assert [row[k] for k in COST_HEADER[11:]] == ["25.0 %", "1", "0", "1 of 2 / 0 of 2", "1 / 0"]


def test_runs_without_traces_leave_the_section_out(tmp_path: Path) -> None:
    first, _ = two_sources(tmp_path / "runs")
    (Path(first) / "r1" / "traces.parquet").unlink()
    repo = tmp_path / "repo"
    build_repo([Path(first) / "r1"], repo, repo_id="org/results")
    assert "Cost per task and the judge's noise" not in (repo / "README.md").read_text()


def _second_run(tmp_path: Path) -> Path:
    more = [trace("r2", "cellK", t, "se", 200, 0, 4.0) for t, _, _ in TASKS]
    more += [trace("r2", "cellK", t, "sd", 100, 0, 2.0) for t, _, _ in TASKS]
    return Path(write_run(tmp_path / "more", "r2", "cellK", "m-first", more)) / "r2"


def test_counts_rebuilt_from_the_rows_sum_the_published_traces(tmp_path: Path) -> None:
    first, _ = two_sources(tmp_path / "runs")
    repo = tmp_path / "repo"
    build_repo([Path(first) / "r1"], repo, repo_id="org/results")
    for name in ("runs.parquet", "summary.json"):  # a repo written before these files
        (repo / "stats" / name).unlink()
    build_repo([_second_run(tmp_path)], repo, repo_id="org/results")
    row = _cost_rows((repo / "README.md").read_text())["m-first"]
    # r1 recounted from its published transitions and traces files: the same pooled figures
    assert [row[k] for k in COST_HEADER[4:8]] == ["5 / 5", "168", "84", "+84"]
    assert row["judge self-disagreement"] == "25.0 %"


def test_an_unreadable_published_traces_file_is_named(tmp_path: Path) -> None:
    import pytest

    from hf_skillfollow.hub import HubError

    first, _ = two_sources(tmp_path / "runs")
    repo = tmp_path / "repo"
    build_repo([Path(first) / "r1"], repo, repo_id="org/results")
    (repo / "stats" / "runs.parquet").unlink()
    (repo / "data" / "traces" / "r1.parquet").write_bytes(b"not parquet")
    with pytest.raises(HubError, match=r"data/traces/r1\.parquet: not a readable traces file"):
        build_repo([_second_run(tmp_path)], repo, repo_id="org/results")

"""Verification records through `push`: beside the runs, append-only, on the card.

The repo is the recording `HfApi` double of test_hub_push_double (huggingface.co cannot be
reached from here); the records are written by hand so that every expected mark is worked
out by hand: run-a0 holds 12 of cell A's 20 rows, all re-scored, one SE verdict differing.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from hf_skillfollow.hub import HubError, push_runs
from hf_skillfollow.schema import verifications_from_rows
from hf_skillfollow.verify._record import record_bytes
from tests._fixtures_hub import two_cell_runs
from tests.test_hub_push_double import RecordingHfApiDouble

VID = "20250101T000000-abcdef12"


def _record(run_dir: Path, *, flip_task: str | None, vid: str = VID) -> Path:
    rows = []
    for t in pq.read_table(run_dir / "transitions.parquet").to_pylist():
        se_rescored = t["se_correct"] != (t["task_id"] == flip_task)
        rows.append(
            {
                "schema_version": 1, "verification_id": vid, "verified_at": "2025-01-01T00:00:00+00:00",
                "verified_by": "alice@lab", "machine": "lab-1 (Linux)", "toolkit_version": "0.1.0",
                "scorer_version": "1", "benchmark": t["benchmark"], "benchmark_version": t["benchmark_version"],
                "benchmark_release": t["benchmark_version"], "run_id": t["run_id"], "cell_id": t["cell_id"],
                "task_id": t["task_id"], "se_recorded": t["se_correct"], "se_rescored": se_rescored,
                "sd_recorded": t["sd_correct"], "sd_rescored": t["sd_correct"],
                "se_reason": "re-scored reason", "sd_reason": "re-scored reason",
            }
        )  # fmt: skip
    folder = run_dir / "verifications"
    folder.mkdir(exist_ok=True)
    path = folder / f"{vid}--{run_dir.name}.parquet"
    path.write_bytes(record_bytes(verifications_from_rows(rows)))
    return path


def test_record_is_pushed_beside_its_run_and_marks_the_card(tmp_path: Path) -> None:
    runs = two_cell_runs(tmp_path / "runs")
    api = RecordingHfApiDouble(tmp_path)
    push_runs(runs, "org/results", api=api)
    flipped = sorted(pq.read_table(runs[0] / "transitions.parquet")["task_id"].to_pylist())[0]
    record = _record(runs[0], flip_task=flipped)
    result = push_runs(runs, "org/results", api=api)  # the run dirs carry their records
    assert api.commits[-1]["paths"] == ["README.md", f"data/verifications/{record.name}"]
    assert result.added == {f"data/verifications/{record.name}": 12}
    card = api.files["README.md"].decode()
    assert "config_name: verifications" in card
    cells = card.split("### Cost per task")[0]  # the cells table, not the cost section's rows
    marks = [line.rsplit("|", 2)[1].strip() for line in cells.splitlines() if "org/model-" in line]
    assert sorted(marks) == ["not re-scored", "✗ 11/20"]  # cell A: 12 of 20 re-scored, 1 differs
    assert f"| `run-a0` | {flipped} | se |" in card and "alice@lab" in card
    again = push_runs([record], "org/results", api=api)  # the same record alone: nothing new
    assert not again.changed and again.skipped == [f"data/verifications/{record.name}"]


def test_records_are_never_rewritten_and_only_join_their_runs(tmp_path: Path) -> None:
    runs = two_cell_runs(tmp_path / "runs")
    api = RecordingHfApiDouble(tmp_path)
    push_runs(runs[:1], "org/results", api=api)
    stray = _record(runs[1], flip_task=None)
    with pytest.raises(HubError, match="verifies run 'run-a1', which is not in"):
        push_runs([stray], "org/results", api=api)
    record = _record(runs[0], flip_task=None)
    push_runs([record], "org/results", api=api)
    _record(runs[0], flip_task=sorted(pq.read_table(record)["task_id"].to_pylist())[0])
    with pytest.raises(HubError, match="already published with other content"):
        push_runs([record], "org/results", api=api)

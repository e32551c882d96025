"""Run records: append-only, torn-tail tolerant, rebuilt into schema-valid parquet."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from hf_skillfollow.schema import SchemaError
from hf_skillfollow.store import RunDirError, RunStore


def _record(task_id: str, **transition: object) -> dict:
    from tests._rows import transition_row

    row = transition_row(task_id=task_id, **transition)
    return {"task_id": task_id, "transition": row, "traces": []}


def test_torn_last_line_is_ignored_and_repaired(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.append_record(_record("a"))
    store.append_record(_record("b"))
    with open(tmp_path / "records.jsonl", "a") as fh:
        fh.write('{"task_id": "c", "transi')  # a crash in the middle of a write
    assert [r["task_id"] for r in store.read_records()] == ["a", "b"]
    store.repair_tail()
    store.append_record(_record("c"))
    assert [r["task_id"] for r in store.read_records()] == ["a", "b", "c"]


def test_corruption_before_the_last_line_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "records.jsonl").write_text('{"task_id": "a"}\nnot json\n{"task_id": "b"}\n')
    with pytest.raises(RunDirError, match="line 2"):
        RunStore(tmp_path).read_records()


def test_duplicate_records_keep_the_first(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.append_record(_record("a", se_correct=True))
    store.append_record(_record("a", se_correct=False))
    assert [r["transition"]["se_correct"] for r in store.read_records()] == [True]


def test_missing_manifest_names_the_directory(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match=str(tmp_path)):
        RunStore(tmp_path).read_manifest()


def test_manifest_round_trip_is_atomic(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    store.write_manifest({"run_id": "r1", "task_ids": ["x"]})
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["run_id"] == "r1"
    assert not list((tmp_path / "run").glob(".*tmp"))


def test_write_tables_rejects_rows_outside_the_schema(tmp_path: Path) -> None:
    bare = {"task_id": "a", "transition": {"task_id": "a"}, "traces": []}
    (tmp_path / "records.jsonl").write_text(json.dumps(bare) + "\n")  # written by hand
    with pytest.raises(ValueError, match="records.jsonl"):
        RunStore(tmp_path).write_tables()
    assert not (tmp_path / "transitions.parquet").exists()


@pytest.mark.parametrize(
    "record,message",
    [
        (
            {"task_id": "a", "transition": {"task_id": "a"}, "traces": []},
            "column 'schema_version' has 1 null",
        ),
        ({"task_id": "a", "transition": {}, "traces": [], "x": 1}, "not \\['task_id'"),
        (_record("b") | {"task_id": "a"}, "the transition is task 'b'"),
        (_record("a", n_calls="three"), "column 'n_calls'"),
    ],
    ids=["bare transition", "unknown key", "other task", "wrong type"],
)
def test_a_record_outside_the_schema_is_refused_when_appended(
    tmp_path: Path, record: dict, message: str
) -> None:
    store = RunStore(tmp_path)
    store.append_record(_record("ok"))
    with pytest.raises(SchemaError, match=message):
        store.append_record(record)
    assert [r["task_id"] for r in store.read_records()] == ["ok"]  # nothing half-written


def test_write_tables_from_valid_records(tmp_path: Path) -> None:
    from tests._rows import transition_row

    store = RunStore(tmp_path)
    for tid in ("t1", "t2"):
        store.append_record(
            {"task_id": tid, "transition": transition_row(task_id=tid), "traces": []}
        )
    n, m = store.write_tables()
    assert (n, m) == (2, 0)
    assert pq.read_table(tmp_path / "transitions.parquet").column("task_id").to_pylist() == [
        "t1",
        "t2",
    ]

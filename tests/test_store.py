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


def test_torn_last_line_is_ignored_and_set_aside(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.append_record(_record("a"))
    store.append_record(_record("b"))
    with open(tmp_path / "records.jsonl", "a") as fh:
        fh.write('{"task_id": "c", "transi')  # a crash in the middle of a write
    assert [r["task_id"] for r in store.read_records()] == ["a", "b"]
    notes = store.recover()
    assert len(notes) == 1 and "records.jsonl" in notes[0] and "cut off" in notes[0]
    assert (tmp_path / "records.rejected").read_text() == '{"task_id": "c", "transi\n'
    store.append_record(_record("c"))
    assert [r["task_id"] for r in store.read_records()] == ["a", "b", "c"]
    assert store.recover() == []  # nothing left to repair


BAD_LINES = {
    "garbage": b"not json at all",
    "empty object": b"{}",
    "invalid utf-8": b'{"task_id": "\xff\xfe"}',
    "a list": b"[1, 2]",
    "no transition": b'{"task_id": "x", "traces": []}',
}


def _with_bad_line(tmp_path: Path, bad: bytes) -> RunStore:
    store = RunStore(tmp_path)
    store.append_record(_record("a"))
    with open(tmp_path / "records.jsonl", "ab") as fh:
        fh.write(bad + b"\n")
    store.append_record(_record("b"))
    return store


@pytest.mark.parametrize("kind", sorted(BAD_LINES))
def test_bad_middle_line_is_refused_with_file_line_and_a_way_out(tmp_path: Path, kind: str) -> None:
    store = _with_bad_line(tmp_path, BAD_LINES[kind])
    before = (tmp_path / "records.jsonl").read_bytes()
    with pytest.raises(RunDirError) as info:
        store.recover()
    message = str(info.value)
    assert f"{tmp_path / 'records.jsonl'}:2:" in message and "\n" not in message
    assert "--set-aside-bad-records" in message
    assert (tmp_path / "records.jsonl").read_bytes() == before  # refusing changes nothing
    with pytest.raises(RunDirError, match="records.jsonl:2:"):
        store.read_records()


@pytest.mark.parametrize("kind", sorted(BAD_LINES))
def test_set_aside_moves_the_bad_line_and_keeps_its_bytes(tmp_path: Path, kind: str) -> None:
    store = _with_bad_line(tmp_path, BAD_LINES[kind])
    notes = store.recover(set_aside=True)
    assert len(notes) == 1 and "line 2" in notes[0]
    assert (tmp_path / "records.rejected").read_bytes() == BAD_LINES[kind] + b"\n"
    assert [r["task_id"] for r in store.read_records()] == ["a", "b"]
    assert store.recover() == []  # a later resume is not refused


def test_terminated_bad_last_line_is_not_skipped_silently(tmp_path: Path) -> None:
    # A complete line that is garbage is not a torn write: appending after it would bury it
    # in the middle of the file, where every later resume would refuse it.
    store = RunStore(tmp_path)
    store.append_record(_record("a"))
    with open(tmp_path / "records.jsonl", "ab") as fh:
        fh.write(b"garbage\n")
    with pytest.raises(RunDirError, match="records.jsonl:2:"):
        store.recover()


def test_record_of_another_run_is_refused(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.append_record(_record("a"))  # transition_row's run_id is "run-1"
    with pytest.raises(RunDirError, match="records.jsonl:1: a record of run 'run-1'"):
        store.recover(run_id="run-2")


def test_record_breaking_the_schema_is_refused_at_recover(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.append_record(_record("a"))
    bad = _record("b", returned=True)  # returned without invoked: written by hand
    with open(tmp_path / "records.jsonl", "a") as fh:
        fh.write(json.dumps(bad) + "\n")
    with pytest.raises(RunDirError, match="records.jsonl:2: task 'b'.*returned without invoked"):
        store.recover()


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
    with pytest.raises(ValueError, match="records.jsonl:1: task 'a'.*column 'schema_version'"):
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

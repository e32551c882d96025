"""`read_transitions`: duplicate (run_id, task_id) pairs are refused with the pair and the place."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from hf_skillfollow.schema import TRANSITIONS_SCHEMA, transitions_from_rows
from hf_skillfollow.sources import _DICTIONARY_COLUMNS, SourceError, read_transitions
from tests._rows import transition_row


def _write(path: Path, pairs: list[tuple[str, str]]) -> Path:
    rows = [transition_row(run_id=run, task_id=task) for run, task in pairs]
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(transitions_from_rows(rows), path)
    return path


def test_distinct_pairs_load_even_when_their_concatenations_collide(tmp_path: Path) -> None:
    # ("r", "un-1/x") and ("run-1/", "x")-style pairs must not be mistaken for one another.
    a = _write(tmp_path / "a.parquet", [("r1", "Mbpp/12"), ("r1", "Mbpp/2")])
    b = _write(tmp_path / "b.parquet", [("r1M", "bpp/12"), ("r2", "Mbpp/12")])
    table = read_transitions(a, b)
    pairs = zip(table["run_id"].to_pylist(), table["task_id"].to_pylist(), strict=True)
    assert sorted(pairs) == [
        ("r1", "Mbpp/12"), ("r1", "Mbpp/2"), ("r1M", "bpp/12"), ("r2", "Mbpp/12"),
    ]  # fmt: skip


def test_a_pair_twice_in_one_file_names_the_pair_and_the_file(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "t.parquet",
        [("r1", "Mbpp/1"), ("r1", "Mbpp/2"), ("r2", "Mbpp/3"), ("r1", "Mbpp/2"), ("r2", "Mbpp/3")],
    )
    with pytest.raises(SourceError) as err:
        read_transitions(path)
    assert str(err.value) == (
        f"duplicate (run_id, task_id) = ('r1', 'Mbpp/2') twice in {path} (2 duplicated pair(s) "
        "in all); each task of a run must appear once"
    )


def test_a_pair_in_two_sources_names_both(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.parquet", [("r1", "Mbpp/1"), ("r1", "Mbpp/2")])
    b = _write(tmp_path / "b.parquet", [("r9", "Mbpp/1"), ("r1", "Mbpp/2")])
    with pytest.raises(SourceError, match=r"\('r1', 'Mbpp/2'\) in .*a\.parquet and .*b\.parquet"):
        read_transitions(b, a)


def test_a_parquet_file_reads_back_equal_to_its_rows_with_plain_string_columns(
    tmp_path: Path,
) -> None:
    """The identity columns are read as dictionaries for speed; what comes back is the
    schema's plain strings, value for value."""
    rows = [
        transition_row(run_id=f"r{i % 3}", task_id=f"Mbpp/{i}", model=f"org/m{i % 3}")
        for i in range(9)
    ]
    written = transitions_from_rows(rows)
    path = tmp_path / "t.parquet"
    pq.write_table(written, path)
    table = read_transitions(path)
    assert {"model", "run_id", "cell_id"} <= set(_DICTIONARY_COLUMNS)
    assert table.schema.equals(TRANSITIONS_SCHEMA) and table.equals(written)
    assert table["model"].to_pylist() == [f"org/m{i % 3}" for i in range(9)]


def test_sparse_pairs_find_the_same_duplicate_as_dense_ones(tmp_path: Path) -> None:
    """Dense keys (2 runs x 4 tasks) are counted, sparse ones (40 runs x 40 tasks, 42 rows)
    sorted: both name the duplicated pair met first in row order and count every one."""
    dense = [(f"r{i % 2}", f"T/{i // 2}") for i in range(8)] + [("r0", "T/3"), ("r1", "T/2")]
    sparse = [(f"r{i}", f"T/{i}") for i in range(40)] + [("r7", "T/7"), ("r3", "T/3")]
    for name, pairs, first in (("dense", dense, ("r1", "T/2")), ("sparse", sparse, ("r3", "T/3"))):
        path = _write(tmp_path / f"{name}.parquet", pairs)
        with pytest.raises(SourceError) as err:
            read_transitions(path)
        assert f"= {first!r} twice in {path} (2 duplicated pair(s) in all)" in str(err.value)


def _measured_everywhere(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every file counts as one whose footer cannot bound it (the 10^6-row case), and each
    `ParquetFile.read` is recorded by the columns it reads (None: all)."""
    from hf_skillfollow.hub import _budget

    monkeypatch.setattr(_budget, "_CHEAP_BOUND", 0)
    reads: list[object] = []
    original = pq.ParquetFile.read

    def read(self, columns=None, **kwargs):  # noqa: ANN001, ANN202
        reads.append(None if columns is None else tuple(columns))
        return original(self, columns=columns, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read", read)
    return reads


def test_a_budgeted_read_measures_and_uses_one_read_with_the_same_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The board's read (`budget=`) reads each column once and gives what a plain read gives."""
    from hf_skillfollow.hub._budget import TRANSITIONS

    rows = [
        transition_row(run_id=f"r{i % 3}", task_id=f"Mbpp/{i}", model=f"org/m{i % 3}",
                       queries=["q"] * (i % 2), n_calls=i % 2, invoked=bool(i % 2))
        for i in range(9)
    ]  # fmt: skip
    written = transitions_from_rows(rows)
    path = tmp_path / "t.parquet"
    pq.write_table(written, path)
    reads = _measured_everywhere(monkeypatch)
    table = read_transitions(path, budget=TRANSITIONS)
    assert table.schema.equals(TRANSITIONS_SCHEMA) and table.equals(written)
    assert table.equals(read_transitions(path))
    budgeted = reads[:2]  # the budgeted read: the strings, then the other columns
    columns = [c for cols in budgeted if cols is not None for c in cols]
    assert None not in budgeted and len(columns) == len(set(columns)) == len(written.schema)


def test_a_budgeted_read_refuses_with_the_budget_checks_own_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hf_skillfollow.hub import _budget

    path = tmp_path / "t.parquet"
    pq.write_table(transitions_from_rows([transition_row(model="org/" + "m" * 40)]), path)
    _measured_everywhere(monkeypatch)
    small = _budget.Budget(file_bytes=1 << 30, decoded_bytes=1 << 30, string_chars=32, rows=10)
    monkeypatch.setitem(_budget.BUDGETS, "transitions", small)
    with pytest.raises(_budget.BudgetError) as checked:
        _budget.check_files([path], "transitions", str(path))
    with pytest.raises(_budget.BudgetError) as read:
        read_transitions(path, budget=small)
    assert str(read.value) == str(checked.value)
    assert "'model' holds a value of 44 bytes" in str(read.value)
    fewer = _budget.Budget(file_bytes=1 << 30, decoded_bytes=1 << 30, string_chars=64, rows=0)
    with pytest.raises(_budget.BudgetError, match="passes 0 rows"):
        read_transitions(path, budget=fewer)
    assert read_transitions(path).num_rows == 1  # unbudgeted (report) reads as before


def test_a_budgeted_read_of_other_columns_says_which_are_missing(tmp_path: Path) -> None:
    """The identity columns asked for as dictionaries may be absent: the schema check names
    them, as the unbudgeted read does (pyarrow's reader refused such a file with a KeyError)."""
    import pyarrow as pa

    from hf_skillfollow.hub._budget import TRANSITIONS
    from hf_skillfollow.schema import SchemaError

    path = tmp_path / "other.parquet"
    pq.write_table(pa.table({"foo": [1, 2]}), path)
    for budget in (TRANSITIONS, None):
        with pytest.raises(SchemaError, match=r"other\.parquet: missing column\(s\) \['schema"):
            read_transitions(path, budget=budget)


def test_dictionaries_leave_the_strings_as_read_with_the_same_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`dictionaries=True` (the board's cold start) returns the string columns read as
    dictionaries unexpanded, of row groups with their own dictionaries; expanded
    (`schema.plain`) they are the written rows, with or without the read budget."""
    import pyarrow as pa

    from hf_skillfollow.hub._budget import TRANSITIONS
    from hf_skillfollow.schema import plain

    rows = [
        transition_row(run_id=f"r{i // 3}", task_id=f"Mbpp/{i}", model=f"org/m{i % 4}")
        for i in range(10)
    ]
    written = transitions_from_rows(rows)
    path = tmp_path / "t.parquet"
    pq.write_table(written, path, row_group_size=4)
    for budget, measured in ((None, False), (TRANSITIONS, False), (TRANSITIONS, True)):
        if measured:  # every string column read as a dictionary, task ids included
            _measured_everywhere(monkeypatch)
        table = read_transitions(path, budget=budget, dictionaries=True)
        assert table["model"].num_chunks == 3
        assert pa.types.is_dictionary(table["model"].type)
        assert pa.types.is_dictionary(table["task_id"].type) == measured
        expanded = plain(table, TRANSITIONS_SCHEMA)
        assert expanded.schema.equals(TRANSITIONS_SCHEMA, check_metadata=True)
        assert expanded.equals(written)


def test_duplicates_are_found_through_the_dictionaries_of_several_row_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pair repeated in another row group (another dictionary, other indices) is the same
    pair: the same error as a plain read's."""
    from hf_skillfollow.hub._budget import TRANSITIONS

    pairs = [(f"r{i % 3}", f"T/{i}") for i in range(7)] + [("r2", "T/5"), ("r1", "T/4")]
    rows = [transition_row(run_id=run, task_id=task) for run, task in pairs]
    path = tmp_path / "t.parquet"
    pq.write_table(transitions_from_rows(rows), path, row_group_size=3)
    with pytest.raises(SourceError) as plain_error:
        read_transitions(path)
    _measured_everywhere(monkeypatch)  # run and task ids both dictionaries
    with pytest.raises(SourceError) as dictionary_error:
        read_transitions(path, budget=TRANSITIONS, dictionaries=True)
    assert str(dictionary_error.value) == str(plain_error.value)
    assert "= ('r1', 'T/4') twice" in str(plain_error.value)
    assert "(2 duplicated pair(s) in all)" in str(plain_error.value)


def test_a_file_read_with_dictionaries_beside_one_without_gives_plain_strings(
    tmp_path: Path,
) -> None:
    import json

    a = _write(tmp_path / "a.parquet", [("r1", "T/1"), ("r1", "T/2")])
    b = tmp_path / "b.jsonl"
    b.write_text(json.dumps(transition_row(run_id="r2", task_id="T/1")) + "\n")
    table = read_transitions(a, b, dictionaries=True)
    assert table.schema.equals(TRANSITIONS_SCHEMA, check_metadata=True)
    assert table.equals(read_transitions(a, b))

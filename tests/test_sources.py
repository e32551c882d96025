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

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

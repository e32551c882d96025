"""Pooling sums counts across config-identical runs; it never averages per-run rates."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from hf_skillfollow.metrics import compute_cells
from tests._cells import rows_for, table_for

# run-1: S_call b=2 (RAE +100); run-2: S_call a=4 c=2 d=2 (RAE -25). Same cell.
RUN1 = rows_for({"b": 2}, {"a": 3, "d": 1}, run_id="run-1")
RUN2 = rows_for({"a": 4, "c": 2, "d": 2}, {"a": 1, "b": 1}, run_id="run-2", repeat_index=1, seed=1)


def test_pooled_rae_sums_counts() -> None:
    cells = compute_cells(table_for(RUN1, RUN2), resamples=200)
    assert len(cells) == 1
    cell = cells.iloc[0]
    assert cell.n_runs == 2 and cell.n_cond == 10 and (cell.b_cond, cell.c_cond) == (2, 2)
    assert cell.rae == 0.0  # 100 * (2 - 2) / 10
    mean_of_runs = (100.0 + -25.0) / 2
    assert not math.isclose(cell.rae, mean_of_runs)
    assert math.isclose(cell.oae, 100 * (3 - 2) / 16)


def test_no_pool_runs_keeps_each_run_apart() -> None:
    cells = compute_cells(table_for(RUN1, RUN2), pool_runs=False, resamples=200)
    assert list(cells["run_id"]) == ["run-1", "run-2"]
    assert list(cells["rae"]) == [100.0, -25.0]
    assert list(cells["n_runs"]) == [1, 1]


def test_different_cells_are_not_pooled_and_group_by_pools_them() -> None:
    other = rows_for({"c": 2}, {"a": 2}, run_id="run-3", cell_id="cell-2", condition="filler")
    cells = compute_cells(table_for(RUN1, RUN2, other), resamples=200)
    assert list(cells["cell_id"]) == ["cell-1", "cell-2"]
    assert list(cells["condition"]) == ["normal", "filler"]
    by_model = compute_cells(table_for(RUN1, RUN2, other), group_by=["model"], resamples=200)
    assert list(by_model.columns[:1]) == ["model"] and "cell_id" not in by_model.columns
    assert by_model.iloc[0].n_cond == 12 and by_model.iloc[0].n_runs == 3
    assert math.isclose(by_model.iloc[0].rae, 100 * (2 - 4) / 12)


def test_group_by_rejects_unknown_columns() -> None:
    with pytest.raises(ValueError, match="se_correct"):
        compute_cells(table_for(RUN1), group_by=["se_correct"])


def test_pandas_input_gives_the_same_cells_as_arrow() -> None:
    table = table_for(
        RUN1, RUN2, rows_for({"b": 1, "c": 3}, {"d": 2}, run_id="run-9", cell_id="x", adherent=2)
    )
    from_arrow = compute_cells(table, resamples=300)
    from_pandas = compute_cells(table.to_pandas(), resamples=300)
    pd.testing.assert_frame_equal(from_arrow, from_pandas)


def test_rows_of_one_run_in_any_order_give_the_same_cell() -> None:
    table = table_for(RUN1, RUN2)
    shuffled = table.take(list(reversed(range(table.num_rows))))
    pd.testing.assert_frame_equal(
        compute_cells(table, resamples=300), compute_cells(shuffled, resamples=300)
    )


def test_interleaved_rows_of_several_runs_are_grouped_like_contiguous_ones() -> None:
    other = rows_for({"c": 2, "b": 1}, {"a": 2, "d": 3}, run_id="run-3", cell_id="cell-2")
    contiguous = table_for(RUN1, RUN2, other)
    half = contiguous.num_rows // 2  # alternate rows of the first and second half
    order = [i for pair in zip(range(half), range(half, 2 * half), strict=True) for i in pair]
    order += list(range(2 * half, contiguous.num_rows))
    interleaved = contiguous.take(order)
    pd.testing.assert_frame_equal(
        compute_cells(contiguous, resamples=300), compute_cells(interleaved, resamples=300)
    )
    assert list(compute_cells(interleaved, resamples=300)["n_runs"]) == [2, 1]


def _as_dictionaries(table, names, chunks: int = 3):  # noqa: ANN001, ANN202
    """`table` with `names` as dictionary columns in `chunks` chunks, each chunk with its own
    dictionary that lists every value twice (in reverse order, which no parquet file does),
    consecutive rows pointing at alternate copies."""
    import pyarrow as pa

    bounds = [round(i * table.num_rows / chunks) for i in range(chunks + 1)]
    for name in names:
        parts = []
        for lo, hi in zip(bounds, bounds[1:], strict=False):
            values = table[name].slice(lo, hi - lo).to_pylist()
            words = sorted(set(values), reverse=True)
            at = {w: i for i, w in enumerate(words)}
            indices = [at[v] + (k % 2) * len(words) for k, v in enumerate(values)]
            parts.append(pa.DictionaryArray.from_arrays(
                pa.array(indices, pa.int32()), pa.array(words * 2)))  # fmt: skip
        column = pa.chunked_array(parts)
        table = table.set_column(table.schema.get_field_index(name), name, column)
    return table


def test_dictionary_encoded_identity_columns_give_the_same_cells_as_plain_strings() -> None:
    """The board's cold start groups identity columns read as dictionaries by their indices:
    chunks with different dictionaries and a dictionary naming a value twice must still give
    the cells the plain strings give (the rows of a run split only into more segments)."""
    other = rows_for({"c": 2, "b": 1}, {"a": 2, "d": 3}, run_id="run-3", cell_id="cell-2",
                     model="org/other")  # fmt: skip
    plain = table_for(RUN1, RUN2, other)
    names = ["run_id", "cell_id", "model", "benchmark", "condition", "created_at", "task_id"]
    encoded = _as_dictionaries(plain, names)
    assert encoded["model"].num_chunks == 3 and str(encoded["model"].type).startswith("dictionary")
    for pool_runs in (True, False):
        expected = compute_cells(plain, pool_runs=pool_runs, resamples=300)
        pd.testing.assert_frame_equal(
            compute_cells(encoded, pool_runs=pool_runs, resamples=300), expected
        )
    assert list(compute_cells(encoded, resamples=300)["n_runs"]) == [2, 1]

"""Column access for pyarrow Tables and pandas DataFrames, as numpy arrays.

The metrics take either container; this module is the only place that knows the difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hf_skillfollow.columns import METRIC_INPUTS

#: Outcome columns every transitions input must carry for the paired metrics.
REQUIRED_OUTCOMES: tuple[str, ...] = METRIC_INPUTS


def column_names(data: Any) -> list[str]:
    if _is_arrow(data):
        return list(data.column_names)
    return [str(c) for c in data.columns]


def n_rows(data: Any) -> int:
    return int(data.num_rows) if _is_arrow(data) else len(data)


def require_columns(data: Any, names: Sequence[str], what: str) -> None:
    have = set(column_names(data))
    missing = [n for n in names if n not in have]
    if missing:
        raise ValueError(f"transitions data: missing {what} column(s) {missing}")


def bool_column(data: Any, name: str) -> np.ndarray:
    """A non-nullable boolean column; a null is an error naming the column."""
    values, known = nullable_bool_column(data, name)
    if not known.all():
        raise ValueError(
            f"transitions data: column {name!r} has {int((~known).sum())} null value(s)"
        )
    return values


def nullable_bool_column(data: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(values with nulls as False, known mask)."""
    if _is_arrow(data):
        import pyarrow.compute as pc

        col = data.column(name)
        known = pc.is_valid(col).to_numpy(zero_copy_only=False)
        values = pc.fill_null(col.cast("bool"), False).to_numpy(zero_copy_only=False)
        return values.astype(bool, copy=False), known.astype(bool, copy=False)
    series = data[name]
    known = series.notna().to_numpy()
    values = series.where(known, False).astype(bool).to_numpy()
    return values, known


def nonempty_column(data: Any, name: str) -> np.ndarray:
    """Whether each row of a string column holds text (null and "" are False); all False
    when the column is absent (rows written before it, or a minimal frame)."""
    if name not in column_names(data):
        return np.zeros(n_rows(data), dtype=bool)
    if _is_arrow(data):
        return _nonempty_arrow(data.column(name))
    series = data[name]
    return (series.notna() & (series.astype(str).str.len() > 0)).to_numpy(dtype=bool)


def _nonempty_arrow(column: Any) -> np.ndarray:
    """`nonempty_column` of one Arrow column, from the string lengths alone: a
    dictionary-encoded column is measured on its dictionary, never decoded row by row (the
    board's tables hold providers' error texts), and an all-null column is all False."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_null(column.type):
        return np.zeros(len(column), dtype=bool)
    parts = [np.zeros(0, dtype=bool)]
    for chunk in column.chunks:
        if pa.types.is_dictionary(chunk.type):
            lengths = pc.take(pc.binary_length(chunk.dictionary), chunk.indices)
        else:
            lengths = pc.binary_length(chunk)
        parts.append(pc.fill_null(lengths, 0).to_numpy(zero_copy_only=False) > 0)
    return np.concatenate(parts)


def int_column(data: Any, name: str) -> np.ndarray:
    """A non-nullable integer column as int64."""
    if _is_arrow(data):
        return data.column(name).to_numpy().astype(np.int64, copy=False)
    return data[name].to_numpy(dtype=np.int64)


def factorize(data: Any, name: str) -> tuple[np.ndarray, int]:
    """(integer codes in order of first appearance, number of distinct values); nulls count as a value."""
    if _is_arrow(data):
        import pyarrow as pa

        col = data.column(name)
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        encoded = col.combine_chunks().dictionary_encode(null_encoding="encode")
        return encoded.indices.to_numpy(zero_copy_only=False), len(encoded.dictionary)
    import pandas as pd

    codes, uniques = pd.factorize(data[name], use_na_sentinel=False)
    return codes, len(uniques)


def segment_starts(data: Any, names: Sequence[str]) -> np.ndarray:
    """Rows where any of `names` differs from the row before (row 0 included).

    Runs are stored as contiguous rows, so this finds a few segments among many rows.
    Unequal-looking equal values (NaN, null) only split a segment more than needed.
    """
    n = n_rows(data)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for name in names:
        change[1:] |= _changes(data, name)
    return np.flatnonzero(change)


def _changes(data: Any, name: str) -> np.ndarray:
    if _is_arrow(data):
        import pyarrow as pa
        import pyarrow.compute as pc

        col = data.column(name)
        if pa.types.is_dictionary(col.type):
            return _index_changes(col)
        col = col.combine_chunks()
        n = len(col)
        differs = pc.fill_null(pc.not_equal(col.slice(1), col.slice(0, n - 1)), True)
        return differs.to_numpy(zero_copy_only=False)
    values = data[name].to_numpy()
    return np.asarray(values[1:] != values[:-1], dtype=bool)


def _index_changes(column: Any) -> np.ndarray:
    """`_changes` of a dictionary-encoded column from its indices, without decoding a value:
    equal indices in a chunk are equal values; every chunk's first row counts as a change
    (its dictionary may differ), and so does a value its dictionary repeats, which only
    splits a segment more."""
    import pyarrow.compute as pc

    parts = []
    for chunk in column.chunks:
        if len(chunk):
            codes = pc.fill_null(chunk.indices, -1).to_numpy(zero_copy_only=False)
            parts += [np.ones(1, dtype=bool), codes[1:] != codes[:-1]]
    return np.concatenate(parts)[1:] if parts else np.zeros(0, dtype=bool)


def take_rows(data: Any, names: Sequence[str], rows: np.ndarray) -> Any:
    """The given rows of the given columns, in the same container type."""
    if _is_arrow(data):
        return data.select(list(names)).take(rows)
    return data[list(names)].iloc[rows].reset_index(drop=True)


def take(data: Any, name: str, rows: np.ndarray) -> list[Any]:
    """Values of one column at the given row positions, as Python objects."""
    if _is_arrow(data):
        import pyarrow as pa

        values = data.column(name).take(rows)
        if pa.types.is_dictionary(values.type):  # its to_pylist goes value by value
            values = values.cast(values.type.value_type)
        return values.to_pylist()
    return data[name].iloc[rows].tolist()


def _is_arrow(data: Any) -> bool:
    return hasattr(data, "num_rows") and hasattr(data, "column_names")

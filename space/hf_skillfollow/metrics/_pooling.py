"""Pooling: which rows form one cell, so that counts are summed before any rate is taken.

Config-identical reruns share every cell identity column (their `cell_id` included), so
grouping by those columns pools them; `pool_runs=False` adds `run_id` to keep runs apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hf_skillfollow.columns import CELL_COLUMNS, IDENTITY_COLUMNS
from hf_skillfollow.metrics import _frame

#: Above this the mixed-radix key could overflow int64, so it is renumbered first.
_KEY_LIMIT = 2**62


@dataclass(frozen=True)
class Groups:
    codes: np.ndarray  # group of each row, 0..n_groups-1, numbered in order of first appearance
    n_groups: int
    first_row: np.ndarray  # a representative row of each group (its first)
    n_runs: np.ndarray  # distinct run_id values per group


def group_columns(group_by: Sequence[str] | None, pool_runs: bool) -> tuple[str, ...]:
    if group_by is None:
        keys = tuple(CELL_COLUMNS)
    else:
        if isinstance(group_by, str):  # "model,benchmark", as on the command line
            group_by = [c.strip() for c in group_by.split(",") if c.strip()]
        keys = tuple(dict.fromkeys(group_by))
        if not keys:
            raise ValueError("group_by: give at least one column")
        unknown = [k for k in keys if k not in IDENTITY_COLUMNS]
        if unknown:
            raise ValueError(
                f"group_by: {unknown} not identity column(s); choose from {list(IDENTITY_COLUMNS)}"
            )
    if not pool_runs and "run_id" not in keys:
        keys += ("run_id",)
    return keys


def make_groups(data: Any, keys: Sequence[str]) -> Groups:
    # Group contiguous segments, not rows: a run's rows share every key, so the hashing
    # works on thousands of segment heads instead of hundreds of thousands of rows.
    n = _frame.n_rows(data)
    columns = list(dict.fromkeys((*keys, "run_id")))
    starts = _frame.segment_starts(data, columns)
    heads = _frame.take_rows(data, columns, starts)
    seg_codes, n_groups = _combined_codes([_frame.factorize(heads, k) for k in keys], len(starts))
    codes = np.repeat(seg_codes, np.diff(np.append(starts, n)))
    run_codes, n_run_values = _frame.factorize(heads, "run_id")
    pairs, n_distinct = _combined_codes(
        [(seg_codes, n_groups), (run_codes, n_run_values)], len(starts)
    )
    pair_group = np.zeros(n_distinct, dtype=np.int64)
    pair_group[pairs] = seg_codes  # every segment of a (group, run) pair writes the same group
    n_runs = np.bincount(pair_group, minlength=n_groups).astype(np.int64)
    return Groups(
        codes=codes, n_groups=n_groups, first_row=starts[_first_rows(seg_codes)], n_runs=n_runs
    )


def _combined_codes(parts: Sequence[tuple[np.ndarray, int]], n: int) -> tuple[np.ndarray, int]:
    """Group codes for the combination of several factorized columns."""
    import pandas as pd

    key: np.ndarray | None = None
    span = 1
    for codes, card in parts:
        if card <= 1:  # a constant column splits nothing
            continue
        if key is None:
            key, span = codes.astype(np.int64), int(card)
            continue
        if span * card >= _KEY_LIMIT:
            key, uniques = pd.factorize(key)
            span = len(uniques)
        key = key * card + codes
        span *= int(card)
    if key is None:
        return np.zeros(n, dtype=np.int64), min(n, 1)
    # Numbered in order of first appearance (what `_first_rows` relies on).
    out, uniques = pd.factorize(key, sort=False)
    return out.astype(np.int64, copy=False), len(uniques)


def _first_rows(codes: np.ndarray) -> np.ndarray:
    if not len(codes):
        return np.zeros(0, dtype=np.int64)
    running = np.maximum.accumulate(codes)
    return np.flatnonzero(np.diff(running, prepend=-1) > 0)

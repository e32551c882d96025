"""The board's data: cells computed once at load, then only filtered.

All metrics come from `hf_skillfollow.metrics.compute_cells` over the loaded transitions, or
from the start-up cache of an earlier such computation over the same revisions (`_cache`).
Filters, thresholds and sorting work on the precomputed frame (masks over ~10^4 rows), so a
filter change never recomputes a bootstrap.

A cold start of the app may defer the bootstrap intervals (`load_board(defer_intervals=True)`):
the first view computes the intervals of the rows it shows (`with_intervals`), and
`Board.complete` computes every other one once the page is up; anything else that reads the
cells (a filter, the CSV, the drill-down, the API) waits for it, and the start-up cache is
written only with the complete cells.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from hf_skillfollow.space_app import _cache
from hf_skillfollow.space_app._sources import load_sources, resolve_sources
from hf_skillfollow.space_app._traces import TraceStore
from hf_skillfollow.space_app._verification import Rescoring, load_rescoring, with_rescored

#: Bootstrap resamples for the board's intervals. The protocol's default is 20,000; measured on
#: 2 cores it fits the first-render budget (see bench/space.py), so the Space keeps it.
DEFAULT_RESAMPLES = 20_000
THRESHOLDS: tuple[int, ...] = (5, 10, 15, 20)
DEFAULT_MIN_COND = 10
#: The bootstrap seed of every interval the board shows.
SEED = 0
# Columns the toolkit does not need for metrics; leaving them in arrow keeps load fast.
_HEAVY_COLUMNS = ("queries", "skills_returned", "se_error", "sd_error")


@dataclass
class Board:
    """Precomputed cells (pooled; per run computed on the first toggle) plus the rows behind them.

    The rows (`transitions`, `rescoring`) are read on first use when the cells came from the
    start-up cache (`_cache`): the first page needs only the cells.
    """

    #: The pooled cells; their interval columns are NaN while `_incomplete` (read `pooled`).
    _pooled: pd.DataFrame
    warnings: list[str]
    traces: TraceStore
    resamples: int
    load_rows: Callable[[], tuple[pa.Table | None, Rescoring]]
    sources: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    from_cache: bool = False
    _rows: tuple[pa.Table | None, Rescoring] | None = None
    _per_run: pd.DataFrame | None = None
    _views: dict[bool, pd.DataFrame] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _rows_lock: threading.Lock = field(default_factory=threading.Lock)
    _incomplete: bool = False
    #: Called with the complete cells once the deferred intervals are in (the cache write).
    _on_complete: Callable[[pd.DataFrame], None] | None = None
    _complete_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def pooled(self) -> pd.DataFrame:
        """The pooled cells, every interval included (computing the deferred ones first)."""
        self.complete()
        return self._pooled

    @property
    def empty(self) -> bool:
        return self._pooled.empty

    def complete(self) -> None:
        """Compute the intervals a deferred start left out; once, later callers wait for it."""
        if not self._incomplete:
            return
        with self._complete_lock:
            if not self._incomplete:
                return
            from hf_skillfollow.metrics import cell_intervals

            filled = self._pooled.assign(
                **cell_intervals(self._pooled, resamples=self.resamples, seed=SEED)
            )
            with self._lock:
                self._pooled = filled
                self._views.clear()
            self._incomplete = False
        if self._on_complete is not None:
            self._on_complete(filled)

    def complete_soon(self) -> None:
        """`complete` in a background thread (nothing when there is nothing left to do)."""
        if self._incomplete:
            threading.Thread(
                target=self.complete, name="skillfollow-intervals", daemon=True
            ).start()

    def first_view(self, columns: frozenset[str]) -> pd.DataFrame:
        """`view(False, columns)` without waiting for deferred intervals: NaN where they are
        not computed yet. Only for the start-up view, which fills its rows (`with_intervals`)."""
        with self._lock:
            return self._narrow(False, self._pooled, columns)

    def with_intervals(self, frame: pd.DataFrame, labels: pd.Index) -> pd.DataFrame:
        """`frame` (rows of `first_view`) with the intervals of the rows labelled `labels`
        computed, equal to those `complete` computes; unchanged when nothing is deferred."""
        if not self._incomplete or not len(labels):
            return frame
        from hf_skillfollow.metrics import cell_intervals

        found = cell_intervals(self._pooled.loc[labels], resamples=self.resamples, seed=SEED)
        out = frame.copy()
        for name, values in found.items():
            if name in out.columns:
                out.loc[labels, name] = values
        return out

    @property
    def transitions(self) -> pa.Table | None:
        return self._loaded_rows()[0]

    @property
    def rescoring(self) -> Rescoring:
        return self._loaded_rows()[1]

    def _loaded_rows(self) -> tuple[pa.Table | None, Rescoring]:
        with self._rows_lock:
            if self._rows is None:
                self._rows = self.load_rows()
            return self._rows

    def cells(self, runs_separately: bool = False) -> pd.DataFrame:
        if not runs_separately:
            return self.pooled
        self.complete()
        with self._lock:
            if self._per_run is None:
                per_run = _per_run_cells(
                    self.pooled, self.transitions, self.resamples, self.warnings
                )
                self._per_run = with_rescored(per_run, self.rescoring, per_run=True)
            return self._per_run

    def view(self, runs_separately: bool, columns: frozenset[str]) -> pd.DataFrame:
        """`columns` (and every derived `_` column) of the cells: what the table, plots and
        summary read, so a filter copies ~40 columns instead of ~100 (the CSV and "All
        columns" use `cells`). `columns` is the same set on every call."""
        wide = self.cells(runs_separately)
        with self._lock:
            return self._narrow(runs_separately, wide, columns)

    def _narrow(
        self, runs_separately: bool, wide: pd.DataFrame, columns: frozenset[str]
    ) -> pd.DataFrame:
        """The cached narrow view of `wide` (hold `_lock`; `complete` clears the cache)."""
        narrow = self._views.get(runs_separately)
        if narrow is None:
            keep = [c for c in wide.columns if c in columns or c.startswith("_")]
            narrow = self._views[runs_separately] = wide[keep]
        return narrow

    def task_rows(self, cell_id: str, run_id: str | None = None) -> pd.DataFrame:
        """The transitions rows of one cell (one run of it when `run_id` is given)."""
        transitions = self.transitions
        if transitions is None:
            return pd.DataFrame()
        mask = pc.equal(transitions["cell_id"], cell_id)
        if run_id:
            mask = pc.and_(mask, pc.equal(transitions["run_id"], run_id))
        return transitions.filter(mask).to_pandas()


def load_board(
    sources: Sequence[str] = (),
    *,
    resamples: int = DEFAULT_RESAMPLES,
    discover: bool | None = None,
    use_cache: bool = True,
    defer_intervals: bool = False,
) -> Board:
    """Resolve the sources, then read their cells from the start-up cache or compute every
    pooled cell once from the rows (and cache it).

    `defer_intervals`: on a cache miss, leave the bootstrap intervals to `Board.complete`
    (and the cache write with them), so that the first view only computes its own rows'.
    """
    t0 = time.perf_counter()
    names, warnings = resolve_sources(sources, discover=discover)
    key = _cache.board_key(names, resamples) if use_cache and names else None
    hit = _cache.read(key)
    if hit is not None:
        return Board(
            _pooled=_numpy_backed(hit.pooled),
            warnings=warnings + hit.warnings,
            traces=TraceStore(hit.run_source),
            resamples=resamples,
            load_rows=lambda: _rows_of(names),
            sources=hit.loaded,
            timings={"load_s": time.perf_counter() - t0, "metrics_s": 0.0},
            from_cache=True,
        )
    loaded = load_sources(names)
    t1 = time.perf_counter()
    problems: list[str] = []
    pooled = _cells(
        loaded.transitions,
        resamples,
        pool_runs=True,
        warnings=problems,
        intervals=not defer_intervals,
    )
    rescoring, unread = load_rescoring(loaded.loaded, loaded.transitions)
    pooled = _numpy_backed(with_rescored(pooled, rescoring, per_run=False))
    t2 = time.perf_counter()

    def write(complete: pd.DataFrame) -> None:
        entry = _cache.Entry(complete, loaded.warnings + unread, loaded.run_source, loaded.loaded)
        _cache.write(key, entry)

    cache = not problems and not pooled.empty
    deferred = defer_intervals and not pooled.empty
    if cache and not deferred:
        write(pooled)
    rows = (loaded.transitions, rescoring)
    return Board(
        _pooled=pooled,
        warnings=warnings + loaded.warnings + problems + unread,
        traces=TraceStore(loaded.run_source),
        resamples=resamples,
        load_rows=lambda: rows,
        sources=loaded.loaded,
        timings={"load_s": t1 - t0, "metrics_s": t2 - t1},
        _incomplete=deferred,
        _on_complete=write if cache and deferred else None,
    )


def _rows_of(sources: Sequence[str]) -> tuple[pa.Table | None, Rescoring]:
    """The rows behind cached cells, read when a drill-down or per-run view first needs them."""
    loaded = load_sources(sources)
    rescoring, _ = load_rescoring(loaded.loaded, loaded.transitions)
    return loaded.transitions, rescoring


def _cells(
    table: pa.Table | None,
    resamples: int,
    *,
    pool_runs: bool,
    warnings: list[str],
    intervals: bool = True,
) -> pd.DataFrame:
    if table is None or table.num_rows == 0:
        return _decorate(pd.DataFrame(columns=_empty_columns(pool_runs)), pool_runs)
    from hf_skillfollow.metrics import compute_cells

    data = table.drop_columns([c for c in _HEAVY_COLUMNS if c in table.column_names])
    try:
        cells = compute_cells(
            data,
            group_by=None,
            pool_runs=pool_runs,
            min_cond=DEFAULT_MIN_COND,
            resamples=resamples,
            seed=SEED,
            intervals=intervals,
        )
    except Exception as exc:  # a bug or bad value must not blank the page; say what failed
        warnings.append(
            f"Computing the cells failed ({type(exc).__name__}: {exc}); the board is empty"
        )
        return _decorate(pd.DataFrame(columns=_empty_columns(pool_runs)), pool_runs)
    return _decorate(cells.reset_index(drop=True), pool_runs)


def _per_run_cells(
    pooled: pd.DataFrame, table: pa.Table | None, resamples: int, warnings: list[str]
) -> pd.DataFrame:
    """Cells per run. A cell with a single run is its own per-run row, so only multi-run
    cells are recomputed. Intervals are a pure function of (counts, seed), so these rows equal
    a full `compute_cells(pool_runs=False)` exactly."""
    if table is None or table.num_rows == 0 or pooled.empty:
        return _decorate(pd.DataFrame(columns=_empty_columns(False)), False)
    multi = pooled.loc[pooled["n_runs"] > 1, "cell_id"].astype(str).tolist()
    parts = []
    single = pooled[pooled["n_runs"] <= 1]
    if len(single):
        run_of = _single_run_ids(table)
        parts.append(
            single[[c for c in pooled.columns if c in set(_empty_columns(True))]].assign(
                run_id=single["cell_id"].map(run_of)
            )
        )
    if multi:
        subset = table.filter(pc.is_in(table["cell_id"], pa.array(multi)))
        parts.append(_cells(subset, resamples, pool_runs=False, warnings=warnings))
    merged = pd.concat(parts, ignore_index=True)[_empty_columns(False)]
    return _decorate(merged, False)


def _single_run_ids(table: pa.Table) -> dict[str, str]:
    pairs = table.select(["cell_id", "run_id"]).group_by(["cell_id", "run_id"]).aggregate([])
    return dict(zip(pairs["cell_id"].to_pylist(), pairs["run_id"].to_pylist(), strict=True))


def _empty_columns(pool_runs: bool) -> list[str]:
    from hf_skillfollow.metrics import METRIC_COLUMNS
    from hf_skillfollow.schema import CELL_COLUMNS

    return list(CELL_COLUMNS) + ([] if pool_runs else ["run_id"]) + list(METRIC_COLUMNS)


def _decorate(cells: pd.DataFrame, pool_runs: bool) -> pd.DataFrame:
    """Add display labels, a drill-down key and the flags at every n_cond threshold.

    Everything a filter change needs is derived here once, so that filtering is masking.
    """
    out = cells.copy()
    out["partition"] = (
        "seed " + out["partition_seed"].astype(str) + " · " + out["partition_size"].astype(str)
    )
    out["pool_condition"] = out["skill_pool"].astype(str) + " / " + out["condition"].astype(str)
    if "access" in out:  # the paper's `search` is implied; another protocol is named
        other = out["access"].astype(str) != "search"
        out.loc[other, "pool_condition"] += " / " + out.loc[other, "access"].astype(str)
    out["_model_lc"] = out["model"].astype(str).str.lower()
    run = "" if pool_runs else " · " + out["run_id"].astype(str)
    out["label"] = (
        out["model"].astype(str)
        + " · "
        + out["benchmark"].astype(str)
        + " · "
        + out["pool_condition"]
        + " · "
        + out["partition"]
        + run
    )
    out["_key"] = (
        out["cell_id"].astype(str)
        if pool_runs
        else out["cell_id"].astype(str) + "|" + out["run_id"].astype(str)
    )
    n_cond = pd.to_numeric(out["n_cond"], errors="coerce").to_numpy(dtype=float)
    product = _floats(out["agg_lift"]) * _floats(out["rae"])
    for t in THRESHOLDS:
        reportable = n_cond >= t
        out[f"_rep_{t}"] = reportable
        out[f"_dis_{t}"] = reportable & (np.nan_to_num(product, nan=0.0) < 0)
    return _numpy_backed(out)


def _numpy_backed(cells: pd.DataFrame) -> pd.DataFrame:
    """Arrow-backed columns (pandas' `str` dtype, arrow identity values) as numpy ones:
    a pyarrow take() per column per filter change costs more than the rest of the filter."""
    out = {}
    for name in cells.columns:
        column = cells[name]
        if isinstance(column.dtype, pd.ArrowDtype | pd.StringDtype):
            kind = getattr(column.dtype, "kind", "O")
            if kind in "biuf" and not column.isna().any():
                values = column.to_numpy(dtype=column.dtype.numpy_dtype)
            elif kind == "f":
                values = column.to_numpy(dtype=float, na_value=np.nan)
            else:
                values = column.to_numpy(dtype=object, na_value=None)
            column = pd.Series(values, index=cells.index, dtype=values.dtype)
        out[name] = column
    return pd.DataFrame(out, index=cells.index)


def _floats(column: pd.Series) -> np.ndarray:
    return pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)

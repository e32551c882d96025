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

Every cell belongs to one source (its `source` column; `_sources`): cells are computed per
source, and the drill-down key names the source (`cell_key`). Pooling across sources is a
view the visitor asks for (`Board.cells(pool_sources=True)`), never the default.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from hf_skillfollow.columns import agent_ran_mask
from hf_skillfollow.space_app import _cache
from hf_skillfollow.space_app._labels import add_labels
from hf_skillfollow.space_app._sources import (
    SOURCE,
    cell_sources,
    concat_sources,
    load_sources,
    plain_rows,
    resolve_sources,
    shared_runs,
    source_id,
)
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
_HEAVY_COLUMNS = ("queries", "skills_returned", "se_error", "sd_error", SOURCE)
#: The error columns, whose text the metrics read only as "did this arm error" (`n_errored`).
_ERROR_COLUMNS = ("se_error", "sd_error")
#: The source part of a drill-down key for cells pooled across sources.
ALL_SOURCES = "all"


@dataclass
class Board:
    """Precomputed cells (pooled; per run computed on the first toggle) plus the rows behind them.

    The rows (`transitions`, `rescoring`) are read on first use when the cells came from the
    start-up cache (`_cache`): the first page needs only the cells. Their identity strings,
    read as dictionaries, are expanded on first use too (`plain_rows`).
    """

    #: The pooled cells; their interval columns are NaN while `_incomplete` (read `pooled`).
    _pooled: pd.DataFrame
    warnings: list[str]
    traces: TraceStore
    resamples: int
    load_rows: Callable[[], tuple[dict[str, pa.Table], Rescoring]]
    sources: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    from_cache: bool = False
    _rows: tuple[dict[str, pa.Table], Rescoring] | None = None
    _per_run: pd.DataFrame | None = None
    _across: pd.DataFrame | None = None
    _views: dict[tuple[bool, bool], pd.DataFrame] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _rows_lock: threading.Lock = field(default_factory=threading.Lock)
    _incomplete: bool = False
    #: The start-up cache entry written with the complete cells once the deferred intervals
    #: are in, and the notes it keeps (None: nothing to write).
    _cache_key: str | None = None
    _cache_notes: list[str] = field(default_factory=list)
    _complete_lock: threading.Lock = field(default_factory=threading.Lock)
    #: Drill-down key -> judge noise of each judged cell, once measured from its traces
    #: (`measure_judges_soon`; the table shows a noise badge from then on).
    judge_noise: dict[str, dict] = field(default_factory=dict)
    _judges_started: bool = False
    #: Set once the judge noise is measured (or failed): the page redraws its table then.
    judges_done: threading.Event = field(default_factory=threading.Event)

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
            # an RAE left undefined (imported pairs without a transcript) has no interval
            undefined = filled["rae"].isna().to_numpy()
            filled.loc[undefined, ["rae_ci_low", "rae_ci_high"]] = np.nan
            with self._lock:
                self._pooled = filled
                self._views.clear()
            self._incomplete = False
        if self._cache_key is not None:
            _cache.write(self._cache_key, _cache.Entry(filled, self._cache_notes, self.sources))

    def complete_soon(self) -> None:
        """`complete` in a background thread (nothing when there is nothing left to do)."""
        if self._incomplete:
            threading.Thread(
                target=self.complete, name="skillfollow-intervals", daemon=True
            ).start()

    @property
    def has_judged(self) -> bool:
        """Whether any cell names a judge (`judged_by`)."""
        judged = self._pooled.get("judged_by")
        return judged is not None and bool((judged.astype(str) != "").any())

    def measure_judges_soon(self) -> None:
        """Measure the judge noise of the judged cells in a background thread, once: their
        traces are read per source after the first page, never before it."""
        if self._judges_started or self._pooled.empty:
            return
        self._judges_started = True
        if not self.has_judged:
            self.judges_done.set()
            return

        def measure() -> None:
            from hf_skillfollow.space_app._cost import judged_noise

            try:
                self.judge_noise.update(judged_noise(self))
            except Exception as exc:  # noqa: BLE001 - a bad trace must not stop the board
                self.warnings.append(f"Judge noise not measured ({type(exc).__name__}: {exc})")
            finally:
                self.judges_done.set()

        threading.Thread(target=measure, name="skillfollow-judges", daemon=True).start()

    def first_view(self, columns: frozenset[str]) -> pd.DataFrame:
        """`view(False, columns)` without waiting for deferred intervals: NaN where they are
        not computed yet. Only for the start-up view, which fills its rows (`with_intervals`)."""
        with self._lock:
            return self._narrow((False, False), self._pooled, columns)

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
        out.loc[out["rae"].isna().to_numpy(), ["rae_ci_low", "rae_ci_high"]] = np.nan
        return out

    @property
    def tables(self) -> dict[str, pa.Table]:
        """source -> its transitions rows (each row names its source)."""
        return self._loaded_rows()[0]

    @property
    def transitions(self) -> pa.Table | None:
        return concat_sources(self.tables)

    @property
    def rescoring(self) -> Rescoring:
        return self._loaded_rows()[1]

    def _loaded_rows(self) -> tuple[dict[str, pa.Table], Rescoring]:
        with self._rows_lock:
            if self._rows is None:
                tables, rescoring = self.load_rows()
                self._rows = ({s: plain_rows(t) for s, t in tables.items()}, rescoring)
            return self._rows

    def cells(self, runs_separately: bool = False, pool_sources: bool = False) -> pd.DataFrame:
        """Cells per source (the default), per source and run, or pooled across sources.

        Runs are always shown under the source that published them, so `runs_separately`
        ignores `pool_sources`."""
        if not runs_separately and not pool_sources:
            return self.pooled
        self.complete()
        with self._lock:
            if runs_separately:
                if self._per_run is None:
                    per_run = _per_run_cells(
                        self.pooled, self.tables, self.resamples, self.warnings
                    )
                    self._per_run = with_rescored(per_run, self.rescoring, per_run=True)
                return self._per_run
            if self._across is None:
                self._across = _across_sources(
                    self.tables, self.rescoring, self.resamples, self.warnings
                )
            return self._across

    def view(
        self, runs_separately: bool, columns: frozenset[str], pool_sources: bool = False
    ) -> pd.DataFrame:
        """`columns` (and every derived `_` column) of the cells: what the table, plots and
        summary read, so a filter copies ~40 columns instead of ~100 (the CSV and "All
        columns" use `cells`). `columns` is the same set on every call."""
        wide = self.cells(runs_separately, pool_sources)
        with self._lock:
            return self._narrow(
                (runs_separately, pool_sources and not runs_separately), wide, columns
            )

    def _narrow(
        self, which: tuple[bool, bool], wide: pd.DataFrame, columns: frozenset[str]
    ) -> pd.DataFrame:
        """The cached narrow view of `wide` (hold `_lock`; `complete` clears the cache)."""
        narrow = self._views.get(which)
        if narrow is None:
            keep = [c for c in wide.columns if c in columns or c.startswith("_")]
            narrow = self._views[which] = wide[keep]
        return narrow

    def task_rows(self, cell: pd.Series | dict) -> pd.DataFrame:
        """The transitions rows of one cell (of one run when the cell has a `run_id`), read
        from the source(s) the cell belongs to only."""
        parts = []
        for source in cell_sources(cell):
            table = self.tables.get(source)
            if table is None:
                continue
            mask = _identity_mask(table, cell)
            run_id = cell.get("run_id") if hasattr(cell, "get") else None
            if isinstance(run_id, str) and run_id:
                mask = pc.and_(mask, pc.equal(table["run_id"], run_id))
            parts.append(table.filter(mask))
        if not parts:
            return pd.DataFrame()
        rows = pa.concat_tables(parts, promote_options="permissive").to_pandas()
        excluded = cell.get("_excluded_runs") if hasattr(cell, "get") else None
        if excluded:  # pooled across sources: conflicting runs are not part of the cell
            rows = rows[~rows["run_id"].isin(str(excluded).split("\n"))]
        if len(parts) > 1:  # a run two sources publish alike counts once in the pool
            rows = rows.drop_duplicates(["run_id", "task_id", "repeat_index"])
        return rows


def load_board(
    sources: Sequence[str] = (),
    *,
    resamples: int = DEFAULT_RESAMPLES,
    discover: bool | None = None,
    use_cache: bool = True,
    defer_intervals: bool = False,
) -> Board:
    """Resolve the sources, then read their cells from the start-up cache or compute every
    source's pooled cells once from the rows (and cache them).

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
            traces=TraceStore(),
            resamples=resamples,
            load_rows=lambda: _rows_of(hit.loaded),
            sources=hit.loaded,
            timings={"load_s": time.perf_counter() - t0, "metrics_s": 0.0},
            from_cache=True,
        )
    loaded = load_sources(names)
    t1 = time.perf_counter()
    problems: list[str] = []
    pooled = _cells_per_source(
        loaded.tables, resamples, pool_runs=True, warnings=problems, intervals=not defer_intervals
    )
    rescoring, unread = load_rescoring(loaded.tables)
    pooled = _numpy_backed(with_rescored(pooled, rescoring, per_run=False))
    t2 = time.perf_counter()

    notes = loaded.warnings + problems + unread
    # A failed computation is not cached (the next start tries again); notes about the rows are.
    cache = not pooled.empty and not any(p.startswith("Computing the cells") for p in problems)
    deferred = defer_intervals and not pooled.empty
    if cache and not deferred:
        _cache.write(key, _cache.Entry(pooled, notes, loaded.loaded))
    rows = (loaded.tables, rescoring)
    return Board(
        _pooled=pooled,
        warnings=warnings + notes,
        traces=TraceStore(),
        resamples=resamples,
        load_rows=lambda: rows,
        sources=loaded.loaded,
        timings={"load_s": t1 - t0, "metrics_s": t2 - t1},
        _incomplete=deferred,
        _cache_key=key if cache and deferred else None,
        _cache_notes=notes,
    )


@dataclass(frozen=True)
class Computed:
    """What `load_board` computed, without the rows or anything tied to its process: what a
    child process that loaded the board sends back (`_launch`), for `restored`."""

    pooled: pd.DataFrame
    warnings: list[str]
    resamples: int
    sources: list[str]
    timings: dict[str, float]
    from_cache: bool
    incomplete: bool
    cache_key: str | None
    cache_notes: list[str]


def computed(board: Board) -> Computed:
    return Computed(
        board._pooled, board.warnings, board.resamples, board.sources, board.timings,
        board.from_cache, board._incomplete, board._cache_key, board._cache_notes,
    )  # fmt: skip


def restored(done: Computed) -> Board:
    """The board `done` describes; its rows are read again when first needed, as after a
    start from the cache (the deferred intervals and the cache write need only the cells)."""
    return Board(
        _pooled=done.pooled,
        warnings=list(done.warnings),
        traces=TraceStore(),
        resamples=done.resamples,
        load_rows=partial(_rows_of, list(done.sources)),
        sources=list(done.sources),
        timings=dict(done.timings),
        from_cache=done.from_cache,
        _incomplete=done.incomplete,
        _cache_key=done.cache_key,
        _cache_notes=list(done.cache_notes),
    )


def _rows_of(sources: Sequence[str]) -> tuple[dict[str, pa.Table], Rescoring]:
    """The rows behind cached cells, read when a drill-down or per-run view first needs them."""
    loaded = load_sources(sources)
    rescoring, _ = load_rescoring(loaded.tables)
    return loaded.tables, rescoring


def _cells_per_source(
    tables: dict[str, pa.Table],
    resamples: int,
    *,
    pool_runs: bool,
    warnings: list[str],
    intervals: bool = True,
) -> pd.DataFrame:
    """Each source's cells, computed from its own rows alone, with the `source` column."""
    parts = []
    for source, table in tables.items():
        cells = _cells(table, resamples, pool_runs=pool_runs, warnings=warnings,
                       intervals=intervals, source=source)  # fmt: skip
        if len(cells):
            parts.append(
                cells.assign(
                    **{SOURCE: source, LAST_RUN: _last_runs(table, cells)},
                    **_pair_summaries(table, cells),
                )
            )
    if not parts:
        return _decorate(pd.DataFrame(columns=_empty_columns(pool_runs)), pool_runs)
    merged = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
    return _decorate(merged, pool_runs, warnings=warnings)


#: The start time (`created_at`, UTC) of a cell's newest run: "last updated" on the board.
LAST_RUN = "last_run"


def _last_runs(table: pa.Table, cells: pd.DataFrame) -> list[str]:
    """Each cell's newest `created_at` in its source (ISO strings sort by time)."""
    if "created_at" not in table.column_names:
        return [""] * len(cells)
    from hf_skillfollow.metrics._frame import segment_starts

    # a run's rows are contiguous and share both values: the pairs are among the heads of
    # the segments where either changes (thousands of rows, not 10^6)
    pairs = table.select(["cell_id", "created_at"])
    heads = plain_rows(pairs.take(segment_starts(pairs, pairs.column_names)))
    newest = heads.group_by("cell_id").aggregate([("created_at", "max")])
    by_id = dict(
        zip(newest["cell_id"].to_pylist(), newest["created_at_max"].to_pylist(), strict=True)
    )
    return [str(by_id.get(c) or "") for c in cells["cell_id"]]


#: Per-cell summaries of the pair columns imported and harness runs carry (docs/import.md).
DETECTORS, DECIDED, VIOLATIONS = "detectors", "detector_decided_pct", "arm_violations"
#: The A/A noise floor of an imported cell: each arm's flip rate between its own trials of a
#: task (`metrics.imported_summary`), shown beside RAE.
AA_SE, AA_SD = "aa_flip_rate_se", "aa_flip_rate_sd"


def _pair_summaries(table: pa.Table, cells: pd.DataFrame) -> dict[str, list]:
    """Per cell: the activation detectors its rows name, the share of rows one of them
    decided (not `none`: no transcript), and the rows with an arm-integrity violation. Empty
    or zero where the columns are absent or null (the chat loop's rows before them)."""
    out: dict[str, list] = {DETECTORS: [""] * len(cells), DECIDED: [np.nan] * len(cells),
                            VIOLATIONS: [0] * len(cells), AA_SE: [np.nan] * len(cells),
                            AA_SD: [np.nan] * len(cells)}  # fmt: skip
    names = table.column_names
    if "provenance" in names:
        # imported or run through a harness (`run:<harness>`): not the chat loop's `run`
        imported = agent_ran_mask(table["provenance"])
        if pc.any(imported).as_py():
            from hf_skillfollow.metrics import imported_summary

            # over the rows the metrics use (a violating pair left out), as the report does
            kept = plain_rows(_measured_rows(table.filter(imported))[0])
            floors = {s["cell_id"]: s for s in imported_summary(kept.to_pylist(), {})}
            for i, cell_id in enumerate(cells["cell_id"]):
                if cell_id in floors:
                    out[AA_SE][i] = floors[cell_id]["aa_flip_rate_se"]
                    out[AA_SD][i] = floors[cell_id]["aa_flip_rate_sd"]
    if "cell_id" not in names or not ({"detector", "arm_integrity"} & set(names)):
        return out
    detected = "detector" in names and pc.any(pc.is_valid(table["detector"])).as_py()
    bad = _violated(table) if "arm_integrity" in names else None
    # a chat-loop source: nothing to summarise
    if not (detected or (bad is not None and pc.any(bad).as_py())):
        return out
    table = plain_rows(table.select([c for c in ("cell_id", "detector") if c in names]))
    parts = [table["cell_id"]]
    columns = ["cell_id"]
    if "detector" in names:
        detector = table["detector"]
        decided = pc.and_kleene(pc.is_valid(detector), pc.not_equal(detector, "none"))
        parts += [pc.cast(pc.fill_null(decided, False), pa.int64()),
                  pc.cast(pc.is_valid(detector), pa.int64())]  # fmt: skip
        columns += ["decided", "detected"]
    if bad is not None:
        parts.append(pc.cast(bad, pa.int64()))
        columns.append("violation")
    sums = (
        pa.table(parts, names=columns)
        .group_by("cell_id")
        .aggregate([(c, "sum") for c in columns[1:]])
    )
    found = {r["cell_id"]: r for r in sums.to_pylist()}
    if "detector" in names:
        pairs = table.select(["cell_id", "detector"]).filter(pc.is_valid(table["detector"]))
        kinds = pairs.group_by(["cell_id", "detector"]).aggregate([]).to_pylist()
        by_cell: dict[str, list[str]] = {}
        for r in kinds:
            by_cell.setdefault(r["cell_id"], []).append(str(r["detector"]))
    for i, cell_id in enumerate(cells["cell_id"]):
        r = found.get(cell_id)
        if r is None:
            continue
        if r.get("detected_sum"):
            out[DETECTORS][i] = ", ".join(sorted(by_cell.get(cell_id, [])))
            out[DECIDED][i] = 100.0 * r["decided_sum"] / r["detected_sum"]
        out[VIOLATIONS][i] = int(r.get("violation_sum") or 0)
    return out


def _measured_rows(table: pa.Table) -> tuple[pa.Table, dict[str, tuple[int, int]]]:
    """The rows the metrics use, as `hf-skillfollow report` takes them (cli/_report.py): a pair
    with an arm-integrity violation is left out (the SD arm saw the skills), and an imported
    cell with pairs whose with-skills trial left no transcript gets RAE, Δskip and coverage
    undefined (cell_id -> (such pairs, pairs)). Rows without those columns pass unchanged."""
    names = set(table.column_names)
    if not {"provenance", "arm_integrity"} <= names:
        return table, {}
    from hf_skillfollow.metrics._imported import activation_unknown, imported_view

    if pc.any(_violated(table)).as_py():  # most sources have none: no frame to build
        wanted = [c for c in ("cell_id", "returned", "arm_integrity", "trigger_kind") if c in names]
        keep, _, _ = imported_view(plain_rows(table.select(wanted)).to_pandas())
        table = table.filter(pa.array(keep))
    if "detector" not in names or not pc.any(pc.is_valid(table["detector"])).as_py():
        return table, {}
    return table, activation_unknown(plain_rows(table.select(["cell_id", "detector"])).to_pandas())


def _violated(table: pa.Table) -> pa.ChunkedArray:
    """`metrics._imported.violated_rows` of rows whose `arm_integrity` may be a dictionary."""
    from hf_skillfollow.metrics._imported import violated_rows

    return violated_rows(plain_rows(table.select(["arm_integrity"])))


def _cells(
    table: pa.Table | None,
    resamples: int,
    *,
    pool_runs: bool,
    warnings: list[str],
    intervals: bool = True,
    source: str | None = None,
) -> pd.DataFrame:
    """Raw cells of one table (no display columns: `_decorate` adds them)."""
    if table is None or table.num_rows == 0:
        return pd.DataFrame(columns=_empty_columns(pool_runs))
    from hf_skillfollow.metrics import compute_cells

    data = _light(table)
    try:
        data, unknown = _measured_rows(data)
        cells = compute_cells(
            data,
            group_by=None,
            pool_runs=pool_runs,
            min_cond=DEFAULT_MIN_COND,
            resamples=resamples,
            seed=SEED,
            intervals=intervals,
        )
        if unknown:
            from hf_skillfollow.metrics import mark_unknown

            cells = mark_unknown(cells, unknown)
    except Exception as exc:  # a bug or bad value must not blank the page; say what failed
        where = f"of source '{source}' " if source else ""
        warnings.append(
            f"Computing the cells {where}failed ({type(exc).__name__}: {exc}); they are not shown"
        )
        return pd.DataFrame(columns=_empty_columns(pool_runs))
    return cells.reset_index(drop=True)


def _light(table: pa.Table) -> pa.Table:
    """`table` as the metrics need it: the heavy columns dropped, and the error texts replaced
    by one marker column (`se_error` "e" where either arm errored, else null) so that
    `n_errored` is counted without copying or decoding a provider's error strings."""
    errors = [c for c in _ERROR_COLUMNS if c in table.column_names]
    data = table.drop_columns([c for c in _HEAVY_COLUMNS if c in table.column_names])
    if not errors:
        return data
    from hf_skillfollow.metrics._frame import nonempty_column

    errored = np.logical_or.reduce([nonempty_column(table, name) for name in errors])
    marker = pc.if_else(pa.array(errored), pa.scalar("e"), pa.scalar(None, pa.string()))
    return data.append_column("se_error", marker)


def _per_run_cells(
    pooled: pd.DataFrame, tables: dict[str, pa.Table], resamples: int, warnings: list[str]
) -> pd.DataFrame:
    """Cells per source and run. A cell with a single run is its own per-run row, so only
    multi-run cells (and cells whose cell_id names several cells) are recomputed. Intervals
    are a pure function of (counts, seed), so these rows equal a full
    `compute_cells(pool_runs=False)` of the source exactly."""
    if pooled.empty or not tables:
        return _decorate(pd.DataFrame(columns=[*_empty_columns(False), SOURCE]), False)
    parts = []
    raw = [c for c in pooled.columns if c in {*_empty_columns(True), SOURCE}]
    for source, table in tables.items():
        mine = pooled[pooled[SOURCE] == source]
        ambiguous = mine["cell_id"].duplicated(keep=False).to_numpy()
        multi = (mine["n_runs"] > 1).to_numpy() | ambiguous
        single = mine[~multi]
        if len(single):
            run_of = _single_run_ids(table)
            parts.append(single[raw].assign(run_id=single["cell_id"].map(run_of)))
        if multi.any():
            ids = pa.array(mine.loc[multi, "cell_id"].astype(str).unique().tolist())
            subset = table.filter(pc.is_in(table["cell_id"], ids))
            cells = _cells(subset, resamples, pool_runs=False, warnings=warnings, source=source)
            parts.append(cells.assign(**{SOURCE: source}))
    if not parts:  # the cells came from the cache and their sources no longer load
        return _decorate(pd.DataFrame(columns=[*_empty_columns(False), SOURCE]), False)
    merged = pd.concat(parts, ignore_index=True)[[*_empty_columns(False), SOURCE]]
    return _decorate(merged, False)


def _single_run_ids(table: pa.Table) -> dict[str, str]:
    pairs = table.select(["cell_id", "run_id"]).group_by(["cell_id", "run_id"]).aggregate([])
    return dict(zip(pairs["cell_id"].to_pylist(), pairs["run_id"].to_pylist(), strict=True))


def _across_sources(
    tables: dict[str, pa.Table],
    rescoring: Rescoring,
    resamples: int,
    warnings: list[str],
) -> pd.DataFrame:
    """Cells pooled across sources, only on the visitor's request.

    A run two sources publish with equal rows counts once; a run whose rows differ between
    sources is a conflict: left out of the pool, named in the cell's `conflicts` column and in
    the banner (`load_sources`). `sources` names every source a cell mixes."""
    from hf_skillfollow.schema import CELL_COLUMNS

    shared = shared_runs(tables)
    conflicts = {s.run_id for s in shared if s.conflict}
    later = {(name, s.run_id) for s in shared if not s.conflict for name in s.sources[1:]}
    parts, left_out = [], {}
    for source, table in tables.items():
        drop = sorted(conflicts | {run for name, run in later if name == source})
        if drop:
            gone = table.filter(pc.is_in(table["run_id"], pa.array(drop)))
            for cell_id, run_id in set(
                zip(gone["cell_id"].to_pylist(), gone["run_id"].to_pylist(), strict=True)
            ):
                if run_id in conflicts:
                    left_out.setdefault(cell_id, set()).add(run_id)
            table = table.filter(pc.invert(pc.is_in(table["run_id"], pa.array(drop))))
        parts.append(table)
    combined = concat_sources(dict(enumerate(parts)))  # type: ignore[arg-type]
    cells = _cells(combined, resamples, pool_runs=True, warnings=warnings)
    if cells.empty:
        return _decorate(pd.DataFrame(columns=[*_empty_columns(True), SOURCE]), True)
    keys = list(CELL_COLUMNS)
    assert combined is not None
    named = combined.select(keys).append_column(SOURCE, combined[SOURCE].cast(pa.string()))
    names = (
        named.group_by([*keys, SOURCE], use_threads=False)
        .aggregate([])
        .to_pandas()
        .groupby(keys, dropna=False, sort=False)[SOURCE]
        .agg(lambda s: "\n".join(dict.fromkeys(map(str, s))))
        .rename("_sources")
        .reset_index()
    )
    cells = cells.merge(names, on=keys, how="left")
    cells["_sources"] = cells["_sources"].fillna("")
    cells[SOURCE] = cells["_sources"].str.replace("\n", " + ", regex=False)
    cells["n_sources"] = cells["_sources"].str.count("\n") + 1
    runs = cells["cell_id"].astype(str).map(lambda c: sorted(left_out.get(c, ())))
    cells["_excluded_runs"] = runs.map("\n".join)
    owners = {s.run_id: " and ".join(s.sources) for s in shared if s.conflict}
    cells["conflicts"] = runs.map(
        lambda r: "; ".join(f"run {run} left out: {owners[run]} publish other rows" for run in r)
    )
    out = _decorate(cells, True, across=True, warnings=warnings)
    status = rescoring.status
    if status is not None and (later or conflicts):
        kept = pc.invert(pc.is_in(status["run_id"], pa.array(sorted(conflicts))))
        for name, run in later:
            kept = pc.and_(kept, pc.invert(pc.and_(
                pc.equal(status[SOURCE], name), pc.equal(status["run_id"], run))))  # fmt: skip
        status = status.filter(kept)
    return _numpy_backed(
        with_rescored(out, Rescoring(status, rescoring.records), per_run=False, across=True)
    )


def _identity_mask(table: pa.Table, cell: pd.Series | dict) -> pa.ChunkedArray:
    """Rows whose every cell column equals the cell's (cell_id alone may name two cells)."""
    from hf_skillfollow.schema import CELL_COLUMNS

    mask = pc.equal(table["cell_id"], str(cell["cell_id"]))
    for name in CELL_COLUMNS:
        if name == "cell_id" or name not in table.column_names:
            continue
        value = cell[name]
        if value is None or (isinstance(value, float) and np.isnan(value)):
            mask = pc.and_(mask, pc.is_null(table[name]))
        else:
            mask = pc.and_(mask, pc.equal(table[name], pa.scalar(value).cast(table[name].type)))
    return mask


def _empty_columns(pool_runs: bool) -> list[str]:
    from hf_skillfollow.metrics import METRIC_COLUMNS
    from hf_skillfollow.schema import CELL_COLUMNS

    return list(CELL_COLUMNS) + ([] if pool_runs else ["run_id"]) + list(METRIC_COLUMNS)


def _decorate(
    cells: pd.DataFrame,
    pool_runs: bool,
    *,
    across: bool = False,
    warnings: list[str] | None = None,
) -> pd.DataFrame:
    """Add display labels, a drill-down key and the flags at every n_cond threshold.

    Everything a filter change needs is derived here once, so that filtering is masking.
    """
    out = cells.copy()
    if SOURCE not in out.columns:
        out[SOURCE] = pd.Series([], dtype=object) if out.empty else ""
    out["partition"] = (
        "seed " + out["partition_seed"].astype(str) + " · " + out["partition_size"].astype(str)
    )
    out["pool_condition"] = out["skill_pool"].astype(str) + " / " + out["condition"].astype(str)
    if "access" in out:  # the paper's `search` is implied; another protocol is named
        other = out["access"].astype(str) != "search"
        out.loc[other, "pool_condition"] += " / " + out.loc[other, "access"].astype(str)
    out["_model_lc"] = out["model"].astype(str).str.lower()
    add_labels(out)
    run = "" if pool_runs else " · " + out["run_id"].astype(str)
    judged = np.where(out["judge_model"] != "", " · judge " + out["judge_model"].astype(str), "")
    out["label"] = (
        out["model"].astype(str)
        + " · "
        + out["task_set"].astype(str)
        + " · "
        + out["pool_condition"]
        + " · "
        + out["partition"]
        + judged
        + run
    )
    out["_key"] = _keys(out, pool_runs, across, warnings)
    n_cond = pd.to_numeric(out["n_cond"], errors="coerce").to_numpy(dtype=float)
    product = _floats(out["agg_lift"]) * _floats(out["rae"])
    # an error-heavy cell is reportable at no threshold: its errors were scored incorrect
    heavy = error_heavy(out)
    for t in THRESHOLDS:
        reportable = (n_cond >= t) & ~heavy
        out[f"_rep_{t}"] = reportable
        out[f"_dis_{t}"] = reportable & (np.nan_to_num(product, nan=0.0) < 0)
    return _numpy_backed(out)


def error_heavy(cells: pd.DataFrame) -> np.ndarray:
    """Which cells are error-heavy (`metrics.MAX_ERROR_RATE`); none where the column is absent."""
    if "error_heavy" not in cells:
        return np.zeros(len(cells), dtype=bool)
    return cells["error_heavy"].fillna(False).to_numpy(dtype=bool)


def cell_key(cell_id: str, source: str | None, run_id: str | None = None) -> str:
    """The drill-down key (and `?cell=` value) of a cell: its cell_id, the source's short id
    (`all` when pooled across sources) and, per run, the run id."""
    where = ALL_SOURCES if source is None else source_id(source)
    return f"{cell_id}@{where}" + (f"|{run_id}" if run_id is not None else "")


def _keys(
    out: pd.DataFrame, pool_runs: bool, across: bool, warnings: list[str] | None
) -> np.ndarray:
    """Drill-down keys, unique: a cell_id naming several cells of one source (or of the
    pooled view) gets `~2`, `~3`, ... on its later cells, and a warning says so."""
    if out.empty:
        return np.array([], dtype=object)
    ids = {s: (ALL_SOURCES if across else source_id(s)) for s in out[SOURCE].astype(str).unique()}
    where = out[SOURCE].astype(str).map(ids)
    keys = out["cell_id"].astype(str) + "@" + where
    if not pool_runs:
        keys = keys + "|" + out["run_id"].astype(str)
    shared = keys.duplicated(keep=False)
    if shared.any():
        for key in keys[shared].unique()[:5]:
            if warnings is not None:
                cell_id, _, _ = str(key).partition("@")
                first = out.loc[keys == key, SOURCE].iloc[0]
                whose = "the pooled view" if across else f"source '{first}'"
                warnings.append(
                    f"In {whose}, cell_id '{cell_id}' names {int((keys == key).sum())} cells with "
                    "different identity columns (model, benchmark, ...): they are shown apart"
                )
        # Each such cell gets a digest of its identity, so its key does not depend on which
        # of them was computed first.
        keys = keys.where(~shared, keys + "~" + _identity_digests(out[shared]))
    return keys.to_numpy(dtype=object)


def _identity_digests(cells: pd.DataFrame) -> pd.Series:
    import hashlib

    from hf_skillfollow.schema import CELL_COLUMNS

    columns = [c for c in CELL_COLUMNS if c in cells.columns]
    return pd.Series(
        [
            hashlib.sha256(repr(values).encode("utf-8", "surrogatepass")).hexdigest()[:6]
            for values in cells[columns].itertuples(index=False, name=None)
        ],
        index=cells.index,
    )


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

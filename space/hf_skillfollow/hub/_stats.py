"""Per-run outcome counts published beside the rows, so a push never re-reads old runs.

`stats/runs.parquet` holds one row per (run, cell) with the cell's identity columns, a hash
of them (`cell_key`), the run's seed, the 2x2 counts of `hf_skillfollow.metrics.cell_counts`
and the sums of its traces the card's cost section needs (`metrics._own.COST_COLUMNS`: zeros
for a run published without traces).
Counts are sufficient for every number on the card (metrics are functions of summed counts),
so the card rendered from these rows equals the card rendered from every row
(tests/test_hub_incremental.py). A push does not rewrite that file: the counts of the runs it
adds go to the small `stats/runs-recent.parquet`, which is merged into `stats/runs.parquet`
once it holds more than a sixteenth as many rows, see `_counts.py`.

The files are a cache of the rows, never a source of truth: when the card's summary does
not match the repo listing they are reconciled with it (runs whose transitions file is gone
are dropped, runs without a stats row are counted from their file), and the Space and
`report` never read them.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq

from hf_skillfollow.hub._layout import (
    TRANSITIONS_DIR,
    read_parquet_bytes,
    traces_path,
    transitions_path,
)
from hf_skillfollow.schema import CELL_COLUMNS, TRANSITIONS_SCHEMA

STATS_PATH = "stats/runs.parquet"
RECENT_PATH = "stats/runs-recent.parquet"


def _stats_schema() -> pa.Schema:
    from hf_skillfollow.metrics import COUNT_COLUMNS
    from hf_skillfollow.metrics._own import COST_COLUMNS

    identity = [TRANSITIONS_SCHEMA.field(c) for c in ("run_id", "seed", *CELL_COLUMNS)]
    identity.append(pa.field("cell_key", pa.string(), nullable=False))
    summed = (*COUNT_COLUMNS, *COST_COLUMNS)
    return pa.schema(identity + [pa.field(c, pa.int64(), nullable=False) for c in summed])


def empty_stats() -> pa.Table:
    return _stats_schema().empty_table()


def _with_cell_keys(table: pa.Table) -> pa.Table:
    """`table` with its `cell_key` column (replaced if present): see `_summary.identity_key`."""
    from hf_skillfollow.hub._summary import identity_key

    columns = [table.column(c).to_pylist() for c in CELL_COLUMNS]
    keys = pa.array([identity_key(v) for v in zip(*columns, strict=True)], pa.string())
    if "cell_key" in table.column_names:
        return table.set_column(table.column_names.index("cell_key"), "cell_key", keys)
    return table.append_column("cell_key", keys)


def run_stats(transitions: pa.Table, traces: pa.Table | None = None) -> pa.Table:
    """Counts per (run, cell) of `transitions` and sums of their `traces`, sorted by run id
    (deterministic bytes)."""
    from hf_skillfollow.metrics import cell_counts
    from hf_skillfollow.metrics._own import COST_COLUMNS, cost_sums

    schema = _stats_schema()
    if transitions.num_rows == 0:
        return schema.empty_table()
    frame = cell_counts(transitions)
    seeds = transitions.group_by("run_id", use_threads=False).aggregate([("seed", "first")])
    seed_of = dict(zip(seeds["run_id"].to_pylist(), seeds["seed_first"].to_pylist(), strict=True))
    frame["seed"] = frame["run_id"].map(seed_of)
    sums = cost_sums(_rows(transitions, _PAIR_COLUMNS), _rows(traces, _TRACE_COLUMNS))
    pairs = list(zip(frame["run_id"].astype(str), frame["cell_id"].astype(str), strict=True))
    for c in COST_COLUMNS:
        frame[c] = [sums[p][c] for p in pairs]
    names = [n for n in schema.names if n != "cell_key"]
    table = pa.Table.from_pandas(frame[names], preserve_index=False)
    return _sorted(_with_cell_keys(table).select(schema.names).cast(schema))


_PAIR_COLUMNS = ("run_id", "cell_id", "task_id", "se_correct", "sd_correct")
_TRACE_COLUMNS = ("run_id", "task_id", "arm", "prompt_tokens", "completion_tokens", "latency_s",
                  "judge_verdicts", "addresses_grader")  # fmt: skip


def _trace_sums_columns(data: bytes, where: str) -> pa.Table:
    """Only the trace columns the cost sums read: messages, the bulk of a traces file, are
    never decoded (a grading column written before it existed is absent, and read as null)."""
    from hf_skillfollow.hub._layout import HubError

    try:
        file = pq.ParquetFile(pa.BufferReader(data))
        names = [n for n in _TRACE_COLUMNS if n in file.schema_arrow.names]
        missing = sorted(set(_TRACE_COLUMNS[:6]) - set(names))
        if missing:
            raise HubError(f"{where}: traces file lacks column(s) {', '.join(missing)}")
        return file.read(columns=names, use_threads=False)
    except (pa.ArrowInvalid, OSError) as exc:
        raise HubError(f"{where}: not a readable traces file ({exc})") from None


def _rows(table: pa.Table | None, names: tuple[str, ...]) -> list[dict]:
    if table is None:
        return []
    return table.select([n for n in names if n in table.column_names]).to_pylist()


def merge_stats(parts: Iterable[pa.Table]) -> pa.Table:
    tables = [t for t in parts if t.num_rows]
    if not tables:
        return empty_stats()
    return _sorted(pa.concat_tables(tables))


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by([("run_id", "ascending"), ("cell_id", "ascending")]).combine_chunks()


def stats_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd", compression_level=3, write_statistics=False)
    return sink.getvalue()


def read_stats(data: bytes) -> pa.Table | None:
    """The published stats, or None when they are unreadable or of another layout (recount)."""
    try:
        table = pq.read_table(pa.BufferReader(data))
    except (pa.ArrowInvalid, OSError):
        return None
    schema = _stats_schema()
    if not set(schema.names) - {"cell_key"} <= set(table.column_names):
        return None
    try:
        if "cell_key" not in table.column_names:  # written before the column existed
            table = _with_cell_keys(table)
        return table.select(schema.names).cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def read_cell_keys(data: bytes) -> pa.ChunkedArray | None:
    """Only the `cell_key` column of a published stats file (None when it has none)."""
    try:
        file = pq.ParquetFile(pa.BufferReader(data))
        if "cell_key" not in file.schema_arrow.names:
            return None
        return file.read(columns=["cell_key"], use_threads=False).column("cell_key")
    except (pa.ArrowInvalid, OSError):
        return None


def published_run_ids(paths: Iterable[str], folder: str = TRANSITIONS_DIR) -> list[str]:
    """Run ids of the run files among `paths`, the files directly in `folder`."""
    start, end = len(folder) + 1, -len(".parquet")
    return [p[start:end] for p in paths if p.endswith(".parquet")]


def reconcile(
    published: pa.Table | None,
    listed: list[str],
    read: Callable[[str], bytes],
    source: str,
    traced: frozenset[str] = frozenset(),
) -> pa.Table:
    """Published stats of the runs still listed, plus counts of listed runs they lack (with
    the sums of their traces, for the run ids in `traced`, which publish a traces file)."""
    import pyarrow.compute as pc

    kept = empty_stats() if published is None else published
    listed_ids = pa.array(listed, pa.string())
    kept = kept.filter(pc.is_in(kept.column("run_id"), value_set=listed_ids))
    counted = pc.is_in(listed_ids, value_set=pc.unique(kept.column("run_id")))
    missing = sorted(listed_ids.filter(pc.invert(counted)).to_pylist())

    def recount(run_id: str) -> pa.Table:
        path = transitions_path(run_id)
        at = traces_path(run_id)
        traces = _trace_sums_columns(read(at), f"{source}:{at}") if run_id in traced else None
        return run_stats(read_parquet_bytes(read(path), "transitions", f"{source}:{path}"), traces)

    if not missing:
        return kept
    # Only a repo published before this file existed has many; downloads overlap.
    with ThreadPoolExecutor(max_workers=8) as pool:
        recounted = list(pool.map(recount, missing))
    return merge_stats([kept, *recounted])

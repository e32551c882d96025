"""SE/SD traces for the drill-down, read lazily: only when someone opens a task."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from hf_skillfollow.space_app._sources import is_local


class TraceStore:
    """Finds the `traces` rows of one (run, task) in the source whose cell is open: a trace
    another source publishes under the same run id is never shown for it."""

    def __init__(self) -> None:
        self._cache: dict[str, pa.Table | str] = {}
        self._lock = threading.Lock()

    def pair(
        self, source: str, run_id: str, task_id: str
    ) -> tuple[dict | None, dict | None, str | None]:
        """(se_row, sd_row, note); note says why traces are missing."""
        table = self._table(source)
        if isinstance(table, str):
            return None, None, table
        mask = pc.and_(pc.equal(table["run_id"], run_id), pc.equal(table["task_id"], task_id))
        rows = table.filter(mask).to_pylist()
        by_arm = {r["arm"]: r for r in rows}
        if not by_arm:
            return (
                None,
                None,
                f"source '{source}' has no trace rows for run {run_id}, task {task_id}",
            )
        return by_arm.get("se"), by_arm.get("sd"), None

    def table(self, source: str) -> pa.Table | str:
        """Every trace row of `source` (read once), or the note saying why there are none."""
        return self._table(source)

    def _table(self, source: str) -> pa.Table | str:
        with self._lock:
            if source not in self._cache:
                self._cache[source] = _load(source)
            return self._cache[source]


def _load(source: str) -> pa.Table | str:
    from hf_skillfollow.schema import validate_traces

    try:
        table = (
            _local_traces(Path(source).expanduser()) if is_local(source) else _hub_traces(source)
        )
    except Exception as exc:  # traces are optional: say why, keep the drill-down working
        return f"traces of '{source}' could not be loaded ({type(exc).__name__}: {exc})"
    if table is None:
        return f"source '{source}' publishes no traces"
    from hf_skillfollow.space_app._sources import with_source

    return with_source(validate_traces(table, source=f"{source} (traces)"), source)


def _local_traces(root: Path) -> pa.Table | None:
    """Every trace file of the local source `root`, each held to the traces budget on the
    read that is used (`Meter.read_whole`: counted at what it took once read, not at its
    footer's bound, which would refuse a folder of a few thousand honest runs)."""
    import threading

    import pyarrow.parquet as pq

    from hf_skillfollow._files import regular_file
    from hf_skillfollow.hub._budget import BUDGETS, Meter

    files = _trace_files(root)
    if not files:
        return None
    meter, lock = Meter(BUDGETS["traces"], str(root)), threading.Lock()
    meter.count_files(files)
    tables = [meter.read_whole(f, pq.ParquetFile(regular_file(f)), lock) for f in files]
    return pa.concat_tables(tables, promote_options="default")


def _trace_files(root: Path) -> list[Path]:
    if root.is_file():
        sibling = root.with_name("traces.parquet")
        return [sibling] if sibling.is_file() and sibling != root else []
    found = sorted(root.rglob("traces.parquet")) + sorted(
        (root / "data" / "traces").glob("*.parquet")
    )
    from hf_skillfollow._files import inside_all

    # a dangling link is no file; a link out of the source is refused (OutsideSource)
    return inside_all([f for f in dict.fromkeys(found) if f.is_file()], root)


def _hub_traces(repo: str) -> pa.Table | None:
    from hf_skillfollow.hub import load_traces
    from hf_skillfollow.space_app._sources import _as_table

    data = load_traces(repo)
    return None if data is None else _as_table(data)

"""Read transitions rows from local files, run directories and folders (or the Hub).

A source is a transitions parquet file, a JSONL file (one row per line), a run directory
(RUN_DIR/transitions.parquet), a folder holding several of those, or, when it is not a
local path, a Hub dataset id handed to `hf_skillfollow.hub.load_transitions`. Every file
is validated against schema v1 under its own name, so an error says which file is wrong.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from hf_skillfollow._files import NotRegularFile, OutsideSource, inside, inside_all, regular_file
from hf_skillfollow.columns import IDENTITY_COLUMNS
from hf_skillfollow.locations import LOCAL_SUFFIXES, is_hub_id
from hf_skillfollow.schema import (
    BACKFILL,
    TRANSITIONS_SCHEMA,
    SchemaError,
    plain,
    validate_transitions,
)
from hf_skillfollow.store import TRANSITIONS as RUN_TRANSITIONS

if TYPE_CHECKING:
    from hf_skillfollow.hub._budget import Budget, Meter

_JSONL_SUFFIXES = tuple(s for s in LOCAL_SUFFIXES if s != ".parquet")
#: String columns a parquet file is read into as dictionaries, which the schema check casts
#: back to plain strings: the run's identity, one value per run, so each dictionary is tiny
#: and decoding it costs far less than decoding 10^6 strings (bench/space.py, a cold start at
#: 12,500 cells). The table that comes back is equal to a plain read's.
_DICTIONARY_COLUMNS = tuple(
    c for c in IDENTITY_COLUMNS if pa.types.is_string(TRANSITIONS_SCHEMA.field(c).type)
)
#: With `read_transitions(dictionaries=True)`: every string column that a read returned as a
#: dictionary (those above; every string column of a file the read budget measures, task ids
#: and error texts included) is returned so, not expanded.
_KEPT_DICTIONARIES = tuple(f.name for f in TRANSITIONS_SCHEMA if pa.types.is_string(f.type))


class SourceError(ValueError):
    """A source cannot be read: missing path, unsupported file, empty folder, duplicate rows."""


def read_transitions(
    *sources: str | Path, budget: Budget | None = None, dictionaries: bool = False
) -> pa.Table:
    """All rows of all sources as one validated table (schema v1).

    A (run_id, task_id) pair seen twice, within a source or across sources, is an error
    naming where it was seen: counting a task twice would silently bias every metric.
    `budget`: what reading each source's parquet files may cost (`hub._budget`, the board's
    limits on rows someone else published); each file is checked on the read that is used,
    so a file is not read once to measure and again to use.
    `dictionaries`: a parquet file's string columns read as dictionaries (`_KEPT_DICTIONARIES`)
    are returned so, dictionaries of their declared type (`schema.validate_table`;
    `schema.plain` expands them), for a reader that groups by them (the board's cold start).
    The rows are the same.
    """
    if not sources:
        raise SourceError("no transitions source given")
    parts: list[tuple[str, pa.Table]] = []
    for source in sources:
        parts.extend(_read_source(source, budget, dictionaries))
    _check_unique(parts)
    tables = [t for _, t in parts]
    if len({t.schema for t in tables}) > 1:  # a file read with dictionaries beside one without
        tables = [plain(t, TRANSITIONS_SCHEMA) for t in tables]
    return pa.concat_tables(tables) if tables else TRANSITIONS_SCHEMA.empty_table()


def _read_source(
    source: str | Path, budget: Budget | None = None, dictionaries: bool = False
) -> list[tuple[str, pa.Table]]:
    path = Path(source).expanduser()
    meter = _meter(budget, str(source))
    if path.is_file() or (path.exists() and not path.is_dir()):  # a FIFO: refused by name
        return [(str(path), _read_file(path, meter, dictionaries))]
    if path.is_dir():
        files = _folder_files(path)
        parquet = [f for f in files if f.suffix == ".parquet"]
        others = [(str(f), _read_file(f)) for f in files if f.suffix != ".parquet"]
        return _read_parquet_files(path, parquet, budget, str(source), dictionaries) + others
    if not is_hub_id(source):
        raise SourceError(f"{source}: no such file or directory")
    # Hub ids are the hub package's job; imported only when one is given.
    from hf_skillfollow.hub import load_transitions

    return [(str(source), validate_transitions(load_transitions(str(source)), str(source)))]


def _folder_files(folder: Path) -> list[Path]:
    """A run directory's own file, else every run file and results-repo shard below `folder`."""
    own = folder / RUN_TRANSITIONS
    if own.is_file():
        try:
            return [inside(own, folder)]
        except OutsideSource as exc:
            raise SourceError(str(exc)) from None
    found: list[str] = []
    # One os.walk (a repo of 10^4 runs is 10^4 files): run files anywhere, and *.parquet in
    # a folder that is, or is inside, a data/transitions folder.
    for dirpath, _dirnames, filenames in os.walk(folder):
        parts = Path(dirpath).relative_to(folder).parts
        shard_dir = any(parts[i : i + 2] == ("data", "transitions") for i in range(len(parts)))
        found += [
            os.path.join(dirpath, f)
            for f in filenames
            if f == RUN_TRANSITIONS or (shard_dir and f.endswith(".parquet"))
        ]
    if not found:
        raise SourceError(
            f"{folder}: no transitions found (looked for {RUN_TRANSITIONS} in run directories and "
            "*.parquet under data/transitions/)"
        )
    try:  # a link out of the folder would show another file's rows as this source's
        files = inside_all(sorted(found, key=lambda f: f.split(os.sep)), folder)
    except OutsideSource as exc:
        raise SourceError(str(exc)) from None
    return files  # as Paths sort


def _meter(budget: Budget | None, source: str) -> Meter | None:
    if budget is None:
        return None
    from hf_skillfollow.hub._budget import Meter

    return Meter(budget, source)


def _read_file(path: Path, meter: Meter | None = None, dictionaries: bool = False) -> pa.Table:
    """One file's rows, validated; a parquet file counted by `meter` on the read it uses (its
    identity strings left as dictionaries with `dictionaries`, see `read_transitions`)."""
    try:
        regular_file(path)
    except NotRegularFile as exc:
        raise SourceError(str(exc)) from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot be read ({exc.strerror})") from None
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        dictionary = list(_DICTIONARY_COLUMNS)
        try:
            if meter is None:
                table = pq.read_table(path, read_dictionary=dictionary)
            else:
                table = meter.read(path, pq.ParquetFile(path), dictionary)
        except (pa.ArrowInvalid, OSError) as exc:
            from hf_skillfollow.hub._layout import unreadable

            raise SourceError(unreadable(path, exc)) from None
        kept = _KEPT_DICTIONARIES if dictionaries else ()
        return validate_transitions(table, str(path), dictionaries=kept)
    if path.suffix in _JSONL_SUFFIXES:
        if meter is not None:
            # The read budget is counted on parquet footers before anything is decoded; a JSON
            # text has none, and its rows take ~7 times its size in memory while parsed.
            raise SourceError(
                f"{path}: a JSON rows file is not read where a read budget applies (the "
                "leaderboard); publish the rows as parquet (a run directory or results repo)"
            )
        return _read_jsonl(path)
    raise SourceError(f"{path}: unsupported file type {path.suffix!r} (use .parquet or .jsonl)")


def _read_parquet_files(
    folder: Path,
    files: list[Path],
    budget: Budget | None = None,
    source: str = "",
    dictionaries: bool = False,
) -> list[tuple[str, pa.Table]]:
    """Many parquet files in one threaded scan (a repo of 10^4 runs is 10^4 files; it checks
    the read budget itself).

    Any problem sends the files through `_read_file` one by one, so the error names the file.
    """
    if len(files) < 2:
        meter = _meter(budget, source or str(folder))
        return [(str(f), _read_file(f, meter, dictionaries)) for f in files]
    from hf_skillfollow.hub._load import read_parquet_files

    try:
        return [
            (
                str(folder),
                validate_transitions(read_parquet_files(files, "transitions"), str(folder)),
            )
        ]
    except (SchemaError, OSError):
        meter = _meter(budget, source or str(folder))
        return [(str(f), _read_file(f, meter)) for f in files]


def _read_jsonl(path: Path) -> pa.Table:
    rows: list[dict[str, object]] = []
    known = set(TRANSITIONS_SCHEMA.names)
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise SchemaError(
                    f"{path}:{number}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at column "
                    f"{exc.start + 1})"
                ) from None
            except json.JSONDecodeError as exc:
                raise SchemaError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise SchemaError(
                    f"{path}:{number}: a row must be a JSON object, got {type(row).__name__}"
                )
            unknown = sorted(set(row) - known)
            if unknown:
                raise SchemaError(f"{path}:{number}: unexpected column(s) {unknown}")
            rows.append(row)
    return validate_transitions(_columns_from_rows(rows, path), str(path))


def _columns_from_rows(rows: list[dict[str, object]], path: Path) -> pa.Table:
    missing = [
        f.name
        for f in TRANSITIONS_SCHEMA
        if not f.nullable and f.name not in BACKFILL and rows and all(f.name not in r for r in rows)
    ]
    if missing:
        raise SchemaError(f"{path}: missing column(s) {missing}")
    arrays = []
    for field in TRANSITIONS_SCHEMA:
        try:
            fill = BACKFILL.get(field.name)  # rows written before the column existed
            arrays.append(pa.array([r.get(field.name, fill) for r in rows], type=field.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise SchemaError(
                f"{path}: column {field.name!r} does not hold {field.type} values: {exc}"
            ) from None
    return pa.Table.from_arrays(arrays, schema=TRANSITIONS_SCHEMA)


def _check_unique(parts: list[tuple[str, pa.Table]]) -> None:
    """Refuse a (run_id, task_id) pair seen twice, naming the pair and where it was seen.

    Vectorised (a repo of 12,500 runs is 10^6 rows): both columns become integer codes, one
    int64 key per row, and a count (a sort where the keys are sparse) finds repeats; the
    sources are looked up only on failure.
    """
    import numpy as np

    if not parts:
        return
    run_ids = _codes([t.column("run_id") for _, t in parts])
    task_ids = _codes([t.column("task_id") for _, t in parts])
    key = run_ids[0] * np.int64(max(len(task_ids[1]), 1)) + task_ids[0]
    span = len(run_ids[1]) * max(len(task_ids[1]), 1)
    if span <= 4 * len(key):  # few keys unused (every run has most tasks): count, O(rows)
        duplicated = np.flatnonzero(np.bincount(key, minlength=span) > 1)
    else:
        ordered = np.sort(key, kind="stable")
        duplicated = np.unique(ordered[1:][ordered[1:] == ordered[:-1]])
    if not duplicated.size:
        return
    first = int(np.flatnonzero(np.isin(key, duplicated))[0])
    source_of_row = np.repeat(np.arange(len(parts)), [t.num_rows for _, t in parts])
    where = sorted({parts[i][0] for i in source_of_row[key == key[first]]})
    place = f"twice in {where[0]}" if len(where) == 1 else "in " + " and ".join(where)
    run_id = run_ids[1][int(run_ids[0][first])].as_py()
    task_id = task_ids[1][int(task_ids[0][first])].as_py()
    raise SourceError(
        f"duplicate (run_id, task_id) = ({run_id!r}, {task_id!r}) {place} "
        f"({len(duplicated)} duplicated pair(s) in all); each task of a run must appear once"
    )


def _codes(chunks: list[pa.ChunkedArray]) -> tuple[Any, pa.Array]:
    """int64 code of each value (one dictionary over all chunks) and the dictionary.

    A chunk read as a dictionary is coded through its dictionary's values (a few per run),
    never expanded row by row; equal values get one code even where a dictionary repeats a
    value or two chunks' dictionaries differ. The columns are validated: no nulls."""
    import numpy as np

    arrays = [c for chunked in chunks for c in chunked.chunks]
    values = [a.dictionary if pa.types.is_dictionary(a.type) else a for a in arrays]
    column = pa.chunked_array(values, pa.string())
    encoded = column.combine_chunks().dictionary_encode(null_encoding="encode")
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    if not any(pa.types.is_dictionary(a.type) for a in arrays):
        return codes, encoded.dictionary
    parts, at = [], 0
    for array, part in zip(arrays, values, strict=True):
        mine, at = codes[at : at + len(part)], at + len(part)
        if pa.types.is_dictionary(array.type):
            mine = mine[array.indices.to_numpy(zero_copy_only=False)]
        parts.append(mine)
    return np.concatenate(parts), encoded.dictionary

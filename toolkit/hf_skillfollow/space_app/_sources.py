"""Where the board's rows come from: named sources, Hub discovery, and fail-soft loading.

A source is a local path (run directory, repo folder, parquet/jsonl file) or a Hub dataset
repo id. One bad source must never take the board down: each failure becomes a warning that
names the source, and the remaining sources still load.

Provenance (docs/leaderboard.md, "Sources"): every table read here carries the source it was
read from in its `source` column, and the board keeps each source's rows apart
(`Loaded.tables`). Cells, verification marks, annotations and traces are computed and joined
within one source, so nothing one source publishes can change another source's cells. A run
published by two sources is shown under each; only a visitor who asks to pool the sources
sees them combined (`pooled_across`), and a run whose rows differ between two sources is then
a visible conflict, left out of the pool.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from hf_skillfollow.locations import is_hub_id

if TYPE_CHECKING:
    import pandas as pd

ENV_SOURCES = "SKILLFOLLOW_SOURCES"
ENV_DISCOVER = "SKILLFOLLOW_DISCOVER"
DISCOVERY_TAG = "skillfollow"
# huggingface_hub retries an unreachable Hub for ~25 s. Discovery runs while gradio imports
# (~2.5 s, see _launch), so waiting up to 3 s adds at most about half a second to the start.
DISCOVERY_TIMEOUT_S = 3.0
#: Sources Hub discovery adds to the board. Anyone can tag a dataset `skillfollow`, and each
#: source is downloaded, read and computed at start-up, so ten thousand tagged repos would
#: make the start unbounded; the most downloaded ones are loaded, the rest named in a warning.
MAX_DISCOVERED_SOURCES = 50
#: Entries of the discovery listing read (one page of the Hub's API): enough to say how many
#: tagged datasets were left out, without walking a listing anyone can make any length.
MAX_DISCOVERY_LISTING = 1_000
#: Sources named explicitly (arguments or SKILLFOLLOW_SOURCES): the operator chose them, so
#: the cap is higher, but a start-up still reads each one.
MAX_NAMED_SOURCES = 200


#: The column naming the source a row (cell, trace, record, annotation) was read from.
SOURCE = "source"


@dataclass
class Loaded:
    """Validated rows of every source that loaded, plus what went wrong with the others."""

    #: source -> its rows (with the `source` column), in the order the sources were named.
    tables: dict[str, pa.Table] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def loaded(self) -> list[str]:
        return list(self.tables)

    @property
    def transitions(self) -> pa.Table | None:
        """Every source's rows in one table (each row still names its source)."""
        return concat_sources(self.tables)


def source_id(source: str) -> str:
    """The stable name of a source in keys, links and trace keys (its label may hold any text).

    The whole sha256 of the name: a prefix of it can be matched by brute force (32 bits took
    minutes), and a source whose id equals another's would take over that source's cell keys,
    `?cell=` links and traces. `load_sources` still refuses a second source with a loaded
    source's id."""
    return hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()


def with_source(table: pa.Table, source: str) -> pa.Table:
    """`table` with the `source` column (one dictionary value: no per-row copy of the text)."""
    import numpy as np

    if SOURCE in table.column_names:
        table = table.drop_columns([SOURCE])
    indices = pa.array(np.zeros(table.num_rows, dtype=np.int32))
    return table.append_column(SOURCE, pa.DictionaryArray.from_arrays(indices, pa.array([source])))


def plain_rows(table: pa.Table) -> pa.Table:
    """A source's rows as `load_sources` read them (strings as dictionaries) with every
    schema column expanded to its declared type (the `source` column stays one dictionary
    value): what the drill-down, per-run and per-skill views read."""
    from hf_skillfollow.schema import TRANSITIONS_SCHEMA, plain

    return plain(table, TRANSITIONS_SCHEMA)


def concat_sources(tables: Mapping[str, pa.Table]) -> pa.Table | None:
    if not tables:
        return None
    parts = list(tables.values())
    if len(parts) == 1:
        return parts[0]
    return pa.concat_tables(parts, promote_options="permissive").unify_dictionaries()


def cell_sources(cell: pd.Series | dict) -> list[str]:
    """The source(s) a board cell was computed from: a pooled cell lists each in `_sources`."""
    both = cell.get("_sources") if hasattr(cell, "get") else None
    if isinstance(both, str) and both:
        return both.split("\n")
    return [str(cell[SOURCE])]


def split_sources(text: str | None) -> list[str]:
    return [s.strip() for s in (text or "").split(",") if s.strip()]


def resolve_sources(
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    discover: bool | None = None,
) -> tuple[list[str], list[str]]:
    """Sources from arguments, else `SKILLFOLLOW_SOURCES`, plus Hub datasets tagged `skillfollow`.

    Discovery defaults to on only when no source was named (a Space with no config). Returns
    (sources, warnings); duplicates are dropped keeping the first occurrence, and at most
    `MAX_NAMED_SOURCES` named and `MAX_DISCOVERED_SOURCES` discovered sources are kept, each
    cap that cuts adding one warning (docs/leaderboard.md, "Bounded work per source").
    """
    env = os.environ if env is None else env
    where = "The SOURCE arguments name" if args else f"{ENV_SOURCES} names"
    named = list(dict.fromkeys(list(args) or split_sources(env.get(ENV_SOURCES))))
    if discover is None:
        flag = env.get(ENV_DISCOVER)
        discover = (flag.strip().lower() not in {"0", "false", "no", "off"}) if flag else not named
    warnings: list[str] = []
    if len(named) > MAX_NAMED_SOURCES:
        warnings.append(
            f"{where} {len(named):,} sources; the board loads the first "
            f"{MAX_NAMED_SOURCES:,} (MAX_NAMED_SOURCES), the other "
            f"{len(named) - MAX_NAMED_SOURCES:,} are left out"
        )
        named = named[:MAX_NAMED_SOURCES]
    found: list[str] = []
    if discover:
        found, warning = discover_hub_sources(env, known=named)
        if warning:
            warnings.append(warning)
    return named + found, warnings


def discover_hub_sources(
    env: Mapping[str, str], known: Sequence[str] = ()
) -> tuple[list[str], str | None]:
    """Hub dataset repos tagged `skillfollow` and not in `known`, the most downloaded first and
    at most `MAX_DISCOVERED_SOURCES`; an unreachable Hub, or more tagged repos than that,
    yields a warning, not an error."""
    if env.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}:
        return (
            [],
            f"Hub discovery of datasets tagged '{DISCOVERY_TAG}' skipped: HF_HUB_OFFLINE is set",
        )
    result: dict[str, object] = {}

    def _list() -> None:
        try:
            from huggingface_hub import list_datasets

            # sorted by downloads (the Hub lists descending) and limited: the listing stops
            # after one page however many repos carry the tag
            listing = list_datasets(
                filter=DISCOVERY_TAG, sort="downloads", limit=MAX_DISCOVERY_LISTING
            )
            result["ids"] = [d.id for d in listing]
        except Exception as exc:  # any network/auth failure must stay a warning
            result["error"] = f"{type(exc).__name__}: {exc}"

    worker = threading.Thread(target=_list, daemon=True)
    worker.start()
    worker.join(DISCOVERY_TIMEOUT_S)
    if "ids" in result:
        return _capped_discovery(result["ids"], known)  # type: ignore[arg-type]
    reason = result.get("error") or f"no answer within {DISCOVERY_TIMEOUT_S:.0f} s"
    return (
        [],
        f"Hub discovery of datasets tagged '{DISCOVERY_TAG}' failed ({reason}); showing named sources only",
    )


def _capped_discovery(listed: list[str], known: Sequence[str]) -> tuple[list[str], str | None]:
    """The first `MAX_DISCOVERED_SOURCES` listed ids not already named, and a warning saying
    how many tagged datasets were left out (a lower bound when the listing was cut)."""
    named = set(known)
    fresh = [i for i in dict.fromkeys(listed) if i not in named]
    if len(fresh) <= MAX_DISCOVERED_SOURCES:
        return fresh, None
    left = len(fresh) - MAX_DISCOVERED_SOURCES
    more = "at least " if len(listed) >= MAX_DISCOVERY_LISTING else ""
    return fresh[:MAX_DISCOVERED_SOURCES], (
        f"Hub discovery found more than {MAX_DISCOVERED_SOURCES} datasets tagged "
        f"'{DISCOVERY_TAG}': the board loads the {MAX_DISCOVERED_SOURCES} most downloaded "
        f"(MAX_DISCOVERED_SOURCES), {more}{left:,} left out; name a source in {ENV_SOURCES} "
        "to load it"
    )


def is_local(source: str) -> bool:
    return not is_hub_id(source)


def load_sources(sources: Sequence[str]) -> Loaded:
    """Read and validate every source; each failure is a warning naming the source.

    A local parquet file's strings stay dictionaries, as read (`sources.read_transitions(
    dictionaries=True)`): the cells group by their indices, and expanding them (`plain_rows`)
    is left to the views that need the strings, after the first page."""
    out = Loaded()
    if not sources:
        out.warnings.append(
            f"No sources configured: pass SOURCE arguments or set {ENV_SOURCES} (comma-separated Hub repo ids or local folders)"
        )
    ids: dict[str, str] = {}
    for source in sources:
        taken = ids.setdefault(source_id(source), source)
        if taken != source:
            out.warnings.append(
                f"Source '{source}' skipped: its id equals that of source '{taken}', so keys, "
                "links and traces could not tell the two apart"
            )
            continue
        table, warning = _load_one(source, _reader(source))
        if warning:
            out.warnings.append(warning)
        if table is not None:
            out.tables[source] = with_source(table, source)
    out.warnings += [shared.warning() for shared in shared_runs(out.tables) if shared.conflict]
    return out


def _reader(source: str) -> Callable[[str], object]:
    """What reads `source`: each reader validates the rows (schema v1) and holds every file
    to the read budget (`hub._budget.TRANSITIONS`) on the read it uses."""
    if not is_local(source):
        from hf_skillfollow.hub import load_transitions

        return load_transitions
    try:
        from hf_skillfollow.sources import read_transitions
    except ImportError:  # older toolkits: the hub loader reads run dirs, repo folders, parquet
        return _read_local
    from functools import partial

    from hf_skillfollow.hub._budget import TRANSITIONS

    return partial(read_transitions, budget=TRANSITIONS, dictionaries=True)


def _read_local(source: str) -> pa.Table:
    """A run dir, repo folder or parquet file; or a folder whose subfolders are run dirs."""
    from hf_skillfollow.hub import load_transitions
    from hf_skillfollow.hub._layout import is_repo_folder, is_run_dir

    path = Path(source).expanduser()
    if path.is_file() or is_run_dir(path) or is_repo_folder(path):
        return load_transitions(path)
    runs = (
        sorted(p for p in path.iterdir() if is_run_dir(p) or is_repo_folder(p))
        if path.is_dir()
        else []
    )
    if not runs:
        raise FileNotFoundError(
            f"{path}: no run directories (transitions.parquet) or results repo folders inside"
        )
    return pa.concat_tables([load_transitions(p) for p in runs])


def _load_one(source: str, reader: Callable[[str], object]) -> tuple[pa.Table | None, str | None]:
    from hf_skillfollow.schema import validate_transitions

    if is_local(source) and not Path(source).expanduser().exists():
        return (
            None,
            f"Source '{source}' skipped: no such file or folder (and not a Hub repo id owner/name)",
        )
    try:
        table = _as_table(reader(source))
        if not _validated(table.schema):
            # every reader of `_reader` validated its rows already; only a table of another
            # shape (a DataFrame, a reader passed in) is checked here, not each one twice
            table = validate_transitions(table, source=source)
    except Exception as exc:  # wrong schema, unreadable file, budget, network: warn and go on
        return None, f"Source '{source}' skipped: {_first_line(exc)}"
    if table.num_rows == 0:
        return None, f"Source '{source}' skipped: it holds no transition rows"
    long = _too_long(table)
    if long:
        return None, f"Source '{source}' skipped: {long}"
    return table, None


#: Characters of an identity value (model, benchmark, pool, run or task id, ...): every
#: visitor's first page carries them (filter choices, table, plots), so a source whose names
#: pass this is refused rather than sent.
MAX_IDENTITY_CHARS = 1_024


def _validated(schema: pa.Schema) -> bool:
    """Whether `schema` is the transitions schema, a column read as a dictionary of its
    declared type counting as that type (`read_transitions(dictionaries=True)`)."""
    from hf_skillfollow.schema import TRANSITIONS_SCHEMA

    if schema.names != TRANSITIONS_SCHEMA.names or schema.metadata != TRANSITIONS_SCHEMA.metadata:
        return False
    return all(
        field.equals(declared)
        or (
            pa.types.is_dictionary(field.type)
            and field.with_type(field.type.value_type).equals(declared)
        )
        for field, declared in zip(schema, TRANSITIONS_SCHEMA, strict=True)
    )


def _too_long(table: pa.Table) -> str | None:
    import pyarrow.compute as pc

    for column in table.schema:
        kind = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
        if not pa.types.is_string(kind) or column.name in ("se_error", "sd_error"):
            continue
        # A character is at least one UTF-8 byte: a column whose longest value in bytes (read
        # from its offsets, no decoding; of a dictionary column, from every value of its
        # dictionaries) is within the limit is within it in characters too.
        if _longest_bytes(table[column.name]) <= MAX_IDENTITY_CHARS:
            continue
        longest = pc.max(pc.utf8_length(_used_values(table[column.name]))).as_py() or 0
        if longest > MAX_IDENTITY_CHARS:
            return (
                f"column {column.name!r} holds a value of {longest:,} characters; a source's "
                f"names and ids may have at most {MAX_IDENTITY_CHARS:,}"
            )
    return None


def _longest_bytes(column: pa.ChunkedArray) -> int:
    import pyarrow.compute as pc

    if pa.types.is_dictionary(column.type):
        column = pa.chunked_array([c.dictionary for c in column.chunks], column.type.value_type)
    return pc.max(pc.binary_length(column)).as_py() or 0


def _used_values(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """The values a column holds; of a dictionary column, the dictionary values its rows use
    (once per chunk: a long value is measured once, however many rows repeat it)."""
    if not pa.types.is_dictionary(column.type):
        return column
    import pyarrow.compute as pc

    parts = []
    for chunk in column.chunks:
        used = pc.unique(chunk.indices.drop_null())
        parts.append(chunk.dictionary.take(used))
    return pa.chunked_array(parts, column.type.value_type)


def _as_table(data: object) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    inner = getattr(getattr(data, "data", None), "table", None)  # datasets.Dataset
    if isinstance(inner, pa.Table):
        return inner
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return pa.Table.from_pandas(data, preserve_index=False)
    raise TypeError(
        f"reader returned {type(data).__name__}, expected a pyarrow Table or pandas DataFrame"
    )


@dataclass(frozen=True)
class SharedRun:
    """A run_id that several sources publish; `conflict` when their rows differ."""

    run_id: str
    sources: tuple[str, ...]
    conflict: bool

    def warning(self) -> str:
        names = " and ".join(f"'{s}'" for s in self.sources)
        return (
            f"Run '{self.run_id}' is published by {names} with different rows: each source's "
            "cells use its own rows, and pooling the sources leaves this run out"
        )


def shared_runs(tables: Mapping[str, pa.Table]) -> list[SharedRun]:
    """Run ids found in more than one source, each marked when the rows differ.

    Only the shared runs' rows are compared (a digest of their scalar columns, in any row
    order), so a board of disjoint sources pays one set intersection.
    """
    where: dict[str, list[str]] = {}
    for source, table in tables.items():
        for run_id in _used_values(table.column("run_id")).unique().to_pylist():
            where.setdefault(run_id, []).append(source)
    shared = {run: names for run, names in where.items() if len(names) > 1}
    if not shared:
        return []
    out = []
    for run_id, names in sorted(shared.items()):
        digests = {_run_digest(tables[name], run_id) for name in names}
        out.append(SharedRun(run_id, tuple(names), len(digests) > 1))
    return out


def _run_digest(table: pa.Table, run_id: str) -> tuple[int, int]:
    import pandas as pd
    import pyarrow.compute as pc

    rows = plain_rows(table.filter(pc.equal(table["run_id"], run_id)))
    scalar = [f.name for f in rows.schema if f.name != SOURCE and not pa.types.is_nested(f.type)]
    frame = rows.select(scalar).to_pandas()
    hashes = pd.util.hash_pandas_object(frame, index=False).to_numpy()
    return len(frame), int(hashes.sum(dtype="uint64"))


def _first_line(exc: BaseException, limit: int = 400) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else ""
    return f"{type(exc).__name__}: {line if len(line) <= limit else line[:limit] + '…'}"

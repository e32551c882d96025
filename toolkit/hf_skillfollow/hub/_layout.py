"""Folder layout of a results repo and the deterministic parquet bytes written into it.

A results repo holds `README.md` (the card), `data/transitions/<run_id>.parquet` and
`data/traces/<run_id>.parquet`. Files are written byte-for-byte deterministically so that
pushing the same run twice can be recognised by a sha256 of the bytes.
"""

from __future__ import annotations

import hashlib
import io
import re
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from hf_skillfollow.schema import (
    ANNOTATIONS_SCHEMA,
    TRACES_SCHEMA,
    TRANSITIONS_SCHEMA,
    SchemaError,
    validate_annotations,
    validate_traces,
    validate_transitions,
)
from hf_skillfollow.store import ANNOTATIONS as RUN_ANNOTATIONS
from hf_skillfollow.store import MANIFEST
from hf_skillfollow.store import TRACES as RUN_TRACES
from hf_skillfollow.store import TRANSITIONS as RUN_TRANSITIONS

CARD_PATH = "README.md"
TRANSITIONS_DIR = "data/transitions"
TRACES_DIR = "data/traces"
ANNOTATIONS_DIR = "data/annotations"

# Transitions rows are small (~1 KB): large groups keep the footer small and scans fast.
# Trace rows hold whole conversations, so smaller groups bound the memory of one batch.
_ROW_GROUP_ROWS = {"transitions": 100_000, "traces": 1_000, "annotations": 100_000}
_SORT_KEYS = {
    "transitions": [("repeat_index", "ascending"), ("task_id", "ascending")],
    "traces": [("task_id", "ascending"), ("arm", "ascending")],
    "annotations": [("annotator", "ascending"), ("task_id", "ascending")],
}
_SCHEMAS = {
    "transitions": (TRANSITIONS_SCHEMA, validate_transitions),
    "traces": (TRACES_SCHEMA, validate_traces),
    "annotations": (ANNOTATIONS_SCHEMA, validate_annotations),
}
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class HubError(RuntimeError):
    """Publishing or loading a results repo failed; the message says what to do."""


@dataclass(frozen=True)
class RunTables:
    """The publishable content of one run directory."""

    run_id: str
    source: Path
    transitions: pa.Table
    traces: pa.Table | None
    annotations: pa.Table | None = None  # RUN_DIR/annotations.parquet (`hf-skillfollow annotate`)


def transitions_path(run_id: str) -> str:
    return f"{TRANSITIONS_DIR}/{run_id}.parquet"


def traces_path(run_id: str) -> str:
    return f"{TRACES_DIR}/{run_id}.parquet"


def annotations_path(run_id: str, annotator: str) -> str:
    """One file per run and annotator, so a later annotator adds a file instead of a rewrite."""
    from hf_skillfollow.config import stable_hash

    return f"{ANNOTATIONS_DIR}/{run_id}-{stable_hash(annotator, length=10)}.parquet"


def is_run_dir(path: Path) -> bool:
    return path.is_dir() and ((path / MANIFEST).is_file() or (path / RUN_TRANSITIONS).is_file())


def is_repo_folder(path: Path) -> bool:
    return path.is_dir() and (path / CARD_PATH).is_file() and (path / "data").is_dir()


def read_run_dir(path: str | Path) -> RunTables:
    """Read and validate one run directory (manifest, transitions, optional traces)."""
    root = Path(path)
    if not root.is_dir():
        raise HubError(f"{root}: not a directory (expected a run directory with {RUN_TRANSITIONS})")
    tpath = root / RUN_TRANSITIONS
    if not tpath.is_file():
        raise HubError(
            f"{root}: no {RUN_TRANSITIONS}; finish the run (or resume it) before pushing"
        )
    transitions = validate_transitions(read_parquet_file(tpath), source=str(tpath))
    run_id = _run_id(root, transitions)
    traces = None
    if (root / RUN_TRACES).is_file():
        traces = validate_traces(
            read_parquet_file(root / RUN_TRACES), source=str(root / RUN_TRACES)
        )
        _check_single_run(traces, run_id, root / RUN_TRACES)
    annotations = None
    if (root / RUN_ANNOTATIONS).is_file():
        path = root / RUN_ANNOTATIONS
        annotations = canonical(
            validate_annotations(read_parquet_file(path), source=str(path)), "annotations"
        )
        _check_single_run(annotations, run_id, path)
    return RunTables(
        run_id, root, canonical(transitions, "transitions"), _maybe(traces), annotations
    )


def read_parquet_file(path: Path) -> pa.Table:
    """The table in `path`; a truncated or non-parquet file is a HubError naming it."""
    try:
        return pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise HubError(unreadable(path, exc)) from None


def unreadable(path: str | Path, exc: BaseException) -> str:
    """The one line saying `path` is no readable parquet file: pyarrow's reason up to its
    first line break (some of its messages go on with the file's whole schema)."""
    reason = str(exc).strip().split("\n", 1)[0] or type(exc).__name__
    return f"{path}: not a readable parquet file ({reason})"


def _maybe(traces: pa.Table | None) -> pa.Table | None:
    return None if traces is None else canonical(traces, "traces")


def _run_id(root: Path, transitions: pa.Table) -> str:
    ids = sorted(set(transitions.column("run_id").to_pylist()))
    manifest_id = _manifest_run_id(root)
    if transitions.num_rows == 0:
        raise HubError(f"{root / RUN_TRANSITIONS}: no rows; nothing to publish")
    if len(ids) != 1:
        raise HubError(
            f"{root / RUN_TRANSITIONS}: column 'run_id' holds several runs {ids}; push one run per directory"
        )
    if manifest_id is not None and manifest_id != ids[0]:
        raise HubError(
            f"{root / MANIFEST}: run_id {manifest_id!r} differs from the rows' run_id {ids[0]!r}"
        )
    if not _RUN_ID.match(ids[0]):
        raise HubError(
            f"{root}: run_id {ids[0]!r} cannot name a file (use letters, digits, '.', '_', '-')"
        )
    return ids[0]


#: A manifest is a few KiB of settings and task ids (80 per partition).
MAX_MANIFEST_BYTES = 16 * 1024 * 1024


def read_manifest(path: Path) -> dict | None:
    """A run folder's manifest as an object, None when the folder has none. Whoever handed
    over the folder wrote it: one over `MAX_MANIFEST_BYTES`, not JSON (nested past the
    parser's depth included) or not an object is one HubError naming it."""
    from hf_skillfollow._text import loads_untrusted

    if not path.is_file():
        return None
    with path.open("rb") as f:
        raw = f.read(MAX_MANIFEST_BYTES + 1)
    if len(raw) > MAX_MANIFEST_BYTES:
        raise HubError(f"{path}: larger than {MAX_MANIFEST_BYTES >> 20} MiB, not a manifest")
    try:
        manifest = loads_untrusted(raw)
    except ValueError as exc:
        raise HubError(f"{path}: invalid JSON ({str(exc)[:200]})") from None
    if not isinstance(manifest, dict):
        raise HubError(f"{path}: not a JSON object (a run manifest has run_id, config, ...)")
    return manifest


def _manifest_run_id(root: Path) -> str | None:
    manifest = read_manifest(root / MANIFEST)
    run_id = manifest.get("run_id") if manifest is not None else None
    if run_id is not None and not isinstance(run_id, str):
        raise HubError(f"{root / MANIFEST}: field 'run_id' must be a string")
    return run_id


def _check_single_run(table: pa.Table, run_id: str, path: Path) -> None:
    ids = set(table.column("run_id").to_pylist())
    if ids - {run_id}:
        raise HubError(f"{path}: column 'run_id' holds {sorted(ids)}, expected only {run_id!r}")


def canonical(table: pa.Table, config: str) -> pa.Table:
    """Rows in a fixed order, so a rebuilt run directory yields the same bytes."""
    return table.sort_by(_SORT_KEYS[config]).combine_chunks()


def parquet_bytes(table: pa.Table, config: str) -> bytes:
    """Deterministic parquet for `config` (transitions, traces, annotations) with its schema."""
    schema = _SCHEMAS[config][0]
    if not table.schema.equals(schema, check_metadata=False):
        raise SchemaError(f"{config}: table does not have the {config} schema")
    sink = io.BytesIO()
    pq.write_table(
        table.cast(schema),
        sink,
        compression="zstd",
        compression_level=3,
        row_group_size=_ROW_GROUP_ROWS[config],
        use_dictionary=True,
        write_statistics=True,
    )
    return sink.getvalue()


def read_parquet_bytes(data: bytes, config: str, source: str) -> pa.Table:
    table = pq.read_table(pa.BufferReader(data))
    return canonical(_SCHEMAS[config][1](table, source=source), config)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()

"""Load the `transitions` / `traces` of a results repo (Hub id or local folder) or a run dir.

Repos go through `datasets.load_dataset(source, config)`, exactly what a user would call, so
the toolkit reads what the Hub serves; run directories are read from their parquet files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pyarrow as pa

from hf_skillfollow.hub._layout import (
    RUN_TRACES,
    RUN_TRANSITIONS,
    HubError,
    is_repo_folder,
    is_run_dir,
)
from hf_skillfollow.locations import is_hub_id
from hf_skillfollow.schema import SchemaError, validate_traces, validate_transitions

Config = Literal["transitions", "traces"]


def load_transitions(source: str | Path) -> pa.Table:
    """Validated transitions (schema v1) from a Hub repo id, a repo folder or a run directory."""
    return _load(source, "transitions")


def load_traces(source: str | Path) -> pa.Table:
    """Validated traces (schema v1) from a Hub repo id, a repo folder or a run directory."""
    return _load(source, "traces")


def _load(source: str | Path, config: Config) -> pa.Table:
    path = Path(source)
    if path.exists():
        return _load_path(path, config)
    text = str(source)
    if is_hub_id(text):
        return _validate(_load_dataset(text, config), config, text)
    raise HubError(f"{text}: no such file or directory, and not a Hub dataset repo id (ORG/NAME)")


def _load_path(path: Path, config: Config) -> pa.Table:
    if is_run_dir(path):
        file = path / (RUN_TRANSITIONS if config == "transitions" else RUN_TRACES)
        if not file.is_file():
            raise HubError(f"{path}: run directory has no {file.name}")
        return _read_parquet(file, config)
    if is_repo_folder(path):
        return _validate(
            _load_dataset(str(path), config, cache_dir=_local_cache_dir(path)), config, str(path)
        )
    if path.is_file() and path.suffix == ".parquet":
        return _read_parquet(path, config)
    raise HubError(
        f"{path}: not a run directory (no {RUN_TRANSITIONS}), not a results repo folder "
        "(README.md + data/) and not a parquet file"
    )


def _read_parquet(file: Path, config: Config) -> pa.Table:
    import pyarrow.parquet as pq

    return _validate(pq.read_table(file), config, str(file))


def _local_cache_dir(path: Path) -> str:
    """A datasets cache folder keyed by the folder's files (names, sizes, mtimes).

    For a local folder whose README declares `configs`, datasets keys its cache on the
    config patterns and the folder's base name only, so a changed file or another folder
    with the same name would be served stale rows from the cache.
    """
    import hashlib

    import datasets

    digest = hashlib.sha256(str(path.resolve()).encode())
    for file in sorted(p for p in path.rglob("*") if p.is_file() and ".git" not in p.parts):
        stat = file.stat()
        digest.update(
            f"{file.relative_to(path).as_posix()}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode()
        )
    return str(
        Path(datasets.config.HF_DATASETS_CACHE) / "skillfollow-local" / digest.hexdigest()[:24]
    )


def _load_dataset(source: str, config: Config, cache_dir: str | None = None) -> pa.Table:
    import datasets

    try:
        ds = datasets.load_dataset(source, config, split="train", cache_dir=cache_dir)
    except ValueError as exc:
        if "BuilderConfig" in str(exc) or "config" in str(exc).lower():
            raise HubError(
                f"{source}: not a skillfollow results repo: it has no {config!r} config "
                f"(a results repo's README declares 'transitions' and 'traces'; {exc})"
            ) from None
        raise
    except FileNotFoundError as exc:  # DatasetNotFoundError derives from it
        raise HubError(
            f"{source}: no such local path, and no accessible Hub dataset with that id ({exc})"
        ) from None
    return ds.data.table


def _validate(table: pa.Table, config: Config, source: str) -> pa.Table:
    check = validate_transitions if config == "transitions" else validate_traces
    try:
        return check(table, source=f"{source} [{config}]")
    except SchemaError as exc:
        raise SchemaError(f"not a skillfollow results repo or run (schema v1): {exc}") from None

"""A sweep cell's key: the cell identity `run` computes, plus where the model is reached.

`run` identifies a cell by `config.cell_id` over its protocol settings (`protocol_dict`), the
skill pool's content hash, the prompts' hash and the benchmark data's version. A sweep must
tell apart every pair of cells `run` tells apart, before any run starts: two task files of
one benchmark, one model id behind two endpoints, two skill pools are two cells, each in its
own folder. So the key hashes the same parts, computed without contacting a model:

- every `RunConfig` field except the few that are how fast or with which key a cell runs
  (`NEUTRAL_FIELDS`): the protocol, the judge, the seed, and the endpoints (`base_url`,
  `judge_base_url`, credentials removed);
- the bytes of the benchmark file (`tasks_file`, or the variable `BenchmarkSpec.file_env`
  names), not its path: a moved file is the same cell, an edited one another;
- the skill pool's content hash (`runner.resolve_pool`, the pool `run` would load) and the
  prompts' hash.

Each file and pool is read once per sweep (`CellIdentity` keeps what it has hashed).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from hf_skillfollow.config import RUN_IDENTITY_FIELDS, RunConfig, cell_id, stable_hash

#: `RunConfig` fields of the run itself that do not make another cell: how fast, with how
#: many repeats (each repeat is its own run folder) and with which key variable. Every other
#: field, present or added later, is part of the key (tests/test_sweep_cells.py checks each).
NEUTRAL_FIELDS = frozenset(
    {"concurrency", "request_timeout", "n_threads", "server_port", "api_key_env",
     "judge_api_key_env", "repeats"}
)  # fmt: skip
#: The run fields (outside `run`'s protocol dict) that the key adds: each makes another cell.
KEYED_RUN_FIELDS = RUN_IDENTITY_FIELDS - NEUTRAL_FIELDS


class CellIdentity:
    """Cell keys, with each benchmark file and skill pool hashed once."""

    def __init__(self) -> None:
        self._files: dict[tuple[str, int, int, int], str] = {}
        self._pools: dict[tuple[Any, ...], str] = {}

    def key(self, config: RunConfig) -> str:
        from hf_skillfollow._redact import redact_url
        from hf_skillfollow.prompts import prompts_hash

        dumped = config.model_dump(mode="json")
        protocol = {k: v for k, v in dumped.items() if k not in RUN_IDENTITY_FIELDS}
        identity = cell_id(
            protocol,
            skill_pool_hash=self.pool_hash(config),
            prompts_hash=prompts_hash(config.domain, config.access),
            benchmark_version=self.data_hash(config),
        )
        run_fields = {k: dumped[k] for k in sorted(KEYED_RUN_FIELDS - {"tasks_file"})}
        for url in ("base_url", "judge_base_url"):
            run_fields[url] = redact_url(run_fields[url])  # one endpoint, whatever the key
        return stable_hash({"cell": identity, **run_fields}, length=12)

    def data_hash(self, config: RunConfig) -> str:
        """sha256 of the benchmark file the run would read, or the official source's name."""
        from hf_skillfollow.benchmarks import benchmark_spec

        spec = benchmark_spec(config.benchmark)
        if spec.loader == "skill-evals":  # the tasks are the pool's evals: run's own version
            from hf_skillfollow.tasks import load_tasks

            return load_tasks(spec.name, None, config.skills_dir)[1]
        path = config.tasks_file or os.environ.get(spec.file_env) or None
        if path is None:
            return f"official:{spec.name}"
        return self._file_hash(Path(path).expanduser())

    def _file_hash(self, path: Path) -> str:
        from hf_skillfollow._files import regular_file

        try:
            info = regular_file(path).stat()
        except OSError as exc:
            raise ValueError(f"tasks_file {path}: {exc.strerror or exc}") from None
        stamp = (str(path.resolve()), info.st_size, info.st_mtime_ns, info.st_ino)
        if stamp not in self._files:
            digest = hashlib.sha256()
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
            self._files[stamp] = digest.hexdigest()
        return self._files[stamp]

    def pool_hash(self, config: RunConfig) -> str:
        """The content hash of the pool `run` would load for `config` (runner.resolve_pool)."""
        from hf_skillfollow.runner import resolve_pool

        pool_key = (
            str(config.skills_dir) if config.skills_dir else None,
            config.merged_library,
            config.domain,
            config.benchmark == "skill-evals",
        )
        if pool_key not in self._pools:
            try:
                self._pools[pool_key] = resolve_pool(config).content_hash
            except ValueError as exc:
                raise ValueError(f"skill pool: {exc}") from None
        return self._pools[pool_key]


def cell_key(config: RunConfig, identity: CellIdentity | None = None) -> str:
    """The key of the cell `config` defines (see the module docstring)."""
    return (identity or CellIdentity()).key(config)

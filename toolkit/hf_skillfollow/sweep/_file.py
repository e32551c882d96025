"""The sweep file: a matrix of runs declared in YAML (docs/sweep.md, "Sweep file").

Every key here names either an axis of the matrix or a `RunConfig` field; the matrix module
turns the file into one `RunConfig` per cell. Fields are checked here for shape only: whether
a value is a valid setting is `RunConfig`'s job, so a field added to `RunConfig` (e.g.
`access`) works in `settings`, `axes` and the model entries without a change here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
    field_validator,
)


class SweepFileError(ValueError):
    """A sweep file that cannot be read or breaks the schema; the message names file and field."""


def _as_list(value: Any) -> Any:
    """A scalar where a list of values is expected means a list of one."""
    return value if value is None or isinstance(value, list) else [value]


def _axis_lists(value: Any) -> Any:
    return {k: _as_list(x) for k, x in value.items()} if isinstance(value, dict) else value


def _no_empty_axes(value: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """An axis is a list of values: an empty one would silently make no cell at all."""
    for name, values in value.items():
        if name in SWEEP_OWN_FIELDS:
            raise ValueError(f"{name!r} is not an axis: {SWEEP_OWN_FIELDS[name]}")
        if not values:
            raise ValueError(f"axis {name!r} has no values (give at least one)")
    return value


def _no_sweep_fields(value: dict[str, Any]) -> dict[str, Any]:
    """Settings the sweep itself decides are refused where they would be ignored."""
    for name in value:
        if name in SWEEP_OWN_FIELDS:
            raise ValueError(f"{name!r}: {SWEEP_OWN_FIELDS[name]}")
    return value


def _not_empty(value: Any) -> Any:
    if isinstance(value, list) and not value:
        raise ValueError("an empty list selects nothing (leave the key out, or give values)")
    return value


#: RunConfig fields a sweep sets itself, refused in `settings`, model entries and `axes`.
SWEEP_OWN_FIELDS = {
    "repeats": "a sweep's runs per cell are its top-level `repeats: N` (each repeat is its own "
    "run folder)",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Resources(_Strict):
    """What a cell of this model needs on the machine that runs it (Ray executor only)."""

    num_cpus: float = Field(1.0, ge=0, description="CPUs reserved per cell (client + scoring).")
    num_gpus: float = Field(
        0.0, ge=0, description="GPUs per cell: set for an in-process vLLM model (backend vllm)."
    )
    custom: dict[str, float] = Field(
        default_factory=dict,
        description="Custom Ray resources, e.g. {'model:qwen3-8b': 1} to send cells to the "
        "nodes whose local vLLM serves that model.",
    )


class ModelEntry(_Strict):
    """One model of the panel and how to reach it."""

    name: str = Field(..., min_length=1, description="Alias used in labels and selections.")
    model: str = Field(..., min_length=1, description="Model id sent to the backend.")
    backend: str | None = Field(None, description="Backend registry name [model_defaults, openai].")
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint.")
    api_key_env: str | None = Field(None, description="Variable holding the API key.")
    concurrency: int | None = Field(
        None, ge=1, description="Requests in flight to this model, over all its cells together."
    )
    resources: Resources = Field(default_factory=Resources, description="Ray resources per cell.")
    settings: dict[str, Any] = Field(
        default_factory=dict, description="Any other RunConfig field for this model's cells."
    )

    _own = field_validator("settings")(_no_sweep_fields)

    def run_fields(self, defaults: dict[str, Any]) -> dict[str, Any]:
        own = {
            k: getattr(self, k)
            for k in ("model", "backend", "base_url", "api_key_env", "concurrency")
            if getattr(self, k) is not None
        }
        return {**defaults, **self.settings, **own}


class BenchmarkEntry(_Strict):
    """One benchmark and the partitions of it the sweep evaluates."""

    benchmark: str = Field(..., description="Benchmark name (hf_skillfollow.benchmarks).")
    name: str | None = Field(None, description="Label for selections [the benchmark name].")
    partition_seeds: list[StrictInt] = Field([42], min_length=1, description="One cell per seed.")
    partition_size: int | None = Field(None, ge=1, description="Tasks per partition [80].")
    limit: int | None = Field(None, ge=1, description="Only the first N tasks (smoke sweeps).")
    tasks_file: Path | None = Field(None, description="Local benchmark file.")

    _seeds = field_validator("partition_seeds", mode="before")(_as_list)

    @property
    def label(self) -> str:
        return self.name or self.benchmark

    def run_fields(self, seed: int) -> dict[str, Any]:
        fields: dict[str, Any] = {"benchmark": self.benchmark, "partition_seed": seed}
        for key in ("partition_size", "limit", "tasks_file"):
            if getattr(self, key) is not None:
                fields[key] = getattr(self, key)
        return fields


#: Axis keys of a selection -> the RunConfig field each sets (models/benchmarks are bundles).
SCALAR_AXES = {
    "access": "access",
    "conditions": "condition",
    "top_k": "top_k",
    "merged_library": "merged_library",
    "skill_pools": "skills_dir",
}


class Selection(_Strict):
    """Values per axis. In `include` an entry is a sub-matrix (axes it leaves out take the
    sweep's own values); in `exclude` it removes every cell matching all the axes it names."""

    models: list[str] | None = Field(None, description="Model aliases.")
    benchmarks: list[str] | None = Field(None, description="Benchmark labels.")
    partition_seeds: list[StrictInt] | None = Field(None, description="Partition seeds.")
    access: list[str | None] | None = Field(None, description="Skill access protocols.")
    conditions: list[str | None] | None = Field(None, description="Skill-content conditions.")
    top_k: list[StrictInt | None] | None = Field(None, description="Skills returned per search.")
    merged_library: list[StrictBool | None] | None = Field(
        None, description="Merged single library."
    )
    skill_pools: list[str | None] | None = Field(
        None,
        description="Skill pool folders, or shipped pool names (`math`; `./math` is a folder).",
    )
    axes: dict[str, list[Any]] = Field(
        default_factory=dict, description="Any other RunConfig field -> values."
    )

    _lists = field_validator(
        "models", "benchmarks", "partition_seeds", "access", "conditions", "top_k",
        "merged_library", "skill_pools", mode="before",
    )(_as_list)  # fmt: skip
    _filled = field_validator(
        "models", "benchmarks", "partition_seeds", "access", "conditions", "top_k",
        "merged_library", "skill_pools",
    )(_not_empty)  # fmt: skip

    _axes = field_validator("axes", mode="before")(_axis_lists)
    _axes_filled = field_validator("axes")(_no_empty_axes)


class Retry(_Strict):
    """How a failed cell is tried again (exponential backoff with jitter)."""

    attempts: int = Field(3, ge=1, description="Tries per cell, the first included.")
    base_delay_s: float = Field(10.0, ge=0, description="Wait before the second try.")
    max_delay_s: float = Field(300.0, ge=0, description="Longest wait between tries.")


class SweepFile(_Strict):
    """A whole sweep: the matrix, its exceptions and how to run it."""

    name: str = Field(..., min_length=1, description="Sweep name (default output folder).")
    description: str = Field("", description="Free text.")
    output_dir: Path | None = Field(
        None,
        description="Where the run directories go [runs/NAME], relative to the current folder.",
    )
    max_cells: int = Field(4, ge=1, description="Cells in flight at once.")
    retry: Retry = Field(default_factory=Retry, description="Retries of a failed cell.")
    settings: dict[str, Any] = Field(
        default_factory=dict, description="RunConfig fields for every cell (before the axes)."
    )
    model_defaults: dict[str, Any] = Field(
        default_factory=dict, description="RunConfig fields for every model entry."
    )
    models: list[ModelEntry] = Field(..., min_length=1)
    benchmarks: list[BenchmarkEntry] = Field(..., min_length=1)
    # Scalar axes: [null] (the default) leaves the setting to `settings` / the model entry /
    # RunConfig's default; a list of values makes one cell per value.
    access: list[str | None] = Field([None], min_length=1, description="Skill access protocols.")
    conditions: list[str | None] = Field([None], min_length=1, description="Content controls.")
    top_k: list[StrictInt | None] = Field([None], min_length=1, description="Skills per search.")
    merged_library: list[StrictBool | None] = Field(
        [None], min_length=1, description="Merged library."
    )
    skill_pools: list[str | None] = Field(
        [None],
        min_length=1,
        description="Skill pool folders [the benchmark domain's shipped pool].",
    )
    axes: dict[str, list[Any]] = Field(
        default_factory=dict, description="Any other RunConfig field -> values (an axis each)."
    )
    repeats: int = Field(1, ge=1, description="Runs per cell (seed, seed+1, ...).")
    include: list[Selection] = Field(default_factory=list, description="Extra sub-matrices.")
    exclude: list[Selection] = Field(default_factory=list, description="Cells to leave out.")

    _lists = field_validator(
        "access", "conditions", "top_k", "merged_library", "skill_pools", mode="before"
    )(_as_list)
    _axes = field_validator("axes", mode="before")(_axis_lists)
    _axes_filled = field_validator("axes")(_no_empty_axes)
    _own = field_validator("settings", "model_defaults")(_no_sweep_fields)

    @field_validator("name")
    @classmethod
    def _folder_name(cls, v: str) -> str:
        # The default output folder is runs/NAME: a name with a separator, `..` or an absolute
        # path would put a shared sweep file's runs anywhere on this machine.
        if v in (".", "..") or any(c in v for c in "/\\") or not v.isprintable():
            raise ValueError(
                f"{v[:80]!r} is not a folder name (the default output folder is runs/NAME): "
                "no '/', '\\', '..' or control characters; set output_dir to choose a folder"
            )
        return v

    @field_validator("models")
    @classmethod
    def _unique_models(cls, v: list[ModelEntry]) -> list[ModelEntry]:
        _check_unique([m.name for m in v], "model name")
        return v

    @field_validator("benchmarks")
    @classmethod
    def _unique_benchmarks(cls, v: list[BenchmarkEntry]) -> list[BenchmarkEntry]:
        _check_unique([b.label for b in v], "benchmark label (set `name` to tell them apart)")
        return v


def _check_unique(names: list[str], what: str) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise ValueError(f"duplicate {what} {n!r}")
        seen.add(n)


#: A sweep file is a few kilobytes of settings; a larger one is refused before YAML sees it.
MAX_SWEEP_FILE_BYTES = 1024 * 1024


def read_sweep_file(path: Path) -> SweepFile:
    """Parse and validate `path`; any problem is one SweepFileError naming file and field.

    The file is untrusted like any other input: only a regular file of at most
    `MAX_SWEEP_FILE_BYTES` is read (the skill reader's bounded read), and YAML anchors and
    aliases are refused (the skill front matter's loader), so a small file cannot stand for a
    huge document.
    """
    import yaml

    from hf_skillfollow._skill_files import ReadRefused, read_text
    from hf_skillfollow._skill_meta import YAMLAliasError, load_plain_yaml

    try:
        text = read_text(path.resolve(strict=True), MAX_SWEEP_FILE_BYTES)
    except OSError as exc:
        raise SweepFileError(f"{path}: cannot read the sweep file ({exc.strerror})") from None
    except (ReadRefused, RuntimeError) as exc:
        raise SweepFileError(f"{path}: cannot read the sweep file: {exc}") from None
    try:
        raw = load_plain_yaml(text)
    except YAMLAliasError as exc:
        raise SweepFileError(
            f"{path}: YAML anchors and aliases (&, *) are not allowed in a sweep file ({exc})"
        ) from None
    except (yaml.YAMLError, RecursionError) as exc:
        reason = (
            "nested too deep" if isinstance(exc, RecursionError) else " ".join(str(exc).split())
        )
        raise SweepFileError(f"{path}: not valid YAML ({reason[:300]})") from None
    if not isinstance(raw, dict):
        raise SweepFileError(f"{path}: a sweep file is a mapping (name, models, benchmarks, ...)")
    try:
        return SweepFile.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}"
            for e in exc.errors()
        )
        raise SweepFileError(f"{path}: {problems}") from None
    except RecursionError:
        raise SweepFileError(f"{path}: a value is nested too deep") from None

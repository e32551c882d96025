"""Sweep file -> the list of cells: the matrix, its `include` blocks, minus `exclude` matches.

Each cell is a plain `RunConfig` (exactly what `hf-skillfollow run` would build from the same
settings) plus the labels the sweep selects and shows it by. Cells are kept in file order and
de-duplicated by their key (the cell-defining settings and the seed), so a later block that
repeats an earlier cell adds nothing.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hf_skillfollow.config import RunConfig
from hf_skillfollow.sweep._file import (
    SCALAR_AXES,
    BenchmarkEntry,
    ModelEntry,
    Resources,
    Selection,
    SweepFile,
    SweepFileError,
)
from hf_skillfollow.sweep._identity import CellIdentity


@dataclass(frozen=True)
class Cell:
    """One cell of the sweep: a run configuration and where it sits in the matrix."""

    config: RunConfig
    model: str  # alias from the sweep file
    benchmark: str  # benchmark label from the sweep file
    coords: tuple[tuple[str, Any], ...]  # axis -> value, what include/exclude match on
    resources: Resources
    #: the cell identity `run` computes, plus seed and endpoints (`sweep._identity`)
    key: str

    @property
    def label(self) -> str:
        coords = dict(self.coords)
        parts = [self.model, f"{self.benchmark}-{self.config.partition_seed}"]
        if self.config.condition != "normal":
            parts.append(self.config.condition)
        if self.config.top_k != 3:
            parts.append(f"top{self.config.top_k}")
        if self.config.merged_library:
            parts.append("merged")
        if coords.get("access") is not None:
            parts.append(str(coords["access"]))
        if self.config.skills_dir is not None:
            parts.append(Path(self.config.skills_dir).name)
        parts += [f"{k.removeprefix('axes.')}={v}" for k, v in self.coords if k.startswith("axes.")]
        return " ".join(parts)

    @property
    def slug(self) -> str:
        """The label as a folder name."""
        return re.sub(r"[^A-Za-z0-9._-]+", "_", self.label.replace(" ", "__"))[:80]


#: Runs (cells x repeats) one sweep file may declare, counted before anything is expanded: the
#: paper's panel is 152 cells, and a few hundred bytes of axes could otherwise ask for millions.
MAX_CELLS = 10_000


def expand(sweep: SweepFile, source: Path) -> list[Cell]:
    """Every cell of `sweep` (read from `source`, which relative paths are resolved against)."""
    models = {m.name: m for m in sweep.models}
    benchmarks = {b.label: b for b in sweep.benchmarks}
    blocks = [("the matrix", _top_selection(sweep))] + [
        (f"include[{i}]", _fill(block, sweep)) for i, block in enumerate(sweep.include)
    ]
    _check_size(sweep, source, blocks, benchmarks)
    identity = CellIdentity()
    built = [
        cell
        for where, block in blocks
        for cell in _block_cells(sweep, source, where, block, models, benchmarks, identity)
    ]
    for i, block in enumerate(sweep.exclude):
        _check_names(source, f"exclude[{i}]", block, models, benchmarks)
    excluded = _Exclusions(sweep.exclude)
    cells: dict[str, Cell] = {}
    for cell in built:
        if not excluded.matches(cell):
            cells.setdefault(cell.key, cell)
    return list(cells.values())


def _block_sizes(
    block: Selection, benchmarks: dict[str, BenchmarkEntry]
) -> tuple[int, list[tuple[str, int]]]:
    """The cells a block declares (before de-duplication and `exclude`) and its axis sizes."""
    seeds = sum(
        len(block.partition_seeds or benchmarks[b].partition_seeds)
        for b in block.benchmarks or ()
        if b in benchmarks
    )
    sizes = [("models", len(block.models or ())), ("benchmarks x partition_seeds", seeds)]
    sizes += [(axis, len(getattr(block, axis))) for axis in SCALAR_AXES]
    sizes += [(f"axes.{k}", len(v)) for k, v in block.axes.items()]
    return math.prod(n for _, n in sizes), sizes


def _check_size(
    sweep: SweepFile,
    source: Path,
    blocks: list[tuple[str, Selection]],
    benchmarks: dict[str, BenchmarkEntry],
) -> None:
    sized = [(where, *_block_sizes(block, benchmarks)) for where, block in blocks]
    runs = sum(n for _, n, _ in sized) * sweep.repeats
    if runs <= MAX_CELLS:
        return
    # name the largest block's axes that multiply (those with more than one value)
    where, n, sizes = max(sized, key=lambda b: b[1])
    factors = " x ".join(f"{axis} {size}" for axis, size in sizes if size != 1) or "1"
    raise SweepFileError(
        f"{source}: the sweep declares {runs} runs (cells x repeats {sweep.repeats}), more "
        f"than the {MAX_CELLS} allowed; largest block {where}: {n} cells = {factors}"
    )


def _top_selection(sweep: SweepFile) -> Selection:
    return Selection(
        models=[m.name for m in sweep.models],
        benchmarks=[b.label for b in sweep.benchmarks],
        **{axis: getattr(sweep, axis) for axis in SCALAR_AXES},
        axes=sweep.axes,
    )


def _fill(block: Selection, sweep: SweepFile) -> Selection:
    """An include block's missing axes take the sweep's own values."""
    top = _top_selection(sweep)
    values = {
        name: getattr(block, name) if getattr(block, name) is not None else getattr(top, name)
        for name in ("models", "benchmarks", *SCALAR_AXES)
    }
    return Selection(
        **values, partition_seeds=block.partition_seeds, axes={**sweep.axes, **block.axes}
    )


def _block_cells(
    sweep: SweepFile,
    source: Path,
    where: str,
    block: Selection,
    models: dict[str, ModelEntry],
    benchmarks: dict[str, BenchmarkEntry],
    identity: CellIdentity,
) -> list[Cell]:
    _check_names(source, where, block, models, benchmarks)
    scalar = [(axis, getattr(block, axis)) for axis in SCALAR_AXES]
    axes = [(f"axes.{k}", v) for k, v in block.axes.items()]
    out = []
    for model_name in block.models or ():
        model = models[model_name]
        for bench_name in block.benchmarks or ():
            bench = benchmarks[bench_name]
            for seed in block.partition_seeds or bench.partition_seeds:
                for combo in itertools.product(*(values for _, values in scalar + axes)):
                    coords = tuple(zip([name for name, _ in scalar + axes], combo, strict=True))
                    config = _config(sweep, source, where, model, bench, seed, dict(coords))
                    full = (("models", model_name), ("benchmarks", bench_name),
                            ("partition_seeds", seed), *coords)  # fmt: skip
                    try:
                        key = identity.key(config)
                    except ValueError as exc:
                        raise SweepFileError(
                            f"{source}: {where}, cell {model_name} {bench_name}-{seed}: {exc}"
                        ) from None
                    out.append(Cell(config, model_name, bench_name, full, model.resources, key))
    return out


def _check_names(
    source: Path,
    where: str,
    block: Selection,
    models: dict[str, ModelEntry],
    benchmarks: dict[str, BenchmarkEntry],
) -> None:
    """An alias no model or benchmark entry has is a typo, in `include` and `exclude` alike."""
    for field, names, known in (
        ("models", block.models, models),
        ("benchmarks", block.benchmarks, benchmarks),
    ):
        unknown = [n for n in names or () if n not in known]
        if unknown:
            raise SweepFileError(
                f"{source}: {where}.{field}: unknown {unknown}; the sweep declares {sorted(known)}"
            )


def _config(
    sweep: SweepFile,
    source: Path,
    where: str,
    model: ModelEntry,
    bench: BenchmarkEntry,
    seed: int,
    coords: dict[str, Any],
) -> RunConfig:
    from hf_skillfollow.cli._run import _LOCAL_DEFAULTS

    fields: dict[str, Any] = {**sweep.settings, **model.run_fields(sweep.model_defaults)}
    fields.setdefault("backend", "openai")
    fields.update(bench.run_fields(seed))
    for axis, field in SCALAR_AXES.items():
        if coords[axis] is not None:
            fields[field] = coords[axis]
    fields.update({k.removeprefix("axes."): v for k, v in coords.items() if k.startswith("axes.")})
    fields["repeats"] = sweep.repeats
    if fields["backend"] == "local":  # the same smaller defaults as `run` (cli/_run.py)
        for key, value in _LOCAL_DEFAULTS.items():
            fields.setdefault(key, value)
    for key in ("tasks_file", "skills_dir"):
        if fields.get(key) is None or Path(fields[key]).expanduser().is_absolute():
            continue
        if key == "skills_dir" and _shipped_pool_name(fields[key]):
            fields[key] = Path(str(fields[key]))  # as `run --skills math`: the shipped pool
            continue
        fields[key] = (source.parent / Path(fields[key]).expanduser()).resolve()
    for key, value in fields.items():
        known = RunConfig.model_fields.get(key)
        if isinstance(value, bool) and known is not None and not _takes_bool(known.annotation):
            raise SweepFileError(
                f"{source}: {where}, cell {model.name} {bench.label}-{seed}: {key}: {value!r} "
                "is a yes/no value, not a setting of this field"
            )
    try:
        return RunConfig(**fields)
    except ValidationError as exc:
        problems = "; ".join(_problem(e) for e in exc.errors())
        raise SweepFileError(
            f"{source}: {where}, cell {model.name} {bench.label}-{seed}: {problems}"
        ) from None


def _takes_bool(annotation: Any) -> bool:
    """Whether a RunConfig field's type admits a bool (pydantic would read `true` as 1)."""
    import typing

    return annotation is bool or bool in typing.get_args(annotation) or annotation is Any


def _problem(error: Any) -> str:
    field = ".".join(str(p) for p in error["loc"])
    if error["type"] == "extra_forbidden":
        return f"{field}: not a run setting of this version (see `hf-skillfollow run --help`)"
    return f"{field}: {error['msg']}"


def _shipped_pool_name(value: Any) -> bool:
    """A bare name (no path separator, not `./`) of a pool shipped with the toolkit."""
    from hf_skillfollow._resources import shipped_pool

    text = str(value)
    if "/" in text or "\\" in text or text.startswith((".", "~")):
        return False
    try:
        shipped_pool(text)
    except FileNotFoundError:
        return False
    return True


_NAMED_AXES = ("models", "benchmarks", "partition_seeds", *SCALAR_AXES)


class _Exclusions:
    """The `exclude` entries as one index: per axis and value, a bitmask of the entries that
    accept the cell's value there (an entry that leaves the axis out accepts any).

    A cell is excluded when one entry accepts it on every axis: the AND of one mask per axis
    of the cell, so the work is (entries + cells x axes) big-integer operations, where
    matching each cell against each entry was cells x entries (1,000 entries over the paper
    panel took 200 s). Values compare as the entries' own matching did: the cell's setting
    wherever it came from, skill pools by folder name, numbers by value.
    """

    def __init__(self, entries: list[Selection]) -> None:
        self.any: dict[str, int] = {}  # axis -> entries that leave it out
        self.by_value: dict[str, dict[Any, int]] = {}
        self.live = 0  # entries that name at least one axis (an empty entry matches nothing)
        for i, entry in enumerate(entries):
            bit = 1 << i
            named = {n: getattr(entry, n) for n in _NAMED_AXES if getattr(entry, n) is not None}
            named.update({f"axes.{k}": v for k, v in entry.axes.items()})
            if named:
                self.live |= bit
            for axis, values in named.items():
                slot = self.by_value.setdefault(axis, {})
                for value in values:
                    norm = _norm_value(axis, value)
                    slot[norm] = slot.get(norm, 0) | bit
        for axis in self.by_value:
            named_it = 0
            for bits in self.by_value[axis].values():
                named_it |= bits
            self.any[axis] = self.live & ~named_it

    def matches(self, cell: Cell) -> bool:
        mask = self.live
        if not mask:
            return False
        coords = dict(cell.coords)
        for axis, slot in self.by_value.items():
            if axis in SCALAR_AXES:  # the cell's setting, wherever it came from
                value = getattr(cell.config, SCALAR_AXES[axis], None)
            elif axis.startswith("axes."):
                value = getattr(cell.config, axis.removeprefix("axes."), None)
            else:
                value = coords.get(axis)
            mask &= self.any.get(axis, 0) | slot.get(_norm_value(axis, value), 0)
            if not mask:
                return False
        return True


def _norm_value(axis: str, value: Any) -> Any:
    """A hashable form of an axis value; equal settings give equal forms."""
    import json

    if value is None:
        return None
    if axis == "skill_pools":
        return ("pool", Path(value).name)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("num", float(value))
    if isinstance(value, str | Path):
        return ("str", str(value))
    return ("json", json.dumps(value, sort_keys=True, default=str))

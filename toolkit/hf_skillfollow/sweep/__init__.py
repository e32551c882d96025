"""Sweeps: a matrix of runs from one YAML file, planned, sharded and run by an executor.

sweep file (`_file`) -> cells, each a `RunConfig` (`_matrix`) -> jobs, one run directory per
repeat (`_plan`) -> an executor (`_executors`, by name from `registries.EXECUTORS`) runs each
job through `runner.execute`, resuming by `--resume`'s rules (`_cell`). See docs/sweep.md.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from hf_skillfollow.sweep._file import SweepFile, SweepFileError, read_sweep_file
from hf_skillfollow.sweep._identity import cell_key
from hf_skillfollow.sweep._matrix import Cell, expand
from hf_skillfollow.sweep._plan import Job, JobState, PlanSummary, jobs_for, plan
from hf_skillfollow.sweep._shard import parse_shard, select_shard, shard_of


def shipped_sweeps() -> dict[str, Path]:
    """Sweep files installed with the package, by name (e.g. `paper-panel`)."""
    folder = resources.files("hf_skillfollow") / "_data" / "sweeps"
    return {Path(p.name).stem: Path(str(p)) for p in folder.iterdir() if p.name.endswith(".yaml")}


def resolve_sweep_path(arg: str) -> Path:
    """A path to a sweep file, or the name of a shipped one."""
    path = Path(arg)
    if path.is_file():
        return path
    shipped = shipped_sweeps()
    if arg in shipped:
        return shipped[arg]
    raise SweepFileError(
        f"{arg}: no such sweep file, and not a shipped sweep (shipped: {', '.join(sorted(shipped))})"
    )


def load(arg: str) -> tuple[Path, SweepFile, list[Cell]]:
    path = resolve_sweep_path(arg)
    sweep = read_sweep_file(path)
    return path, sweep, expand(sweep, path)


__all__ = [
    "Cell", "Job", "JobState", "PlanSummary", "SweepFile", "SweepFileError", "cell_key",
    "expand", "jobs_for", "load", "parse_shard", "plan", "read_sweep_file",
    "resolve_sweep_path", "select_shard", "shard_of", "shipped_sweeps",
]  # fmt: skip

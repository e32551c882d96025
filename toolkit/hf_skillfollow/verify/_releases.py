"""The benchmark releases and scorer a verification needs, and the refusal when they are missing.

A row is re-scored only against the benchmark release recorded in it (`benchmark_version`)
and with the scorer version recorded in its traces: scoring against anything else would turn
a data difference into a false accusation, so a missing release stops the run instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hf_skillfollow.verify._inputs import ARMS, Row

if TYPE_CHECKING:
    from hf_skillfollow.tasks import Task

_DIGEST = re.compile(r"\+((?:md5|sha256)\.[0-9a-f]+)")


class UnavailableError(RuntimeError):
    """A release or scorer the rows were scored with is not available here."""


@dataclass
class Releases:
    """Tasks per recorded benchmark release, and the release each was matched with here."""

    tasks: dict[str, dict[str, Task]] = field(
        default_factory=dict
    )  # benchmark_version -> id -> task
    available: dict[str, str] = field(default_factory=dict)  # benchmark_version -> loaded version


def same_release(recorded: str, available: str) -> bool:
    """Equal versions, or the same benchmark file by content (its md5) under another name."""
    if recorded == available:
        return True
    if recorded.split("@", 1)[0] != available.split("@", 1)[0]:
        return False
    a, b = _DIGEST.search(recorded), _DIGEST.search(available)
    return a is not None and b is not None and a.group(1) == b.group(1)


def resolve(rows: Sequence[Row], tasks_files: Mapping[str, Path]) -> Releases:
    """Load each recorded release once; raise UnavailableError naming every missing one."""
    from hf_skillfollow.scoring._version import SCORER_VERSION, recorded_scorer_version
    from hf_skillfollow.tasks import TaskLoadError, load_tasks

    out = Releases()
    problems: list[str] = []
    wanted: dict[str, str] = {}  # benchmark_version -> benchmark
    for row in rows:
        if not row.has_traces:
            continue
        wanted.setdefault(row.benchmark_version, row.benchmark)
        versions = {
            recorded_scorer_version(row.traces[a].details, row.toolkit_version) for a in ARMS
        }
        version = versions.pop() if len(versions) == 1 else None
        if version != SCORER_VERSION:
            problems.append(
                f"run {row.run_id}: scored with scorer version {version or 'unknown'} "
                f"(toolkit {row.toolkit_version}); this toolkit has scorer version {SCORER_VERSION}; "
                "install the toolkit that scored it to verify this run"
            )
    loaded: dict[str, tuple[list[Task], str] | str] = {}
    for recorded, benchmark in sorted(wanted.items()):
        if benchmark not in loaded:
            try:
                path = tasks_files.get(benchmark)
                loaded[benchmark] = (  # skill-evals: the path is the skill pool's folder
                    load_tasks(benchmark, skills_dir=path)
                    if benchmark == "skill-evals"
                    else load_tasks(benchmark, path)
                )
            except (TaskLoadError, ValueError) as exc:
                loaded[benchmark] = str(exc)
        got = loaded[benchmark]
        if isinstance(got, str):
            problems.append(f"benchmark release {recorded}: cannot load {benchmark} here ({got})")
            continue
        tasks, version = got
        if not same_release(recorded, version):
            problems.append(
                f"benchmark release {recorded} is not available here (loaded {version}); "
                f"pass --tasks-file {benchmark}=PATH with that release"
            )
            continue
        out.tasks[recorded] = {t.task_id: t for t in tasks}
        out.available[recorded] = version
    problems += _missing_tasks(rows, out)
    if problems:
        unique = list(dict.fromkeys(problems))
        more = f" (and {len(unique) - 5} more)" if len(unique) > 5 else ""
        raise UnavailableError("; ".join(unique[:5]) + more)
    return out


def _missing_tasks(rows: Sequence[Row], releases: Releases) -> list[str]:
    out = []
    for row in rows:
        tasks = releases.tasks.get(row.benchmark_version)
        if row.has_traces and tasks is not None and row.task_id not in tasks:
            out.append(f"run {row.run_id}: task {row.task_id} is not in {row.benchmark_version}")
    return out

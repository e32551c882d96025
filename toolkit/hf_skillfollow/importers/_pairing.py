"""The pairing rule of imported trials (docs/import.md, "Pairing"), in one place.

Trials are grouped by task name (as the run store writes it: `_text.safe_text`); within each
arm a task's trials are ordered by start time, the instant it names (`start_key`: a zone, a
'Z' or a fraction of a second never reorders them as text would; a rerun that took over a
cancelled trial's recorded pair, by that trial's start), then by folder (equal or missing
times), and paired by ordinal: the k-th with-skills trial with the k-th without-skills trial, as
repeat k. Extras of the longer arm are dropped and counted. The two arms may record
different task checksums (SkillsBench's no-skills tasks are copies without
`environment/skills/`): that is recorded per pair. Two checksums of one task within one arm
are two versions of the task, and an error.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field

from hf_skillfollow.importers._base import ImportInputError, Trial


@dataclass(frozen=True)
class Pair:
    task: str
    repeat_index: int
    se: Trial
    sd: Trial

    @property
    def checksum_differs(self) -> bool:
        return self.se.checksum != self.sd.checksum


@dataclass(frozen=True)
class Pairing:
    pairs: list[Pair]
    #: task -> (arm, trials left without a partner)
    dropped: dict[str, tuple[str, int]] = field(default_factory=dict)

    @property
    def n_dropped(self) -> int:
        return sum(n for _, n in self.dropped.values())


def pair_trials(trials: list[Trial]) -> Pairing:
    from hf_skillfollow._text import safe_text

    by_task: dict[str, dict[str, list[Trial]]] = defaultdict(lambda: {"se": [], "sd": []})
    for trial in trials:
        # the task id as the run store writes it (a lone surrogate as its escape): a re-import
        # must find the pairs recorded under it, and every output can print it
        by_task[safe_text(trial.task)][trial.arm].append(trial)
    pairs: list[Pair] = []
    dropped: dict[str, tuple[str, int]] = {}
    for task in sorted(by_task):
        arms = by_task[task]
        for arm, flag in (("se", "--with-skills"), ("sd", "--without-skills")):
            _one_version(task, arms[arm], flag)
            # a rerun that took over a cancelled trial's recorded pair sorts in its place
            arms[arm].sort(key=lambda t: (*start_key(_order_at(t)), str(t.source)))
        n = min(len(arms["se"]), len(arms["sd"]))
        pairs.extend(Pair(task, k, arms["se"][k], arms["sd"][k]) for k in range(n))
        extra = len(arms["se"]) - len(arms["sd"])
        if extra:
            dropped[task] = ("se" if extra > 0 else "sd", abs(extra))
    return Pairing(pairs, dropped)


def _order_at(trial: Trial) -> str:
    """The start a trial is paired by: its own, or the cancelled trial's it stands in for."""
    return trial.stands_in_for[1] if trial.stands_in_for else trial.started_at


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
#: `start_key`'s first item for an ISO date-time (0: none, 2: other text).
ISO_START = 1


def start_key(started_at: str) -> tuple[int, int, str]:
    """The order of a recorded start time: none first; then ISO times by the instant they name
    (a time without a zone is UTC), in microseconds; then any other text (skill-creator's
    `run-000001`, for a run without `executor_start`) as text."""
    if not started_at:
        return 0, 0, ""
    try:
        instant = dt.datetime.fromisoformat(started_at.replace("Z", "+00:00"))
    except ValueError:
        return 2, 0, started_at
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=dt.UTC)
    return ISO_START, (instant - _EPOCH) // dt.timedelta(microseconds=1), started_at


def _one_version(task: str, trials: list[Trial], flag: str) -> None:
    versions = {t.checksum for t in trials}
    if len(versions) > 1:
        first = {t.checksum: t for t in reversed(trials)}
        shown = "; ".join(f"{t.source} has {c[:12] or '(none)'}" for c, t in first.items())
        raise ImportInputError(
            f"task {task!r} has {len(versions)} versions (task_checksum) among the {flag} "
            f"trials: {shown}; import one version at a time"
        )

"""What an importer yields: one trial of one arm, read from another harness's files.

An importer only reads: it walks the paths it is given (bounded, `_walk`), and turns each
trial it finds into a `Trial`. It never decides activation (a transcript detector does,
`importers._activation`), never pairs (`importers._pairing`) and never writes
(`importers._write`, through the run store).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

Arm = Literal["se", "sd"]
Trigger = Literal["any", "instructions"]
#: How the skills reach the agent in an imported run (the `access` column, widened).
LOADING_MODES = ("on-demand", "nudge", "inject")


class ImportInputError(ValueError):
    """Bad input to an import: the message is one line naming the file, field or flag.

    The message quotes third-party names (a trial folder's may hold a line break or an escape
    sequence, a task name a lone surrogate): they are shown as escapes, so it stays one line
    that any output can print, from the command or from the Harbor runner alike."""

    def __init__(self, message: str) -> None:
        from hf_skillfollow._escape import visible_controls
        from hf_skillfollow._text import safe_text

        super().__init__(visible_controls(safe_text(message)))


@dataclass(frozen=True)
class Trial:
    """One trial of one arm, as the harness recorded it."""

    arm: Arm
    """`se` (with skills) or `sd` (without): from the user's flags or the format's own arm
    folders (skill-creator's `with_skill`), never from a job or folder name."""
    task: str
    """Task name, the pairing key."""
    checksum: str
    """The task's content checksum as recorded ('' when the format records none)."""
    started_at: str
    """ISO start time as recorded ('' when none): orders the trials of a task within an arm."""
    passed: bool
    """The verifier's verdict against the pass threshold (False on an error)."""
    error: str | None
    """Why the trial has no usable verdict (an exception, no verifier result), else None."""
    source: Path
    """The trial's folder (or file), named in every message about it."""
    transcripts: tuple[Path, ...] = ()
    """The files that may hold the agent's transcript, in order of preference: the first one
    that reads as a transcript decides (a harness's plain-text log under a transcript's name
    is passed over), none readable leaves activation unknown."""
    agent: str = "unknown"
    agent_version: str = "unknown"
    model: str = "unknown"
    reward: float | None = None
    harness_record: dict[str, Any] | None = None
    """What the harness itself recorded about skills (BenchFlow's `n_skill_invocations`,
    Harbor agent metadata's `skills_loaded`), handed to the `harness-record` detector."""
    tokens: tuple[int, int] = (0, 0)
    """(input, output) tokens when the harness recorded them."""
    seconds: float = 0.0
    """Agent wall time when recorded."""
    notes: tuple[str, ...] = ()
    dataset: str = ""
    """The registry dataset the task came from, as recorded (Harbor's `source`), else ''."""
    trial_id: str = ""
    """The harness's name for the trial (Harbor's `trial_name`, BenchFlow's `rollout_name`):
    one trial found twice (a copy in another folder) is an error, never a pair or a repeat."""
    stands_in_for: tuple[str, str] = ()
    """(name, start) of the cancelled trial whose recorded pair this trial took over (a rerun
    after `harbor job resume`, `_runs._reruns`): it pairs in that trial's place, by that start,
    so the next import pairs it there again. () for any other trial."""


#: Harbor's `exception_type` of a trial it stopped (Ctrl-C, a job cancelled): no outcome.
CANCELLED = "CancelledError"


def is_cancelled(error: object) -> bool:
    """Whether a trial's (or a recorded row's) error is Harbor's cancel, `CancelledError[: …]`."""
    return isinstance(error, str) and error.partition(":")[0] == CANCELLED


@dataclass(frozen=True)
class ImportOptions:
    """Settings of one import (each is a flag of `hf-skillfollow import`)."""

    pass_threshold: float = 1.0
    """A trial passes when its verifier reward reaches this (SkillsBench scores 0/1)."""
    pass_rate_threshold: float | None = None
    """skill-creator: pass when the expectation pass rate reaches this; None: every one passed."""
    trigger: Trigger = "any"
    """`instructions`: only a loaded SKILL.md/Skill call puts a pair in S_call."""
    skills: Path | None = None
    """The skill pool offered to the with-skills arm (its hash identifies the cell)."""
    tasks: Path | None = None
    """A Harbor tasks folder: `<task>/environment/skills/` names each task's intended skills."""
    loading: str = "on-demand"
    """How the skills reached the agent (`access` column): on-demand, nudge or inject."""
    benchmark: str | None = None
    """Benchmark name recorded in the rows (default: the format's name)."""
    baseline: str | None = None
    """skill-creator: `without_skill` or `old_skill` as the skill-disabled arm."""


@dataclass(frozen=True)
class ImportRequest:
    """What to read: the with/without-skills paths (harbor, benchflow) or the paths of a format
    whose own layout names the arms (skill-creator)."""

    with_paths: Sequence[Path] = ()
    without_paths: Sequence[Path] = ()
    paths: Sequence[Path] = ()
    options: ImportOptions = field(default_factory=ImportOptions)
    on_read: Callable[[int], None] | None = None
    """Called with the number of result files read so far, after each (harbor, benchflow):
    reading thousands of trial folders takes seconds before any pair is written."""


@dataclass(frozen=True)
class Collected:
    """An importer's answer: the trials and what the user should read about them."""

    trials: list[Trial]
    notes: list[str] = field(default_factory=list)
    harness: str = ""
    """Harness name recorded in the rows (default: the format)."""
    baseline: str | None = None
    """What the without-skills arm ran when the format says (skill-creator: `without_skill`, or
    `old_skill`, the previous version of the skill, whose use is then no arm violation)."""


@dataclass(frozen=True)
class Graded:
    """One trial's verdict given after the harness ran, by the blinded judge (`run --harness
    harbor --benchmark skill-evals`, `harness/_judged.py`): it replaces the trial's reward."""

    passed: bool
    answer: str
    """What the judge read as the answer: the agent's final message and its output files."""
    reason: str
    record: dict[str, Any]
    """The judge's record (`judge_verdicts`): every repeat's verdicts, the judge's settings."""


@dataclass(frozen=True)
class Judging:
    """The judge of an import whose verdicts are the blinded judge's, not the trials' rewards.

    `identity` (`JudgeSettings.identity()`) is part of the cell id and the manifest's
    `judge` (the rows' `judged_by`), as for a judged chat-loop run; `verdicts` are keyed by
    each trial's resolved folder. A trial without one (it ended in an exception, so nothing
    was judged) keeps its error and is scored incorrect."""

    identity: dict[str, Any]
    verdicts: Mapping[Path, Graded]
    task_ids: Mapping[str, str] = field(default_factory=dict)
    """The harness's task name -> the task id the rows carry (a skill eval's task folder
    `<skill>-<id>` -> the chat loop's `<skill>/<id>`); a name not listed is kept."""


class Importer(Protocol):
    """One format: `collect` reads the request's paths and returns the trials found."""

    def __call__(self, request: ImportRequest) -> Collected: ...

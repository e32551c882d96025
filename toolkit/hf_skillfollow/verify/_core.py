"""Re-extract every published answer, re-score it, and compare with the recorded bits."""

from __future__ import annotations

import datetime as _dt
import getpass
import platform
import socket
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hf_skillfollow.verify._inputs import ARMS, Row
from hf_skillfollow.verify._judged import Regrade, is_judged, recorded_judge
from hf_skillfollow.verify._releases import Releases, UnavailableError
from hf_skillfollow.verify._state import VerifyState, answer_key

if TYPE_CHECKING:
    from hf_skillfollow.judge import JudgeSettings


@dataclass(frozen=True)
class ArmCheck:
    """One arm of one row: the published bit and the verdict of re-scoring its answer."""

    recorded: bool
    rescored: bool
    reason: str  # the re-scorer's reason, plus what else differs from the published trace

    @property
    def agrees(self) -> bool:
        return self.recorded == self.rescored


@dataclass(frozen=True)
class RowCheck:
    run_id: str
    cell_id: str
    task_id: str
    benchmark: str
    benchmark_version: str
    arms: dict[str, ArmCheck]

    @property
    def agrees(self) -> bool:
        return all(a.agrees for a in self.arms.values())


@dataclass
class Verification:
    """The outcome of one `verify`: who/what/when, every checked row, and the rows skipped."""

    verification_id: str
    verified_at: str
    verified_by: str
    machine: str
    toolkit_version: str
    scorer_version: str
    releases: dict[str, str]  # recorded benchmark_version -> release loaded here
    checked: list[RowCheck] = field(default_factory=list)
    unchecked: list[Row] = field(default_factory=list)  # rows without traces
    rescored: int = 0  # answers scored in this run (the others came from the state file)

    @property
    def disagreements(self) -> list[tuple[RowCheck, str]]:
        return [(r, arm) for r in self.checked for arm in ARMS if not r.arms[arm].agrees]

    def provenance(self) -> dict[str, str]:
        """Who verified, where, when and with which code: shown and recorded alike."""
        keys = ("verification_id", "verified_at", "verified_by", "machine")
        return {k: getattr(self, k) for k in (*keys, "toolkit_version", "scorer_version")}


def new_verification(releases: Releases, verified_by: str | None = None) -> Verification:
    from hf_skillfollow._version import __version__
    from hf_skillfollow.scoring._version import SCORER_VERSION

    now = _dt.datetime.now(_dt.UTC)
    return Verification(
        verification_id=f"{now:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}",
        verified_at=now.isoformat(timespec="seconds"),
        verified_by=verified_by or _whoami(),
        machine=f"{socket.gethostname()} ({platform.platform()}, Python {platform.python_version()})",
        toolkit_version=__version__,
        scorer_version=SCORER_VERSION,
        releases=dict(releases.available),
    )


def run_verification(
    rows: Sequence[Row],
    releases: Releases,
    state: VerifyState,
    *,
    workers: int = 2,
    verified_by: str | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_verdict: Callable[[bool], None] | None = None,
    regrade: Regrade | None = None,
    judge_endpoint: str = "",
) -> Verification:
    """Re-score every answer not yet in `state`, then compare all rows with their bits.

    `on_start(total, already_done)` is called once before scoring; `on_verdict(passed)` once
    per answer scored. `regrade` re-grades `expectations` answers with their recorded judge
    (`verify._judged`); without it a judged row is an UnavailableError. `judge_endpoint`
    (the backend and URL `regrade` reaches) is part of a judged verdict's key: a verdict a
    judge gave at one endpoint is not reused when the judge is reached at another.
    """
    from hf_skillfollow.agent import final_answer
    from hf_skillfollow.scoring import score_many
    from hf_skillfollow.scoring._version import SCORER_VERSION

    out = new_verification(releases, verified_by)
    answers: dict[tuple[str, str, str], tuple[str, str]] = {}  # (run, task, arm) -> (key, text)
    todo: dict[str, tuple[object, str]] = {}  # key -> (task, text)
    judged: dict[str, tuple[object, str, JudgeSettings]] = {}  # key -> (task, text, judge)
    for row in rows:
        if not row.has_traces:
            out.unchecked.append(row)
            continue
        task = releases.tasks[row.benchmark_version][row.task_id]
        for arm in ARMS:
            trace = row.traces[arm]
            text = final_answer(list(trace.messages), trace.error)
            judge = recorded_judge(row, arm) if is_judged(task) else None
            version = SCORER_VERSION if judge is None else _judged_version(judge, judge_endpoint)
            key = answer_key(version, row.benchmark_version, row.task_id, text)
            answers[(row.run_id, row.task_id, arm)] = (key, text)
            if key in state.done:
                continue
            if judge is None:
                todo.setdefault(key, (task, text))
            else:
                judged.setdefault(key, (task, text, judge))
    n_total = len({k for k, _ in answers.values()})
    if judged and regrade is None:
        raise UnavailableError("the rows are graded by a judge: pass its endpoint to re-grade")
    if on_start is not None:
        on_start(n_total, n_total - len(todo) - len(judged))
    if judged:
        assert regrade is not None
        judged_keys = list(judged)

        def save_judged(i: int, verdict: object) -> None:
            # saved as it arrives: a judge that stops answering part-way loses no verdict
            passed = bool(verdict.passed)  # type: ignore[attr-defined]
            state.add(judged_keys[i], passed, str(verdict.reason))  # type: ignore[attr-defined]
            if on_verdict is not None:
                on_verdict(passed)

        regrade(list(judged.values()), save_judged)
    keys = list(todo)

    def save(i: int, verdict: object) -> None:
        state.add(keys[i], bool(verdict.passed), str(verdict.reason))  # type: ignore[attr-defined]

    if keys:
        score_many(
            [todo[k] for k in keys],  # type: ignore[misc]
            workers=workers,
            extract=True,
            on_result=save,
            progress=(lambda v: on_verdict(bool(v.passed))) if on_verdict else None,
        )
    out.rescored = len(keys) + len(judged)
    for row in rows:
        if row.has_traces:
            out.checked.append(_compare(row, answers, state))
    return out


def _judged_version(judge: JudgeSettings, endpoint: str = "") -> str:
    """What a judged verdict is a function of besides the task and the answer: the judge,
    every recorded setting (repeats, seed, temperature, limits) and the endpoint that served
    it. Keyed by the judge's name alone, an answer graded for one row was reused for an
    identical answer of a row that recorded other settings (another cell, or a stranger's run
    in the same state file); without the endpoint, verdicts of a wrong --judge-base-url were
    reused once the right one was given. Only digests reach the state file (a URL may hold a
    key)."""
    import dataclasses
    import hashlib
    import json

    from hf_skillfollow.scoring._version import SCORER_VERSION

    settings = json.dumps([dataclasses.asdict(judge), endpoint], sort_keys=True, default=str)
    digest = hashlib.sha256(settings.encode()).hexdigest()[:16]
    return f"{SCORER_VERSION}+judge:{judge.judge}+settings:{digest}"


def _compare(
    row: Row, answers: dict[tuple[str, str, str], tuple[str, str]], state: VerifyState
) -> RowCheck:
    arms = {}
    for arm in ARMS:
        key, text = answers[(row.run_id, row.task_id, arm)]
        verdict = state.done[key]
        trace = row.traces[arm]
        notes = [verdict["reason"]]
        if text != trace.final_answer:
            notes.append("the trace's final_answer differs from its last assistant turn")
        if trace.correct != row.recorded[arm]:
            notes.append(
                f"the trace says correct={trace.correct}, the transitions row {arm}_correct={row.recorded[arm]}"
            )
        arms[arm] = ArmCheck(row.recorded[arm], bool(verdict["passed"]), "; ".join(notes))
    return RowCheck(
        row.run_id, row.cell_id, row.task_id, row.benchmark, row.benchmark_version, arms
    )


def _whoami() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"

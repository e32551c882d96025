"""The one place an import asks a transcript detector about a trial, and the arm-integrity
rule that reads the without-skills trial's answer.

Importers do not detect: they say where a trial's transcript is (and what the harness itself
recorded); `transcripts.detect` picks the detector for the transcript's format
(docs/detectors.md). A trial with neither has unknown activation.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hf_skillfollow._arm_integrity import OK, VIOLATION, is_violation
from hf_skillfollow.importers._base import ImportInputError, Trial

if TYPE_CHECKING:
    from hf_skillfollow.transcripts._base import Detection

#: `detector` value of a row whose SE trial left no transcript and no harness record.
NO_TRANSCRIPT = "none"
_MAX_EVIDENCE = 200
_MAX_REASON = 300


@dataclass(frozen=True)
class Reading:
    """What a trial's files say about activation: the detection (None: unknown), the
    transcript that decided (None: none could be read), and why candidates were passed over."""

    detection: Detection | None
    transcript: Path | None = None
    skipped: tuple[str, ...] = ()


def detect_trial(trial: Trial, pool: Collection[str]) -> Reading:
    """The first of the trial's transcript candidates that reads as a transcript its detector
    understands decides; a candidate that does not (plain text under a transcript's name, a
    refused file) is passed over with its reason. None readable: the harness's own record,
    else unknown activation, never a failed import."""
    from hf_skillfollow import transcripts

    skipped: list[str] = []
    for path in trial.transcripts:
        try:
            found = transcripts.detect(transcripts.read_transcript(path, root=trial.source), pool)
        except ValueError as exc:  # TranscriptError and a detector's refusal
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        else:
            if found.transcript_found:
                return Reading(found, path, tuple(skipped))
            reason = found.notes[0] if found.notes else f"no {found.detector} events"
        skipped.append(f"{path.name}: not a transcript ({reason[:_MAX_REASON]})")
    if trial.harness_record is not None:
        record = transcripts.as_transcript(trial.harness_record, str(trial.source))
        try:
            found = transcripts.detect(record, pool, format="harness-record")
        except ValueError as exc:
            raise ImportInputError(str(exc).splitlines()[0] if str(exc) else repr(exc)) from None
        if found.transcript_found:
            return Reading(found, None, tuple(skipped))
    return Reading(None, None, tuple(skipped))


@dataclass(frozen=True)
class Integrity:
    """The arm-integrity verdict of one without-skills trial (docs/import.md)."""

    status: str  # ok | unchecked | violation: ...

    @property
    def violated(self) -> bool:
        return is_violation(self.status)


def arm_integrity(sd: Detection | None, pool: Collection[str]) -> Integrity:
    """A without-skills trial whose transcript lists pool skills at start-up, or loads or uses
    one, breaks its arm: the two arms no longer differ only in the skills."""
    if sd is None or not sd.transcript_found:
        return Integrity("unchecked")
    listed = [s for s in sd.listed if not pool or s in pool]
    used = [e for e in sd.events if e.succeeded and (not pool or e.skill in pool)]
    if not listed and not used:
        return Integrity(OK)
    parts = []
    if listed:
        parts.append(f"listed at start-up: {', '.join(sorted(set(listed))[:5])}")
    if used:
        first = used[0]
        parts.append(
            f"{first.kind} of {first.skill} loaded at event {first.event_index} "
            f"({first.evidence[:_MAX_EVIDENCE]})"
            + (f" and {len(used) - 1} more" if len(used) > 1 else "")
        )
    return Integrity(VIOLATION + "; ".join(parts))

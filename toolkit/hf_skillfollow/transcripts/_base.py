"""What a transcript detector returns: the skills a trial activated, with evidence.

A detector is a pure function from one bounded, already-parsed transcript to a `Detection`;
it never opens files itself (`transcripts.read_transcript` does, with the size, count and
depth bounds) and never executes anything. Importers do not detect: they hand the trial's
transcript to `transcripts.detect`, which picks the detector for its format.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Literal, Protocol

#: How a trigger event reached the skill: its instructions were loaded (a Skill tool call, a
#: SKILL.md read), or only one of its resources was used (a script run, a reference read)
#: with no SKILL.md read in the whole trial.
TriggerKind = Literal["instructions", "resource"]


@dataclass(frozen=True)
class ActivationEvent:
    """One trigger event found in a transcript."""

    skill: str
    """Name of the pool skill the event loaded or used."""
    kind: TriggerKind
    """`instructions` or `resource` (see `TriggerKind`)."""
    event_index: int
    """0-based index of the event (line of a JSONL stream, step of an ATIF trajectory)."""
    evidence: str
    """The exact tool call or command, bounded and shown escaped by every output."""
    succeeded: bool
    """False for a failed load ("Unknown skill", a tool error): invoked, not returned."""


@dataclass(frozen=True)
class Detection:
    """What one detector decided about one trial."""

    detector: str
    """Registry name of the detector that decided (`registries.DETECTORS`)."""
    transcript_found: bool
    """False when the trial has no readable transcript: activation is unknown."""
    events: tuple[ActivationEvent, ...] = ()
    """Every trigger event, in transcript order."""
    listed: tuple[str, ...] = ()
    """Pool skills the harness listed to the agent (start-up catalogue, system prompt). Not
    activation; used by the arm-integrity check of a without-skills trial."""
    notes: tuple[str, ...] = field(default=())
    """Bounded human-readable remarks (a truncated transcript, an unparsable line skipped)."""
    record_invocations: int | None = None
    """Skill invocations a harness counted without naming the skills (BenchFlow's
    `n_skill_invocations`, `harness-record` detector only); None where no count exists."""

    @property
    def invoked(self) -> bool:
        """Any trigger event, successful or not (the chat loop's `invoked`), or a nonzero
        harness count."""
        return bool(self.events) or bool(self.record_invocations)

    def called(self, trigger: Literal["any", "instructions"] = "any") -> bool:
        """S_call: some offered skill was activated (a harness count of unnamed invocations
        counts for `any`, whose kind it cannot tell)."""
        return bool(self.activated(trigger)) or (trigger == "any" and bool(self.record_invocations))

    def kinds(self) -> dict[str, TriggerKind]:
        """Each activated skill's kind: `instructions` if its SKILL.md was loaded, else
        `resource` (the coverage split of the report)."""
        kinds: dict[str, TriggerKind] = {}
        for e in self.events:
            if e.succeeded and kinds.get(e.skill) != "instructions":
                kinds[e.skill] = e.kind
        return kinds

    def activated(self, trigger: Literal["any", "instructions"] = "any") -> tuple[str, ...]:
        """Sorted names of skills with a successful event of the allowed kind (S_call)."""
        kinds = {"instructions"} if trigger == "instructions" else {"instructions", "resource"}
        return tuple(sorted({e.skill for e in self.events if e.succeeded and e.kind in kinds}))


class Detector(Protocol):
    """A transcript detector: pure, bounded, never executes or opens anything."""

    def __call__(self, transcript: object, pool: Collection[str]) -> Detection: ...

"""Activation detected from a harness's own transcript, the same way for every harness.

`read_transcript` reads one file, bounded; `sniff_format` names the detector that fits its
content; `detect` runs it (`registries.DETECTORS`) against the offered skill pool. Each
detector is a pure function ``(transcript, pool) -> Detection``; docs/detectors.md describes
every trigger event and what each harness leaves undetectable.
"""

from __future__ import annotations

from collections.abc import Collection

from hf_skillfollow.transcripts._base import ActivationEvent, Detection, Detector, TriggerKind
from hf_skillfollow.transcripts._reader import (
    Transcript,
    TranscriptError,
    as_transcript,
    read_transcript,
)
from hf_skillfollow.transcripts._sniff import sniff_format

__all__ = [
    "ActivationEvent",
    "Detection",
    "Detector",
    "Transcript",
    "TranscriptError",
    "TriggerKind",
    "as_transcript",
    "detect",
    "read_transcript",
    "sniff_format",
]


def detect(transcript: object, pool: Collection[str], *, format: str | None = None) -> Detection:
    """What the detector for `transcript`'s format (or the one named) finds for `pool`.

    An unknown `format` is a ValueError listing the registered detectors.
    """
    from hf_skillfollow.registries import DETECTORS

    transcript = as_transcript(transcript)
    name = format if format is not None else sniff_format(transcript)
    detector = DETECTORS.resolve(name)
    return detector(transcript, frozenset(pool))

"""Which scorer produced a verdict, so that a verifier re-scores with the same one.

``SCORER_VERSION`` names the scoring semantics (answer extraction, EvalPlus-semantics code
tests with their time and memory limits, the math equivalence rules). Bump it with any change
that could turn a pass into a fail or back; a pure speed-up keeps it. The runner writes it into
every trace's ``scorer_details``; ``hf-skillfollow verify`` refuses rows scored by another one.
"""

from __future__ import annotations

from collections.abc import Mapping

SCORER_VERSION = "1"

#: Runs published before traces carried ``scorer_version``: toolkit version -> scorer version.
_LEGACY: Mapping[str, str] = {"0.1.0": "1"}


def recorded_scorer_version(details: Mapping[str, object], toolkit_version: str) -> str | None:
    """The scorer version a trace was scored with; None when it cannot be known."""
    recorded = details.get("scorer_version")
    if isinstance(recorded, str) and recorded:
        return recorded
    return _LEGACY.get(toolkit_version)

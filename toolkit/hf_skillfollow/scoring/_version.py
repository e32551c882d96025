"""Which scorer produced a verdict, so that a verifier re-scores with the same one.

``SCORER_VERSION`` names the scoring semantics (answer extraction, EvalPlus-semantics code
tests with their time and memory limits, the math equivalence rules). Bump it with any change
that could turn a pass into a fail or back; a pure speed-up keeps it. The runner writes it into
every trace's ``scorer_details``; ``hf-skillfollow verify`` refuses rows scored by another one.
"""

from __future__ import annotations

from collections.abc import Mapping

#: "2" (issue 21): MBPP+'s special oracles check the output's type and accept only correct
#: values (Mbpp/164 and 295 accepted anything or 0), a comparison with a tolerance needs the
#: expected output's structure (no broadcasting), the program cannot create processes
#: (CPU and memory limits are the run's), and a math reply is judged on one extracted answer.
#: Math in "2": the answer is the last complete \boxed{} (none: fail), math-verify reads only
#: that box, and a reply stating another answer (a second box, "final answer is $x$") fails.
#: "3": the committed math answer has one reading: a thousands separator ("10\\,000") is
#: dropped before both checks, an answer that math-verify and the exact match read as two
#: numbers fails (\\boxed{2\\,3}: 5 for math-verify, "23" for the exact match), and the exact
#: match cannot pass an answer that math-verify reads as another value.
#: "4" (issue 37): an own task's `tests` are judged assert by assert, with the operator each
#: states (an exact `==` has no float tolerance; a tolerance is its own assert's, absolute,
#: strict for `<`), the candidate called once per assert in order; see docs/tasks.md. Math:
#: two numbers side by side with only TeX spacing between them fail (`2\\quad 3`); a reference
#: in words is compared as text; fullwidth digits are digits and `\\%` is a unit (sandbox.md).
SCORER_VERSION = "4"

#: Runs published before traces carried ``scorer_version``: toolkit version -> scorer version.
_LEGACY: Mapping[str, str] = {"0.1.0": "1"}


def recorded_scorer_version(details: Mapping[str, object], toolkit_version: str) -> str | None:
    """The scorer version a trace was scored with; None when it cannot be known."""
    recorded = details.get("scorer_version")
    if isinstance(recorded, str) and recorded:
        return recorded
    return _LEGACY.get(toolkit_version)

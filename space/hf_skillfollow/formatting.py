"""How numbers and undefined values are written, for the report, the card and the Space.

Metrics are in percentage points, signed where they are differences. An undefined value (NaN
or None: a rate over an empty set) is written `UNDEFINED`, "n/a": plain ASCII, so it reads the
same in a terminal, a CSV cell, a Markdown table and a screen reader, and, being a word, it is
never mistaken for a minus sign beside signed numbers (an em dash can be). Where the reason is
known it follows in parentheses, e.g. "n/a (n_skip = 0)".
"""

from __future__ import annotations

import math
from typing import Any

UNDEFINED = "n/a"


def is_undefined(value: Any) -> bool:
    """None, NaN (float or numpy) or a pandas missing value."""
    if value is None:
        return True
    try:
        return math.isnan(value)
    except TypeError:
        return False


def undefined(reason: str | None = None) -> str:
    return UNDEFINED if not reason else f"{UNDEFINED} ({reason})"


def pp(value: Any, signed: bool = True) -> str:
    """Percentage points with one decimal: "+3.8" (signed) or "3.8"."""
    if is_undefined(value):
        return UNDEFINED
    return f"{float(value):+.1f}" if signed else f"{float(value):.1f}"


def with_interval(value: Any, low: Any, high: Any) -> str:
    """ "+3.8 [-1.2, +8.9]"; the value alone when the interval is undefined."""
    if is_undefined(value):
        return UNDEFINED
    if is_undefined(low) or is_undefined(high):
        return pp(value)
    return f"{pp(value)} [{pp(low)}, {pp(high)}]"


def p_value(p: Any) -> str:
    """Three significant digits: "0.0312", "1"."""
    return UNDEFINED if is_undefined(p) else f"{float(p):.3g}"


def count(value: Any) -> str:
    return UNDEFINED if is_undefined(value) else str(int(value))


def mean_sd(mean: Any, sd: Any, signed: bool = True) -> str:
    """ "+2.0 ± 1.5" over repeats; the SD is n/a with a single defined run."""
    if is_undefined(mean):
        return UNDEFINED
    return f"{pp(mean, signed)} ± {pp(sd, signed=False)}"


def not_reported(error_rate: Any) -> str:
    """What an error-heavy cell shows instead of an effect (report, card, board): its errors
    were scored incorrect, so a number there would measure the endpoint, not the model."""
    return f"not reported: {pp(error_rate, signed=False)}% of pairs errored"

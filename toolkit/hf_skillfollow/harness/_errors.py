"""The one error of a harness run, below the modules that raise it (no import circle)."""

from __future__ import annotations


class HarnessError(ValueError):
    """Bad input or a failed Harbor run: one line naming the flag, file or log."""

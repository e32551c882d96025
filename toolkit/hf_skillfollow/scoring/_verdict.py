"""The outcome of scoring one answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Verdict:
    """``details`` always holds ``extracted`` (the program or answer that was scored)."""

    task_id: str
    passed: bool
    reason: str
    details: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "passed": self.passed,
            "reason": self.reason,
            "details": self.details,
        }

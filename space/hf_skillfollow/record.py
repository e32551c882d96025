"""The per-pair record: one finished task of a run, as appended to `records.jsonl`.

A record holds the task's transitions row and its trace rows (SE and SD). `RunStore` checks
each record against the published schema when it is appended, so a row the parquet files
would refuse fails the pair that produced it, at once, instead of the whole run at its end.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_ARMS = ("se", "sd")


@dataclass(frozen=True)
class PairRecord:
    """One finished pair: `transition` is its transitions row, `traces` its trace rows."""

    task_id: str
    transition: dict[str, Any]
    traces: list[dict[str, Any]]

    @classmethod
    def parse(cls, data: PairRecord | Mapping[str, Any], source: str) -> PairRecord:
        """A validated record from a record or its JSON object; SchemaError names what is wrong."""
        from hf_skillfollow.schema import SchemaError

        if isinstance(data, PairRecord):
            record = data
        else:
            keys = set(data)
            if keys != {"task_id", "transition", "traces"}:
                raise SchemaError(
                    f"{source}: a record has the keys task_id, transition and traces, "
                    f"not {sorted(keys)}"
                )
            record = cls(data["task_id"], data["transition"], data["traces"])
        record.validate(source)
        return record

    def validate(self, source: str) -> None:
        """Both kinds of row against their schema, and the rows against each other."""
        from hf_skillfollow.schema import SchemaError, traces_from_rows, transitions_from_rows

        where = f"{source}: task {self.task_id!r}"
        if not isinstance(self.transition, Mapping) or not isinstance(self.traces, list):
            raise SchemaError(f"{where}: 'transition' must be an object and 'traces' a list")
        transitions_from_rows([self.transition], source=f"{where}, transition")
        traces_from_rows(self.traces, source=f"{where}, traces")
        if self.transition["task_id"] != self.task_id:
            raise SchemaError(f"{where}: the transition is task {self.transition['task_id']!r}")
        run = (self.transition["run_id"], self.transition["cell_id"])
        arms = [t["arm"] for t in self.traces]
        if any(
            (t["task_id"], t["run_id"], t["cell_id"]) != (self.task_id, *run) for t in self.traces
        ):
            raise SchemaError(f"{where}: a trace belongs to another task, run or cell")
        if len(set(arms)) != len(arms) or set(arms) - set(_ARMS):
            raise SchemaError(f"{where}: trace arms {arms}, expected at most one each of {_ARMS}")

    def as_dict(self) -> dict[str, Any]:
        """The JSON object of one records.jsonl line."""
        return {"task_id": self.task_id, "transition": self.transition, "traces": self.traces}

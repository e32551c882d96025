"""What the card shows, kept up to date from the new runs alone: `stats/summary.json`.

Outside the listed cells' metrics, every number on the card is a sum or a count over the
published runs: rows, runs, cells, and per protocol its cells, runs and seeds. The listed
cells are the first MAX_CARD_CELLS cells in an order of identity columns alone (`sort_key`),
each with its number of runs and its summed 2x2 counts (all its metrics need). While runs are
only added, all of these follow from their previous values and the new runs: a new run's
counts add to its cell; a cell seen for the first time adds one cell (and one to its
protocol) and enters the list if it sorts before the last listed cell; a published cell that
is not listed stays out, since its place in the order has not moved.

So a push reads this file, checks that it describes exactly the runs the repo lists (a
digest of the sorted paths of its transitions files), and adds the new runs (`CardSummary.add`). When it does not
(missing, unreadable, another layout, a run removed or added by hand) the push rebuilds it
from every run's counts (`CardSummary.of`). Like the other files under stats/ it is a cache
of the rows, never a source of truth; tests compare the card with a full recomputation.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from hf_skillfollow.schema import CELL_COLUMNS

SUMMARY_PATH = "stats/summary.json"
#: Cells listed in the card; the rest are counted and left to `hf-skillfollow report`.
MAX_CARD_CELLS = 200
#: The protocol table's columns (all of them cell columns, so a cell has one protocol).
PROTOCOL_COLUMNS = (
    "prompts_hash", "access", "tool_mode", "retrieval_policy", "retriever", "top_k", "max_calls",
    "temperature", "max_tokens", "backend",
)  # fmt: skip
OUTCOME_COUNTS = ("a_all", "b_all", "c_all", "d_all")
_FORMAT = 3  # 2: a listed cell's counts end with its summed metrics._own.COST_COLUMNS; 3: n_errored


def summed_columns() -> tuple[str, ...]:
    """A listed cell's `counts`, in order: the 2x2 counts, then the sums of its traces."""
    from hf_skillfollow.metrics import COUNT_COLUMNS
    from hf_skillfollow.metrics._own import COST_COLUMNS

    return (*COUNT_COLUMNS, *COST_COLUMNS)


@dataclass
class ListedCell:
    """One listed cell: its identity (CELL_COLUMNS), runs and summed `summed_columns()`."""

    key: str
    identity: dict[str, Any]
    n_runs: int
    counts: list[int]


@dataclass
class Protocol:
    """One protocol (PROTOCOL_COLUMNS values) with its distinct cells, runs and seeds."""

    group: list[Any]
    cells: int
    runs: int
    seeds: list[int]


@dataclass
class CardSummary:
    """The card's inputs apart from the rows: see the module doc."""

    files_digest: str  # of the transitions files it describes (`files_digest`)
    n_files: int
    n_runs: int
    n_rows: int
    n_cells: int
    listed: list[ListedCell] = field(default_factory=list)
    protocols: list[Protocol] = field(default_factory=list)
    base_rows: int = 0  # rows of stats/runs.parquet
    recent_rows: int = 0  # rows of stats/runs-recent.parquet

    @classmethod
    def of(cls, stats: pa.Table, paths: Sequence[str]) -> CardSummary:
        """Computed from every run's counts (`_stats.run_stats` rows, with `cell_key`) of
        the repo whose transitions files are `paths` (sorted)."""
        import pyarrow.compute as pc

        summed = summed_columns()  # the 2x2 counts, then the cost sums

        n_runs = int(pc.count_distinct(stats.column("run_id")).as_py())
        summary = cls(files_digest(paths), len(paths), n_runs, 0, 0, base_rows=stats.num_rows)
        if stats.num_rows == 0:
            return summary
        summary.n_rows = sum(int(pc.sum(stats.column(c)).as_py() or 0) for c in OUTCOME_COUNTS)
        cells = stats.group_by("cell_key", use_threads=False).aggregate(
            [(c, "sum") for c in summed]
            + [("run_id", "count_distinct")]
            + [(c, "first") for c in CELL_COLUMNS]
        )
        summary.n_cells = cells.num_rows
        identities = [
            {c: first[f"{c}_first"] for c in CELL_COLUMNS}
            for first in cells.select([f"{c}_first" for c in CELL_COLUMNS]).to_pylist()
        ]
        order = sorted(range(cells.num_rows), key=lambda i: sort_key(identities[i]))
        keys = cells.column("cell_key").to_pylist()
        n_runs_of = cells.column("run_id_count_distinct").to_pylist()
        sums = [cells.column(f"{c}_sum").to_pylist() for c in summed]
        summary.listed = [
            ListedCell(
                keys[i],
                identities[i],
                int(n_runs_of[i]),
                [int(s[i]) for s in sums],
            )
            for i in order[:MAX_CARD_CELLS]
        ]
        grouped = stats.group_by(list(PROTOCOL_COLUMNS), use_threads=False).aggregate(
            [("cell_key", "count_distinct"), ("run_id", "count_distinct"), ("seed", "distinct")]
        )
        summary.protocols = [
            Protocol(
                [row[c] for c in PROTOCOL_COLUMNS],
                int(row["cell_key_count_distinct"]),
                int(row["run_id_count_distinct"]),
                sorted(row["seed_distinct"]),
            )
            for row in grouped.to_pylist()
        ]
        return summary

    def add(self, new: pa.Table, published_cells: set[str], paths: Sequence[str]) -> None:
        """Add the counts of runs new to the repo (`run_stats` rows); `published_cells` are
        the cell keys among them the repo already holds, `paths` every transitions file of
        the repo after the push, sorted."""
        summed = summed_columns()  # the 2x2 counts, then the cost sums

        listed = {cell.key: cell for cell in self.listed}
        protocols = {tuple(p.group): p for p in self.protocols}
        known = set(published_cells)
        runs_of_cell: set[tuple[str, str]] = set()
        runs_of_protocol: set[tuple[Any, str]] = set()
        # A full list admits only cells sorting before its last one; one with room (every
        # cell listed) admits every new cell, and the sort below keeps the first ones.
        full = len(self.listed) >= MAX_CARD_CELLS
        last = sort_key(self.listed[-1].identity) if full else ()
        entered = False
        for row in new.to_pylist():
            run_id, key = row["run_id"], row["cell_key"]
            group = [row[c] for c in PROTOCOL_COLUMNS]
            protocol = protocols.setdefault(tuple(group), Protocol(group, 0, 0, []))
            self.n_rows += sum(int(row[c]) for c in OUTCOME_COUNTS)
            if (tuple(group), run_id) not in runs_of_protocol:
                runs_of_protocol.add((tuple(group), run_id))
                protocol.runs += 1
            if row["seed"] not in protocol.seeds:
                protocol.seeds = sorted([*protocol.seeds, row["seed"]])
            if key not in known:  # a new cell: counted, and listed if it sorts early enough
                known.add(key)
                self.n_cells += 1
                protocol.cells += 1
                identity = {c: row[c] for c in CELL_COLUMNS}
                if not full or sort_key(identity) < last:
                    listed[key] = ListedCell(key, identity, 0, [0] * len(summed))
                    entered = True
            cell = listed.get(key)
            if cell is None:  # published, and sorted after the listed cells: stays out
                continue
            cell.counts = [t + int(row[c]) for t, c in zip(cell.counts, summed, strict=True)]
            if (key, run_id) not in runs_of_cell:
                runs_of_cell.add((key, run_id))
                cell.n_runs += 1
        if entered:  # else the listed cells and their order are unchanged
            ordered = sorted(listed.values(), key=lambda cell: sort_key(cell.identity))
            self.listed = ordered[:MAX_CARD_CELLS]
        self.protocols = list(protocols.values())
        self.files_digest, self.n_files = files_digest(paths), len(paths)
        self.n_runs += len(set(new.column("run_id").to_pylist()))

    def to_bytes(self) -> bytes:
        data = {"format": _FORMAT, "max_cells": MAX_CARD_CELLS, "columns": list(CELL_COLUMNS)}
        data |= vars(self)
        # Identities as lists in CELL_COLUMNS order: half the bytes (and time) of dicts.
        data["listed"] = [vars(c) | {"identity": list(c.identity.values())} for c in self.listed]
        data["protocols"] = [vars(protocol) for protocol in self.protocols]
        return json.dumps(data, sort_keys=True, ensure_ascii=False).encode("utf-8")

    @classmethod
    def parse(cls, data: bytes | None) -> CardSummary | None:
        """The published summary, or None when missing, unreadable or of another layout."""
        if not data:
            return None
        try:
            raw = json.loads(data.decode("utf-8"))
            layout = (raw.pop("format"), raw.pop("max_cells"), raw.pop("columns"))
            if layout != (_FORMAT, MAX_CARD_CELLS, list(CELL_COLUMNS)):
                return None
            summary = cls(**raw)
            summary.listed = [
                ListedCell(
                    **(c | {"identity": dict(zip(CELL_COLUMNS, c["identity"], strict=True))})
                )
                for c in raw["listed"]
            ]
            summary.protocols = [Protocol(**p) for p in raw["protocols"]]
        # RecursionError: a repo's summary.json nested deeper than the parser goes is as
        # unreadable as any other (the push rebuilds it), not a failed push.
        except (
            UnicodeDecodeError,
            ValueError,
            TypeError,
            KeyError,
            AttributeError,
            RecursionError,
        ):
            return None
        return summary


def sort_key(identity: dict[str, Any]) -> tuple[Any, ...]:
    """The card's order of cells: its display key, then the other cell columns (which make
    equal display keys distinct cells); strings compare by code point, numbers by value."""
    rest = tuple(identity[c] for c in CELL_COLUMNS if c not in ("cell_id", "model"))
    return (*cell_display_key(identity), *rest)


def pool_condition(m: Mapping[str, Any]) -> str:
    """`pool / condition`, with the access protocol when it is not the paper's `search`."""
    access = m.get("access") or "search"
    suffix = "" if access == "search" else f" / {access}"
    return f"{m['skill_pool']} / {m['condition']}{suffix}"


def cell_display_key(m: Mapping[str, Any]) -> tuple[str, ...]:
    """The card's sort key of a cell, from its identity columns alone."""
    return (
        f"{m['benchmark']} {m['benchmark_version']}".strip(),
        m["model"],
        pool_condition(m),
        f"seed {m['partition_seed']}, {m['partition_size']} tasks",
        m["cell_id"],
    )


def identity_key(values: Sequence[Any]) -> str:
    """Hash of a cell's CELL_COLUMNS values (in that order): its key in the counts files."""
    # repr of str/int/float is exact and stable across platforms (floats print their
    # shortest round-trip form), so equal identities always give equal keys.
    return hashlib.sha256(repr(tuple(values)).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def files_digest(paths: Sequence[str]) -> str:
    """SHA-256 of a repo's transitions file paths (one per run), given sorted."""
    return hashlib.sha256("\n".join(paths).encode("utf-8", "surrogatepass")).hexdigest()

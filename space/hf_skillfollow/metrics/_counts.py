"""Per-cell 2x2 transition counts over all tasks and over the retrieval-invoked subset.

a: both arms correct, b: SE correct and SD wrong (helpful flip), c: SE wrong and SD correct
(harmful flip), d: both wrong. The subset S_call is the rows with `returned` true.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class CellCounts:
    """Integer count arrays, one entry per cell."""

    a_all: np.ndarray
    b_all: np.ndarray
    c_all: np.ndarray
    d_all: np.ndarray
    a_cond: np.ndarray
    b_cond: np.ndarray
    c_cond: np.ndarray
    d_cond: np.ndarray
    n_invoked: np.ndarray
    n_adherent: np.ndarray  # S_call rows whose SE answer follows a returned skill
    n_effective: np.ndarray  # ... and are correct
    n_adherence_unknown: np.ndarray  # S_call rows without an adherence value
    #: pairs with an arm that ended in a provider error (its answer is empty, scored wrong):
    #: not a measurement of the model, so `error_rate` flags a cell made of them
    n_errored: np.ndarray

    @property
    def n_pairs(self) -> np.ndarray:
        return self.a_all + self.b_all + self.c_all + self.d_all

    @property
    def n_cond(self) -> np.ndarray:
        return self.a_cond + self.b_cond + self.c_cond + self.d_cond

    @property
    def n_skip(self) -> np.ndarray:
        return self.n_pairs - self.n_cond

    def skip(self, name: str) -> np.ndarray:
        """Count `name` (a, b, c or d) over S_skip = all tasks minus S_call."""
        return getattr(self, f"{name}_all") - getattr(self, f"{name}_cond")


def count_cells(
    group: np.ndarray,
    n_groups: int,
    *,
    se: np.ndarray,
    sd: np.ndarray,
    returned: np.ndarray,
    invoked: np.ndarray,
    adherence: np.ndarray,
    adherence_known: np.ndarray,
    errored: np.ndarray | None = None,
) -> CellCounts:
    """Sum the outcome categories of each row into its group (pooling = summing counts)."""
    # Category 0..3 = a, b, c, d; one bincount over (group, category, returned) does all eight.
    category = np.where(se, np.where(sd, 0, 1), np.where(sd, 2, 3)).astype(np.int64)
    slot = (group.astype(np.int64) * 4 + category) * 2 + returned.astype(np.int64)
    table = np.bincount(slot, minlength=n_groups * 8).reshape(n_groups, 4, 2)
    totals = table.sum(axis=2)
    cond = table[:, :, 1]

    def per_group(mask: np.ndarray) -> np.ndarray:
        return np.bincount(group[mask], minlength=n_groups).astype(np.int64)

    in_call = returned.astype(bool)
    adherent = in_call & adherence_known & adherence
    return CellCounts(
        *(totals[:, i].astype(np.int64) for i in range(4)),
        *(cond[:, i].astype(np.int64) for i in range(4)),
        n_invoked=per_group(invoked.astype(bool)),
        n_adherent=per_group(adherent),
        n_effective=per_group(adherent & se.astype(bool)),
        n_adherence_unknown=per_group(in_call & ~adherence_known),
        n_errored=per_group(
            np.zeros(len(group), dtype=bool) if errored is None else errored.astype(bool)
        ),
    )

"""Annotation diagnostics and stage diagnostics per cell: pure computation, no I/O.

They describe the cells; none of them redefines RAE, which stays (b_cond − c_cond) / n_cond
over every retrieval-invoked task (docs/diagnostics.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hf_skillfollow.metrics import _effects

if TYPE_CHECKING:
    import pandas as pd

NOT_ANNOTATED = "no annotated task in this group"
NO_RETRIEVAL = "n_cond = 0: no retrieval-invoked task"


def slug(name: str) -> str:
    """A label or group name as a column-name part: 'misapplied/overapplied' -> 'misapplied_overapplied'."""
    return "".join(ch if ch.isalnum() else "_" for ch in name).strip("_")


def label_columns() -> list[str]:
    """Per-cell count columns of `annotation_summary`, in output order."""
    from hf_skillfollow.annotate._labels import LABELS

    cols = []
    for flip in ("helpful", "harmful"):
        cols += [f"{flip}_{slug(label)}" for label in LABELS]
        cols += [f"{flip}_failed", f"{flip}_missing"]
    return cols


def annotation_summary(
    transitions: pd.DataFrame, annotations: pd.DataFrame, keys: Sequence[str]
) -> pd.DataFrame:
    """One row per (cell, annotator): label counts over helpful (b) and harmful (c) flips of
    S_call, the reconciliation with b_cond/c_cond, and b, c, n and RAE per collapsed group.

    `keys` are the cell columns of `transitions`. Only annotations of retrieval-invoked tasks
    count; a flip's type comes from the transitions row, not from the annotation. `n` of a
    group is the number of annotated S_call tasks in it (flips only, unless the cell was
    annotated with --all), so a group's RAE is (b − c) / n over those tasks.
    """
    keys = list(keys)
    t = transitions[
        [*dict.fromkeys([*keys, "run_id", "task_id"]), "se_correct", "sd_correct", "returned"]
    ]
    t = t[t["returned"].astype(bool)].copy()
    se, sd = t["se_correct"].astype(bool), t["sd_correct"].astype(bool)
    t["flip"] = np.where(se & ~sd, "helpful", np.where(~se & sd, "harmful", "concordant"))
    cond = t.groupby(keys, dropna=False, sort=True).agg(
        n_cond=("flip", "size"),
        b_cond=("flip", lambda f: int((f == "helpful").sum())),
        c_cond=("flip", lambda f: int((f == "harmful").sum())),
    )
    a = annotations[["run_id", "task_id", "annotator", "label"]]
    joined = t.merge(a, on=["run_id", "task_id"], how="inner")
    return summarise_labels(joined, cond, keys)


def summarise_labels(joined: pd.DataFrame, cond: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """`annotation_summary` from its two halves: `joined` has the cell `keys`, `annotator`,
    `flip` and `label` of each annotated S_call task; `cond` is indexed by the cell keys and
    holds n_cond, b_cond and c_cond (the card builds both from published counts)."""
    import pandas as pd

    from hf_skillfollow.annotate._labels import GROUP_OF, GROUPS, LABELS

    keys = list(keys)
    rows = []
    for (cell_key, annotator), part in _cell_annotator_groups(joined, keys):
        base = cond.loc[cell_key if len(keys) > 1 else cell_key[0]]
        row: dict[str, object] = dict(zip(keys, cell_key, strict=True))
        row["annotator"] = annotator
        row.update(
            n_cond=int(base["n_cond"]), b_cond=int(base["b_cond"]), c_cond=int(base["c_cond"])
        )
        for flip in ("helpful", "harmful"):
            of_flip = part[part["flip"] == flip]
            for label in LABELS:
                row[f"{flip}_{slug(label)}"] = int((of_flip["label"] == label).sum())
            row[f"{flip}_failed"] = int(of_flip["label"].isna().sum())
        labelled = part[part["label"].notna()]
        row["labelled_b"] = int((labelled["flip"] == "helpful").sum())
        row["labelled_c"] = int((labelled["flip"] == "harmful").sum())
        row["gap_b"] = row["b_cond"] - row["labelled_b"]
        row["gap_c"] = row["c_cond"] - row["labelled_c"]
        row["helpful_missing"] = row["gap_b"] - row["helpful_failed"]
        row["harmful_missing"] = row["gap_c"] - row["harmful_failed"]
        row["reconciled"] = row["gap_b"] == 0 and row["gap_c"] == 0
        group = labelled["label"].map(GROUP_OF)
        for g in GROUPS:
            in_g = labelled[group == g]
            b, c, n = (
                int((in_g["flip"] == "helpful").sum()),
                int((in_g["flip"] == "harmful").sum()),
                len(in_g),
            )
            row.update({f"b_{slug(g)}": b, f"c_{slug(g)}": c, f"n_{slug(g)}": n})
            effect = _effects.paired_effect(
                np.array([b]), np.array([c]), np.array([n]), NOT_ANNOTATED
            )
            row[f"rae_{slug(g)}"] = float(effect.value[0])
        rows.append(row)
    columns = [*keys, "annotator", "n_cond", "b_cond", "c_cond", *label_columns(),
               "labelled_b", "labelled_c", "gap_b", "gap_c", "reconciled",
               *[f"{p}_{slug(g)}" for g in GROUPS for p in ("b", "c", "n", "rae")]]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def _cell_annotator_groups(joined: pd.DataFrame, keys: list[str]):  # noqa: ANN202 - generator
    for (*cell_key, annotator), part in joined.groupby(
        [*keys, "annotator"], dropna=False, sort=True
    ):
        yield (tuple(cell_key), annotator), part


def stage_diagnostics(cells: pd.DataFrame) -> pd.DataFrame:
    """Invocation % and retrieval % over all tasks; adherence-proxy % and effective %
    (adherent and SE-correct) over the retrieval-invoked tasks; RAE beside them."""
    import pandas as pd

    n_pairs = cells["n_pairs"].to_numpy(dtype=np.int64)
    n_cond = cells["n_cond"].to_numpy(dtype=np.int64)
    invocation = _effects.share(cells["n_invoked"].to_numpy(dtype=np.int64), n_pairs)
    retrieval = _effects.share(n_cond, n_pairs)
    adherent = _effects.share(cells["n_adherent"].to_numpy(dtype=np.int64), n_cond)
    effective = _effects.share(cells["n_effective"].to_numpy(dtype=np.int64), n_cond)
    # The proxy is unknown for a cell when some S_call row has no adherence value.
    unknown = cells["adherence"].isna().to_numpy() & (n_cond > 0)
    for effect in (adherent, effective):
        effect.value[unknown] = np.nan
    return pd.DataFrame(
        {
            "invocation_pct": invocation.value,
            "retrieval_pct": retrieval.value,
            "adherence_proxy_pct": adherent.value,
            "effective_pct": effective.value,
            "rae": cells["rae"].to_numpy(dtype=float),
        }
    )

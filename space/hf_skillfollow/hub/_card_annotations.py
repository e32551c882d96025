"""The card's annotation summary: per cell and annotator, labels over the flips and RAE per
label group (computed by `metrics._diagnostics`, laid out here as short strings)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa


def annotation_rows(stats: pa.Table, annotations: pa.Table) -> list[dict[str, Any]]:
    """Display rows, one per (cell, annotator), sorted by cell and annotator.

    Built from the published per-run counts (`_stats.py`) and the annotation rows, whose
    `flip` was taken from the transitions when they were annotated; annotations of cells
    the repo does not hold are left out. `cell` and `annotator` are submitter text (the
    template escapes them); the other fields hold counts and the fixed label and group names
    of `annotate._labels` only, so the template writes them as they are.
    """
    from hf_skillfollow.annotate._labels import GROUPS, LABELS
    from hf_skillfollow.formatting import pp
    from hf_skillfollow.metrics._diagnostics import slug, summarise_labels

    counts = stats.to_pandas()
    counts["n_cond"] = counts[["a_cond", "b_cond", "c_cond", "d_cond"]].sum(axis=1)
    cond = counts.groupby("cell_id")[["n_cond", "b_cond", "c_cond"]].sum()
    names = counts.groupby("cell_id")[["model", "benchmark", "condition"]].first()
    joined = annotations.select(["cell_id", "annotator", "flip", "label"]).to_pandas()
    joined = joined[joined["cell_id"].isin(cond.index)]
    summary = summarise_labels(joined, cond, ["cell_id"])
    rows = []
    for r in summary.to_dict("records"):
        cell = names.loc[r["cell_id"]]

        def labels(flip: str, r: dict[str, Any] = r) -> str:
            parts = [
                f"{lab} {r[f'{flip}_{slug(lab)}']}" for lab in LABELS if r[f"{flip}_{slug(lab)}"]
            ]
            if r[f"{flip}_failed"]:
                parts.append(f"failed {r[f'{flip}_failed']}")
            return "; ".join(parts) or "—"

        groups = []
        for g in GROUPS:
            s = slug(g)
            value = pp(r[f"rae_{s}"])
            groups.append(f"{g} {value} (b {r[f'b_{s}']}, c {r[f'c_{s}']}, n {r[f'n_{s}']})")
        rows.append(
            {
                "cell": f"{cell['model']} · {cell['benchmark']} · {cell['condition']}",
                "cell_id": r["cell_id"],
                "annotator": r["annotator"],
                "helpful": labels("helpful"),
                "harmful": labels("harmful"),
                "reconciliation": f"b {r['labelled_b']}/{r['b_cond']}, c {r['labelled_c']}/{r['c_cond']}"
                + ("" if r["reconciled"] else " (gap: not all flips labelled)"),
                "groups": "; ".join(groups),
            }
        )
    return sorted(rows, key=lambda x: (x["cell"], x["annotator"]))

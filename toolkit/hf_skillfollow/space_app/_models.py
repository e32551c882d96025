"""The per-model summary: one row per model, as the boards people know have (a model's
standing at a glance, then its cells).

Computed from the board's cells alone (no rows, no traces), at the threshold in use.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hf_skillfollow._escape import for_html as escape
from hf_skillfollow.space_app._board import DEFAULT_MIN_COND, LAST_RUN
from hf_skillfollow.space_app._labels import card_url
from hf_skillfollow.space_app._sources import SOURCE
from hf_skillfollow.space_app._table import ALPHA, _capped, pp

#: Models listed (most cells first); the CSV and the table hold every cell.
MAX_MODELS = 500


def models_frame(cells: pd.DataFrame, min_cond: int = DEFAULT_MIN_COND) -> pd.DataFrame:
    """Per model and source (a pooled cell's sources are one more source): cells, reportable cells, how many the skills hurt (RAE < 0) and helped,
    how many of those significantly (McNemar p < ALPHA), the median RAE of the reportable
    cells, the worst reportable cell, the sources and the newest run."""
    if cells.empty:
        return pd.DataFrame()
    rae = pd.to_numeric(cells["rae"], errors="coerce").to_numpy(dtype=float)
    p = pd.to_numeric(cells["mcnemar_p"], errors="coerce").to_numpy(dtype=float)
    rep = cells[f"_rep_{min_cond}"].to_numpy(dtype=bool) & ~np.isnan(rae)
    frame = pd.DataFrame(
        {
            "model": cells["model"].astype(str).to_numpy(),
            "rep": rep,
            "hurt": rep & (rae < 0),
            "helped": rep & (rae > 0),
            "hurt_sig": rep & (rae < 0) & (p < ALPHA),
            "helped_sig": rep & (rae > 0) & (p < ALPHA),
            "rae": np.where(rep, rae, np.nan),
            "key": cells["_key"].astype(str).to_numpy(),
            "label": cells["label"].astype(str).to_numpy(),
            "source": cells[SOURCE].astype(str).to_numpy(),
            "last_run": (
                cells[LAST_RUN].astype(str).to_numpy() if LAST_RUN in cells else [""] * len(cells)
            ),
        }
    )
    rows = []
    # One row per model *and source*: a name is anyone's to publish under, and another
    # source's cells must not change this source's counts, median or worst cell.
    # Groups in (model, source) order: a stable sort by cells below keeps it among equals.
    for (model, source), part in frame.groupby(["model", "source"], sort=True):
        worst = part.loc[part["rae"].idxmin()] if part["rae"].notna().any() else None
        rows.append(
            {
                "model": model,
                "cells": len(part),
                "reportable": int(part["rep"].sum()),
                "hurt": int(part["hurt"].sum()),
                "hurt_sig": int(part["hurt_sig"].sum()),
                "helped": int(part["helped"].sum()),
                "helped_sig": int(part["helped_sig"].sum()),
                "median_rae": float(part["rae"].median()) if part["rep"].any() else np.nan,
                "worst_key": "" if worst is None else worst["key"],
                "worst_label": "" if worst is None else worst["label"],
                "worst_rae": np.nan if worst is None else float(worst["rae"]),
                "sources": [source],
                "last_run": max(part["last_run"]),
            }
        )
    out = pd.DataFrame(rows)
    return out.sort_values("cells", ascending=False, kind="stable").reset_index(drop=True)


def models_html(frame: pd.DataFrame, min_cond: int = DEFAULT_MIN_COND) -> str:
    if frame.empty:
        return '<p class="sf-empty">No cells loaded.</p>'
    body = []
    for r in frame.head(MAX_MODELS).itertuples(index=False):
        url = card_url(r.model)
        card = (
            f' <a class="sf-card" href="{escape(url)}" target="_blank" '
            'rel="noopener noreferrer nofollow">model card ↗</a>'
            if url
            else ""
        )
        worst = (
            f'<button class="sf-task" data-sf-cell="{escape(r.worst_key)}">'
            f'<b class="{"sf-neg" if r.worst_rae < 0 else ""}">{pp(r.worst_rae)}</b> '
            f"{escape(_capped(r.worst_label, 90))}</button>"
            if r.worst_key
            else '<span class="sf-sub">no reportable cell</span>'
        )
        hurt = f'<b class="sf-neg">{r.hurt}</b>' if r.hurt else "0"
        median = "—" if np.isnan(r.median_rae) else pp(r.median_rae)
        sign = "sf-neg" if r.median_rae < 0 else ""
        sources = "<br>".join(escape(_capped(s, 80)) for s in r.sources)
        body.append(
            f'<tr data-model="{escape(r.model)}"><td><b>{escape(_capped(r.model))}</b>{card}</td>'
            f'<td class="sf-num">{r.cells}</td><td class="sf-num">{r.reportable}</td>'
            f'<td class="sf-num">{hurt} <span class="sf-sub">({r.hurt_sig} sig.)</span></td>'
            f'<td class="sf-num">{r.helped} <span class="sf-sub">({r.helped_sig} sig.)</span></td>'
            f'<td class="sf-num"><b class="{sign}">{median}</b></td><td>{worst}</td>'
            f'<td class="sf-sub">{sources}</td><td class="sf-num">{escape(r.last_run[:10])}</td></tr>'
        )
    return (
        f'<p class="sf-sub">One row per model and source, over its cells at n_cond ≥ {min_cond}; sig. = '
        f"McNemar p &lt; {ALPHA}. Click a worst cell for its drill-down.</p>"
        '<div class="sf-table-wrap"><table class="sf-table sf-models"><thead><tr>'
        "<th>model</th><th>cells</th><th>reportable</th>"
        '<th title="Reportable cells with RAE &lt; 0: the skills hurt">hurt</th>'
        '<th title="Reportable cells with RAE &gt; 0">helped</th>'
        '<th title="Median RAE of the reportable cells, percentage points">median RAE pp</th>'
        '<th title="The reportable cell with the lowest RAE">worst cell</th>'
        '<th>sources</th><th title="Start (UTC) of the newest run">last run</th>'
        f"</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def sources_html(cells: pd.DataFrame) -> str:
    """Per source: its cells and when its newest run started ("last updated")."""
    if cells.empty:
        return ""
    newest = cells[LAST_RUN].astype(str) if LAST_RUN in cells else pd.Series([""] * len(cells))
    frame = pd.DataFrame(
        {"source": cells[SOURCE].astype(str).to_numpy(), "last": newest.to_numpy()}
    )
    rows = "".join(
        f"<tr><td>{escape(_capped(source, 120))}</td><td class='sf-num'>{len(part)}</td>"
        f"<td class='sf-num'>{escape(max(part['last'])[:19].replace('T', ' ')) or '—'}</td></tr>"
        for source, part in frame.groupby("source", sort=True)
    )
    return (
        "<h4>Sources</h4>"
        '<table class="sf-small sf-sources"><thead><tr><th>source</th><th>cells</th>'
        f"<th>last updated (newest run, UTC)</th></tr></thead><tbody>{rows}</tbody></table>"
    )

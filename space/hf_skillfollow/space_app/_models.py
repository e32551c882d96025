"""The per-model summary: one row per model, as the boards people know have (a model's
standing at a glance, then its cells).

Computed from the board's cells alone (no rows, no traces), at the threshold in use.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pandas.api.typing import DataFrameGroupBy

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
    # One row per model *and source*: a name is anyone's to publish under, and another
    # source's cells must not change this source's counts, median or worst cell.
    # Aggregated per group by pandas, not in a Python loop over groups (12,500 groups: 4.6 s
    # in a loop). Groups come in (model, source) order: a stable sort by cells below keeps
    # it among equals.
    keys = ["model", "source"]
    groups = frame.groupby(keys, sort=True)
    out = groups[["rep", "hurt", "hurt_sig", "helped", "helped_sig"]].sum().astype(int)
    out.insert(0, "cells", groups.size())
    out = out.rename(columns={"rep": "reportable"})
    out["median_rae"] = _medians(frame["rae"], groups)
    # The worst cell: a group's first row (in cell order) at its lowest reportable RAE, as
    # idxmin picks; a group without a reportable cell has none.
    lowest = frame["rae"] == groups["rae"].transform("min")
    worst = frame.loc[lowest].drop_duplicates(keys).set_index(keys)
    out = out.join(worst[["key", "label", "rae"]])
    out = out.rename(columns={"key": "worst_key", "label": "worst_label", "rae": "worst_rae"})
    out[["worst_key", "worst_label"]] = out[["worst_key", "worst_label"]].fillna("")
    out["last_run"] = groups["last_run"].max()
    out = out.reset_index()
    sources = [[source] for source in out.pop("source")]
    out.insert(len(out.columns) - 1, "sources", sources)
    return out.sort_values("cells", ascending=False, kind="stable").reset_index(drop=True)


def _medians(rae: pd.Series, groups: DataFrameGroupBy) -> np.ndarray:
    """Each group's median RAE, as `Series.median` (numpy's median of its values in cell
    order) gives it. The grouped median can differ from it only in the sign of a zero
    median (-0.0 shows as "-0.0 pp"), so a group holding a -0.0 whose median is zero takes
    numpy's median of its own values."""
    medians = groups["rae"].median().to_numpy(dtype=float, copy=True)
    values = rae.to_numpy(dtype=float)
    codes = groups.ngroup().to_numpy()
    negative_zero = np.zeros(len(medians), dtype=bool)
    negative_zero[codes[(values == 0) & np.signbit(values)]] = True
    redo = np.flatnonzero(negative_zero & (medians == 0))
    if redo.size:
        order = np.argsort(codes, kind="stable")
        starts = np.searchsorted(codes[order], np.arange(len(medians) + 1))
        for group in redo:
            part = values[order[starts[group] : starts[group + 1]]]
            medians[group] = np.median(part[~np.isnan(part)])
    return medians


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

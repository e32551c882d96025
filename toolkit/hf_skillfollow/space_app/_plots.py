"""The three interactive plots, as plain plotly JSON figures.

Figures are built as dicts (serialised with orjson, numpy arrays as-is) rather than through
`plotly.graph_objects`, whose validation of 10^4-point traces costs more than the whole
filter budget; the browser's plotly.js reads the same JSON either way.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hf_skillfollow.space_app._table import DISAGREE_MARK

#: Points per plot. Chromium on 2 cores needs seconds to redraw 3 x 12,500 hover-able points
#: (bench/space.py), so larger selections plot a sample (see `capped`) and the title says so.
MAX_POINTS = 500
#: Above this many points labels are dropped (unreadable) and WebGL markers are used.
LABEL_LIMIT = 40
WEBGL_LIMIT = 3000
_RED, _BLUE, _GREY, _GREEN = "#d62728", "#1f77b4", "#7f7f7f", "#2ca02c"
_SHADE = "rgba(214, 39, 40, 0.10)"


def lift_vs_rae(cells: pd.DataFrame) -> dict:
    """Aggregate lift (x) vs RAE (y); the two sign-disagreement quadrants are shaded."""
    data, note = capped(_defined(cells, "agg_lift", "rae"))
    flag = data["_flag"] == DISAGREE_MARK
    traces = [
        _scatter(data[~flag], "agg_lift", "rae", "signs agree", _BLUE),
        _scatter(data[flag], "agg_lift", "rae", "sign disagreement", _RED),
    ]
    xr, yr = _range(data["agg_lift"]), _range(data["rae"])
    layout = _layout(
        "Aggregate lift vs RAE" + note,
        "aggregate lift (pp, SE run: retrieved − not retrieved)",
        "RAE (pp, paired, retrieval-invoked)",
    )
    layout["shapes"] = [
        _rect(0, xr[1], yr[0], 0),
        _rect(xr[0], 0, 0, yr[1]),
    ]
    layout["annotations"] = [
        _note(xr[1], yr[0], "agg lift says helps,<br>RAE says hurts", "right", "bottom"),
        _note(xr[0], yr[1], "agg lift says hurts,<br>RAE says helps", "left", "top"),
    ]
    layout["xaxis"]["range"], layout["yaxis"]["range"] = xr, yr
    return {"data": traces, "layout": layout}


def coverage_vs_rae(cells: pd.DataFrame) -> dict:
    """Coverage (share of tasks with a returned skill) vs RAE, one colour per benchmark."""
    data, note = capped(_defined(cells, "coverage", "rae"))
    palette = [
        _BLUE,
        "#ff7f0e",
        _GREEN,
        "#9467bd",
        "#8c564b",
        "#e377c2",
        _GREY,
        "#bcbd22",
        "#17becf",
        _RED,
    ]
    traces = [
        _scatter(data[data["benchmark"] == b], "coverage", "rae", str(b), palette[i % len(palette)])
        for i, b in enumerate(sorted(data["benchmark"].astype(str).unique()))
    ]
    layout = _layout(
        "Coverage vs RAE" + note, "coverage (% of tasks with a skill returned)", "RAE (pp)"
    )
    layout["xaxis"]["range"] = [-2, 102]
    return {"data": traces, "layout": layout}


def select_vs_lift(cells: pd.DataFrame) -> dict:
    """Selection gap Δselect (x) vs aggregate lift (y), coloured by the sign of RAE."""
    data, note = capped(_defined(cells, "delta_select", "agg_lift"))
    rae = pd.to_numeric(data["rae"], errors="coerce")
    traces = [
        _scatter(data[rae > 0], "delta_select", "agg_lift", "RAE > 0", _GREEN),
        _scatter(data[rae < 0], "delta_select", "agg_lift", "RAE < 0", _RED),
        _scatter(
            data[~((rae > 0) | (rae < 0))],
            "delta_select",
            "agg_lift",
            "RAE = 0 or undefined",
            _GREY,
        ),
    ]
    lo, hi = _range(pd.concat([data["delta_select"], data["agg_lift"]]))
    traces.append(
        {
            "type": "scatter",
            "mode": "lines",
            "x": [lo, hi],
            "y": [lo, hi],
            "name": "agg lift = Δselect",
            "line": {"dash": "dot", "color": _GREY},
            "hoverinfo": "skip",
        }
    )
    layout = _layout(
        "Selection gap vs aggregate lift" + note,
        "Δselect (pp, SD run: retrieved − not retrieved)",
        "aggregate lift (pp)",
    )
    layout["xaxis"]["range"] = layout["yaxis"]["range"] = [lo, hi]
    return {"data": traces, "layout": layout}


_PLOT_COLUMNS = (
    "rae",
    "agg_lift",
    "coverage",
    "delta_select",
    "benchmark",
    "model",
    "_flag",
    "_hover",
    "_key",
)


def _defined(cells: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    """Rows where both coordinates exist, narrowed to what a trace needs (masking is per column)."""
    narrow = cells[list(_PLOT_COLUMNS)]
    xs = pd.to_numeric(narrow[x], errors="coerce").to_numpy(dtype=float)
    ys = pd.to_numeric(narrow[y], errors="coerce").to_numpy(dtype=float)
    return narrow[~np.isnan(xs) & ~np.isnan(ys)]


def _scatter(data: pd.DataFrame, x: str, y: str, name: str, color: str) -> dict:
    labelled = len(data) <= LABEL_LIMIT
    return {
        "type": "scattergl" if len(data) > WEBGL_LIMIT else "scatter",
        "mode": "markers+text" if labelled else "markers",
        "name": f"{name} ({len(data)})",
        "x": _floats(data[x]),
        "y": _floats(data[y]),
        "text": data["model"].astype(str).tolist() if labelled else None,
        "textposition": "top center",
        "textfont": {"size": 10},
        "hovertext": data["_hover"].to_numpy(dtype=object).tolist(),
        "hoverinfo": "text",
        "customdata": data["_key"].astype(str).tolist(),
        "marker": {
            "color": color,
            "size": 9,
            "opacity": 0.8,
            "line": {"width": 0.5, "color": "white"},
        },
    }


def _floats(column: pd.Series) -> np.ndarray:
    return pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)


def _range(values: pd.Series) -> list[float]:
    v = pd.to_numeric(values, errors="coerce").dropna()
    bound = max(10.0, float(v.abs().max()) * 1.15) if len(v) else 10.0
    return [-bound, bound]


def _rect(x0: float, x1: float, y0: float, y1: float) -> dict:
    return {
        "type": "rect",
        "xref": "x",
        "yref": "y",
        "x0": x0,
        "x1": x1,
        "y0": y0,
        "y1": y1,
        "fillcolor": _SHADE,
        "line": {"width": 0},
        "layer": "below",
    }


def _note(x: float, y: float, text: str, xanchor: str, yanchor: str) -> dict:
    return {
        "x": x,
        "y": y,
        "text": text,
        "showarrow": False,
        "xanchor": xanchor,
        "yanchor": yanchor,
        "font": {"color": _RED, "size": 11},
    }


def capped(cells: pd.DataFrame, limit: int = MAX_POINTS) -> tuple[pd.DataFrame, str]:
    """The cells to plot and a title suffix saying when only part of them is drawn.

    Every sign disagreement is kept (up to `limit`), the rest is an even sample in board
    order, so the points do not depend on the table's sort and a sort change needs no redraw.
    """
    if len(cells) <= limit:
        return cells, ""
    order = np.argsort(cells.index.to_numpy(), kind="stable")
    flagged = (cells["_flag"].to_numpy() == DISAGREE_MARK)[order]
    keep = np.flatnonzero(flagged)[:limit]
    rest = np.flatnonzero(~flagged)
    room = limit - len(keep)
    if room > 0:
        keep = np.concatenate([keep, rest[np.linspace(0, len(rest) - 1, room).astype(int)]])
    note = (
        f"<br><sup>{limit:,} of {len(cells):,} cells: every sign disagreement kept, the rest "
        "an even sample; narrow the filters to see all</sup>"
    )
    return cells.take(order[np.sort(keep)]), note


def _layout(title: str, xtitle: str, ytitle: str) -> dict:
    return {
        "title": {"text": title},
        "xaxis": {
            "title": {"text": xtitle},
            "zeroline": True,
            "zerolinecolor": "#999",
            "gridcolor": "#eee",
        },
        "yaxis": {
            "title": {"text": ytitle},
            "zeroline": True,
            "zerolinecolor": "#999",
            "gridcolor": "#eee",
        },
        "hovermode": "closest",
        "height": 460,
        # room for the second title line `capped` adds
        "margin": {"l": 60, "r": 20, "t": 80 if "<br>" in title else 50, "b": 60},
        "legend": {"orientation": "h", "y": -0.2},
        "plot_bgcolor": "white",
    }

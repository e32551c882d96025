"""The three scatter plots, drawn on the server as small inline SVG.

A plotting library in the browser (plotly.js is ~3.5 MB) cost the board more start-up time
than loading and computing every cell (bench/space.py). SVG drawn here is a few kilobytes,
renders with the page, follows the theme (text and axes use `currentColor`), and every point
is an element the page's click handler can open (`data-sf-cell`) with a native tooltip.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hf_skillfollow._escape import for_html as escape
from hf_skillfollow.space_app._table import _capped, fast_records, interval, pp

#: Points per plot. Larger selections plot a sample (see `capped`) and the caption says so.
#: Each point is an SVG group with its hover text; at 500 points the three plots were ~0.5 MB
#: of page and took Chromium ~1 s longer to draw than at 150-200 (bench/space.py, 12,500 cells).
MAX_POINTS = 200
_W, _H = 440, 330
#: Characters of a series' name in the legend: the coverage plot's series are benchmarks,
#: named by the sources (up to 1,000 characters): 200 of them were 180 KB of legend per
#: plot, each name one unbroken line wider than the plot.
LEGEND_CHARS = 60
_L, _R, _T, _B = 54, 12, 12, 46  # margins: room for tick labels and axis titles
_PALETTE = 10  # colour classes sf-c0 .. sf-c9 in the page CSS


@dataclass(frozen=True)
class Series:
    name: str
    color: int  # index into the palette classes
    rows: pd.DataFrame
    hollow: bool = False  # drawn as rings: cells the plot's counts leave out


#: (x, y) of the three plots, in page order.
AXES = (("agg_lift", "rae"), ("coverage", "rae"), ("delta_select", "agg_lift"))


def plotted(cells: pd.DataFrame, disagree: np.ndarray) -> pd.Index:
    """Labels of the rows any of the three plots draws (each point's hover text shows its
    RAE interval)."""
    found = [_prepare(cells, disagree, x, y)[0].index for x, y in AXES]
    return found[0].union(found[1]).union(found[2])


def lift_vs_rae(
    cells: pd.DataFrame,
    disagree: np.ndarray,
    reportable: np.ndarray,
    titled: set[str] | None = None,
) -> str:
    """Aggregate lift (x) vs RAE (y) with RAE intervals; disagreement quadrants shaded.

    A non-reportable cell (n_cond under the threshold) is neither an agreement nor a
    disagreement, whatever its signs: it is its own hollow series, counted in neither."""
    data, flag, rep, note = _prepare_also(cells, disagree, reportable, *AXES[0])
    rep = rep.astype(bool)
    series = [
        Series("signs agree", 0, data[~flag & rep]),
        Series("sign disagreement ⚠", 3, data[flag]),
        Series("not reportable: n_cond below the threshold", 7, data[~flag & ~rep], hollow=True),
    ]
    return _figure(
        "Aggregate lift vs RAE" + note,
        series,
        x="agg_lift",
        y="rae",
        xtitle="aggregate lift (pp)",
        ytitle="RAE (pp) with 95% CI",
        error_bars=True,
        shade=True,
        symmetric=True,
        titled=titled,
    )


def coverage_vs_rae(
    cells: pd.DataFrame, disagree: np.ndarray, titled: set[str] | None = None
) -> str:
    """Coverage (share of tasks with a returned skill) vs RAE, one colour per benchmark."""
    data, _, note = _prepare(cells, disagree, *AXES[1])
    names = sorted(data["benchmark"].astype(str).unique())
    series = [
        Series(b, i % _PALETTE, data[data["benchmark"].astype(str) == b])
        for i, b in enumerate(names)
    ]
    return _figure(
        "Coverage vs RAE" + note,
        series,
        x="coverage",
        y="rae",
        xtitle="coverage (% of tasks with a skill)",
        ytitle="RAE (pp) with 95% CI",
        error_bars=True,
        xrange=(0.0, 100.0),
        titled=titled,
    )


def select_vs_lift(
    cells: pd.DataFrame, disagree: np.ndarray, titled: set[str] | None = None
) -> str:
    """Selection gap Δselect (x) vs aggregate lift (y), coloured by the sign of RAE."""
    data, _, note = _prepare(cells, disagree, *AXES[2])
    rae = pd.to_numeric(data["rae"], errors="coerce").to_numpy(dtype=float)
    series = [
        Series("RAE > 0", 2, data[rae > 0]),
        Series("RAE < 0", 3, data[rae < 0]),
        Series("RAE = 0 or undefined", 7, data[~((rae > 0) | (rae < 0))]),
    ]
    return _figure(
        "Selection gap vs aggregate lift" + note,
        series,
        x="delta_select",
        y="agg_lift",
        xtitle="Δselect (pp, SD run)",
        ytitle="aggregate lift (pp)",
        diagonal=True,
        symmetric=True,
        titled=titled,
    )


def _prepare(
    cells: pd.DataFrame, disagree: np.ndarray, x: str, y: str
) -> tuple[pd.DataFrame, np.ndarray, str]:
    data, flag, _, note = _prepare_also(cells, disagree, np.zeros(len(cells)), x, y)
    return data, flag, note


def _prepare_also(
    cells: pd.DataFrame, disagree: np.ndarray, also: np.ndarray, x: str, y: str
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, str]:
    """The cells with both values (capped: `capped`), their flags, and `also` (one value per
    cell) taken along the same rows. The rows are chosen by position first and only the plotted
    ones copied: a filter's view has up to every cell, a plot at most `MAX_POINTS`."""
    xs, ys = _floats(cells[x]), _floats(cells[y])
    ok = np.flatnonzero(~np.isnan(xs) & ~np.isnan(ys))
    flag = np.asarray(disagree, dtype=bool)[ok]
    keep, note = capped(cells.index[ok], flag)
    positions = ok[keep]
    narrow = cells.take(positions)[
        list(dict.fromkeys((*_HOVER_COLUMNS, "benchmark", "_key", x, y)))
    ]
    return narrow, flag[keep], np.asarray(also)[positions], note


def capped(
    cells: pd.DataFrame | pd.Index, flagged: np.ndarray, limit: int = MAX_POINTS
) -> tuple[np.ndarray, str]:
    """Positions to plot and a caption suffix saying when only part of the cells (a frame, or
    its index) is drawn.

    Every sign disagreement is kept (up to `limit`), the rest is an even sample in board
    order, so the points do not depend on the table's sort.
    """
    labels = cells if isinstance(cells, pd.Index) else cells.index
    order = np.argsort(labels.to_numpy(), kind="stable")
    if len(cells) <= limit:
        return order, ""
    flagged = np.asarray(flagged, dtype=bool)[order]
    keep = np.flatnonzero(flagged)[:limit]
    rest = np.flatnonzero(~flagged)
    room = limit - len(keep)
    if room > 0:
        keep = np.concatenate([keep, rest[np.linspace(0, len(rest) - 1, room).astype(int)]])
    note = f" ({limit:,} of {len(cells):,} cells: every sign disagreement, the rest sampled)"
    return order[np.sort(keep)], note


def _figure(
    title: str,
    series: list[Series],
    *,
    x: str,
    y: str,
    xtitle: str,
    ytitle: str,
    error_bars: bool = False,
    shade: bool = False,
    diagonal: bool = False,
    symmetric: bool = False,
    xrange: tuple[float, float] | None = None,
    titled: set[str] | None = None,
) -> str:
    """One plot. `titled`: keys of the cells whose hover text an earlier plot of the page
    already carries (this plot adds its own)."""
    titled = set() if titled is None else titled
    everything = pd.concat([s.rows for s in series]) if series else pd.DataFrame()
    n = len(everything)
    xs = _floats(everything[x]) if n else np.array([])
    ys = _floats(everything[y]) if n else np.array([])
    if error_bars and n:
        ys = np.concatenate(
            [ys, _floats(everything["rae_ci_low"]), _floats(everything["rae_ci_high"])]
        )
    xr = xrange or _extent(xs, symmetric)
    yr = _extent(ys, symmetric)
    if diagonal:
        xr = yr = (min(xr[0], yr[0]), max(xr[1], yr[1]))
    sx = _scale(xr, _L, _W - _R)
    sy = _scale(yr, _H - _B, _T)
    parts = [_axes(xr, yr, sx, sy, xtitle, ytitle)]
    if shade:
        x0, y0 = sx(0.0), sy(0.0)
        parts.append(
            f'<rect class="sf-shade" x="{x0:.1f}" y="{y0:.1f}" width="{_W - _R - x0:.1f}" height="{_H - _B - y0:.1f}"/>'
            f'<rect class="sf-shade" x="{_L}" y="{_T}" width="{x0 - _L:.1f}" height="{y0 - _T:.1f}"/>'
            f'<text class="sf-qnote" x="{_W - _R - 4}" y="{_H - _B - 6}" text-anchor="end">lift says helps, RAE says hurts</text>'
            f'<text class="sf-qnote" x="{_L + 4}" y="{_T + 12}">lift says hurts, RAE says helps</text>'
        )
    if diagonal:
        parts.append(
            f'<line class="sf-diag" x1="{sx(xr[0]):.1f}" y1="{sy(xr[0]):.1f}" x2="{sx(xr[1]):.1f}" y2="{sy(xr[1]):.1f}">'
            "<title>aggregate lift = Δselect</title></line>"
        )
    for s in series:
        parts.append(_points(s, x, y, sx, sy, error_bars, titled))
    legend = "".join(
        f'<span class="sf-key"><i class="sf-c{s.color}{" sf-ring" if s.hollow else ""}"></i>'
        f"{escape(_capped(s.name, LEGEND_CHARS))} ({len(s.rows)})</span>"
        for s in series
    )
    if diagonal:
        legend += '<span class="sf-key"><i class="sf-dash"></i>lift = Δselect</span>'
    empty = (
        ""
        if n
        else '<text class="sf-nodata" x="50%" y="45%" text-anchor="middle">no cells with both values</text>'
    )
    return (
        f'<figure class="sf-plot"><figcaption>{escape(title)}</figcaption>'
        f'<svg viewBox="0 0 {_W} {_H}" role="img" aria-label="{escape(title)}">{"".join(parts)}{empty}</svg>'
        f'<div class="sf-legend">{legend}</div></figure>'
    )


def _points(s: Series, x: str, y: str, sx, sy, error_bars: bool, titled: set[str]) -> str:
    """The series' error bars as one path, then one circle per point. A point's hover text
    (`<title>`) is in the page once: the first plot drawing the cell carries it, and the page
    script copies it into another plot's point when that point is hovered or focused. Every
    element of these three plots is walked by Gradio's HTML diff on each filter (bench/space.py:
    a group, a line and a title per point and three copies of each text were ~40% of a
    filter's time in the browser)."""
    if s.rows.empty:
        return ""
    xs, ys = _floats(s.rows[x]), _floats(s.rows[y])
    keys = s.rows["_key"].astype(str).to_numpy()
    new = [i for i, k in enumerate(keys) if k not in titled]
    records = fast_records(s.rows.take(new), list(_HOVER_COLUMNS)) if new else []
    hovers = {i: hover_text(row) for i, row in zip(new, records, strict=True)}
    titled.update(keys)
    out = [
        f'<g class="sf-c{s.color}{" sf-hollow" if s.hollow else ""}" data-sf-series="{escape(_capped(s.name, LEGEND_CHARS))}">'
    ]
    if error_bars:
        lows, highs = _floats(s.rows["rae_ci_low"]), _floats(s.rows["rae_ci_high"])
        bars = "".join(
            f"M{sx(xs[i]):.1f} {sy(lows[i]):.1f}V{sy(highs[i]):.1f}"
            for i in range(len(xs))
            if not (math.isnan(lows[i]) or math.isnan(highs[i]))
        )
        if bars:
            out.append(f'<path class="sf-bars" d="{bars}"/>')
    for i in range(len(xs)):
        attrs = (
            f'class="sf-pt" data-sf-cell="{escape(keys[i])}" data-x="{xs[i]:.6g}" '
            f'data-y="{ys[i]:.6g}" cx="{sx(xs[i]):.1f}" cy="{sy(ys[i]):.1f}"'
        )
        hover = hovers.get(i)
        out.append(
            f"<circle {attrs}><title>{escape(hover)}</title></circle>"
            if hover is not None
            else f"<circle {attrs}/>"
        )
    out.append("</g>")
    return "".join(out)


_HOVER_COLUMNS = (
    "label", "rae", "rae_ci_low", "rae_ci_high", "oae", "agg_lift", "delta_select", "coverage",
    "n_pairs", "n_cond", "b_cond", "c_cond",
)  # fmt: skip


def hover_text(row: dict) -> str:
    """A point's tooltip (plain text, one fact per line): identity, effects and counts."""
    return (
        f"{_capped(row['label'], 300)}\n"
        f"RAE {pp(row['rae'])} {interval(row['rae_ci_low'], row['rae_ci_high'])} · OAE {pp(row['oae'])} · "
        f"lift {pp(row['agg_lift'])} · Δselect {pp(row['delta_select'])} pp\n"
        f"coverage {pp(row['coverage'], signed=False)}% · n {row['n_pairs']} · n_cond {row['n_cond']} · "
        f"b/c invoked {row['b_cond']}/{row['c_cond']}"
    )


def _axes(xr, yr, sx, sy, xtitle: str, ytitle: str) -> str:
    out = ['<g class="sf-axes">']
    for t in _ticks(*xr):
        px = sx(t)
        out.append(
            f'<line class="sf-grid" x1="{px:.1f}" x2="{px:.1f}" y1="{_T}" y2="{_H - _B}"/>'
            f'<text x="{px:.1f}" y="{_H - _B + 14}" text-anchor="middle">{_tick(t)}</text>'
        )
    for t in _ticks(*yr):
        py = sy(t)
        out.append(
            f'<line class="sf-grid" x1="{_L}" x2="{_W - _R}" y1="{py:.1f}" y2="{py:.1f}"/>'
            f'<text x="{_L - 5}" y="{py + 3.5:.1f}" text-anchor="end">{_tick(t)}</text>'
        )
    if xr[0] < 0 < xr[1]:
        out.append(
            f'<line class="sf-zero" x1="{sx(0):.1f}" x2="{sx(0):.1f}" y1="{_T}" y2="{_H - _B}"/>'
        )
    if yr[0] < 0 < yr[1]:
        out.append(
            f'<line class="sf-zero" x1="{_L}" x2="{_W - _R}" y1="{sy(0):.1f}" y2="{sy(0):.1f}"/>'
        )
    out.append(
        f'<rect class="sf-frame" x="{_L}" y="{_T}" width="{_W - _L - _R}" height="{_H - _T - _B}"/>'
        f'<text class="sf-title" x="{(_L + _W - _R) / 2:.0f}" y="{_H - 8}" text-anchor="middle">{escape(xtitle)}</text>'
        f'<text class="sf-title" transform="translate(13 {(_T + _H - _B) / 2:.0f}) rotate(-90)" text-anchor="middle">{escape(ytitle)}</text>'
        "</g>"
    )
    return "".join(out)


def _extent(values: np.ndarray, symmetric: bool) -> tuple[float, float]:
    v = values[~np.isnan(values)] if len(values) else values
    if not len(v):
        return (-10.0, 10.0)
    lo, hi = float(v.min()), float(v.max())
    if symmetric:
        bound = max(10.0, max(abs(lo), abs(hi)) * 1.1)
        return (-bound, bound)
    pad = max(1.0, (hi - lo) * 0.08)
    return (lo - pad, hi + pad)


def _scale(domain: tuple[float, float], a: float, b: float):
    lo, hi = domain
    span = (hi - lo) or 1.0

    def f(v: float) -> float:
        return a + (float(v) - lo) / span * (b - a)

    return f


def _ticks(lo: float, hi: float, target: int = 5) -> list[float]:
    raw = (hi - lo) / target
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step) + 1)]


def _tick(v: float) -> str:
    return f"{v:.0f}".replace("-", "−") if abs(v - round(v)) < 1e-9 else f"{v:g}".replace("-", "−")


def _floats(column: pd.Series) -> np.ndarray:
    return pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)

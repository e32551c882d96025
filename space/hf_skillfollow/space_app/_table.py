"""Filtering, sorting and rendering the precomputed cells as the leaderboard's HTML table.

The table is plain HTML rather than a `gr.Dataframe`: headers carry tooltips and units, the
sort is one state (a header click sets it, the header shows it), undefined values say why,
narrow screens hide the secondary columns, and a 200-row table costs the browser one
`innerHTML` instead of a virtual grid's layout (bench/space.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

import numpy as np
import pandas as pd

from hf_skillfollow import formatting as fmt
from hf_skillfollow._escape import for_html as escape
from hf_skillfollow.metrics import MAX_ERROR_RATE
from hf_skillfollow.space_app import _verification
from hf_skillfollow.space_app._board import (
    AA_SD,
    AA_SE,
    DECIDED,
    DEFAULT_MIN_COND,
    DETECTORS,
    THRESHOLDS,
    VIOLATIONS,
    error_heavy,
)
from hf_skillfollow.space_app._cost import INDISTINGUISHABLE, indistinguishable
from hf_skillfollow.space_app._labels import card_url
from hf_skillfollow.space_app._shown import SHOWN_CHARS
from hf_skillfollow.space_app._shown import capped as _capped

#: Rows of one table page, all the browser is sent and lays out per reply (the pager under
#: the table turns pages; the summary gives the match count and the CSV holds every row). A
#: table's layout costs Chromium about 0.45 ms per row here: at 200 rows a reply spent ~90 ms
#: on it, more than the bare Gradio app's whole filter round trip left over (bench/space.py).
PAGE_ROWS = 50
DISAGREE_MARK = "⚠"
#: McNemar p below this is marked significant (two-sided, on the retrieval-invoked pairs).
ALPHA = 0.05
SIG_MARK = '<sup class="sf-sig" aria-label="significant">✱</sup>'
SELF_JUDGED = "self-judged: the model grades its own answers"
#: Up to this many rows the table is as tall as it needs (the page scrolls, not a box in it);
#: longer tables scroll in their box, under a header that stays in view.
FITS_ROWS = 25
ERRORS_TIP = (
    "pairs with an arm that ended in a provider error (its empty answer scored wrong), % of all "
    f"pairs (count); over {MAX_ERROR_RATE:g}% the cell is error-heavy: not a measurement, its "
    "effects not reported"
)
ERROR_HEAVY = "error-heavy"


@dataclass(frozen=True)
class Column:
    """One table column: `source` is the cells column it shows and sorts by."""

    key: str  # short id used in the sort state and the URL
    header: str
    tip: str  # header tooltip: definition and unit
    source: str
    numeric: bool = True
    narrow: bool = False  # still shown on a phone-width screen


COLUMNS: tuple[Column, ...] = (
    Column("model", "Model", "Model id, the source that published the cell (a Hub repo or a local path), and the run id when runs are shown separately", "model", False, True),
    Column("benchmark", "Task set", "Benchmark and its version, or a maintainer's own task set (custom task file, skill evals) by name and the first 8 hex digits of its content hash", "task_set", False),
    Column("pool", "Pool / protocol", "Skill pool and its condition (normal, filler, ...); under it, how the skills reached the model (the access protocol, with only the settings that had an effect)", "pool_condition", False),
    Column("partition", "Partition", "Task partition: seed · number of tasks", "partition", False),
    Column("runs", "Runs", "Config-identical runs pooled into this cell", "n_runs"),
    Column("n_cond", "n_cond / n", "Retrieval-invoked tasks (the SE run received a skill) / all paired tasks, and coverage = n_cond/n in %. Under them, the errored pairs: " + ERRORS_TIP, "n_cond", True, True),
    Column("rae", "RAE pp [95% CI]", "Retrieval-invoked actual-use effect, percentage points: 100·(b−c)/n_cond over the tasks where a skill came back, with its 95% paired-bootstrap interval. * = not reportable at the chosen n_cond threshold", "rae", True, True),
    Column("lift", "Agg lift pp", "Aggregate lift, percentage points: SE accuracy on retrieved − on non-retrieved tasks (selection-biased). ⚠ = its sign disagrees with RAE", "agg_lift", True, True),
    Column("select", "Δselect pp", "Selection gap, percentage points: the same split in the SD run, where no skill exists — how much easier the retrieved tasks were anyway", "delta_select"),
    Column("p", "McNemar p", "Exact two-sided McNemar p on the discordant pairs b, c of the retrieval-invoked tasks", "mcnemar_p"),
    Column("oae", "OAE pp [95% CI]", "Overall skill-access effect, percentage points: 100·(b−c)/n over all tasks, with its 95% interval", "oae"),
    Column("skip", "Δskip pp", "Paired effect on the tasks without a retrieved skill, percentage points", "delta_skip"),
    Column("bc", "b / c", "Helpful (b) / harmful (c) flips among the retrieval-invoked tasks", "b_cond"),
    Column("reportable", "Reportable", "n_cond at least the chosen threshold, and not error-heavy", "n_cond", False),
    Column("rescored", "Re-scored", _verification.TIP, _verification.RESCORED, False),
)  # fmt: skip
COLUMN_BY_KEY = {c.key: c for c in COLUMNS}
DEFAULT_SORT = "rae:desc"


@dataclass(frozen=True)
class Filters:
    benchmarks: tuple[str, ...] = ()
    partitions: tuple[str, ...] = ()
    pools: tuple[str, ...] = ()
    model_query: str = ""
    min_cond: int = DEFAULT_MIN_COND
    show_nonreportable: bool = False
    sort: str = DEFAULT_SORT  # "<column key>:asc|desc"
    rescored_only: bool = False

    @property
    def sort_key(self) -> str:
        return parse_sort(self.sort)[0]

    @property
    def descending(self) -> bool:
        return parse_sort(self.sort)[1]


def parse_sort(value: str | None) -> tuple[str, bool]:
    """("rae", True) from "rae:desc"; an unknown column or direction is a clear error."""
    key, _, direction = (value or DEFAULT_SORT).partition(":")
    if key not in COLUMN_BY_KEY:
        raise ValueError(f"sort: unknown column {key!r}; choose one of {sorted(COLUMN_BY_KEY)}")
    if direction not in {"", "asc", "desc"}:
        raise ValueError(f"sort: direction must be 'asc' or 'desc', got {direction!r}")
    return key, direction != "asc"


def apply_filters(cells: pd.DataFrame, f: Filters) -> pd.DataFrame:
    """The filtered cells, reportable ones first, then by the chosen column (missing last)."""
    mask = _base_mask(cells, f)
    reportable = cells[f"_rep_{f.min_cond}"].to_numpy(dtype=bool)
    if not f.show_nonreportable:
        mask &= reportable
    positions = np.flatnonzero(mask)
    key, descending = parse_sort(f.sort)
    values = cells[COLUMN_BY_KEY[key].source].to_numpy()[positions]
    order = _order(values, descending, first=~reportable[positions])
    return cells.take(positions[order])


def _order(key: np.ndarray, descending: bool, first: np.ndarray) -> np.ndarray:
    """Stable order: `first` False before True, then missing values last in either direction."""
    if key.dtype.kind in "biuf":
        values = key.astype(float)
        missing = np.isnan(values)
        primary = np.where(missing, 0.0, -values if descending else values)
        return np.lexsort((primary, missing, first))
    text = np.array(["" if v is None else str(v).lower() for v in key], dtype=object)
    ranks = np.unique(text, return_inverse=True)[1]
    return np.lexsort((-ranks if descending else ranks, first))


def _base_mask(cells: pd.DataFrame, f: Filters) -> np.ndarray:
    """Every filter except the reportability cut, which the sensitivity table varies itself."""
    if f.min_cond not in THRESHOLDS:
        raise ValueError(f"min n_cond must be one of {THRESHOLDS}, got {f.min_cond}")
    mask = np.ones(len(cells), dtype=bool)
    for values, columns in (
        (f.benchmarks, ("benchmark", "task_set")),  # a link may name the benchmark alone
        (f.partitions, ("partition",)),
        (f.pools, ("pool_condition",)),
    ):
        if values:
            hit = np.zeros(len(cells), dtype=bool)
            for column in columns:
                if column in cells.columns:
                    hit |= cells[column].isin(values).to_numpy()
            mask &= hit
    if f.rescored_only:
        mask &= cells[_verification.RESCORED_FLAG].to_numpy(dtype=bool)
    query = f.model_query.strip().lower()
    if query:
        mask &= cells["_model_lc"].str.contains(query, regex=False).to_numpy()
    return mask


def sensitivity(cells: pd.DataFrame, f: Filters) -> pd.DataFrame:
    """Reportable cells and sign disagreements at each n_cond threshold, under the other filters."""
    from hf_skillfollow.metrics import disagreement_sensitivity

    # an error-heavy cell is reportable at no threshold (the metrics' count does not know it)
    mask = _base_mask(cells, f) & ~error_heavy(cells)
    table = disagreement_sensitivity(cells[mask], thresholds=THRESHOLDS)
    rate = table["disagreement_rate"].map(lambda v: "—" if pd.isna(v) else f"{v:.1f}%")
    return pd.DataFrame(
        {
            "min n_cond": table["min_cond"],
            "reportable cells": table["reportable"],
            "with defined agg lift": table["with_agg_lift"],
            "sign disagreements": table["disagreements"],
            "share": rate,
        }
    )


# ---------------------------------------------------------------------------------------------
# Text of one value


def pp(value: object, *, signed: bool = True) -> str:
    """Percentage points with one decimal, the same for values and interval ends."""
    return fmt.pp(value, signed=signed)


def interval(low: object, high: object) -> str:
    if fmt.is_undefined(low) or fmt.is_undefined(high):
        return ""
    return f"[{fmt.pp(low)}, {fmt.pp(high)}]"


def undefined_reason(row: pd.Series | dict, column: str) -> str | None:
    """Why a value is undefined, in the words of `hf-skillfollow report`; None if defined."""
    from hf_skillfollow.report import never_triggered

    if column in {"rae", "mcnemar_p"} and int(row["n_cond"]) == 0:
        return never_triggered(row)
    if not fmt.is_undefined(row[column]):
        return None
    if column == "delta_skip" and int(row["n_skip"]) == 0:
        return fmt.undefined("n_skip = 0")
    reason = row.get(f"{column}_reason")
    if isinstance(reason, str):  # the metrics' S_ret is the set the board calls S_call
        reason = reason.replace("S_ret ", "S_call ")
    return fmt.undefined(reason if isinstance(reason, str) and reason else None)


# ---------------------------------------------------------------------------------------------
# HTML


def table_html(
    filtered: pd.DataFrame,
    f: Filters,
    *,
    runs_separately: bool,
    all_columns: bool,
    page: int = 1,
    limit: int = PAGE_ROWS,
    noise: dict[str, dict] | None = None,
) -> str:
    """Page `page` (of `limit` rows; a page past the end is the last) of the filtered cells,
    with the pager; rows carry their drill-down key."""
    if filtered.empty:
        return EMPTY_HTML
    pages = -(-len(filtered) // limit)
    page = clamp_page(page, len(filtered), limit)
    start = (page - 1) * limit
    key, descending = parse_sort(f.sort)
    columns = [c for c in COLUMNS if not (runs_separately and c.key == "runs")]
    extra = _extra_columns(filtered) if all_columns else []
    threshold = f.min_cond
    head = "".join(_th(c, key, descending) for c in columns) + "".join(
        f'<th title="{escape(c)}">{escape(c)}</th>' for c in extra
    )
    rows = []
    needed = [
        c
        for c in dict.fromkeys((*_ROW_COLUMNS, *(c.source for c in columns)))
        if c in filtered.columns
    ]
    needed += [f"_rep_{threshold}", f"_dis_{threshold}", *extra]
    for row in fast_records(filtered.iloc[start : start + limit], needed):
        row["_noise"] = (noise or {}).get(row["_key"])
        reportable = bool(row[f"_rep_{threshold}"])
        disagree = bool(row[f"_dis_{threshold}"])
        flags = (("sf-nonrep", not reportable), ("sf-disagree", disagree),
                 ("sf-error-heavy", is_error_heavy(row)))  # fmt: skip
        cls = " ".join(name for name, on in flags if on)
        cells = "".join(
            _td(c, row, reportable, disagree, threshold, runs_separately) for c in columns
        )
        cells += "".join(f"<td>{escape(_capped(_raw(row[c])))}</td>" for c in extra)
        attrs = f' class="{cls}"' if cls else ""
        key_attr = escape(str(row["_key"]))
        rae = "" if fmt.is_undefined(row["rae"]) else f' data-sf-rae="{float(row["rae"]):.6g}"'
        rows.append(f'<tr{attrs} data-sf-cell="{key_attr}"{rae} tabindex="0">{cells}</tr>')
    return (
        f"<style>{_column_css(columns, all_columns)}</style>"
        f'<div class="sf-table-wrap{" sf-fits" if len(rows) <= FITS_ROWS else ""}">'
        '<table class="sf-table sf-board">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
        + pager_html(page, pages, start, len(rows), len(filtered))
    )


def clamp_page(page: int, n_rows: int, limit: int = PAGE_ROWS) -> int:
    """`page` within 1 .. the last page of `n_rows` rows (a shared link may outlive its rows)."""
    return min(max(page, 1), max(1, -(-n_rows // limit)))


def pager_html(page: int, pages: int, start: int, shown: int, total: int) -> str:
    """Which rows the page shows and buttons to the others (none when one page holds all);
    the page script sends a button's `data-sf-page` to the server."""
    if pages <= 1:
        return ""

    def button(label: str, target: int, name: str) -> str:
        if target == page or not 1 <= target <= pages:
            return f'<button type="button" disabled aria-label="{name}">{label}</button>'
        return (
            f'<button type="button" data-sf-page="{target}" aria-label="{name} (page '
            f'{target})">{label}</button>'
        )

    return (
        f'<nav class="sf-pager" aria-label="table pages" data-sf-at="{page}">'
        f"{button('«', 1, 'first page')}{button('‹ Previous', page - 1, 'previous page')}"
        f"<span>rows <b>{start + 1:,}–{start + shown:,}</b> of {total:,} · page {page:,} of "
        f"{pages:,}</span>"
        f"{button('Next ›', page + 1, 'next page')}{button('»', pages, 'last page')}</nav>"
    )


def _column_css(columns: list[Column], all_columns: bool) -> str:
    """Alignment and the phone-width column cut by position, instead of a class on every cell
    (a third of the table's bytes)."""

    def cells(indices: list[int]) -> str:
        return ",".join(f".sf-board td:nth-child({i + 1})" for i in indices)

    numeric = [i for i, c in enumerate(columns) if c.numeric]
    css = f"{cells(numeric)}{{text-align:right;white-space:nowrap}}" if numeric else ""
    wide = [i for i, c in enumerate(columns) if not c.narrow]
    if wide and not all_columns:
        hide = cells(wide) + "," + ",".join(f".sf-board th:nth-child({i + 1})" for i in wide)
        css += f"@media (max-width: 760px){{{hide}{{display:none}}.sf-board td{{white-space:normal!important}}}}"
    return css


#: Cell columns a table row reads (the rest of the wide frame is never copied per row).
_ROW_COLUMNS = (
    "_key", "model", "source", "conflicts", "run_id", "benchmark", "task_set", "pool_condition",
    "protocol", "judge_model", "_self_judged", "partition", "n_runs", "n_pairs", DETECTORS,
    DECIDED, VIOLATIONS, AA_SE, AA_SD,
    "n_cond", "n_skip", "coverage", "rae", "rae_ci_low", "rae_ci_high", "rae_reason", "oae",
    "oae_ci_low", "oae_ci_high", "agg_lift", "agg_lift_reason", "delta_select",
    "delta_select_reason", "delta_skip", "delta_skip_reason", "mcnemar_p", "b_cond", "c_cond",
    "n_errored", "error_rate", "error_heavy",
)  # fmt: skip


#: What the filtered view reads (`Board.view`): the rows, every column's source, the plots.
VIEW_COLUMNS = frozenset(
    {*_ROW_COLUMNS, *(c.source for c in COLUMNS), "label", "cell_id", "oae", "coverage"}
)


def fast_records(frame: pd.DataFrame, columns: list[str]) -> list[dict]:
    """Rows as dicts of the given columns: one `tolist` per column, unlike `to_dict`, which
    goes through pandas indexing per row (100x slower on the board's wide frame)."""
    values = [frame[c].tolist() for c in columns]
    return [dict(zip(columns, row, strict=True)) for row in zip(*values, strict=True)]


def _th(c: Column, sort_key: str, descending: bool) -> str:
    active = c.key == sort_key
    # A click on the active column flips it; a new column starts high-to-low for numbers.
    nxt = "asc" if (active and descending) or (not active and not c.numeric) else "desc"
    arrow = (" ▼" if descending else " ▲") if active else ""
    aria = ("descending" if descending else "ascending") if active else "none"
    return (
        f'<th title="{escape(c.tip)} — click to sort" '
        f'data-sf-sort="{c.key}:{nxt}" aria-sort="{aria}" tabindex="0">{escape(c.header)}{arrow}</th>'
    )


def _td(c: Column, row: dict, reportable: bool, disagree: bool, threshold: int, runs: bool) -> str:
    text, title = _cell_text(c.key, row, reportable, disagree, threshold, runs)
    return f'<td title="{escape(title)}">{text}</td>' if title else f"<td>{text}</td>"


def _why(reason: str) -> str:
    return f'<span class="sf-why">{escape(reason)}</span>'


def _cell_text(
    key: str, row: dict, reportable: bool, disagree: bool, threshold: int, runs: bool
) -> tuple[str, str]:
    """(inner HTML, tooltip) of one table cell."""
    if key == "model":
        run = f'<div class="sf-sub">run {escape(_capped(row["run_id"]))}</div>' if runs else ""
        conflict = row.get("conflicts")
        note = (
            f'<div class="sf-flag sf-sub">{DISAGREE_MARK} {escape(_capped(conflict))}</div>'
            if isinstance(conflict, str) and conflict
            else ""
        )
        source = f'<div class="sf-sub sf-src">{escape(_capped(row["source"]))}</div>'
        name = f'<span class="sf-model">{escape(_capped(row["model"]))}</span>'
        url = card_url(row["model"])
        if url:  # the page script leaves a link's click to the link, not to the row
            name += (
                f' <a class="sf-card" href="{escape(url)}" target="_blank" '
                'rel="noopener noreferrer nofollow" title="Model card on the Hub">↗</a>'
            )
        return f"{name}{_judge_line(row)}{_phone_line(row)}{run}{source}{note}", ""
    if key == "pool":
        protocol = f'<div class="sf-sub">{escape(_capped(row["protocol"]))}</div>'
        return escape(_capped(row["pool_condition"])) + protocol + _measured_line(row), ""
    if key in {"benchmark", "partition"}:
        return escape(_capped(row[COLUMN_BY_KEY[key].source])), ""
    if key == "runs":
        return str(int(row["n_runs"])), ""
    if key in _EFFECTS and is_error_heavy(row):
        text = not_reported(row)
        return _why(text if key in {"rae", "oae"} else "not reported"), text
    if key == "n_cond":
        cov = pp(row["coverage"], signed=False)
        return (
            f'{int(row["n_cond"])} / {int(row["n_pairs"])} <span class="sf-sub">({cov}%)</span>'
            + errors_html(row),
            "",
        )
    if key in {"rae", "oae"}:
        reason = undefined_reason(row, key)
        if reason:
            return _why(reason), reason
        star = "" if reportable or key != "rae" else "*"
        note = f"not reportable: n_cond {int(row['n_cond'])} < {threshold}" if star else ""
        ci = interval(row[f"{key}_ci_low"], row[f"{key}_ci_high"])
        sign = _sign_class(row[key])
        text = f'<b class="{sign}">{pp(row[key])}</b>{star} <span class="sf-ci">{ci}</span>'
        if key == "rae":
            text += _aa_line(row)
        if key == "rae" and indistinguishable(row.get("_noise")):
            text += '<div class="sf-badge sf-badge-bad">≈ judge noise</div>'
            note = (note + "; " if note else "") + INDISTINGUISHABLE
        return text, note
    if key == "lift":
        reason = undefined_reason(row, "agg_lift")
        if reason:
            return _why(reason), reason
        if disagree:
            tip = (
                f"Sign disagreement: aggregate lift {pp(row['agg_lift'])} pp vs RAE "
                f"{pp(row['rae'])} pp"
            )
            return f'<span class="sf-flag">{DISAGREE_MARK} {pp(row["agg_lift"])}</span>', tip
        return pp(row["agg_lift"]), ""
    if key in {"select", "skip"}:
        source = COLUMN_BY_KEY[key].source
        reason = undefined_reason(row, source)
        return (_why(reason), reason) if reason else (pp(row[source]), "")
    if key == "p":
        reason = undefined_reason(row, "mcnemar_p")
        if reason:
            return _why(reason), reason
        if float(row["mcnemar_p"]) < ALPHA:
            return (
                f'<b class="sf-sig">{fmt.p_value(row["mcnemar_p"])}</b>{SIG_MARK}',
                f"significant: p < {ALPHA} (exact McNemar, b vs c)",
            )
        return fmt.p_value(row["mcnemar_p"]), ""
    if key == "bc":
        return f"{int(row['b_cond'])} / {int(row['c_cond'])}", ""
    if key == "reportable":
        if reportable:
            return "yes", ""
        if is_error_heavy(row):
            return f'<span class="sf-no">no</span> <span class="sf-sub">{ERROR_HEAVY}</span>', ""
        return (
            f'<span class="sf-no">no</span> <span class="sf-sub">n_cond&nbsp;&lt;&nbsp;{threshold}</span>',
            "",
        )
    if key == "rescored":
        return _verification.mark_html(row), ""
    raise KeyError(key)


#: Columns that show an effect (or its test): an error-heavy cell shows none of them.
_EFFECTS = frozenset({"rae", "oae", "lift", "select", "skip", "p"})


def is_error_heavy(row: pd.Series | dict) -> bool:
    value = row.get("error_heavy")
    return bool(value) and not fmt.is_undefined(value)


def not_reported(row: pd.Series | dict) -> str:
    """What an error-heavy cell shows instead of an effect, in the words of `report` and the
    card: a model failing every request would otherwise read as a measured `OAE +0.0`."""
    return fmt.not_reported(row.get("error_rate"))


def errors_text(row: pd.Series | dict) -> str:
    """The cell's errored pairs as `report` writes them: "2.5% (1)"; — when not counted."""
    rate = row.get("error_rate")
    if fmt.is_undefined(rate):
        return "—"
    return f"{pp(rate, signed=False)}% ({int(row.get('n_errored') or 0)})"


def errors_html(row: pd.Series | dict) -> str:
    """ "errored `errors_text`", after the error-heavy flag in red when the cell is one, each
    on a line of its own that may wrap, so the n_cond column stays narrow."""
    text = f'<div class="sf-sub sf-errors">errored {escape(errors_text(row))}</div>'
    if not is_error_heavy(row):
        return text
    flag = f"{DISAGREE_MARK} {ERROR_HEAVY}"
    return f'<div class="sf-flag sf-heavy sf-sub sf-errors">{flag}</div> {text}'


def _sign_class(value: object) -> str:
    """`sf-neg` (harm, red) or `sf-pos` for an effect's point estimate."""
    if fmt.is_undefined(value):
        return ""
    v = float(value)  # type: ignore[arg-type]
    return "sf-neg" if v < 0 else "sf-pos" if v > 0 else ""


def _judge_line(row: dict) -> str:
    """Judged cells: the judge model under the model name, flagged when it is the model."""
    judge = row.get("judge_model")
    if not judge:
        return ""
    flag = (
        f' <span class="sf-flag" title="{escape(SELF_JUDGED)}">{DISAGREE_MARK} self-judged</span>'
        if row.get("_self_judged")
        else ""
    )
    found = row.get("_noise")
    measured = (
        f' <span class="sf-badge{" sf-badge-bad" if indistinguishable(found) else ""}" '
        f'title="flips one judge disagreement could explain">noise b {found["b_explainable"]}/'
        f"{found['b']} · c {found['c_explainable']}/{found['c']}</span>"
        if found
        else ""
    )
    return f'<div class="sf-judge">judge <b>{escape(_capped(judge))}</b>{flag}{measured}</div>'


def _phone_line(row: dict) -> str:
    """What a phone hides with the wide columns, in one line: task set · pool · protocol.
    (The errored pairs are under n_cond, which a phone shows.)"""
    text = f"{row['task_set']} · {row['pool_condition']} · {row['protocol']}"
    line = f'<div class="sf-sub sf-phone">{escape(_capped(text, 2 * SHOWN_CHARS))}</div>'
    return line + f'<div class="sf-phone">{_measured_line(row)}</div>' if _violations(row) else line


def _aa_line(row: dict) -> str:
    """An imported cell's A/A noise floor beside RAE: how often each arm disagreed with itself
    between trials of one task (nothing when no task had two trials)."""
    se, sd = row.get(AA_SE), row.get(AA_SD)
    if fmt.is_undefined(se) and fmt.is_undefined(sd):
        return ""
    shown = " · ".join(
        f"{arm} {'—' if fmt.is_undefined(v) else f'{float(v):.0f}%'}"
        for arm, v in (("SE", se), ("SD", sd))
    )
    return (
        f'<div class="sf-sub" title="A/A flip rate: each arm against its own repeated trials">'
        f"A/A flips {shown}</div>"
    )


def _violations(row: dict) -> int:
    value = row.get(VIOLATIONS)
    return 0 if fmt.is_undefined(value) else int(value)


def _measured_line(row: dict) -> str:
    """How activation was decided (imported and harness rows) and any arm-integrity
    violation: a cell whose SD arm saw the skills did not measure what its numbers say."""
    out = ""
    names = row.get(DETECTORS)
    if names:
        share = row.get(DECIDED)
        decided = "" if fmt.is_undefined(share) else f", decided {float(share):.0f}% of rows"
        out += f'<div class="sf-sub">detector {escape(_capped(names))}{decided}</div>'
    bad = _violations(row)
    if bad:
        out += (
            f'<div class="sf-flag sf-sub">{DISAGREE_MARK} {bad} arm-integrity '
            f"violation{'s' if bad > 1 else ''}</div>"
        )
    return out


def _extra_columns(filtered: pd.DataFrame) -> list[str]:
    """Every raw metric and identity column the compact view does not show ("All columns")."""
    return [c for c in filtered.columns if not c.startswith("_") and c not in _NOT_IN_ALL]


def _raw(value: object) -> str:
    if fmt.is_undefined(value):
        return fmt.UNDEFINED
    return f"{value:.4g}" if isinstance(value, float) else str(value)


# Labels are derived; `reportable`/`sign_disagree` from compute_cells hold the default
# threshold only, so the table and CSV show the flags at the chosen threshold instead.
_NOT_IN_ALL = {"label", "partition", "pool_condition", "reportable", "sign_disagree"}


#: The judge-noise columns of the CSV and the API (empty until the noise is measured, and for
#: cells without a judge): `metrics._own.judge_noise` of the cell's traces.
NOISE_COLUMNS = {"judge_b": "b", "judge_b_explainable": "b_explainable", "judge_c": "c",
                 "judge_c_explainable": "c_explainable",
                 "judge_self_disagreement_pct": "self_disagreement"}  # fmt: skip


def csv_frame(
    filtered: pd.DataFrame, min_cond: int, noise: dict[str, dict] | None = None
) -> pd.DataFrame:
    """Every filtered row with raw (unrounded) values, flags at the chosen threshold, and the
    judge noise of the judged cells once measured (`noise`: drill-down key -> figures)."""
    keep = [
        c for c in filtered.columns if not c.startswith("_") and c not in _NOT_IN_ALL - {"label"}
    ]
    out = filtered[keep].copy()
    out["min_cond"] = min_cond
    out["reportable"] = filtered[f"_rep_{min_cond}"].to_numpy(dtype=bool)
    out["sign_disagree"] = filtered[f"_dis_{min_cond}"].to_numpy(dtype=bool)
    if "mcnemar_p" in out and "n_cond" in out:  # no retrieval: undefined, as the page says
        never = pd.to_numeric(out["n_cond"], errors="coerce").to_numpy() == 0
        out["mcnemar_p"] = np.where(never, np.nan, pd.to_numeric(out["mcnemar_p"], errors="coerce"))
    found = [(noise or {}).get(k) for k in filtered["_key"]] if "_key" in filtered else []
    for column, name in NOISE_COLUMNS.items():
        values = [None if f is None else f[name] for f in found]
        kind = "Float64" if name == "self_disagreement" else "Int64"  # counts stay whole
        out[column] = pd.array(values, dtype=kind) if values else np.nan
    out["judge_noise_indistinguishable"] = [indistinguishable(f) for f in found] or False
    return out


def records(
    filtered: pd.DataFrame,
    min_cond: int,
    limit: int | None = None,
    noise: dict[str, dict] | None = None,
) -> list[dict]:
    """JSON-ready rows of the filtered view (raw values, NaN as None) for the API."""
    frame = csv_frame(filtered if limit is None else filtered.head(limit), min_cond, noise)
    frame = frame.astype(object).where(frame.notna(), None)
    return frame.to_dict("records")


def summary_html(
    cells: pd.DataFrame, filtered: pd.DataFrame, f: Filters, *, shown: int, runs: bool, query: str
) -> str:
    """Counts line, CSV link and the (collapsed) sensitivity table; carries the URL state."""
    t = f.min_cond
    disagree = int(filtered[f"_dis_{t}"].sum()) if len(filtered) else 0
    reportable = int(filtered[f"_rep_{t}"].sum()) if len(filtered) else 0
    unit = "runs" if runs else "cells"
    total = f"{len(cells):,} {unit}"
    if runs:
        total += f" ({cells['cell_id'].nunique():,} cells)"
    more = f" · {shown:,} per page, the CSV holds all" if shown < len(filtered) else ""
    link = f"export.csv?{query}" if query else "export.csv"
    sens = sensitivity(cells, f)
    head = "".join(f"<th>{escape(str(c))}</th>" for c in sens.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(v))}</td>" for v in r) + "</tr>"
        for r in sens.itertuples(index=False)
    )
    return (
        f'<div class="sf-summary" data-sf-query="{escape(query)}">'
        f"<span><b>{len(filtered):,}</b> of {total} match{more}</span> · "
        f"<span><b>{reportable:,}</b> reportable at n_cond ≥ {t}</span> · "
        f"{_disagreements(disagree)} · "
        f'<a class="sf-csv" href="{escape(link)}" download="skillfollow_leaderboard.csv">'
        f"Download CSV (all {len(filtered):,} rows)</a>"
        f'<details class="sf-sens"><summary>Sign disagreements by n_cond threshold</summary>'
        f'<table class="sf-small"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></details>'
        f"{definitions_html()}</div>"
    )


def _disagreements(count: int) -> str:
    """The summary's count: red with ⚠ only when there is something to flag."""
    if not count:
        return "<span><b>0</b> sign disagreements</span>"
    return f'<span class="sf-flag"><b>{count:,}</b> sign disagreement(s) {DISAGREE_MARK}</span>'


def definitions_html() -> str:
    """Every column's definition, readable without hovering (a phone has no hover)."""
    items = "".join(f"<dt>{escape(c.header)}</dt><dd>{escape(c.tip)}</dd>" for c in COLUMNS)
    return (
        '<details class="sf-defs"><summary>Definitions of the columns</summary>'
        f"<dl>{items}<dt>{SIG_MARK} McNemar p</dt><dd>p &lt; {ALPHA}</dd></dl></details>"
    )


#: A filter that matches nothing: say so and offer the way back (the page's own address
#: without a query is the default view).
EMPTY_HTML = (
    '<div class="sf-empty sf-nomatch">No cells match these filters. '
    '<a class="sf-reset" href="?">Reset all filters</a></div>'
)


def query_string(
    f: Filters, *, runs: bool, all_columns: bool, pool: bool = False, page: int = 1
) -> str:
    """The view's state as URL query parameters (defaults left out); `filters_from_query` reads it."""
    params: list[tuple[str, str]] = []
    params += [("benchmark", v) for v in f.benchmarks]
    params += [("partition", v) for v in f.partitions]
    params += [("pool", v) for v in f.pools]
    if f.model_query:
        params.append(("model", f.model_query))
    if f.min_cond != DEFAULT_MIN_COND:
        params.append(("min_cond", str(f.min_cond)))
    flags = (("nonreportable", f.show_nonreportable), ("rescored", f.rescored_only))
    for name, on in (*flags, ("runs", runs), ("all", all_columns), ("pool_sources", pool)):
        if on:
            params.append((name, "1"))
    if f.sort != DEFAULT_SORT:
        params.append(("sort", f.sort))
    if page > 1:
        params.append(("table_page", str(page)))
    return urlencode(params)


@dataclass(frozen=True)
class ViewState:
    """Everything the URL can carry: the filters, two toggles and the open cell."""

    filters: Filters
    runs: bool = False
    all_columns: bool = False
    cell: str | None = None
    pool_sources: bool = False  # runs of different sources in one cell (asked for, never default)
    page: int = 1  # the table page (PAGE_ROWS rows each); any filter or sort change shows page 1


#: Query parameters the board reads and writes; others (Gradio's `__theme`) are left alone.
QUERY_KEYS = frozenset(
    {
        "benchmark",
        "partition",
        "pool",
        "model",
        "min_cond",
        "nonreportable",
        "rescored",
        "runs",
        "all",
        "sort",
        "cell",
        "pool_sources",
        "table_page",  # not "page": Gradio's own page route answers ?page= with an error
    }
)


def state_from_query(params: dict[str, list[str]]) -> ViewState:
    """Parse query parameters (as `urllib.parse.parse_qs` gives them); bad values are errors."""

    def one(name: str, default: str = "") -> str:
        values = params.get(name) or [default]
        return values[-1]

    def flag(name: str) -> bool:
        return one(name, "0").strip().lower() in {"1", "true", "yes", "on"}

    sort = one("sort", DEFAULT_SORT)
    parse_sort(sort)
    filters = Filters(
        benchmarks=tuple(params.get("benchmark", ())),
        partitions=tuple(params.get("partition", ())),
        pools=tuple(params.get("pool", ())),
        model_query=one("model"),
        min_cond=parse_threshold(one("min_cond", str(DEFAULT_MIN_COND))),
        show_nonreportable=flag("nonreportable"),
        sort=sort,
        rescored_only=flag("rescored"),
    )
    return ViewState(
        filters,
        flag("runs"),
        flag("all"),
        one("cell") or None,
        pool_sources=flag("pool_sources"),
        page=parse_page(one("table_page", "1")),
    )


def parse_page(value: object) -> int:
    """A table page number (1 = the first); one beyond the last shows the last."""
    try:
        page = int(str(value).strip())
    except ValueError:
        page = 0
    if page < 1:
        raise ValueError(f"page must be a positive whole number, got {value!r}")
    return page


def choices(cells: pd.DataFrame, column: str) -> list[str]:
    return sorted(str(v) for v in cells[column].dropna().unique())


#: What one filter dropdown lists: every choice is sent whole in the page to every visitor,
#: and a source names its own pools and task files (up to 1,000 characters each): 5,000
#: one-row cells with distinct pools, a 0.6 MB file, made the page 37 MB. Past these, the
#: values carried by the most cells are listed; any other can still be typed or linked.
MAX_CHOICES = 500
MAX_CHOICE_CHARS = 100_000


def listed(values: pd.Series, choices: list[str]) -> tuple[list[str], int]:
    """(the `choices` a dropdown lists, how many are left out): all when they fit
    `MAX_CHOICES` and `MAX_CHOICE_CHARS`, else those carried by the most cells of `values`
    (ties alphabetical) that fit, in alphabetical order."""
    if len(choices) <= MAX_CHOICES and sum(map(len, choices)) <= MAX_CHOICE_CHARS:
        return choices, 0
    counts = values.astype(str).value_counts()
    ranked = sorted(choices, key=lambda c: (-int(counts.get(c, 0)), c))
    kept, size = [], 0
    for choice in ranked:
        if len(kept) == MAX_CHOICES or size + len(choice) > MAX_CHOICE_CHARS:
            break
        kept.append(choice)
        size += len(choice)
    return sorted(kept), len(choices) - len(kept)


def task_set_choices(cells: pd.DataFrame) -> list[str]:
    """Every task set, and the benchmark name where it has several (it selects them all)."""
    sets = cells[["benchmark", "task_set"]].drop_duplicates().astype(str)
    several = sets["benchmark"][sets["benchmark"].duplicated()].unique().tolist()
    return sorted({*sets["task_set"], *several})


def parse_threshold(value: object) -> int:
    try:
        t = int(str(value))
    except ValueError:
        raise ValueError(f"min n_cond must be one of {THRESHOLDS}, got {value!r}") from None
    if t not in THRESHOLDS:
        raise ValueError(f"min n_cond must be one of {THRESHOLDS}, got {value!r}")
    return t


def as_tuple(values: Sequence[str] | str | None) -> tuple[str, ...]:
    if values is None:
        return ()
    return (values,) if isinstance(values, str) else tuple(values)

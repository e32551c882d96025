"""The Gradio 6 Blocks layout and its event wiring.

The table, plots and drill-down are server-rendered HTML (see `_table`, `_plots`, `_drill`);
one page script (`_assets.HEAD`) turns clicks on them into `input` events of three hidden
textboxes and mirrors the view's state into the URL, which `_from_url` reads back on load.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import parse_qs, urlsplit

import gradio as gr
import pandas as pd

from hf_skillfollow.space_app import _cost, _drill, _plots, _verification
from hf_skillfollow.space_app import _table as T
from hf_skillfollow.space_app._about import ABOUT_MD, EMPTY_MD
from hf_skillfollow.space_app._assets import CSS, HEAD
from hf_skillfollow.space_app._board import DEFAULT_MIN_COND, THRESHOLDS, Board, error_heavy
from hf_skillfollow.space_app._markdown import rendered
from hf_skillfollow.space_app._shown import capped

INTRO = (
    "# Do retrieved skills actually help?\n"
    "Every task is run twice: with skills (SE; each row says how they reached the model, by a "
    "`search_skills` tool or a skill catalog in the prompt) and without (SD). **RAE** is the "
    "paired effect where a skill came back (red: the skills hurt); **aggregate lift** is the usual, "
    "selection-biased number; ⚠ marks cells where the two disagree in sign. pp = percentage "
    "points. *Definitions* under the counts explain every column; click a header to sort, a row "
    "or a plot point for the cell's drill-down."
)
NONREP, RUNS, ALL = "non-reportable cells", "runs separately", "all columns"
RESCORED = "re-scored only"
#: Pools config-identical runs of different sources into one cell (never the default).
POOL_SOURCES = "sources pooled"
SHOW_CHOICES = (NONREP, RUNS, ALL, RESCORED, POOL_SOURCES)
ABOUT = ABOUT_MD + _verification.ABOUT_MD


class BoardBlocks(gr.Blocks):
    """Blocks whose `launch()` carries the board's CSS, page script and CSV route by default,
    so `space/app.py` and `hf-skillfollow leaderboard` start the same page."""

    launch_defaults: dict[str, Any]

    def launch(self, *args: Any, **kwargs: Any) -> Any:
        defaults = dict(getattr(self, "launch_defaults", {}))
        app_kwargs = dict(defaults.pop("app_kwargs", {}))
        app_kwargs.update(kwargs.pop("app_kwargs", None) or {})
        for key, value in defaults.items():
            kwargs.setdefault(key, value)
        return super().launch(*args, app_kwargs=app_kwargs, **kwargs)


@dataclass(frozen=True)
class View:
    summary: str
    table: str
    plots: str


def render_view(board: Board, state: T.ViewState, *, plots: bool = True) -> View:
    """Summary (with the CSV link and URL state), table and plots for one view state."""
    return _view_of(board, _cells(board, state), state, plots)


def _cells(board: Board, state: T.ViewState) -> pd.DataFrame:
    if state.all_columns:
        return board.cells(state.runs, state.pool_sources)
    return board.view(state.runs, T.VIEW_COLUMNS, state.pool_sources)


def _view_of(board: Board, cells: pd.DataFrame, state: T.ViewState, plots: bool) -> View:
    filtered = T.apply_filters(cells, state.filters)
    return _render(cells, filtered, state, plots=plots, noise=board.judge_noise)


class ViewCache:
    """`render_view` for the page's events, remembering the last views rendered.

    A view is a function of the view state, the cells frame it filters and the judge noise:
    the board's frames are never changed in place (completing the deferred intervals or
    computing the per-run / cross-source cells makes new ones), so an entry is reused only
    while the frame it was rendered from is the one the board returns, and while the judge
    noise is as it was. Going back to a view already seen (a threshold clicked back, a filter
    undone) then costs no filtering, sorting or drawing: `render_view` takes ~25 ms at
    12,500 cells (bench/space.py), most of it the plots. A view seen for the first time costs
    what it did.
    """

    #: Views remembered (oldest forgotten first); each is at most a few hundred KB of HTML.
    LIMIT = 32

    def __init__(self, board: Board) -> None:
        self.board = board
        self._views: OrderedDict[tuple, tuple[pd.DataFrame, View]] = OrderedDict()
        self._lock = threading.Lock()

    def render(self, state: T.ViewState, *, plots: bool = True) -> View:
        board = self.board
        cells = _cells(board, state)
        key = (state, plots, board.judges_done.is_set(), len(board.judge_noise))
        with self._lock:
            hit = self._views.get(key)
            if hit is not None and hit[0] is cells:
                self._views.move_to_end(key)
                return hit[1]
        view = _view_of(board, cells, state, plots)
        with self._lock:
            self._views[key] = (cells, view)
            self._views.move_to_end(key)
            while len(self._views) > self.LIMIT:
                self._views.popitem(last=False)
        return view


def first_view(board: Board) -> View:
    """The default view, rendered into the page at start-up. After a cold start the cells'
    intervals may still be deferred (`Board.complete`): only the rows this view shows, in the
    table or in a plot, get theirs now; the sort, filters and flags do not read intervals."""
    state = T.ViewState(T.Filters())
    cells = board.first_view(T.VIEW_COLUMNS)
    filtered = T.apply_filters(cells, state.filters)
    disagree = filtered[f"_dis_{state.filters.min_cond}"].to_numpy(dtype=bool)
    shown = filtered.index[: T.PAGE_ROWS].union(_plots.plotted(filtered, disagree))
    return _render(cells, board.with_intervals(filtered, shown), state, plots=True)


def _render(
    cells: pd.DataFrame,
    filtered: pd.DataFrame,
    state: T.ViewState,
    *,
    plots: bool,
    noise: dict[str, dict] | None = None,
) -> View:
    page = T.clamp_page(state.page, len(filtered))
    query = T.query_string(
        state.filters,
        runs=state.runs,
        all_columns=state.all_columns,
        pool=state.pool_sources,
        page=page,
    )
    shown = min(len(filtered), T.PAGE_ROWS)
    return View(
        summary=T.summary_html(
            cells, filtered, state.filters, shown=shown, runs=state.runs, query=query
        ),
        table=T.table_html(
            filtered,
            state.filters,
            runs_separately=state.runs,
            all_columns=state.all_columns,
            page=page,
            noise=noise,
        ),
        plots=plots_html(filtered, state.filters.min_cond) if plots else "",
    )


def plots_html(filtered: pd.DataFrame, min_cond: int) -> str:
    filtered = filtered[~error_heavy(filtered)]  # its effects are no measurement to plot
    if filtered.empty:  # three empty frames say nothing the table's reset line does not
        return ""
    disagree = filtered[f"_dis_{min_cond}"].to_numpy(dtype=bool)
    reportable = filtered[f"_rep_{min_cond}"].to_numpy(dtype=bool)
    titled: set[str] = set()  # each cell's hover text once in the page (see _plots._points)
    return (
        '<div class="sf-plots">'
        + _plots.lift_vs_rae(filtered, disagree, reportable, titled)
        + _plots.coverage_vs_rae(filtered, disagree, titled)
        + _plots.select_vs_lift(filtered, disagree, titled)
        + "</div>"
    )


def build_app(board: Board) -> gr.Blocks:
    """The whole app for one loaded board (the first view is rendered here, into the page)."""
    with BoardBlocks(title="skillfollow leaderboard", fill_width=True) as demo:
        gr.Markdown(rendered(INTRO), elem_id="sf-intro")
        gr.HTML(
            warnings_html(board.warnings),
            elem_id="sf-warnings",
            visible=bool(board.warnings),
            js_on_load=None,
            apply_default_css=False,
        )
        if board.empty:
            _empty_state(board)
        else:
            _board_tabs(demo, board)
    demo.launch_defaults = {
        "css": CSS,
        "head": HEAD,
        "footer_links": ["api", "gradio"],
        "app_kwargs": {"routes": [_csv_route(board)]},
    }
    return demo


def _empty_state(board: Board) -> None:
    with gr.Tabs():
        with gr.Tab("Leaderboard", id="board"):
            gr.Markdown(rendered(EMPTY_MD), elem_id="sf-empty")
        with gr.Tab("About", id="about"):
            gr.Markdown(rendered(ABOUT), elem_id="sf-about")


def _board_tabs(demo: gr.Blocks, board: Board) -> None:
    first = first_view(board)
    with gr.Tabs(selected="board") as tabs:
        with gr.Tab("Leaderboard", id="board"):
            c = _controls(board.first_view(T.VIEW_COLUMNS))
            summary = gr.HTML(
                first.summary.replace("<div ", '<div data-sf-pending="1" ', 1),
                elem_id="sf-summary",
                js_on_load=None,
                apply_default_css=False,
            )
            table = gr.HTML(
                first.table, elem_id="sf-table", js_on_load=None, apply_default_css=False
            )
            plots = gr.HTML(
                first.plots, elem_id="sf-plots", js_on_load=None, apply_default_css=False
            )
        _lazy_tab("Models", "models", _once(lambda: _models_view(board)))
        with gr.Tab("Cell drill-down", id="drill"):
            d = _drill_tab()
        # it reads every row's skills_returned: only when asked for
        _lazy_tab("Skills", "skills", _once(lambda: _skills_view(board)))
        with gr.Tab("About", id="about"):
            gr.Markdown(rendered(ABOUT), elem_id="sf-about")
    boxes = {
        name: gr.Textbox(
            value=T.DEFAULT_SORT if name == "sort" else "",
            elem_id=f"sf-{name}box",
            elem_classes=["sf-hidden"],
            container=False,
            show_label=False,
        )
        for name in ("sort", "page", "open", "task")
    }
    _wire(demo, board, c, boxes, [summary, table, plots], d, tabs)


def _lazy_tab(title: str, name: str, view) -> None:
    """A tab whose HTML `view()` gives on its first visit (the page opens without it)."""
    with gr.Tab(title, id=name) as tab:
        html = gr.HTML(
            f'<p class="sf-empty">Computing the {name} view…</p>',
            elem_id=f"sf-{name}",
            js_on_load=None,
            apply_default_css=False,
        )
    tab.select(view, None, html, show_progress="hidden", api_visibility="private")


def _once(compute):
    """`compute()` on the first call, its text on every later one (one at a time)."""
    done: list[str] = []
    lock = threading.Lock()

    def view() -> str:
        with lock:
            if not done:
                try:
                    done.append(compute())
                except Exception as exc:  # a bug or bad value must not leave the tab blank
                    note = f"This view failed ({type(exc).__name__}: {exc})."
                    return f'<p class="sf-empty">{_escape(note)}</p>'
            return done[0]

    return view


def _models_view(board: Board) -> str:
    """The Models tab: per model, then per source (from the cells alone)."""
    from hf_skillfollow.space_app import _models

    cells = board.pooled
    return _models.models_html(_models.models_frame(cells)) + _models.sources_html(cells)


def _skills_view(board: Board) -> str:
    """The Skills tab, from the rows' skills_returned."""
    from hf_skillfollow.space_app import _skills

    cells = board.pooled
    frame = _skills.skill_frame(board.tables, cells)
    keys, labels = cells["_key"].astype(str), cells["label"].astype(str)
    return _skills.skills_html(frame, dict(zip(keys, labels, strict=True)))


def _choice_box(choices: list[str], values: pd.Series, label: str, name: str) -> gr.Dropdown:
    """A multiselect filter listing what `T.listed` keeps of `choices`; a link may name any
    of them (a custom value). Typing one does not filter: Gradio's multiselect sends no
    `input` event for a typed value, and the board listens to `input` (a `change` handler
    would also fire when a shared link sets the box, sending its view back to page 1)."""
    shown, left = T.listed(values, choices)
    return gr.Dropdown(
        shown,
        value=[],
        multiselect=True,
        label=label,
        info=f"{left:,} more not listed: name one in a link (?{name}=...)" if left else None,
        allow_custom_value=True,  # a value not listed, or a link's benchmark alone
        elem_id=f"sf-f-{name}",
        elem_classes=["sf-all"],
        min_width=160,
    )


def _controls(cells: pd.DataFrame) -> dict[str, gr.components.Component]:
    # One accordion: open on a wide screen (every filter fits one row), folded on a phone by
    # the page script, so the table is on the first screen there.
    with gr.Accordion("Filters", open=True, elem_id="sf-filters"), gr.Row(equal_height=True):
        c = {
            "benchmarks": _choice_box(
                T.task_set_choices(cells), cells["task_set"], "Task set", "benchmark"
            ),
            "partitions": _choice_box(
                T.choices(cells, "partition"), cells["partition"], "Partition", "partition"
            ),
            "pools": _choice_box(
                T.choices(cells, "pool_condition"),
                cells["pool_condition"],
                "Pool / condition",
                "pool",
            ),
            "model": gr.Textbox(
                label="Model search",
                placeholder="substring, filters as you type",
                elem_id="sf-f-model",
                min_width=160,
            ),
            "min_cond": gr.Radio(
                [str(t) for t in THRESHOLDS],
                value=str(DEFAULT_MIN_COND),
                label="Reportable: n_cond ≥",
                elem_id="sf-f-mincond",
                min_width=160,
            ),
            "show": gr.CheckboxGroup(
                list(SHOW_CHOICES),
                value=[],
                label="Show",
                elem_id="sf-f-show",
                min_width=420,  # the toggles side by side: the filters stay one row high
                scale=2,
            ),
        }
    return c


def _drill_tab() -> dict[str, gr.components.Component]:
    def html(elem_id: str, value: str = "") -> gr.HTML:
        return gr.HTML(value, elem_id=elem_id, js_on_load=None, apply_default_css=False)

    d = {"header": html("sf-drill-header", f'<p class="sf-empty">{_drill.NO_CELL}</p>')}
    with gr.Row():
        d["matrices"] = gr.Markdown(elem_id="sf-matrices")
        d["decomposition"] = gr.Markdown(elem_id="sf-decomposition")
    with gr.Row():
        with gr.Column(scale=1, min_width=260):
            gr.Markdown("**Harmful flips per returned skill**")
            d["tally"] = html("sf-tally")
        with gr.Column(scale=3):
            gr.Markdown("**Flipped tasks**, harmful (c) first")
            d["flips"] = html("sf-flips")
    d["traces"] = html("sf-traces")
    return d


_FILTER_KEYS = ("benchmarks", "partitions", "pools", "model", "min_cond", "show")


def state_from_inputs(benchmarks, partitions, pools, model, min_cond, show, sort) -> T.ViewState:
    """The view state of the controls' values; a bad value is a `gr.Error` naming it."""
    try:
        return _state(benchmarks, partitions, pools, model, min_cond, show, sort)
    except ValueError as exc:
        raise gr.Error(_escape(str(exc))) from None  # rendered as HTML by gradio


def _state(benchmarks, partitions, pools, model, min_cond, show, sort) -> T.ViewState:
    shown = set(show or ())
    unknown = shown - set(SHOW_CHOICES)
    if unknown:
        raise ValueError(
            f"show: unknown choice(s) {sorted(unknown)}; choose from {list(SHOW_CHOICES)}"
        )
    filters = T.Filters(
        benchmarks=T.as_tuple(benchmarks),
        partitions=T.as_tuple(partitions),
        pools=T.as_tuple(pools),
        model_query=model or "",
        min_cond=T.parse_threshold(min_cond or DEFAULT_MIN_COND),
        show_nonreportable=NONREP in shown,
        sort=_strip_nonce(sort) or T.DEFAULT_SORT,
        rescored_only=RESCORED in shown,
    )
    T.parse_sort(filters.sort)
    return T.ViewState(filters, RUNS in shown, ALL in shown, pool_sources=POOL_SOURCES in shown)


def _page(value: str | None) -> int:
    """The page a pager button asked for; a bad value is a `gr.Error` naming it."""
    try:
        return T.parse_page(_strip_nonce(value) or "1")
    except ValueError as exc:
        raise gr.Error(_escape(str(exc))) from None


def _strip_nonce(value: str | None) -> str:
    """The page script appends a tab and a counter so that repeating a click is a new value."""
    return (value or "").split("\t", 1)[0].strip()


def _wire(
    demo: gr.Blocks, board: Board, c: dict, boxes: dict, view_out: list, d: dict, tabs: gr.Tabs
) -> None:
    inputs = [c[k] for k in _FILTER_KEYS] + [boxes["sort"]]
    summary, table, _ = view_out

    views = ViewCache(board)

    def refresh(*values):
        v = views.render(state_from_inputs(*values))
        return v.summary, v.table, v.plots

    swap = PlotSwap()

    def filtered(benchmarks, partitions, pools, model, min_cond, show, sort, request: gr.Request):
        """`refresh` for the page's own filter events (its plots wrapped by `PlotSwap`)."""
        values = (benchmarks, partitions, pools, model, min_cond, show, sort)
        v = views.render(state_from_inputs(*values))
        return v.summary, v.table, swap.wrap(v.plots, request)

    def resort(*values):
        v = views.render(state_from_inputs(*values), plots=False)
        return v.summary, v.table

    def turn(*values):
        # Another page of the same rows: the plots do not change, and are not sent again.
        *controls, page = values
        state = state_from_inputs(*controls)
        v = views.render(replace(state, page=_page(page)), plots=False)
        return v.summary, v.table

    # The public endpoint first: private events named after the same function would take
    # the name "refresh" otherwise.
    gr.Button(visible=False).click(refresh, inputs, view_out, api_name="refresh")
    common = {"trigger_mode": "always_last", "show_progress": "hidden", "api_visibility": "private"}
    for key in _FILTER_KEYS:
        # Gradio's textbox sends `input` from its keydown handler, before a paste lands in
        # the value; `change` follows the value itself (typing, pasting, a shared link).
        event = c[key].change if key == "model" else c[key].input
        event(filtered, inputs, view_out, **common)
    # The page script writes "<value>\t<counter>" into the hidden boxes, so every click is a
    # new value and `change` fires; the handlers strip the counter.
    boxes["sort"].change(resort, inputs, [summary, table], **common)
    boxes["page"].change(turn, [*inputs, boxes["page"]], [summary, table], **common)
    if board.has_judged:
        # The judge noise is measured from the judged cells' traces after the page is up
        # (Board.measure_judges_soon); the table is drawn again once, when it is in.
        timer = gr.Timer(1.0)

        def noise_in(*values):
            if not board.judges_done.is_set():
                return gr.skip(), gr.skip(), gr.skip()
            v = views.render(state_from_inputs(*values), plots=False)
            return v.summary, v.table, gr.Timer(active=False)

        timer.tick(noise_in, inputs, [summary, table, timer], **common)

    drill_out = [d[k] for k in ("header", "matrices", "decomposition", "tally", "flips", "traces")]
    boxes["open"].change(
        lambda key: (*_show_cell(board, _strip_nonce(key)), gr.Tabs(selected="drill")),
        boxes["open"],
        [*drill_out, tabs],
        **common,
    )
    boxes["task"].change(
        lambda key: _show_traces(board, _strip_nonce(key)), boxes["task"], d["traces"], **common
    )

    controls = [c[k] for k in _FILTER_KEYS] + [boxes["sort"]]

    def from_url(request: gr.Request):
        # The page is up: now compute what the start deferred (Board.complete).
        board.complete_soon()
        board.measure_judges_soon()
        out = _from_url(board, request, n_controls=len(controls), n_drill=len(drill_out))
        at = len(controls) + 2  # summary, table, plots follow the controls
        if isinstance(out[at], str):
            out = (*out[:at], swap.wrap(out[at], request), *out[at + 1 :])
        return out

    demo.load(
        from_url,
        None,
        [*controls, *view_out, *drill_out, tabs],
        show_progress="hidden",
        api_visibility="private",
    )

    # Named endpoints for scripts and the tests (same functions as the page's events).

    def cell(key: str) -> tuple[str, str, str, str, str, str]:
        """Drill-down of one cell: header, matrices, decomposition, skill tally, flips, traces."""
        return _show_cell(board, key)

    def traces(key: str) -> str:
        """SE and SD traces of "<run_id>|<task_id>", side by side."""
        return _show_traces(board, key)

    def cells(
        benchmarks: list[str],
        partitions: list[str],
        pools: list[str],
        model: str,
        min_cond: int,
        show: list[str],
        sort: str,
    ) -> list[dict]:
        """The filtered, sorted cells with raw values (NaN as null), flags at min_cond."""
        state = state_from_inputs(benchmarks, partitions, pools, model, min_cond, show, sort)
        filtered = T.apply_filters(board.cells(state.runs, state.pool_sources), state.filters)
        return T.records(filtered, state.filters.min_cond, noise=board.judge_noise)

    for fn in (cell, traces, cells):
        gr.api(fn, api_name=fn.__name__)


class PlotSwap:
    """Alternates, per page session, the plots' outer element between `<div>` and `<section>`.

    Gradio's gr.HTML patches the shown DOM node by node towards a new value whose top element
    has the same tag, and swaps in a fresh parse where it does not. For the plots' ~600 points,
    every one moved, the walk cost Chromium ~15-20 ms per filter against ~3-4 ms for the swap
    (bench/space.py, 12,500 cells). Whatever the tags, the page shows the new value: a lost
    alternation (a reply the page never applied) costs a walk, never a wrong plot.
    """

    OPEN, CLOSE = '<div class="sf-plots">', "</div>"
    #: Sessions remembered (oldest forgotten first): a forgotten one starts over with `<div>`.
    LIMIT = 4096

    def __init__(self) -> None:
        self._last: OrderedDict[str | None, bool] = OrderedDict()
        self._lock = threading.Lock()

    def wrap(self, plots: str, request: gr.Request | None) -> str:
        if not (plots.startswith(self.OPEN) and plots.endswith(self.CLOSE)):
            return plots  # no plots (nothing matched): nothing to swap
        session = getattr(request, "session_hash", None)
        with self._lock:
            section = not self._last.pop(session, False)
            self._last[session] = section
            if len(self._last) > self.LIMIT:
                self._last.popitem(last=False)
        if not section:
            return plots
        inner = plots[len(self.OPEN) : -len(self.CLOSE)]
        return f'<section class="sf-plots">{inner}</section>'


def _from_url(board: Board, request: gr.Request, *, n_controls: int, n_drill: int):
    """Apply the page URL's query (a shared link) to controls, view and drill-down."""
    params = page_params(request)
    skip = tuple(gr.skip() for _ in range(n_controls + 3 + n_drill + 1))
    if not T.QUERY_KEYS & set(params):
        return skip
    try:
        state = T.state_from_query(params)
    except ValueError as exc:
        # gr.Warning renders its message as HTML, and the text quotes the link: escaped.
        gr.Warning(_escape(f"Ignoring the link's view settings: {exc}"))
        return skip
    f = _known_choices(board, state.filters)
    state = replace(state, filters=f)
    show = [NONREP] * f.show_nonreportable + [RUNS] * state.runs + [ALL] * state.all_columns
    show += [RESCORED] * f.rescored_only + [POOL_SOURCES] * state.pool_sources
    controls = (
        list(f.benchmarks),
        list(f.partitions),
        list(f.pools),
        f.model_query,
        str(f.min_cond),
        show,
        f.sort,
    )
    v = render_view(board, state)
    if state.cell:
        drill = _show_cell(board, state.cell)
        tab = gr.Tabs(selected="drill")
    else:
        drill, tab = tuple(gr.skip() for _ in range(n_drill)), gr.skip()
    return (*controls, v.summary, v.table, v.plots, *drill, tab)


def _known_choices(board: Board, f: T.Filters) -> T.Filters:
    """`f` without the link's partitions and pools that are no choice of their dropdowns.

    Such a value, set on a dropdown that allows no custom value, made every later event fail
    in Gradio's preprocessing with an error toast that quoted it as HTML: a crafted link's
    `pool=<img src=...>` had each visitor's browser fetch an outside host, five times, and
    the board's filters stopped answering. A value that is not on this board filters nothing
    anyway, so it is dropped and named, escaped, in a warning."""
    cells = board.first_view(T.VIEW_COLUMNS)
    kept: dict[str, tuple[str, ...]] = {}
    dropped: list[str] = []
    for field, column, name in (("partitions", "partition", "partition"),
                                ("pools", "pool_condition", "pool")):  # fmt: skip
        allowed = set(T.choices(cells, column))
        values = getattr(f, field)
        kept[field] = tuple(v for v in values if v in allowed)
        dropped += [f"{name}={capped(v, 80)!r}" for v in values if v not in allowed]
    if dropped:
        more = f" and {len(dropped) - 5:,} more" if len(dropped) > 5 else ""
        gr.Warning(
            _escape(f"Ignoring the link's {', '.join(dropped[:5])}{more}: not on this board")
        )
    return replace(f, **kept)


def page_params(request: gr.Request) -> dict[str, list[str]]:
    """The page's query parameters: Gradio's client forwards them with each event; the
    Referer header (the page URL) is the fallback."""
    params: dict[str, list[str]] = {}
    query = getattr(request, "query_params", None)
    items = query.multi_items() if hasattr(query, "multi_items") else dict(query or {}).items()
    for key, value in items:
        params.setdefault(key, []).append(value)
    if T.QUERY_KEYS & set(params):
        return params
    referer = dict(getattr(request, "headers", {}) or {}).get("referer", "")
    return parse_qs(urlsplit(referer).query)


def _show_cell(board: Board, key: str | None):
    """(header, matrices, decomposition, tally, flips, traces) of one cell."""
    cell, per_run = _drill.find_cell(board, key)
    if cell is None:
        note = _drill.NO_CELL if not key else f"No cell with key {key!r} under the current data."
        return f'<p class="sf-empty">{_escape(note)}</p>', "", "", "", "", ""
    rows = board.task_rows(cell)
    flips = _drill.flips(rows)
    first = flips.iloc[0] if len(flips) else None
    traces = (
        _show_traces(board, _drill.trace_key(first["source"], first["run_id"], first["task_id"]))
        if first is not None
        else ""
    )
    return (
        _drill.header_html(cell, str(cell["_key"]))
        + _cost.cost_html(board.traces.table, rows)
        + _verification.drill_html(board.rescoring, cell, per_run),
        rendered(_drill.matrix_markdown(cell)),
        rendered(_drill.decomposition_markdown(cell)),
        _drill.tally_html(_drill.skill_tally(rows)),
        _drill.flips_html(flips),
        traces,
    )


def _show_traces(board: Board, key: str | None) -> str:
    """Traces of "<source id>|<run_id>|<task_id>" (`_drill.trace_key`), read from that
    source only."""
    from hf_skillfollow.space_app._sources import source_id

    parts = (key or "").split("|", 2)
    if len(parts) == 2:  # "run_id|task_id", a key written before keys named the source
        owners = [s for s, t in board.tables.items() if parts[0] in _run_ids(t)]
        parts = [source_id(owners[0]) if len(owners) == 1 else "", *parts]
    if len(parts) != 3:
        return ""
    sid, run_id, task_id = parts
    source = next((s for s in board.sources if source_id(s) == sid), None)
    if source is None:
        return (
            f'<p class="sf-empty">Traces unavailable: no loaded source has id {_escape(sid)}.</p>'
        )
    se, sd, note = board.traces.pair(source, run_id, task_id)
    if note:
        return f'<p class="sf-empty">Traces unavailable: {_escape(note)}.</p>'
    return _drill.traces_html(se, sd, f"{task_id} (run {run_id})")


def _run_ids(table) -> set[str]:
    return set(table.column("run_id").unique().to_pylist())


def _escape(text: str) -> str:
    from hf_skillfollow._escape import for_html

    return for_html(text)


def _csv_route(board: Board):
    """GET export.csv?<the page's query>: every filtered row, one click from the summary."""
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    from hf_skillfollow._escape import frame_to_csv

    def export(request: Request) -> Response:
        params: dict[str, list[str]] = {}
        for k, v in request.query_params.multi_items():
            params.setdefault(k, []).append(v)
        try:
            state = T.state_from_query(params)
        except ValueError as exc:
            return PlainTextResponse(f"bad query: {exc}", status_code=400)
        filtered = T.apply_filters(board.cells(state.runs, state.pool_sources), state.filters)
        # Model names and ids are the submitters': a leading = + - @ would run in a spreadsheet.
        body = frame_to_csv(T.csv_frame(filtered, state.filters.min_cond, board.judge_noise))
        return Response(
            body,
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": 'attachment; filename="skillfollow_leaderboard.csv"'},
        )

    return Route("/export.csv", export, methods=["GET"])


#: Problems the banner shows as lines, and in all (the rest folded under the first ones): a
#: source that reuses 3,000 of another's run ids with other rows raised 3,000 warnings, a
#: 3.9 MB banner that pushed the table 3,000 lines down for every visitor.
BANNER_LINES = 10
BANNER_PROBLEMS = 100
#: Characters of one problem in its tooltip.
BANNER_TIP_CHARS = 1_000


def warnings_html(warnings: list[str], limit: int = 160) -> str:
    """The banner: one line per problem, long ones cut (a longer prefix in the tooltip); past
    `BANNER_LINES` folded, past `BANNER_PROBLEMS` counted."""

    def item(w: str) -> str:
        tip = w if len(w) <= BANNER_TIP_CHARS else w[:BANNER_TIP_CHARS] + "…"
        text = w if len(w) <= limit else w[:limit] + "…"
        return f'<li title="{_escape(tip)}">{_escape(text)}</li>'

    items = "".join(item(w) for w in warnings[:BANNER_LINES])
    folded = warnings[BANNER_LINES:BANNER_PROBLEMS]
    if folded:
        rest = "".join(item(w) for w in folded)
        items += (
            f"<li><details><summary>{len(folded):,} more</summary><ul>{rest}</ul></details></li>"
        )
    if len(warnings) > BANNER_PROBLEMS:
        items += f"<li>{len(warnings) - BANNER_PROBLEMS:,} more problems not shown</li>"
    return f'<div class="sf-warn" role="alert"><b>⚠ While loading the sources</b><ul>{items}</ul></div>'

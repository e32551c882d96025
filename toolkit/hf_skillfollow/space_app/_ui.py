"""The Gradio 6 Blocks layout and its event wiring."""

from __future__ import annotations

import tempfile
from pathlib import Path

import gradio as gr
import orjson
import pandas as pd
from gradio.components.plot import PlotData

from hf_skillfollow.space_app import _drill, _plots, _verification
from hf_skillfollow.space_app import _table as T
from hf_skillfollow.space_app._about import ABOUT_MD
from hf_skillfollow.space_app._board import DEFAULT_MIN_COND, THRESHOLDS, Board

#: Cells offered in the drill-down picker (clicking a table row works for any cell).
MAX_CELL_CHOICES = 500
INTRO = (
    "# Do retrieved skills actually help?\n"
    "Paired SE/SD leaderboard: every task is run with the `search_skills` tool (SE) and without it (SD). "
    "**RAE** is the paired effect on the tasks where a skill was retrieved; **aggregate lift** is the usual, "
    "selection-biased number. Cells where the two disagree in sign are flagged ⚠. See *About* for definitions."
)


def build_app(board: Board) -> gr.Blocks:
    """The whole app for one loaded board (values for the first render are computed here)."""
    pooled = board.cells(False)
    first = _refresh(board, T.Filters(), runs_separately=False, all_columns=False)
    with gr.Blocks(title="skillfollow leaderboard") as demo:
        gr.Markdown(INTRO)
        gr.Markdown(_warnings_markdown(board), elem_id="sf-warnings", visible=bool(board.warnings))
        with gr.Tabs() as tabs:
            with gr.Tab("Leaderboard", id="board"):
                controls = _controls(pooled)
                summary = gr.Markdown(first[0], elem_id="sf-summary")
                table = gr.Dataframe(
                    first[1],
                    datatype=T.datatypes(first[1]),
                    interactive=False,
                    max_height=520,
                    elem_id="sf-table",
                    buttons=["fullscreen", "copy"],
                    pinned_columns=2,
                    label="Cells (click a row for its drill-down; click a header to sort)",
                )
                with gr.Row():
                    export = gr.Button(
                        "Export CSV (all filtered rows)", elem_id="sf-export", scale=0
                    )
                    csv_file = gr.File(
                        label="CSV", elem_id="sf-csv", interactive=False, visible=False
                    )
                with gr.Row(equal_height=True):
                    plots = [
                        gr.Plot(
                            first[2], elem_id="sf-plot-lift-rae", show_label=False, min_width=420
                        ),
                        gr.Plot(
                            first[3],
                            elem_id="sf-plot-coverage-rae",
                            show_label=False,
                            min_width=420,
                        ),
                        gr.Plot(
                            first[4], elem_id="sf-plot-select-lift", show_label=False, min_width=420
                        ),
                    ]
            with gr.Tab("Cell drill-down", id="drill"):
                drill = _drill_tab(first[5])
            with gr.Tab("About", id="about"):
                gr.Markdown(ABOUT_MD + _verification.ABOUT_MD, elem_id="sf-about")
        _wire(
            board,
            controls,
            [summary, table, *plots, drill["cell"]],
            export,
            csv_file,
            table,
            drill,
            tabs,
        )
    return demo


def _controls(cells: pd.DataFrame) -> dict[str, gr.components.Component]:
    with gr.Row():
        c = {
            "benchmarks": gr.Dropdown(
                T.choices(cells, "benchmark"),
                value=[],
                multiselect=True,
                label="Benchmark",
                elem_id="sf-f-benchmark",
            ),
            "partitions": gr.Dropdown(
                T.choices(cells, "partition"),
                value=[],
                multiselect=True,
                label="Partition",
                elem_id="sf-f-partition",
            ),
            "pools": gr.Dropdown(
                T.choices(cells, "pool_condition"),
                value=[],
                multiselect=True,
                label="Pool / condition",
                elem_id="sf-f-pool",
            ),
            "model": gr.Textbox(
                label="Model search",
                placeholder="substring, case-insensitive",
                elem_id="sf-f-model",
            ),
        }
    with gr.Row():
        c["min_cond"] = gr.Radio(
            [str(t) for t in THRESHOLDS],
            value=str(DEFAULT_MIN_COND),
            label="Minimum n_cond (reportable)",
            elem_id="sf-f-mincond",
        )
        c["nonreportable"] = gr.Checkbox(
            False, label="Show non-reportable cells", elem_id="sf-f-nonrep"
        )
        c["runs"] = gr.Checkbox(False, label="Show runs separately", elem_id="sf-f-runs")
        c["all_columns"] = gr.Checkbox(False, label="All columns", elem_id="sf-f-allcols")
        c["sort_by"] = gr.Dropdown(
            list(T.SORTABLE), value="RAE", label="Sort by", elem_id="sf-f-sort"
        )
        c["descending"] = gr.Checkbox(True, label="Descending", elem_id="sf-f-desc")
        c["rescored_only"] = gr.Checkbox(False, label="Re-scored only", elem_id="sf-f-rescored")
    return c


def _drill_tab(cell_choices: list[tuple[str, str]]) -> dict[str, gr.components.Component]:
    d = {
        "cell": gr.Dropdown(
            cell_choices, value=None, label="Cell", allow_custom_value=True, elem_id="sf-cell"
        )
    }
    d["header"] = gr.Markdown(_drill.NO_CELL, elem_id="sf-drill-header")
    d["rescored"] = gr.Markdown(elem_id="sf-rescored")
    with gr.Row():
        d["matrices"] = gr.Markdown(elem_id="sf-matrices")
        d["decomposition"] = gr.Markdown(elem_id="sf-decomposition")
    d["flips"] = gr.Dataframe(
        pd.DataFrame(columns=list(_drill.FLIP_COLUMNS)),
        interactive=False,
        wrap=True,
        max_height=360,
        label="Helpful (b) and harmful (c) tasks",
        elem_id="sf-flips",
    )
    d["task"] = gr.Dropdown(
        [],
        value=None,
        label="Task (SE/SD traces side by side)",
        allow_custom_value=True,
        elem_id="sf-task",
    )
    with gr.Row():
        d["se"] = gr.Markdown(elem_id="sf-trace-se")
        d["sd"] = gr.Markdown(elem_id="sf-trace-sd")
    return d


def _wire(
    board: Board,
    c: dict,
    outputs: list,
    export: gr.Button,
    csv_file: gr.File,
    table: gr.Dataframe,
    d: dict,
    tabs: gr.Tabs,
) -> None:
    inputs = [
        c[k]
        for k in (
            "benchmarks",
            "partitions",
            "pools",
            "model",
            "min_cond",
            "nonreportable",
            "runs",
            "all_columns",
            "sort_by",
            "descending",
            "rescored_only",
        )
    ]

    def refresh(
        benchmarks,
        partitions,
        pools,
        model,
        min_cond,
        nonreportable,
        runs,
        all_columns,
        sort_by,
        descending,
        rescored_only=False,
    ):
        f = _filters(
            benchmarks, partitions, pools, model, min_cond, nonreportable, sort_by, descending,
            rescored_only,
        )  # fmt: skip
        summary, frame, p1, p2, p3, cells = _refresh(
            board, f, runs_separately=bool(runs), all_columns=bool(all_columns)
        )
        return summary, _table_update(frame), p1, p2, p3, gr.Dropdown(choices=cells, value=None)

    def resort(
        benchmarks,
        partitions,
        pools,
        model,
        min_cond,
        nonreportable,
        runs,
        all_columns,
        sort_by,
        descending,
        rescored_only=False,
    ):
        f = _filters(
            benchmarks, partitions, pools, model, min_cond, nonreportable, sort_by, descending,
            rescored_only,
        )  # fmt: skip
        _, _, frame, picks = _table_view(
            board, f, runs_separately=bool(runs), all_columns=bool(all_columns)
        )
        return _table_update(frame), gr.Dropdown(choices=picks, value=None)

    def export_csv(
        benchmarks,
        partitions,
        pools,
        model,
        min_cond,
        nonreportable,
        runs,
        all_columns,
        sort_by,
        descending,
        rescored_only=False,
    ):
        f = _filters(
            benchmarks, partitions, pools, model, min_cond, nonreportable, sort_by, descending,
            rescored_only,
        )  # fmt: skip
        filtered = T.apply_filters(board.cells(bool(runs)), f)
        path = Path(tempfile.mkdtemp(prefix="skillfollow-")) / "skillfollow_leaderboard.csv"
        T.csv_frame(filtered, f.min_cond).to_csv(path, index=False)
        return gr.File(value=str(path), visible=True)

    # Sort and column choices change only the table (plots sample in board order), so they
    # re-send the table and the cell picks, not the summary and three figures.
    table_only = {id(c[k]) for k in ("all_columns", "sort_by", "descending")}
    for component in inputs:
        event = component.input if isinstance(component, gr.Textbox) else component.change
        narrow = id(component) in table_only
        event(
            resort if narrow else refresh,
            inputs,
            [outputs[1], outputs[-1]] if narrow else outputs,
            api_name=False,
            trigger_mode="always_last",
            show_progress="hidden",
        )
    # A named endpoint so scripts (and the tests) can ask for a filtered view directly.
    export.click(export_csv, inputs, csv_file, api_name="export_csv")
    hidden = gr.Button(visible=False)
    hidden.click(refresh, inputs, outputs, api_name="refresh")
    table.select(_on_select, c["runs"], [d["cell"], tabs], api_name=False)
    drill_outputs = [d["header"], d["matrices"], d["decomposition"], d["flips"], d["task"]]
    d["cell"].change(lambda key: _show_cell(board, key), d["cell"], drill_outputs, api_name="cell")
    d["cell"].change(
        lambda key: _show_rescoring(board, key), d["cell"], d["rescored"], api_name="rescored"
    )
    d["task"].change(
        lambda key: _show_traces(board, key), d["task"], [d["se"], d["sd"]], api_name="traces"
    )


def _filters(
    benchmarks, partitions, pools, model, min_cond, nonreportable, sort_by, descending,
    rescored_only=False,
) -> T.Filters:  # fmt: skip
    return T.Filters(
        benchmarks=T.as_tuple(benchmarks),
        partitions=T.as_tuple(partitions),
        pools=T.as_tuple(pools),
        model_query=model or "",
        min_cond=T.parse_threshold(min_cond or DEFAULT_MIN_COND),
        show_nonreportable=bool(nonreportable),
        sort_by=sort_by or "RAE",
        descending=bool(descending),
        rescored_only=bool(rescored_only),
    )


def _table_view(board: Board, f: T.Filters, *, runs_separately: bool, all_columns: bool):
    """All cells, the filtered and sorted ones, the table's rows and the drill-down picks."""
    cells = board.cells(runs_separately)
    filtered = T.apply_filters(cells, f)
    frame = T.display_frame(filtered, runs_separately=runs_separately, all_columns=all_columns)
    head = filtered.head(MAX_CELL_CHOICES)
    picks = list(zip(head["label"], head["_key"], strict=True))
    return cells, filtered, frame, picks


def _refresh(board: Board, f: T.Filters, *, runs_separately: bool, all_columns: bool):
    cells, filtered, frame, picks = _table_view(
        board, f, runs_separately=runs_separately, all_columns=all_columns
    )
    summary = T.summary_markdown(cells, filtered, f, shown=len(frame))
    figures = (
        _plots.lift_vs_rae(filtered),
        _plots.coverage_vs_rae(filtered),
        _plots.select_vs_lift(filtered),
    )
    return (summary, frame, *(_plot(fig) for fig in figures), picks)


def _table_update(frame: pd.DataFrame) -> gr.Dataframe:
    return gr.Dataframe(frame, datatype=T.datatypes(frame))


def _plot(figure: dict) -> PlotData:
    # orjson writes NaN as null, which plotly.js reads as a gap; json.dumps would emit invalid NaN.
    return PlotData(
        type="plotly", plot=orjson.dumps(figure, option=orjson.OPT_SERIALIZE_NUMPY).decode()
    )


def _on_select(runs: bool, evt: gr.SelectData):
    key = key_from_row(evt.row_value or [], runs_separately=bool(runs))
    return gr.Dropdown(value=key), gr.Tabs(selected="drill")


_CELL_INDEX = [h for h, _, _ in T.COMPACT].index("cell_id")


def key_from_row(row: list, *, runs_separately: bool) -> str | None:
    """Drill-down key of a clicked row: cell_id, plus the run_id column that follows it per run."""
    if len(row) <= _CELL_INDEX + int(runs_separately):
        return None
    key = str(row[_CELL_INDEX])
    return f"{key}|{row[_CELL_INDEX + 1]}" if runs_separately else key


def _show_cell(board: Board, key: str | None):
    cell, per_run = _drill.find_cell(board, key)
    if cell is None:
        empty = pd.DataFrame(columns=list(_drill.FLIP_COLUMNS))
        note = _drill.NO_CELL if not key else f"No cell with key `{key}` under the current data."
        return note, "", "", empty, gr.Dropdown(choices=[], value=None)
    rows = board.task_rows(str(cell["cell_id"]), str(cell["run_id"]) if per_run else None)
    tasks = _drill.task_choices(rows)
    return (
        _drill.header_markdown(cell),
        _drill.matrix_markdown(cell),
        _drill.decomposition_markdown(cell),
        _drill.flips_frame(rows),
        gr.Dropdown(choices=tasks, value=tasks[0][1] if tasks else None),
    )


def _show_rescoring(board: Board, key: str | None) -> str:
    cell, per_run = _drill.find_cell(board, key)
    if cell is None:
        return ""
    run_id = str(cell["run_id"]) if per_run else None
    return _verification.drill_markdown(board.rescoring, str(cell["cell_id"]), run_id)


def _show_traces(board: Board, key: str | None):
    if not key or "|" not in key:
        return "", ""
    run_id, task_id = key.split("|", 1)
    se, sd, note = board.traces.pair(run_id, task_id)
    if note:
        return f"_Traces unavailable: {note}._", ""
    return _drill.trace_markdown(se, "se"), _drill.trace_markdown(sd, "sd")


def _warnings_markdown(board: Board) -> str:
    return "\n".join(
        f"> ⚠ **{w}**" if i == 0 else f">\n> ⚠ **{w}**" for i, w in enumerate(board.warnings)
    )

"""The drill-down's cost and judge line: tokens and seconds per task in SE and SD, the judge's
self-disagreement and the answers addressing a grader, computed from the open cell's rows.

The board itself reads only transitions at start; traces are read per source when a cell is
opened (`_traces.TraceStore`), so these figures live in the drill-down header, not the table.
A trace joins the cell only through a transitions row of the same source (run id and task
id), so another source publishing the same run id never changes a cell's cost.
"""

from __future__ import annotations

import math

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from hf_skillfollow._escape import for_html as escape
from hf_skillfollow.space_app._sources import SOURCE

#: The trace columns these figures need (the rest of a trace, messages above all, stays put).
_COLUMNS = ("run_id", "task_id", "arm", "prompt_tokens", "completion_tokens", "latency_s",
            "judge_verdicts", "addresses_grader")  # fmt: skip
_KEY = "cell"


def cell_traces(traces_of, rows: pd.DataFrame) -> tuple[list[dict], list[str]]:
    """The trace rows (needed columns, one cell id) of the cell's transitions `rows`, joined
    within each source, and a note per source whose traces could not be read."""
    out: list[dict] = []
    notes: list[str] = []
    if rows.empty:
        return out, notes
    for source, part in rows.groupby(rows[SOURCE].astype(str), sort=True):
        table = traces_of(source)
        if isinstance(table, str):
            notes.append(table)
            continue
        wanted = pa.array(
            (part["run_id"].astype(str) + "\n" + part["task_id"].astype(str)).unique()
        )
        joined = pc.binary_join_element_wise(table["run_id"], table["task_id"], "\n")
        names = [c for c in _COLUMNS if c in table.column_names]
        hit = table.filter(pc.is_in(joined, value_set=wanted)).select(names).to_pylist()
        out.extend({**r, "cell_id": _KEY, "source": source} for r in hit)
    seen: set[tuple] = set()
    unique = []
    for r in out:  # a run two sources publish alike counts once, as in `Board.task_rows`
        key = (r["run_id"], r["task_id"], r["arm"])
        if key not in seen:
            seen.add(key)
            unique.append(r)
    return unique, notes


def cost_html(traces_of, rows: pd.DataFrame) -> str:
    """One line under the cell's header; empty when the cell has no trace rows at all."""
    from hf_skillfollow.metrics import _own

    traces, notes = cell_traces(traces_of, rows)
    if not traces:
        return ""
    cost = _own.cost(traces)[_KEY]
    parts = [
        f"<b>cost per task</b> tokens SE {_n(cost['se_tokens'])} · SD {_n(cost['sd_tokens'])} · "
        f"Δ {_n(cost['d_tokens'], signed=True)}; seconds SE {_n(cost['se_seconds'], 2)} · "
        f"SD {_n(cost['sd_seconds'], 2)} · Δ {_n(cost['d_seconds'], 2, signed=True)} "
        f"(over {cost['n_se']} SE and {cost['n_sd']} SD traces)"
    ]
    noise, bad = _judge_noise(rows, traces)
    if bad:
        notes.append(
            f"judge figures left out: a judge_verdicts value is not a judge record ({bad})"
        )
    addressing = _own.addressing(traces).get(_KEY)
    if addressing:
        parts.append(
            f"<b>answers addressing a grader</b> SE {addressing['se']} · SD {addressing['sd']}"
        )
    if notes:
        parts.append("traces missing: " + "; ".join(escape(n) for n in notes))
    return noise_html(noise) + '<p class="sf-sub sf-cost">' + "<br>".join(parts) + "</p>"


def cell_noise(traces_of, rows: pd.DataFrame) -> dict | None:
    """The judge-noise figures of one cell's rows (None: no judged answer, or malformed)."""
    traces, _ = cell_traces(traces_of, rows)
    if not traces:
        return None
    return _judge_noise(rows, traces)[0]


#: What reading a judge record could still raise past `judge_record_problem` (its own check
#: comes first): kept so that one cell's figures, never the page, pay for a gap in it.
_BAD_RECORD = (ValueError, TypeError, KeyError, AttributeError, RecursionError, OverflowError)


def _judge_noise(rows: pd.DataFrame, traces: list[dict]) -> tuple[dict | None, str | None]:
    """(the cell's judge noise or None, None), or (None, why not) when a record is not one
    hf-skillfollow writes (`metrics._own.judge_record_problem`, the check `report` makes:
    not JSON, `[` nested 100,000 deep, a count of 1e400 or -7 or true, flags that are not
    lists of true/false): one cell's bad traces cost that cell's judge figures, never the
    page or other cells'."""
    from hf_skillfollow.metrics import _own

    for t in traces:
        problem = _own.judge_record_problem(t.get("judge_verdicts"))
        if problem:
            where = f"run {_cut(t['run_id'])}, task {_cut(t['task_id'])}, {_cut(t['arm'])}"
            return None, f"{where}: {problem}"
    transitions = [{**t, "cell_id": _KEY} for t in _transition_dicts(rows)]
    try:
        return _own.judge_noise(transitions, traces).get(_KEY), None
    except _BAD_RECORD as exc:
        return None, type(exc).__name__


def _cut(value: object, limit: int = 120) -> str:
    """A submitter's id as the board shows one: its first `limit` characters."""
    text = str(value)
    return repr(text if len(text) <= limit else text[:limit] + "…")


def judged_noise(board) -> dict[str, dict]:
    """Drill-down key -> judge noise, for every judged cell (`judged_by` set) of the board:
    its traces are read per source, after the page is up (`Board.measure_judges_soon`)."""
    cells = board.pooled
    if "judged_by" not in cells:
        return {}
    out = {}
    for _, cell in cells[cells["judged_by"].astype(str) != ""].iterrows():
        noise = cell_noise(board.traces.table, board.task_rows(cell))
        if noise:
            out[str(cell["_key"])] = noise
    return out


#: What the board says of a judged cell whose every flip one judge disagreement could explain.
INDISTINGUISHABLE = "RAE not distinguishable from judge noise"


def indistinguishable(noise: dict | None) -> bool:
    """Every flip between two judged answers is one a single judge disagreement could explain."""
    if not noise or not noise["b"] + noise["c"]:
        return False
    return noise["b_explainable"] == noise["b"] and noise["c_explainable"] == noise["c"]


def noise_html(noise: dict | None) -> str:
    """The judge's noise, as prominent as the numbers it qualifies (not an 11 px grey line)."""
    if not noise:
        return ""
    badge = (
        f'<span class="sf-badge sf-badge-bad">⚠ {INDISTINGUISHABLE}: every flip could be one '
        "judge disagreement</span> "
        if indistinguishable(noise)
        else ""
    )
    return (
        f'<p class="sf-noise">{badge}<b>Judge noise</b>: flips one disagreement could explain '
        f"<b>b {noise['b_explainable']}/{noise['b']}</b>, "
        f"<b>c {noise['c_explainable']}/{noise['c']}</b> · self-disagreement "
        f"{_n(noise['self_disagreement'], 1)} % of {noise['items']} repeated items · ties "
        f"{noise['ties']} · grading failures {noise['grading_failures']}</p>"
    )


def _transition_dicts(rows: pd.DataFrame) -> list[dict]:
    names = ["run_id", "task_id", "se_correct", "sd_correct"]
    return rows[names].drop_duplicates(["run_id", "task_id"]).to_dict("records")


def _n(value: float, digits: int = 0, *, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:+,.{digits}f}" if signed else f"{value:,.{digits}f}"

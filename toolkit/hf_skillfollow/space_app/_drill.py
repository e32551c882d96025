"""Cell drill-down: paired 2×2 matrices, the OAE decomposition, flipped tasks and their traces."""

from __future__ import annotations

import json
import math

import pandas as pd

from hf_skillfollow.space_app._board import Board

FLIP_COLUMNS = ("flip", "task_id", "run_id", "subset", "n_calls", "skills_returned", "queries")
NO_CELL = "Pick a cell (click a row in the leaderboard, or choose one above) to see its details."


def find_cell(board: Board, key: str | None) -> tuple[pd.Series | None, bool]:
    """The cell row for a drill-down key ("cell_id" pooled, "cell_id|run_id" per run)."""
    if not key:
        return None, False
    per_run = "|" in key
    cells = board.cells(runs_separately=per_run)
    hit = cells[cells["_key"] == key]
    if not len(hit):
        return None, per_run
    from hf_skillfollow.space_app._annotations import cell_markdown

    cell = hit.iloc[0].copy()
    cell["_annotations"] = cell_markdown(board, cell)  # shown under the decomposition
    return cell, per_run


def header_markdown(cell: pd.Series) -> str:
    fields = [
        "model",
        "backend",
        "benchmark",
        "benchmark_version",
        "partition",
        "skill_pool",
        "condition",
        "retriever",
        "top_k",
        "max_calls",
        "temperature",
        "max_tokens",
        "tool_mode",
        "retrieval_policy",
        "cell_id",
    ]
    fields += ["run_id"] if "run_id" in cell.index else ["n_runs"]
    items = " · ".join(f"**{f}** `{cell[f]}`" for f in fields if f in cell.index)
    return f"### {cell['label']}\n\n{items}"


def matrix_markdown(cell: pd.Series) -> str:
    """Both paired outcome matrices, with the a/b/c/d layout of docs/design.md."""
    return "\n\n".join(
        [
            _matrix(
                cell, "cond", f"Retrieval-invoked subset S_call (n_cond = {int(cell['n_cond'])})"
            ),
            _matrix(cell, "all", f"All tasks (n = {int(cell['n_pairs'])})"),
        ]
    )


def _matrix(cell: pd.Series, suffix: str, title: str) -> str:
    a, b, c, d = (int(cell[f"{k}_{suffix}"]) for k in "abcd")
    return (
        f"**{title}**\n\n"
        "| | SE correct | SE wrong |\n|---|---|---|\n"
        f"| **SD correct** | a = {a} (concordant pass) | c = {c} (harmful flip) |\n"
        f"| **SD wrong** | b = {b} (helpful flip) | d = {d} (concordant fail) |"
    )


def decomposition_markdown(cell: pd.Series) -> str:
    """OAE = coverage·RAE + (1−coverage)·Δskip with the cell's own numbers."""
    n, n_cond = int(cell["n_pairs"]), int(cell["n_cond"])
    oae, rae, skip = (_num(cell[c]) for c in ("oae", "rae", "delta_skip"))
    cov = n_cond / n if n else math.nan
    annotations = str(cell.get("_annotations") or "")
    if math.isnan(rae):
        text = f"**Decomposition.** RAE is undefined (n_cond = 0), so OAE = Δskip = {_fmt(oae)} pp."
        return "\n\n".join(p for p in (text, annotations) if p)
    skip_term = (1 - cov) * skip if not math.isnan(skip) else 0.0
    skip_text = (
        f"(1 − {cov:.4f}) × ({_fmt(skip)})"
        if not math.isnan(skip)
        else "0 (Δskip omitted: n_skip = 0)"
    )
    total = cov * rae + skip_term
    text = (
        "**Decomposition.** OAE = coverage·RAE + (1 − coverage)·Δskip\n\n"
        f"{_fmt(oae)} = {cov:.4f} × ({_fmt(rae)}) + {skip_text} = {_fmt(cov * rae)} {_signed(skip_term)} = **{_fmt(total)}** pp\n\n"
        f"RAE {_fmt(rae)} pp, 95% CI [{_fmt(_num(cell['rae_ci_low']))}, {_fmt(_num(cell['rae_ci_high']))}], "
        f"McNemar p = {_num(cell['mcnemar_p']):.3g} · OAE 95% CI [{_fmt(_num(cell['oae_ci_low']))}, {_fmt(_num(cell['oae_ci_high']))}]"
    )
    return "\n\n".join(p for p in (text, annotations) if p)


def flips_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """Helpful (b) and harmful (c) tasks with what retrieval returned and the queries sent."""
    if rows.empty:
        return pd.DataFrame(columns=list(FLIP_COLUMNS))
    se, sd = rows["se_correct"].astype(bool), rows["sd_correct"].astype(bool)
    flipped = rows[se != sd].copy()
    flipped["flip"] = (flipped["se_correct"].astype(bool)).map(
        {True: "helpful (b)", False: "harmful (c)"}
    )
    invoked = flipped["invoked"].astype(bool) & flipped["returned"].astype(bool)
    flipped["subset"] = invoked.map({True: "retrieval-invoked", False: "skip"})
    flipped["skills_returned"] = flipped["skills_returned"].map(_join("; "))
    flipped["queries"] = flipped["queries"].map(_join(" | "))
    ordered = flipped.sort_values(["flip", "subset", "task_id"], ascending=[False, True, True])
    return ordered[list(FLIP_COLUMNS)].reset_index(drop=True)


def task_choices(rows: pd.DataFrame) -> list[tuple[str, str]]:
    """Tasks for the trace viewer, flipped ones first: (label, "run_id|task_id")."""
    if rows.empty:
        return []
    se, sd = rows["se_correct"].astype(bool), rows["sd_correct"].astype(bool)
    kind = [("b " if s else "c ") if s != d else "" for s, d in zip(se, sd, strict=True)]
    order = sorted(
        range(len(rows)), key=lambda i: (kind[i] == "", kind[i], str(rows["task_id"].iloc[i]))
    )
    return [
        (
            f"{kind[i]}{rows['task_id'].iloc[i]} ({rows['run_id'].iloc[i]})".strip(),
            f"{rows['run_id'].iloc[i]}|{rows['task_id'].iloc[i]}",
        )
        for i in order
    ]


def trace_markdown(row: dict | None, arm: str) -> str:
    if row is None:
        return f"_no {arm.upper()} trace_"
    verdict = "correct" if row.get("correct") else "wrong"
    lines = [
        f"#### {arm.upper()} arm — {verdict}",
        f"calls {row.get('n_calls')} · latency {row.get('latency_s', 0):.1f} s · tokens {row.get('prompt_tokens')}+{row.get('completion_tokens')}",
    ]
    if row.get("error"):
        lines.append(f"**error:** `{row['error']}`")
    for message in row.get("messages") or []:
        lines.append(
            f"**{message.get('role')}**" + (f" ({message['name']})" if message.get("name") else "")
        )
        lines.append(_fence(message.get("content") or ""))
        if message.get("tool_calls"):
            lines.append(_fence(_pretty_json(message["tool_calls"]), "json"))
    lines += ["**extracted**", _fence(row.get("extracted") or "")]
    return "\n\n".join(lines)


def _fence(text: str, lang: str = "") -> str:
    ticks = "`" * max(3, _longest_backtick_run(text) + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}"


def _longest_backtick_run(text: str) -> int:
    best = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        best = max(best, run)
    return best


def _pretty_json(text: str) -> str:
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(text)


def _join(sep: str):
    def join(values: object) -> str:
        if values is None:
            return ""
        return sep.join(str(v) for v in list(values))

    return join


def _num(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


def _signed(value: float) -> str:
    return f"{'−' if value < 0 else '+'} {abs(value):.2f}"


def _fmt(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.2f}"

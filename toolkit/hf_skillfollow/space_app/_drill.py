"""Cell drill-down: 2×2 matrices, the OAE decomposition, flipped tasks, a per-skill tally and traces.

Everything here is HTML built from escaped text: task ids, queries, skill names and traces are
data from submitters and models, never markup.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Sequence

import pandas as pd

from hf_skillfollow import formatting as fmt
from hf_skillfollow._escape import for_html as escape
from hf_skillfollow.space_app._board import ALL_SOURCES, Board
from hf_skillfollow.space_app._labels import SEARCH_ONLY
from hf_skillfollow.space_app._shown import capped
from hf_skillfollow.space_app._sources import SOURCE, source_id
from hf_skillfollow.space_app._table import (
    DISAGREE_MARK,
    ERROR_HEAVY,
    SELF_JUDGED,
    errors_text,
    is_error_heavy,
    not_reported,
)

NO_CELL = "Pick a cell: click a row of the leaderboard or a point of a plot."
HARMFUL, HELPFUL = "harmful (c)", "helpful (b)"
#: Trace messages longer than this start collapsed (system prompts, returned SKILL.md texts).
COLLAPSE_CHARS = 600
#: Characters of one trace text (message, answer, error) sent to the browser, and messages
#: per arm: a published trace is the submitter's, so one drill-down costs bounded bytes.
MESSAGE_CHARS = 20_000
MAX_MESSAGES = 200


def find_cell(board: Board, key: str | None) -> tuple[pd.Series | None, bool]:
    """The cell row for a drill-down key (`_board.cell_key`: "cell_id@source", pooled across
    sources "cell_id@all", per run "...|run_id")."""
    if not key:
        return None, False
    views = [(False, False)]
    if f"@{ALL_SOURCES}" in key:
        views.append((False, True))
    if "|" in key:
        views.append((True, False))
    for per_run, across in views:
        cells = board.cells(runs_separately=per_run, pool_sources=across)
        hit = cells[cells["_key"] == key]
        if len(hit):
            break
    else:
        hit, per_run = _bare_key(board, key)
        if hit is None:
            return None, per_run
    from hf_skillfollow.space_app._annotations import cell_markdown

    cell = hit.iloc[0].copy()
    cell["_annotations"] = cell_markdown(board, cell)  # shown under the decomposition
    return cell, per_run


def _bare_key(board: Board, key: str) -> tuple[pd.DataFrame | None, bool]:
    """A link written before keys named the source ("cell_id", "cell_id|run_id"): the cell
    when exactly one source has that cell_id; None when none or several do (which source a
    bare link meant cannot be told, so none is picked)."""
    per_run = "|" in key
    if "@" in key:
        return None, per_run
    cells = board.cells(runs_separately=per_run)
    ids = cells["cell_id"].astype(str)
    hit = cells[ids + ("|" + cells["run_id"].astype(str) if per_run else "") == key]
    return (hit if len(hit) == 1 else None), per_run


_HEADER_FIELDS = (
    "model", "backend", "benchmark", "benchmark_version", "partition", "skill_pool", "condition",
    "access", "retriever", "top_k", "max_calls", "temperature", "max_tokens", "tool_mode",
    "retrieval_policy", "judged_by", "provenance", "harness", "agent", "cell_id", SOURCE,
    "conflicts",
)  # fmt: skip
#: Header fields left out when empty (an unjudged cell has no judge).
_OPTIONAL = {"conflicts", "judged_by"}


def header_html(cell: pd.Series, key: str) -> str:
    """Title and identity of the cell; `data-sf-open` puts the cell into the page URL."""
    fields = [*_HEADER_FIELDS, "run_id" if "run_id" in cell.index else "n_runs"]
    # Settings that had no effect on what was measured are left out (a catalog cell searched
    # nothing, so its retriever and top_k say nothing about it).
    idle = set(SEARCH_ONLY) if str(cell.get("access") or "search") != "search" else set()
    items = " · ".join(
        f"<b>{escape(f)}</b> <code>{escape(_capped(cell[f]))}</code>"
        for f in fields
        if f in cell.index and f not in idle and not (f in _OPTIONAL and not cell[f])
    )
    return (
        f'<div class="sf-drill-head" data-sf-open="{escape(key)}">'
        f"<h3>{escape(_capped(cell['label']))}</h3>"
        f'<p class="sf-protocol">{escape(protocol_sentence(cell))}</p>'
        f"{_errors_line(cell)}<p>{items}</p></div>"
    )


def _errors_line(cell: pd.Series) -> str:
    """The cell's errored pairs; an error-heavy cell says its effects are not reported."""
    line = f'<p class="sf-errors"><b>errored pairs</b> {escape(errors_text(cell))}'
    if is_error_heavy(cell):
        line += (
            f' — <span class="sf-flag sf-heavy">{DISAGREE_MARK} {ERROR_HEAVY}: '
            f"{escape(not_reported(cell))}</span> (the errors were scored incorrect, so the "
            "effects would measure the endpoint, not the skills)"
        )
    return line + "</p>"


def protocol_sentence(cell: pd.Series) -> str:
    """How this cell was measured, in words."""
    task_set = _capped(cell.get("task_set") or cell.get("benchmark"))
    judge = cell.get("judge_model")
    judged = f"; answers graded by the judge {_capped(judge)}" if judge else ""
    if judge and judge == cell.get("model"):
        judged += f" ({SELF_JUDGED})"
    return _capped(
        f"Each task of {task_set} was run twice with {_capped(cell.get('model'))}: with skills of "
        f"the pool {_capped(cell.get('skill_pool'))} ({_capped(cell.get('condition'))}) by "
        f"{_capped(cell.get('protocol'))}, and without any skill tool{judged}."
    )


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
    """OAE = coverage·RAE + (1−coverage)·Δskip with the cell's own numbers, then the cell's
    annotations."""
    annotations = str(cell.get("_annotations") or "")
    return "\n\n".join(p for p in (_decomposition(cell), annotations) if p)


def _decomposition(cell: pd.Series) -> str:
    from hf_skillfollow.report import never_triggered

    if is_error_heavy(cell):  # the same numbers the table withholds
        return f"**Decomposition.** {not_reported(cell)}: OAE, RAE and Δskip are not shown."
    n, n_cond = int(cell["n_pairs"]), int(cell["n_cond"])
    oae, rae, skip = (_num(cell[c]) for c in ("oae", "rae", "delta_skip"))
    cov = n_cond / n if n else math.nan
    if math.isnan(rae):
        return (
            f"**Decomposition.** RAE is {never_triggered(cell)} (n_cond = 0), "
            f"so OAE = Δskip = {_fmt(oae)} pp."
        )
    skip_term = (1 - cov) * skip if not math.isnan(skip) else 0.0
    skip_text = (
        f"(1 − {cov:.4f}) × ({_fmt(skip)})"
        if not math.isnan(skip)
        else "0 (Δskip omitted: n_skip = 0)"
    )
    total = cov * rae + skip_term
    return (
        "**Decomposition.** OAE = coverage·RAE + (1 − coverage)·Δskip\n\n"
        f"{_fmt(oae)} = {cov:.4f} × ({_fmt(rae)}) + {skip_text} = {_fmt(cov * rae)} {_signed(skip_term)} = **{_fmt(total)}** pp\n\n"
        f"RAE {_fmt(rae)} pp, 95% CI [{_fmt(_num(cell['rae_ci_low']))}, {_fmt(_num(cell['rae_ci_high']))}], "
        f"McNemar p = {_num(cell['mcnemar_p']):.3g} · OAE 95% CI [{_fmt(_num(cell['oae_ci_low']))}, {_fmt(_num(cell['oae_ci_high']))}]"
    )


def flips(rows: pd.DataFrame) -> pd.DataFrame:
    """Helpful (b) and harmful (c) tasks, harmful first, with what retrieval returned and the
    source whose traces belong to it."""
    columns = ["flip", "task_id", "run_id", "subset", "skills", "queries", SOURCE]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    se, sd = rows["se_correct"].astype(bool), rows["sd_correct"].astype(bool)
    flipped = rows[se != sd]
    invoked = flipped["invoked"].astype(bool) & flipped["returned"].astype(bool)
    out = pd.DataFrame(
        {
            "flip": flipped["se_correct"].astype(bool).map({True: HELPFUL, False: HARMFUL}),
            "task_id": flipped["task_id"].astype(str),
            "run_id": flipped["run_id"].astype(str),
            "subset": invoked.map({True: "retrieval-invoked", False: "skip"}),
            "skills": flipped["skills_returned"].map(_as_list),
            "queries": flipped["queries"].map(_as_list),
            SOURCE: flipped[SOURCE].astype(str),
        }
    )
    rank = (out["flip"] == HELPFUL).astype(int) * 2 + (out["subset"] == "skip").astype(int)
    natural = out["task_id"].map(natural_key)
    order = sorted(
        range(len(out)), key=lambda i: (rank.iloc[i], natural.iloc[i], out["run_id"].iloc[i])
    )
    return out.iloc[order]


def natural_key(text: str) -> tuple:
    """Digits compare as numbers: Mbpp/70 before Mbpp/596, as a reader expects."""
    return tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part)
        for part in re.split(r"(\d+)", text)
        if part
    )


def skill_tally(rows: pd.DataFrame) -> pd.DataFrame:
    """Per returned skill: harmful and helpful flips it was returned on, and tasks it reached."""
    columns = ["skill", "harmful", "helpful", "returned_on", "harmful_alone", "helpful_alone"]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    harmful, helpful, reached = Counter(), Counter(), Counter()
    harmful_alone, helpful_alone = Counter(), Counter()
    for skills, se, sd in zip(
        rows["skills_returned"], rows["se_correct"], rows["sd_correct"], strict=True
    ):
        names = set(_as_list(skills))
        reached.update(names)
        if bool(se) != bool(sd):
            (helpful if bool(se) else harmful).update(names)
            if len(names) == 1:  # the one skill received: the flip is that skill's alone
                (helpful_alone if bool(se) else harmful_alone).update(names)
    table = pd.DataFrame(
        [(s, harmful[s], helpful[s], reached[s], harmful_alone[s], helpful_alone[s])
         for s in reached],
        columns=columns,
    )  # fmt: skip
    return table.sort_values(
        ["harmful", "helpful", "skill"], ascending=[False, True, True]
    ).reset_index(drop=True)


#: Flipped tasks listed (harmful first): a published cell may hold a million rows.
SHOWN_FLIPS = 1_000


def flips_html(table: pd.DataFrame) -> str:
    """The flipped tasks; each task id opens its SE/SD traces."""
    if table.empty:
        return '<p class="sf-empty">No flipped tasks in this cell.</p>'
    runs = table["run_id"].nunique() > 1
    head = "<th>flip</th><th>task</th>" + ("<th>run</th>" if runs else "")
    head += "<th>subset</th><th>skills returned</th><th>queries</th>"
    body = []
    for r in table.head(SHOWN_FLIPS).to_dict("records"):
        kind = "harmful" if r["flip"] == HARMFUL else "helpful"
        task = trace_key(r[SOURCE], r["run_id"], r["task_id"])
        body.append(
            f'<tr class="sf-{kind}" data-flip="{kind}">'
            f"<td>{escape(r['flip'])}</td>"
            f'<td><button class="sf-task" data-sf-task="{escape(task)}" title="Show the SE and SD traces">{escape(r["task_id"])}</button></td>'
            + (f"<td>{escape(r['run_id'])}</td>" if runs else "")
            + f"<td>{escape(r['subset'])}</td><td>{escape(_joined(r['skills'], '; ', 'skills'))}</td>"
            f'<td class="sf-wrap">{escape(_joined(r["queries"], " | ", "queries"))}</td></tr>'
        )
    n_harm = int((table["flip"] == HARMFUL).sum())
    more = (
        f'<p class="sf-sub">{len(table) - SHOWN_FLIPS:,} more flipped tasks not shown '
        "(the CSV and the API carry the cell's counts).</p>"
        if len(table) > SHOWN_FLIPS
        else ""
    )
    return (
        f"<p><b>{n_harm}</b> harmful and <b>{len(table) - n_harm}</b> helpful flips; click a task id for its traces.</p>"
        f'<div class="sf-table-wrap"><table class="sf-table sf-flips"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>{more}"
    )


def _capped(value: object) -> str:
    return capped(value, 400)


def _joined(values: Sequence[object], sep: str, what: str) -> str:
    """A row's list (queries, returned skills) as one cell: its first 400 characters, with
    how many there were when cut. A row may hold thousands of them (a 16 KB run file made a
    12 MB flipped-task table), and every visitor who opens the cell is sent the table."""
    text = sep.join(map(str, values))
    return text if len(text) <= 400 else f"{_capped(text)} ({len(values):,} {what})"


def trace_key(source: str, run_id: str, task_id: str) -> str:
    """The traces key of one task: "<source id>|<run_id>|<task_id>"."""
    return f"{source_id(source)}|{run_id}|{task_id}"


#: Skills the drill-down's tally lists (most harmful first); a row may return thousands.
SHOWN_SKILLS = 50


def tally_html(table: pd.DataFrame) -> str:
    """The per-skill tally, most harmful first, up to `SHOWN_SKILLS` rows (then how many
    more), each name cut as the table cuts names: 12 rows of 2,000 distinct names made a
    28 MB tally, sent to whoever opened the cell."""
    if table.empty:
        return '<p class="sf-empty">No skill was returned in this cell.</p>'
    more = len(table) - SHOWN_SKILLS
    body = "".join(
        f'<tr data-skill="{escape(capped(r.skill))}"><td>{escape(capped(r.skill))}</td>'
        f'<td class="sf-num{" sf-bad" if r.harmful else ""}">{r.harmful}</td>'
        f'<td class="sf-num">{r.helpful}</td><td class="sf-num">{r.returned_on}</td>'
        f'<td class="sf-num{" sf-bad" if r.harmful_alone else ""}">{r.harmful_alone}</td>'
        f'<td class="sf-num">{r.helpful_alone}</td></tr>'
        for r in table.head(SHOWN_SKILLS).itertuples(index=False)
    )
    if more > 0:
        body += f'<tr><td colspan="6" class="sf-sub">{more:,} more skills not shown</td></tr>'
    return (
        '<div class="sf-table-wrap"><table class="sf-table sf-tally"><thead><tr>'
        '<th title="Skill returned by search_skills">skill</th>'
        '<th title="Harmful flips (SD correct, SE wrong) on tasks where this skill was returned">harmful flips</th>'
        '<th title="Helpful flips (SD wrong, SE correct) on tasks where this skill was returned">helpful flips</th>'
        '<th title="Tasks where this skill was returned">returned on</th>'
        '<th title="Harmful flips where it was the only skill received: the flip is its alone">'
        "harmful, alone</th>"
        '<th title="Helpful flips where it was the only skill received">helpful, alone</th>'
        f"</tr></thead><tbody>{body}</tbody></table></div>"
    )


def traces_html(se: dict | None, sd: dict | None, task: str) -> str:
    """SE and SD traces side by side; long messages collapsed, long lines wrapped."""
    return (
        f'<div class="sf-traces" data-sf-shown-task="{escape(task)}">'
        f"{_trace(se, 'se')}{_trace(sd, 'sd')}</div>"
    )


def _trace(row: dict | None, arm: str) -> str:
    if row is None:
        return f'<section class="sf-trace"><h4>{arm.upper()}: no trace</h4></section>'
    verdict = "correct" if row.get("correct") else "wrong"
    parts = [
        f'<h4 class="sf-{verdict}">{arm.upper()} arm — {verdict}</h4>',
        f'<p class="sf-sub">calls {row.get("n_calls")} · latency {_num(row.get("latency_s")):.1f} s · '
        f"tokens {row.get('prompt_tokens')}+{row.get('completion_tokens')}</p>",
    ]
    if row.get("error"):
        parts.append(f"<p><b>error:</b> <code>{escape(_cut(row['error']))}</code></p>")
    messages = list(row.get("messages") or [])
    for message in messages[:MAX_MESSAGES]:
        role = _cut(message.get("role"), 40)
        name = f" ({_cut(message['name'], 200)})" if message.get("name") else ""
        text = str(message.get("content") or "")
        if message.get("tool_calls"):
            text += ("\n" if text else "") + _pretty_json(message["tool_calls"])
        text = _cut(text)
        label = f"{role}{name}"
        if len(text) > COLLAPSE_CHARS or role in {"system", "tool"}:
            parts.append(
                f'<details class="sf-msg sf-{escape(role)}"><summary>{escape(label)} · {len(text):,} chars</summary>'
                f"<pre>{escape(text)}</pre></details>"
            )
        else:
            parts.append(
                f'<div class="sf-msg sf-{escape(role)}"><b>{escape(label)}</b><pre>{escape(text)}</pre></div>'
            )
    if len(messages) > MAX_MESSAGES:
        parts.append(
            f'<p class="sf-sub">{len(messages) - MAX_MESSAGES:,} more messages not shown</p>'
        )
    parts.append(
        f'<div class="sf-msg"><b>extracted answer</b><pre>{escape(_cut(row.get("extracted") or ""))}</pre></div>'
    )
    parts.extend(_judge_html(row))
    return f'<section class="sf-trace sf-arm-{arm}">{"".join(parts)}</section>'


#: Expectations of one judge record shown in a trace, and characters of each repeat's
#: evidence: a record is the submitter's, and its lists and strings have no length of their
#: own (200,000 expectations were 11.9 MB of HTML for every visitor opening the task).
SHOWN_EXPECTATIONS = 50
EVIDENCE_CHARS = 2_000


def _judge_html(row: dict) -> list[str]:
    """An expectations task's judge: its identity and each expectation's majority verdict, with
    every repeat's evidence (docs/tasks.md); nothing for other tasks. A record of another
    shape is one note saying what is wrong, never an exception that blanks the traces."""
    from hf_skillfollow._text import loads_untrusted

    text = row.get("judge_verdicts")
    if not text:
        return []
    try:
        record = loads_untrusted(text)
    except ValueError as exc:
        return [_judge_note(f"not JSON ({str(exc)[:80]})")]
    if not isinstance(record, dict):
        return [] if record is None else [_judge_note("not a JSON object")]
    majority, repeats = record.get("majority", []), record.get("repeats", [])
    if not isinstance(majority, list) or not isinstance(repeats, list):
        return [_judge_note("'majority' or 'repeats' is not a list")]
    if not all(isinstance(r, dict) for r in repeats):
        return [_judge_note("a repeat is not an object")]
    # a repeat whose reply did not parse has "verdicts": null (judge._grade.summarise): no vote
    verdicts = [[] if r.get("verdicts") is None else r["verdicts"] for r in repeats]
    if not all(isinstance(v, list) and all(isinstance(x, dict) for x in v) for v in verdicts):
        return [_judge_note("a repeat is not an object with a list of verdict objects")]
    # the statements themselves, where the record carries them (docs/tasks.md)
    statements = record.get("expectations")
    statements = statements if isinstance(statements, list) else []
    items = []
    for i, met in enumerate(majority[:SHOWN_EXPECTATIONS]):
        said = [v[i] for v in verdicts if i < len(v)]
        evidence = " | ".join(_cut(x.get("evidence", ""), EVIDENCE_CHARS) for x in said)
        votes = "".join("✓" if x.get("passed") else "✗" for x in said)
        stated = (
            f' <q class="sf-expect">{escape(_cut(statements[i], 2_000))}</q>'
            if i < len(statements)
            else ""
        )
        items.append(
            f"<li>e{i + 1}{stated}: <b>{'met' if met else 'not met'}</b> ({votes}) "
            f'<span class="sf-sub">{escape(evidence)}</span></li>'
        )
    if len(majority) > SHOWN_EXPECTATIONS:
        items.append(
            f'<li class="sf-sub">{len(majority) - SHOWN_EXPECTATIONS:,} more expectations '
            "not shown</li>"
        )
    failed = " (grading failure)" if record.get("grading_failure") else ""
    return [
        f'<div class="sf-msg"><b>judge {escape(_capped(record.get("judge", "")))}{failed}</b>'
        f"<ul>{''.join(items)}</ul></div>"
    ]


def _judge_note(problem: str) -> str:
    return (
        f'<div class="sf-msg"><b>judge record not shown</b>: '
        f"{escape(problem)} (not a record hf-skillfollow writes)</div>"
    )


def _as_list(values: object) -> list[str]:
    if values is None or (isinstance(values, float) and math.isnan(values)):
        return []
    return [str(v) for v in list(values)]  # type: ignore[call-overload]


def _cut(value: object, limit: int = MESSAGE_CHARS) -> str:
    text = str(value)
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… {len(text) - limit:,} more characters not shown"


def _pretty_json(text: object) -> str:
    """Tool calls indented for reading, or as written when they are not JSON or indenting
    them would add more than a message shows (indentation grows with depth: `[` nested 900
    deep, 1.8 KB, indented to 1.6 MB, and 200 such messages took seconds of the server's CPU)."""
    if len(str(text)) > MESSAGE_CHARS:  # not worth parsing: it is cut anyway
        return str(text)
    from hf_skillfollow._text import loads_untrusted

    try:  # loads_untrusted: `[` nested 9,000 deep raised RecursionError, blanking the traces
        value = loads_untrusted(str(text))
    except (TypeError, ValueError):
        return str(text)
    if _indent_cost(value) > MESSAGE_CHARS:
        return str(text)
    return json.dumps(value, indent=2, ensure_ascii=False)


def _indent_cost(value: object) -> int:
    """About how many characters `indent=2` adds to `value`: a line break and 2 spaces per
    level for each element; counting stops past `MESSAGE_CHARS`."""
    cost, stack = 0, [(value, 1)]
    while stack and cost <= MESSAGE_CHARS:
        node, depth = stack.pop()
        items = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        for item in items:
            cost += 2 * depth + 1
            stack.append((item, depth + 1))
    return cost


def _num(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


def _signed(value: float) -> str:
    return f"{'−' if value < 0 else '+'} {abs(value):.2f}"


def _fmt(value: float) -> str:
    return fmt.UNDEFINED if math.isnan(value) else f"{value:.2f}"

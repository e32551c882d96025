"""The report's sections read from traces: cost per arm, judge noise, grader-addressing answers
and, for skill-evals, one row per skill (docs/tasks.md, "Report").

They follow the cell table of `report` and `run`; figures are computed in
`metrics._own` from the traces files beside the transitions (local sources; a Hub id's
traces are not downloaded for this).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: the traces columns these sections read (older files may lack the grading ones)
_COLUMNS = (
    "run_id", "cell_id", "task_id", "arm", "prompt_tokens", "completion_tokens", "latency_s",
    "grader", "judge", "judge_verdicts", "addresses_grader",
)  # fmt: skip


def trace_files(sources: Sequence[str | Path]) -> list[Path]:
    """The traces parquet files beside local transitions sources."""
    files: list[Path] = []
    for source in sources:
        path = Path(source).expanduser()
        if path.is_file() and path.name == "transitions.parquet":
            candidates = [path.with_name("traces.parquet")]
        elif path.is_dir():
            candidates = sorted(path.rglob("traces.parquet")) + sorted(
                (path / "data" / "traces").glob("*.parquet")
            )
        else:
            candidates = []
        files.extend(p for p in candidates if p.is_file() and p not in files)
    return files


def read_trace_rows(sources: Sequence[str | Path]) -> list[dict[str, Any]]:
    """The rows (only the columns these sections read) of every traces file of `sources`."""
    import pyarrow.parquet as pq

    from hf_skillfollow.metrics._own import judge_record_problem

    rows: list[dict[str, Any]] = []
    for path in trace_files(sources):
        have = set(pq.read_schema(path).names)
        table = pq.read_table(path, columns=[c for c in _COLUMNS if c in have])
        for i, row in enumerate(table.to_pylist()):
            problem = judge_record_problem(row.get("judge_verdicts"))
            if problem:
                # a downloaded or edited traces file: one line naming it, not a traceback
                raise ValueError(
                    f"{path}: row {i}: column 'judge_verdicts': {problem} "
                    "(not a judge record hf-skillfollow writes)"
                )
            rows.append(row)
    return rows


def _f(x: float, digits: int = 1) -> str:
    return "—" if math.isnan(x) else f"{x:.{digits}f}"


def _signed(x: float, digits: int = 1) -> str:
    return "—" if math.isnan(x) else f"{x:+.{digits}f}"


_TRANSITION_COLUMNS = ["run_id", "cell_id", "task_id", "benchmark", "se_correct", "sd_correct",
                       "returned", "skills_returned"]  # fmt: skip


def text_for(table: Any, sources: Sequence[str | Path], fmt: str) -> str:
    """The sections for a transitions table read from `sources` (table and markdown forms).

    `table` is what the cell table was computed from (imported cells' rules applied:
    `metrics.imported_view`); an imported cell with pairs of unknown activation has no RAE
    here either (`metrics.activation_unknown`, as `mark_unknown` does for the cell table)."""
    if fmt not in ("table", "markdown"):
        return ""
    unknown: Sequence[str] = ()
    if "detector" in table.column_names:
        from hf_skillfollow.metrics import activation_unknown

        unknown = list(activation_unknown(table.select(["cell_id", "detector"]).to_pandas()))
    transitions = table.select(_TRANSITION_COLUMNS).to_pylist()
    return sections(transitions, read_trace_rows(sources), fmt, unknown)


def with_json(text: str, table: Any, sources: Sequence[str | Path]) -> str:
    """`report --format json`: each cell object gains an "own" object (cost, judge_noise,
    addresses_grader, per_skill) when its traces are beside the sources; NaN becomes null."""
    import json

    from hf_skillfollow.metrics import _own

    traces = read_trace_rows(sources)
    if not traces:
        return text
    transitions = table.select(_TRANSITION_COLUMNS).to_pylist()
    figures = {
        "cost": _own.cost(traces),
        "judge_noise": _own.judge_noise(transitions, traces),
        "addresses_grader": _own.addressing(traces),
    }
    skills: dict[str, list[dict[str, Any]]] = {}
    for row in _own.per_skill(transitions, traces):
        skills.setdefault(row["cell_id"], []).append(row)
    records = json.loads(text)
    for record in records:
        cell = record.get("cell_id")
        own = {k: v[cell] for k, v in figures.items() if cell in v}
        if "addresses_grader" in own:
            own["addresses_grader_detector"] = detector_note()
        if cell in skills:
            own["per_skill"] = skills[cell]
        if own:
            record["own"] = _plain(own)
    return json.dumps(records, indent=2, ensure_ascii=False) + "\n"


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return None if isinstance(value, float) and math.isnan(value) else value


def sections(
    transitions: list[dict[str, Any]], traces: list[dict[str, Any]], fmt: str,
    unknown: Sequence[str] = (),
) -> str:  # fmt: skip
    """The sections as text (`table`) or Markdown (`markdown`); empty when nothing applies.
    `unknown`: cells whose RAE is undefined (activation unknown), shown as —."""
    from hf_skillfollow.metrics import _own

    if not traces:
        return ""
    rae = {cell: "—" if cell in unknown else _signed(v)
           for cell, v in _own.rae_by_cell(transitions).items()}  # fmt: skip
    blocks = []
    costs = _own.cost(traces)
    if costs:
        rows = [
            [cell[:8], rae.get(cell, "—"), _f(c["se_tokens"]), _f(c["sd_tokens"]), _signed(c["d_tokens"]),
             _f(c["se_seconds"], 2), _f(c["sd_seconds"], 2), _signed(c["d_seconds"], 2)]
            for cell, c in sorted(costs.items())
        ]  # fmt: skip
        blocks.append(_table(
            "Cost per task (mean over tasks; tokens = prompt + completion)",
            ["cell", "RAE", "SE tokens", "SD tokens", "Δ tokens", "SE s", "SD s", "Δ s"], rows, fmt,
        ))  # fmt: skip
    noise = _own.judge_noise(transitions, traces)
    addressing = _own.addressing(traces)
    if noise or addressing:
        cells = sorted(set(noise) | set(addressing))
        rows = []
        for cell in cells:
            n = noise.get(cell, {})
            a = addressing.get(cell, {"se": 0, "sd": 0})
            rows.append([
                cell[:8], rae.get(cell, "—"), str(n.get("answers", 0)), _f(n.get("self_disagreement", math.nan)),
                str(n.get("ties", 0)), str(n.get("grading_failures", 0)),
                f"{n.get('b_explainable', 0)}/{n.get('b', 0)}", f"{n.get('c_explainable', 0)}/{n.get('c', 0)}",
                str(a["se"]), str(a["sd"]),
            ])  # fmt: skip
        blocks.append(_table(
            "Judge noise and answers addressing a grader (self-disagreement: % of judged expectation "
            "items whose repeats disagree; b/c explainable: flips between two judged answers that one "
            f"judge disagreement could turn; addr. grader: {detector_note()})",
            ["cell", "RAE", "judged answers", "self-disagree %", "ties", "grading failures",
             "b explainable", "c explainable", "addr. grader SE", "addr. grader SD"], rows, fmt,
        ))  # fmt: skip
    skills = _own.per_skill(transitions, traces)
    if skills:
        rows = [
            [s["cell_id"][:8], s["skill"], str(s["n"]), _f(s["coverage"]), str(s["b"]), str(s["c"]),
             _signed(s["rae"]), _f(s["se_expectations"]), _f(s["sd_expectations"])]
            for s in skills
        ]  # fmt: skip
        blocks.append(_table(
            "Per skill, on its own evals (coverage: the skill itself retrieved; RAE over those evals)",
            ["cell", "skill", "n", "coverage %", "b", "c", "RAE", "SE expectations %",
             "SD expectations %"], rows, fmt,
        ))  # fmt: skip
    return "".join(blocks)


def detector_note() -> str:
    """What the grader-addressing counts are, with the detector's measured rates."""
    from hf_skillfollow.judge._detect import MEASURED as m

    return (
        "a lexical flag for a human to read those traces, not a verdict; on its labelled corpus "
        f"(bench/grader_addressing.py) precision {m['precision']:.1f} %, recall {m['recall']:.1f} % "
        f"({m['positives']} + {m['negatives']} answers; on the {m['held_out_positives']} + "
        f"{m['held_out_negatives']} written after its last change, {m['held_out_precision']:.1f} % "
        f"and {m['held_out_recall']:.1f} %)"
    )


_FIGURE = re.compile(r"[-+]?[0-9.,/%]*|—")


def _table(title: str, header: list[str], rows: list[list[str]], fmt: str) -> str:
    from functools import partial

    from hf_skillfollow._escape import for_markdown, for_terminal_text

    # Cell ids and skill names come from the rows: data, escaped for where the table goes
    # (figures, made of digits and signs only, are inert in both and stay as they read).
    escape = for_markdown if fmt == "markdown" else partial(for_terminal_text, keep="")
    rows = [[v if _FIGURE.fullmatch(v) else escape(v) for v in row] for row in rows]
    if fmt == "markdown":
        lines = [f"\n### {title}\n", "| " + " | ".join(header) + " |",
                 "|" + "|".join("---" for _ in header) + "|"]  # fmt: skip
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines) + "\n"
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = [f"\n{title}", "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines) + "\n"

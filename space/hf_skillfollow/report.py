"""Render a cells leaderboard (from `metrics.compute_cells`) as a table, JSON, CSV or Markdown."""

from __future__ import annotations

import io
import json
import math
import os
import shutil
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any

from hf_skillfollow import formatting as fmt
from hf_skillfollow._escape import for_markdown, for_terminal, for_terminal_text, frame_to_csv
from hf_skillfollow.columns import agent_ran

if TYPE_CHECKING:
    import pandas as pd

FORMATS = ("table", "json", "csv", "markdown")

RAE_CAVEAT = (
    "RAE is a protocol-specific paired signal over the tasks the SE run chose to retrieve on, "
    "not a causal effect of the skill."
)
NEVER_RETRIEVED = "undefined: the model never retrieved a skill"
#: the same for a cell whose activation an agent's own transcript decided (imported, or run
#: through a harness): the agent loads skills itself, it does not retrieve them from us
NEVER_LOADED = "undefined: the agent never loaded a skill"
#: the trigger event of such cells, added to the footer when the leaderboard has one
LOADED_TRIGGER = (
    "For imported and harness-run cells the trigger event is the agent loading a skill, read "
    "from its own transcript (a SKILL.md read or a skill tool call; see their section)."
)
_HASH_COLUMNS = ("cell_id", "skill_pool_hash", "prompts_hash")
_FALLBACK_LABEL = ("model", "benchmark", "condition")


def render(
    cells: pd.DataFrame,
    fmt: str = "table",
    *,
    width: int | None = None,
    notes: str | None = None,
    repeats: tuple[pd.DataFrame, pd.DataFrame] | None = None,
) -> str:
    """The leaderboard as text. `notes` (resamples, seed, ...) is added under the table forms.

    `repeats` is `metrics.repeat_summary(...)` for the same cells: JSON then gives each cell a
    "repeats" object, CSV gains its per-cell columns, and the table forms a second table.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {list(FORMATS)}")
    if repeats is not None:
        return _render_with_repeats(cells, fmt, width, notes, repeats)
    if fmt == "json":
        return json.dumps(to_records(cells), indent=2, ensure_ascii=False) + "\n"
    if fmt == "csv":
        return frame_to_csv(cells)
    if fmt == "markdown":
        return _markdown(cells, notes)
    return _rich_table(cells, width, notes)


def arm_integrity_text(table: Any, fmt: str) -> str:
    """The arm-integrity line under the table forms: pairs checked and pairs whose skill-disabled
    arm held pool skill content (the `arm_integrity` column; docs/design.md, "Arm integrity")."""
    if fmt not in ("table", "markdown") or "arm_integrity" not in table.column_names:
        return ""
    from hf_skillfollow._arm_integrity import is_violation

    rows = table.select(["cell_id", "arm_integrity"]).to_pylist()
    checked = [r for r in rows if r["arm_integrity"] not in (None, "unchecked")]
    if not checked:
        return ""
    bad = [r for r in checked if is_violation(r["arm_integrity"])]
    escape = for_markdown if fmt == "markdown" else partial(for_terminal_text, keep="")
    line = (
        f"Arm integrity: {len(checked)} pair(s) checked, {len(bad)} with a violation (pool "
        "skill content in the skill-disabled arm)"
    )
    if bad:
        cells = Counter(str(r["cell_id"]) for r in bad)
        label = _short_ids(cells)
        per_cell = ", ".join(f"{label[cell]}: {n}" for cell, n in sorted(cells.items()))
        line += f"; per cell {per_cell}; first: {bad[0]['arm_integrity'][:300]}"
    return "\n" + escape(line) + "\n"


def _short_ids(ids: Iterable[str], shortest: int = 8) -> dict[str, str]:
    """Each id's first `shortest` characters, more where another id shares them, so two cells
    are never shown as one."""
    ordered = sorted(set(ids))
    labels: dict[str, str] = {}
    for i, cid in enumerate(ordered):
        # in sorted order the ids sharing the longest prefix with this one are its neighbours
        shared = [len(os.path.commonprefix([cid, other])) for other in ordered[max(i - 1, 0) : i + 2]
                  if other != cid]  # fmt: skip
        labels[cid] = cid[: max([shortest - 1, *shared]) + 1]
    return labels


def to_records(cells: pd.DataFrame) -> list[dict[str, Any]]:
    """One JSON-ready object per cell: plain Python values, NaN and missing as None."""
    return [{str(k): _plain(v) for k, v in row.items()} for row in cells.to_dict("records")]


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalar
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def identity_columns(cells: pd.DataFrame) -> list[str]:
    from hf_skillfollow.metrics import METRIC_COLUMNS
    from hf_skillfollow.metrics._imported import ARM_COLUMNS

    return [c for c in cells.columns if c not in METRIC_COLUMNS and c not in ARM_COLUMNS]


def _label_columns(cells: pd.DataFrame) -> list[str]:
    """Identity columns that tell the rows apart (hashes only when nothing else does)."""
    ids = identity_columns(cells)
    varying = [c for c in ids if c not in _HASH_COLUMNS and cells[c].nunique(dropna=False) > 1]
    if varying:
        return varying
    fallback = [c for c in _FALLBACK_LABEL if c in ids]
    return fallback or ids[:1]


def _label(row: dict[str, Any], columns: list[str], escape: Callable[[object], str]) -> str:
    """The row's identity as `escape` writes it for the output (names are submitter text)."""
    return " · ".join(escape(row[c]) for c in columns)


def _with_ci(row: dict[str, Any], name: str) -> str:
    return fmt.with_interval(row[name], row[name + "_ci_low"], row[name + "_ci_high"])


def _error_heavy_text(row: dict[str, Any]) -> str | None:
    """What an error-heavy cell shows instead of an effect: its errors were scored incorrect,
    so a number there would measure the endpoint (a model failing every request read as
    `OAE +0.0`, "never retrieved a skill")."""
    if not row.get("error_heavy"):
        return None
    return fmt.not_reported(row["error_rate"])


def _errors_text(row: dict[str, Any]) -> str:
    if "error_rate" not in row:
        return fmt.undefined("not counted")
    return f"{fmt.pp(row['error_rate'], signed=False)}% ({row['n_errored']})"


def _oae_text(row: dict[str, Any]) -> str:
    return _error_heavy_text(row) or _with_ci(row, "oae")


def _rae_text(row: dict[str, Any]) -> str:
    heavy = _error_heavy_text(row)
    if heavy:
        return heavy
    if _activation_unknown(row):
        return fmt.undefined(row["rae_reason"])
    if row["n_cond"] == 0:
        return never_triggered(row)
    return _with_ci(row, "rae") + ("" if row["reportable"] else " *")


def never_triggered(row: Any) -> str:
    """Why RAE is undefined on a cell with no task in S_call, in that cell's terms: the chat
    loop's model retrieves skills from us; an agent (imported or harness-run) loads them."""
    return NEVER_LOADED if agent_ran(row.get("provenance")) else NEVER_RETRIEVED


def _activation_unknown(row: dict[str, Any]) -> bool:
    """An imported cell some of whose with-skills trials left no transcript (docs/import.md)."""
    reason = row.get("rae_reason")
    return isinstance(reason, str) and reason.startswith("activation unknown")


def _skip_text(row: dict[str, Any]) -> str:
    if row.get("error_heavy"):
        return "not reported"
    if _activation_unknown(row):
        return fmt.undefined("activation unknown")
    return fmt.undefined("n_skip = 0") if row["n_skip"] == 0 else fmt.pp(row["delta_skip"])


def _coverage_text(row: dict[str, Any]) -> str:
    if _activation_unknown(row):
        return fmt.undefined("activation unknown")
    return f"{fmt.pp(row['coverage'], signed=False)}% ({row['n_cond']})"


def _flags(row: dict[str, Any]) -> str:
    flags = []
    if row["sign_disagree"]:
        flags.append("RAE and agg lift disagree in sign")
    if row.get("error_heavy"):
        flags.append("error-heavy (errored pairs over the threshold): not a measurement")
    elif not row["reportable"] and row["n_cond"] > 0:
        flags.append("n_cond below threshold")
    return "; ".join(flags)


def _display_rows(
    cells: pd.DataFrame, escape: Callable[[object], str]
) -> tuple[list[str], list[list[str]]]:
    labels = _label_columns(cells)
    header = [
        " · ".join(labels), "runs", "n", "errors", "coverage (n_cond)", "RAE [95% CI]", "b/c · McNemar p",
        "Δskip", "OAE [95% CI]", "agg lift", "Δselect", "flags",
    ]  # fmt: skip
    rows = []
    for row in cells.to_dict("records"):
        rows.append([
            _label(row, labels, escape), str(row["n_runs"]), str(row["n_pairs"]), _errors_text(row),
            _coverage_text(row), _rae_text(row),
            f"{row['b_cond']}/{row['c_cond']} · {fmt.p_value(row['mcnemar_p'])}", _skip_text(row),
            _oae_text(row), fmt.pp(row["agg_lift"]), fmt.pp(row["delta_select"]), _flags(row),
        ])  # fmt: skip
    return header, rows


def _footer(cells: pd.DataFrame, notes: str | None) -> list[str]:
    lines = [
        RAE_CAVEAT,
        "Percentage points. Trigger event: the SE run received a skill (S_call): from a search_skills call "
        "(access search) or an activate_skill call (access catalog); "
        "coverage = share of tasks in S_call (the trigger rate); "
        "Δskip = paired effect on the other tasks; OAE = paired effect on all tasks "
        "= coverage·RAE + (1 − coverage)·Δskip. SE and SD of a task share one seed; arms are run independently. "
        "* = not reportable (n_cond below the threshold); agg lift and Δselect are undefined when retrieval "
        "happened on no task or on every task. errors = pairs with an arm that ended in a provider error "
        "(scored incorrect); a cell whose errors pass the threshold (--max-error-rate, 5% by default) is "
        "error-heavy and its effects are not reported.",
    ]
    if "provenance" in cells and any(agent_ran(v) for v in cells["provenance"]):
        lines.append(LOADED_TRIGGER)
    if notes:
        lines.append(notes)
    return lines


def _sensitivity(cells: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    from hf_skillfollow.metrics import disagreement_sensitivity

    table = disagreement_sensitivity(cells)
    header = ["min n_cond", "reportable cells", "with agg lift", "sign disagreements"]
    rows = [
        [str(r["min_cond"]), str(r["reportable"]), str(r["with_agg_lift"]),
         f"{r['disagreements']}" + ("" if r["with_agg_lift"] == 0 else f" ({r['disagreement_rate']:.0f}%)")]
        for r in table.to_dict("records")
    ]  # fmt: skip
    return header, rows


def _default_width() -> int:
    """COLUMNS when set, the terminal's width on a terminal, else wide (files, pipes, tests)."""
    if os.environ.get("COLUMNS", "").isdigit():
        return int(os.environ["COLUMNS"])
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else 200


def _rich_table(cells: pd.DataFrame, width: int | None, notes: str | None) -> str:
    from rich.console import Console
    from rich.table import Table

    out = io.StringIO()
    console = Console(
        file=out,
        width=width or _default_width(),
        force_terminal=False,
        color_system=None,
        highlight=False,
    )
    if cells.empty:
        console.print("no cells: the sources hold no transitions rows")
        return out.getvalue()
    header, rows = _display_rows(cells, for_terminal)
    console.print(RAE_CAVEAT)
    table = Table(title="Paired SE/SD metrics per cell")
    for name in header:
        table.add_column(name)
    for r in rows:
        table.add_row(*r)
    console.print(table)
    for line in _footer(cells, notes)[1:]:
        console.print(line)
    s_header, s_rows = _sensitivity(cells)
    sens = Table(title="Sign disagreement (RAE vs aggregate lift) by reportability threshold")
    for name in s_header:
        sens.add_column(name, justify="right")
    for r in s_rows:
        sens.add_row(*r)
    console.print(sens)
    return out.getvalue()


def _markdown(cells: pd.DataFrame, notes: str | None) -> str:
    if cells.empty:
        return "_No cells: the sources hold no transitions rows._\n"
    header, rows = _display_rows(cells, for_markdown)
    parts = [_md_table(header, rows), "", *(f"{line}  " for line in _footer(cells, notes)), ""]
    s_header, s_rows = _sensitivity(cells)
    parts += [
        "**Sign disagreement (RAE vs aggregate lift) by reportability threshold**",
        "",
        _md_table(s_header, s_rows),
    ]
    return "\n".join(parts) + "\n"


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    """Cells are Markdown already: submitter text in them was escaped with `for_markdown`."""

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cells) + " |"

    return "\n".join([line(header), "|" + "---|" * len(header), *(line(r) for r in rows)])


# ------------------------------------------------------------------ repeats (--repeats)

NO_REPEATS = (
    "Repeat statistics need >= 2 runs of a cell (hf-skillfollow run --repeats N); no cell has them."
)
REPEATS_NOTE = (
    "Run-to-run: mean ± sample SD over the cell's runs of each run's own OAE, RAE (runs where "
    "defined) and coverage; the pooled numbers above stay the cell's estimate. Tasks: SE − SD "
    "success rate over the task's repeats with a 95% Newcombe hybrid-score interval; "
    "confidently degraded = interval below 0, possibly degraded = estimate below 0 with 0 inside "
    "(improved alike); tasks seen in one run only are not classified."
)


def _render_with_repeats(
    cells: pd.DataFrame,
    fmt: str,
    width: int | None,
    notes: str | None,
    repeats: tuple[pd.DataFrame, pd.DataFrame],
) -> str:
    summary = _aligned_summary(cells, repeats[0])
    if fmt == "json":
        records = to_records(cells)
        for record, extra in zip(records, _repeat_records(cells, summary, repeats[1]), strict=True):
            record["repeats"] = extra
        return json.dumps(records, indent=2, ensure_ascii=False) + "\n"
    if fmt == "csv":
        extra = summary.drop(columns=[*identity_columns(cells), "n_runs"])
        return frame_to_csv(cells.reset_index(drop=True).join(extra))
    base = _markdown(cells, notes) if fmt == "markdown" else _rich_table(cells, width, notes)
    if cells.empty:
        return base
    if not (summary["n_runs"] >= 2).any():
        return base + (f"\n{NO_REPEATS}\n" if fmt == "markdown" else f"{NO_REPEATS}\n")
    header, rows = _repeat_rows(cells, summary, for_markdown if fmt == "markdown" else for_terminal)
    if fmt == "markdown":
        title = "**Run-to-run variation and per-task changes (repeats)**"
        return base + f"\n{title}\n\n{_md_table(header, rows)}\n\n{REPEATS_NOTE}\n"
    return base + _rich_repeat_table(header, rows, width)


def _aligned_summary(cells: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """The summary rows in the order of `cells` (matched on the identity columns)."""
    ids = identity_columns(cells)
    position = cells[ids].reset_index(drop=True).assign(_cell=range(len(cells)))
    merged = position.merge(summary, on=ids, how="left", sort=False)
    if len(merged) != len(cells) or merged["n_runs"].isna().any():
        raise ValueError("repeats summary does not match the cells (different grouping?)")
    return merged.sort_values("_cell", kind="stable").drop(columns="_cell").reset_index(drop=True)


def _repeat_records(
    cells: pd.DataFrame, summary: pd.DataFrame, tasks: pd.DataFrame
) -> list[dict[str, Any]]:
    ids = identity_columns(cells)
    position = cells[ids].reset_index(drop=True).assign(_cell=range(len(cells)))
    placed = tasks.merge(position, on=ids, how="inner", sort=False).drop(columns=ids)
    by_cell: dict[int, list[dict[str, Any]]] = {i: [] for i in range(len(cells))}
    for record in to_records(placed):
        by_cell[record.pop("_cell")].append(record)
    out = []
    for i, record in enumerate(to_records(summary.drop(columns=ids))):
        record["tasks"] = by_cell[i]
        out.append(record)
    return out


def _repeat_rows(
    cells: pd.DataFrame, summary: pd.DataFrame, escape: Callable[[object], str]
) -> tuple[list[str], list[list[str]]]:
    labels = _label_columns(cells)
    header = [
        " · ".join(labels), "runs", "OAE mean ± SD", "RAE mean ± SD (runs)", "coverage mean ± SD",
        "tasks repeated", "conf. degraded", "poss. degraded", "no change", "poss. improved", "conf. improved",
    ]  # fmt: skip
    rows = []
    for cell, rep in zip(cells.to_dict("records"), summary.to_dict("records"), strict=True):
        if rep["n_runs"] < 2:
            rows.append([_label(cell, labels, escape), str(rep["n_runs"]), "1 run: no repeat statistics"]
                        + [""] * (len(header) - 3))  # fmt: skip
            continue
        rows.append([
            _label(cell, labels, escape), str(rep["n_runs"]),
            fmt.mean_sd(rep["oae_run_mean"], rep["oae_run_sd"]),
            f"{fmt.mean_sd(rep['rae_run_mean'], rep['rae_run_sd'])} ({rep['n_runs_rae']})",
            fmt.mean_sd(rep["coverage_run_mean"], rep["coverage_run_sd"], signed=False),
            str(rep["n_tasks_repeated"]), str(rep["n_confidently_degraded"]), str(rep["n_possibly_degraded"]),
            str(rep["n_no_change"]), str(rep["n_possibly_improved"]), str(rep["n_confidently_improved"]),
        ])  # fmt: skip
    return header, rows


def _rich_repeat_table(header: list[str], rows: list[list[str]], width: int | None) -> str:
    from rich.console import Console
    from rich.table import Table

    out = io.StringIO()
    console = Console(
        file=out, width=width or _default_width(),
        force_terminal=False, color_system=None, highlight=False,
    )  # fmt: skip
    table = Table(title="Run-to-run variation and per-task changes (repeats)")
    for name in header:
        table.add_column(name)
    for r in rows:
        table.add_row(*r)
    console.print(table)
    console.print(REPEATS_NOTE)
    return out.getvalue()


# ------------------------------------------------------------------ imported cells (import)

IMPORTED_NOTE = (
    "Imported cells (docs/import.md): trials another harness ran, not re-run here; cells of "
    "provenance run:<harness> were run by hf-skillfollow through that harness (docs/harness.md). "
    "Activation decided from each with-skills transcript by the detector named. Arm-integrity violations "
    "(pool skills listed or used in the without-skills trial) are left out of every count above "
    "unless --include-arm-violations. Coverage by trigger kind: instructions loaded (Skill tool, "
    "SKILL.md read) or only a resource of the skill used. RAE (with transcript) counts only the "
    "pairs whose with-skills trial left a transcript. A/A: each arm's own flip rate between its "
    "trials of a task (tasks with >= 2 trials in that arm); 'noise could explain' = S_call b/c "
    "flips on tasks where an arm flipped against itself. Trigger precision: activations of the "
    "task's intended skill / all activations, over tasks that name one."
)


def imported_text(summaries: list[dict[str, Any]], fmt_name: str, width: int | None = None) -> str:
    """The section of the cells whose activation a transcript decided: imported, or run through
    a harness (table or Markdown; '' when there is none)."""
    if not summaries or fmt_name not in ("table", "markdown"):
        return ""
    escape = for_markdown if fmt_name == "markdown" else for_terminal
    note = IMPORTED_NOTE + "".join(
        f" {escape(s['agent'])} · {escape(s['model'])} (inject loading): the skill bodies were "
        "in the instruction, so every task is in S_call and RAE = OAE (detector inject)."
        for s in summaries if s.get("access") == "inject"
    )  # fmt: skip
    ran = [s for s in summaries if str(s.get("provenance")).startswith("run:")]
    title = ("Imported cells" if not ran else "Harness-run cells" if len(ran) == len(summaries)
             else "Imported and harness-run cells")  # fmt: skip
    cell = "imported cell" if not ran else "cell"
    header = [
        cell, "pairs", "arm violations", "no transcript", "detectors",
        "coverage instr. / resource", "RAE (with transcript) b/c", "A/A flip SE / SD (tasks)",
        "noise could explain", "trigger precision",
    ]  # fmt: skip
    rows, skill_rows = [], []
    for s in summaries:
        label = " · ".join(escape(s[k]) for k in ("agent", "model", "provenance"))
        detectors = ", ".join(
            f"{escape(name)} {100 * n / s['n_pairs']:.0f}%" for name, n in s["detectors"].items()
        )
        rae = fmt.undefined("no pair in S_call") if s["n_cond_known"] == 0 else fmt.pp(s["rae_known"])
        rows.append([
            label, str(s["n_pairs"]), str(s["n_arm_violations"]), str(s["n_no_transcript"]),
            detectors,
            f"{fmt.pp(s['coverage_instructions'], signed=False)}% / "
            f"{fmt.pp(s['coverage_resource'], signed=False)}%",
            f"{rae} ({s['b_cond_known']}/{s['c_cond_known']} of {s['n_cond_known']})",
            f"{_rate(s['aa_flip_rate_se'])} / {_rate(s['aa_flip_rate_sd'])} "
            f"({s['aa_tasks_se']}/{s['aa_tasks_sd']})",
            str(s["aa_explainable_flips"]),
            "—" if not s["precision_activations"] else
            f"{fmt.pp(s['trigger_precision'], signed=False)}% ({s['precision_hits']}/{s['precision_activations']})",
        ])  # fmt: skip
        skill_rows.extend(
            [label, escape(k["skill"]), str(k["n"]), f"{k['b']}/{k['c']}", fmt.pp(k["rae"])]
            for k in s["skills"]
        )
    skill_header = [cell, "skill activated", "pairs", "b/c", "RAE"]
    per_skill = f"Per skill ({title[0].lower()}{title[1:]})"
    if fmt_name == "markdown":
        parts = ["", f"**{title}**", "", _md_table(header, rows), "", note]
        if skill_rows:
            parts += ["", f"**{per_skill}**", "", _md_table(skill_header, skill_rows)]
        return "\n".join(parts) + "\n"
    return _rich_tables(
        [(title, header, rows), (per_skill, skill_header, skill_rows)], width, note
    )


def _rate(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.0f}%"


def _rich_tables(tables: list[tuple[str, list[str], list[list[str]]]], width: int | None, note: str) -> str:
    from rich.console import Console
    from rich.table import Table

    out = io.StringIO()
    console = Console(file=out, width=width or _default_width(), force_terminal=False,
                      color_system=None, highlight=False)  # fmt: skip
    for title, header, rows in tables:
        if not rows:
            continue
        table = Table(title=title)
        for name in header:
            table.add_column(name)
        for r in rows:
            table.add_row(*r)
        console.print(table)
        if note:
            console.print(note)
            note = ""
    return out.getvalue()

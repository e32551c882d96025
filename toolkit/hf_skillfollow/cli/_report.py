"""`hf-skillfollow report SOURCE...`: paired metrics per cell from transitions."""

from __future__ import annotations

from pathlib import Path

import click

from hf_skillfollow.cli._echo import data, echo
from hf_skillfollow.report import FORMATS


def _parse_group_by(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> list[str] | None:
    if value is None:
        return None
    from hf_skillfollow.columns import IDENTITY_COLUMNS

    columns = [c.strip() for c in value.split(",") if c.strip()]
    unknown = [c for c in columns if c not in IDENTITY_COLUMNS]
    if not columns or unknown:
        raise click.BadParameter(
            f"{unknown or value!r} not identity column(s); choose from {', '.join(IDENTITY_COLUMNS)}",
            ctx=ctx,
            param=param,
        )
    return columns


@click.command("report")
@click.argument("sources", nargs=-1, required=True)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="table",
    show_default=True,
    help="Output format.",
)
@click.option("--min-cond", type=click.IntRange(min=0), default=10, show_default=True,
              help="A cell is reportable when n_cond (tasks with a returned skill) reaches this.")  # fmt: skip
@click.option("--max-error-rate", type=click.FloatRange(0, 100), default=5.0, show_default=True,
              metavar="PCT",
              help="A cell whose pairs ended in a provider error more often than this (percent) is "
                   "error-heavy: flagged, not reportable, its effects not shown. 100 reports every cell.")  # fmt: skip
@click.option(
    "--resamples",
    type=click.IntRange(min=1),
    default=20_000,
    show_default=True,
    help="Bootstrap resamples.",
)
@click.option(
    "--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Bootstrap seed."
)
@click.option("--group-by", callback=_parse_group_by, default=None,
              help="Comma-separated identity columns to group by instead of the cell identity.")  # fmt: skip
@click.option("--pool-runs/--no-pool-runs", default=True, show_default=True,
              help="Pool config-identical runs by summing counts, or report each run apart.")  # fmt: skip
@click.option("--repeats", "with_repeats", is_flag=True, default=False,
              help="Also report repeat statistics for cells pooling >= 2 runs: run-to-run mean and SD of "
                   "OAE, RAE and coverage, and per-task SE − SD success-rate intervals (95% Newcombe) with "
                   "counts of tasks confidently/possibly degraded/improved. JSON: each cell gains a "
                   "\"repeats\" object (n_runs, n_runs_rae, oae_run_mean, oae_run_sd, rae_run_mean, rae_run_sd, "
                   "coverage_run_mean, coverage_run_sd, repeat_reason, rae_run_reason, "
                   "n_confidently_degraded, n_possibly_degraded, n_no_change, n_possibly_improved, "
                   "n_confidently_improved, n_tasks_repeated, and \"tasks\": one object per task with "
                   "task_id, k, se_successes, sd_successes, se_rate, sd_rate, diff, diff_ci_low, "
                   "diff_ci_high, task_class, task_reason); CSV gains the per-cell columns.")  # fmt: skip
@click.option("--annotations", "with_annotations", is_flag=True, default=False,
              help="Add stage diagnostics and the annotation labels per cell: label counts over helpful "
                   "and harmful flips, reconciliation with b_cond/c_cond, RAE per label group (these "
                   "describe, never redefine, RAE). Annotations are read from the SOURCES and --annotations-from.")  # fmt: skip
@click.option("--annotations-from", "annotation_paths", multiple=True, type=click.Path(path_type=Path),
              help="Also read annotations from this folder or annotations.parquet (repeatable).")  # fmt: skip
@click.option("--correlate", nargs=2, metavar="BENCH_A BENCH_B", default=None,
              help="Correlate aggregate lift, OAE and RAE across cells that differ only by benchmark "
                   "(kept when n_cond >= --min-cond on both), with partial r controlling SD accuracy.")  # fmt: skip
@click.option("--trigger", type=click.Choice(["any", "instructions"]), default="any", show_default=True,
              help="Imported cells: what puts a pair in S_call: any activation, or only loaded "
                   "instructions (Skill tool, SKILL.md read; a resource used alone no longer counts).")  # fmt: skip
@click.option("--include-arm-violations", is_flag=True, default=False,
              help="Imported cells: keep the pairs whose without-skills trial listed or used a pool "
                   "skill (left out by default; docs/import.md).")  # fmt: skip
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write to this file instead of standard output.")  # fmt: skip
def report(
    sources: tuple[str, ...],
    fmt: str,
    min_cond: int,
    max_error_rate: float,
    resamples: int,
    seed: int,
    group_by: list[str] | None,
    pool_runs: bool,
    with_repeats: bool,
    with_annotations: bool,
    annotation_paths: tuple[Path, ...],
    correlate: tuple[str, str] | None,
    trigger: str,
    include_arm_violations: bool,
    output: Path | None,
) -> None:
    """Compute the paired metrics per cell from SOURCE(s).

    SOURCE is a transitions parquet or JSONL file, a run directory, a folder of them, or a
    Hub dataset id (ORG/NAME).
    """
    from hf_skillfollow.metrics import compute_cells, repeat_summary
    from hf_skillfollow.report import render
    from hf_skillfollow.sources import read_transitions

    try:
        read = read_transitions(*sources)
        table, imported = _imported_view(read, trigger, include_arm_violations)
        cells = compute_cells(
            table,
            group_by=group_by,
            pool_runs=pool_runs,
            min_cond=min_cond,
            resamples=resamples,
            seed=seed,
            max_error_rate=max_error_rate,
        )
        repeats = (
            repeat_summary(table, group_by=group_by, pool_runs=pool_runs) if with_repeats else None
        )
        if imported is not None:
            from hf_skillfollow.metrics._imported import mark_unknown

            cells = mark_unknown(cells, imported["unknown"])
        if fmt in ("json", "csv") and not correlate and "arm_integrity" in read.column_names:
            # the text forms' arm-integrity line, as data (violations left out counted too)
            left_out = imported is not None and not include_arm_violations
            cells = _with_arm_counts(cells, read, group_by, pool_runs, left_out)
    except (ValueError, RuntimeError, OSError) as exc:  # SchemaError, SourceError, HubError
        raise click.ClickException(str(exc)) from None
    notes = (
        f"Intervals: 95% percentile bootstrap, {resamples:,} resamples, seed {seed}; McNemar: exact two-sided "
        f"on S_call discordant pairs; reportable: n_cond >= {min_cond} and errored pairs <= {max_error_rate:g}%; runs {'pooled' if pool_runs else 'kept apart'}."
    )
    if imported is not None:
        notes += imported["note"]
    n_repeated = int((cells["n_runs"] >= 2).sum()) if len(cells) else 0
    if n_repeated and not with_repeats:
        notes += f" {n_repeated} cell(s) pool several runs: add --repeats for run-to-run variation and per-task intervals."
    # Files get a wide table; a terminal or pipe follows its width (COLUMNS when set).
    width = 200 if output is not None else None
    if correlate:
        text = _correlation_text(cells, correlate, min_cond, fmt, width)
    else:
        text = render(cells, fmt, width=width, notes=notes, repeats=repeats)
    if not correlate:  # cost per arm, judge noise, per skill: read from the traces (docs/tasks.md)
        from hf_skillfollow.report_own import text_for, with_json

        try:  # a traces file beside the sources may be a hostile or edited one
            text += text_for(table, sources, fmt)
            if fmt == "json" and not with_repeats:
                text = with_json(text, table, sources)
        except (ValueError, OSError) as exc:
            raise click.ClickException(str(exc)) from None
        from hf_skillfollow.report import arm_integrity_text

        text += arm_integrity_text(read, fmt)  # every row read: violations left out included
    if imported is not None and not correlate:
        text = _with_imported(text, imported["summary"], fmt, width)
    if with_annotations and not correlate:
        text = _with_annotations(
            text, table, cells, sources, annotation_paths, group_by, pool_runs, fmt, width
        )
    if output is None:
        data(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        echo(f"wrote {len(cells)} cell(s) to {output}", err=True)


def _correlation_text(
    cells, benches: tuple[str, str], min_cond: int, fmt: str, width: int | None
) -> str:  # noqa: ANN001
    from hf_skillfollow.diagnostics_report import render_correlation
    from hf_skillfollow.metrics._correlate import correlate

    try:
        result = correlate(cells, *benches, min_cond=min_cond)
    except ImportError as exc:
        raise click.ClickException(
            f"--correlate needs pingouin ({exc}); pip install pingouin"
        ) from None
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    return render_correlation(result, fmt, width)


def _with_annotations(
    text: str, table, cells, sources, paths, group_by, pool_runs, fmt, width
) -> str:  # noqa: ANN001
    from hf_skillfollow.annotate._read import read_annotations
    from hf_skillfollow.diagnostics_report import render_annotations
    from hf_skillfollow.metrics._diagnostics import annotation_summary, stage_diagnostics
    from hf_skillfollow.metrics._pooling import group_columns

    try:
        annotations = read_annotations(*sources, *paths)
    except (ValueError, RuntimeError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    keys = list(group_columns(group_by, pool_runs))
    summary = annotation_summary(table.to_pandas(), annotations.to_pandas(), keys)
    return render_annotations(text, cells, stage_diagnostics(cells), summary, keys, fmt, width)


def _imported_view(table, trigger: str, include_violations: bool):  # noqa: ANN001, ANN202
    """(the rows the metrics use, what the report says about imported cells and arm-integrity
    violations; None when the rows have neither)."""
    names = set(table.column_names)
    if not {"provenance", "arm_integrity"} <= names:
        return table, None
    import pyarrow as pa
    import pyarrow.compute as pc

    from hf_skillfollow.columns import agent_ran_mask
    from hf_skillfollow.metrics._imported import (
        activation_unknown,
        imported_summary,
        imported_view,
        violated_rows,
    )

    # imported (`imported:<format>`) or run through a harness (`run:<harness>`): the chat
    # loop's rows are `run` (docs/design.md)
    is_imported = agent_ran_mask(table["provenance"])
    if not (pc.any(is_imported).as_py() or pc.any(violated_rows(table)).as_py()):
        return table, None

    wanted = ["cell_id", "returned", "arm_integrity", "trigger_kind"]
    frame = table.select([c for c in wanted if c in names]).to_pandas()
    keep, returned, excluded = imported_view(
        frame, trigger=trigger, include_violations=include_violations
    )
    at = table.schema.get_field_index("returned")
    table = table.set_column(at, "returned", pa.array(returned)).filter(pa.array(keep))
    unknown = activation_unknown(table.select(["cell_id", "detector"]).to_pandas())
    mine = table.filter(agent_ran_mask(table["provenance"]))
    n = sum(excluded.values())
    note = (
        f" {n} pair(s) with an arm-integrity violation (docs/import.md) "
        + ("kept (--include-arm-violations)." if include_violations else
           "left out of every count; --include-arm-violations keeps them.")
    ) if n else ""  # fmt: skip
    return table, {"unknown": unknown, "summary": imported_summary(mine.to_pylist(), excluded),
                   "note": note}  # fmt: skip


def _with_arm_counts(cells, read, group_by, pool_runs: bool, left_out: bool):  # noqa: ANN001, ANN202
    """`cells` with each one's arm-integrity counts (`metrics._imported.ARM_COLUMNS`), when any
    pair of the rows read was checked."""
    from hf_skillfollow.metrics._imported import arm_integrity_counts
    from hf_skillfollow.metrics._pooling import group_columns

    keys = list(group_columns(group_by, pool_runs))
    counts = arm_integrity_counts(read, keys, left_out=left_out)
    if not counts["n_arm_checked"].any():
        return cells
    return cells.merge(counts, on=keys, how="left", sort=False)


def _with_imported(text: str, summary, fmt: str, width: int | None) -> str:  # noqa: ANN001
    """The imported cells' section after the table forms; in JSON, an "imported" object on each
    imported cell."""
    if fmt == "json":
        import json

        data = json.loads(text)
        by_cell = {s["cell_id"]: s for s in summary}
        cells = data if isinstance(data, list) else data.get("cells", [])
        for cell in cells:
            if isinstance(cell, dict) and cell.get("cell_id") in by_cell:
                cell["imported"] = _json_safe(by_cell[cell["cell_id"]])
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    from hf_skillfollow.report import imported_text

    return text + imported_text(summary, fmt, width)


def _json_safe(value):  # noqa: ANN001, ANN202
    """NaN as null, everywhere in a summary (JSON has no NaN)."""
    import math

    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value

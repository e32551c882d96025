"""`hf-skillfollow sweep SWEEP`: every cell of a sweep file, resumable, sharded, on Ray.

See docs/sweep.md.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import click

from hf_skillfollow._errors import RETRY_CHOICES
from hf_skillfollow.cli._echo import data, echo
from hf_skillfollow.registries import EXECUTORS


@click.command("sweep")
@click.argument("sweep_file", metavar="SWEEP")
@click.option("--plan", "plan_only", is_flag=True,
              help="List the cells, conversations, what is done and a token estimate; contact no model.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="With --plan: print the plan as JSON.")
@click.option("--report", "report_only", is_flag=True,
              help="Print the report over the sweep's finished runs; run nothing.")  # fmt: skip
@click.option("-o", "--output-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where the run directories go [the file's output_dir, else runs/NAME].")  # fmt: skip
@click.option("--shard", metavar="I/N", help="Run only shard I of N (a stable split by cell).")
@click.option("--shard-by", type=click.Choice(["cell", "model"]), default="cell", show_default=True,
              help="model: each shard gets whole models (one local vLLM per machine).")  # fmt: skip
@click.option("--executor", type=click.Choice(list(EXECUTORS)), default="local", show_default=True)
@click.option("--ray-address", metavar="HOST:PORT", help="Ray cluster [RAY_ADDRESS].")
@click.option("--ray-node-ip-address", metavar="IP",
              help="This machine's address as the Ray cluster sees it (e.g. 127.0.0.1 for a local cluster).")  # fmt: skip
@click.option("--max-cells", type=click.IntRange(min=1),
              help="Cells in flight at once [the file's max_cells].")  # fmt: skip
@click.option("--push", "push_repo", metavar="ORG/NAME",
              help="Push each run to this Hub dataset repo as soon as it finishes.")  # fmt: skip
@click.option("--push-dry-run", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="With --push: write the repo folder into DIR instead of uploading.")  # fmt: skip
@click.option("--private", is_flag=True, help="With --push: create the repo as private.")
@click.option("--token", default=None, metavar="T", help="Hub token for --push.")
@click.option("--plain/--live", default=None,
              help="Plain log lines or the live view [live on a terminal, plain otherwise].")  # fmt: skip
@click.option("--resamples", type=click.IntRange(min=1), default=20000, show_default=True,
              help="Bootstrap resamples for --report.")  # fmt: skip
@click.option("--retry-errors", type=click.Choice(list(RETRY_CHOICES)),
              default="transport", show_default=True,
              help="Run again the finished pairs that ended in a provider error: transport (timeouts, "
                   "connection, HTTP 408/409/429/5xx; never a context overflow), malformed (answers "
                   "that were no chat completion, once the endpoint is mended), all, or none.")  # fmt: skip
@click.option("--max-error-rate", type=click.FloatRange(0, 100), default=5.0, show_default=True,
              metavar="PCT",
              help="A run whose pairs ended in a provider error more often than this (percent) is "
                   "error-heavy: the exit status is 1, and reports flag its cell.")  # fmt: skip
def sweep(
    sweep_file: str,
    plan_only: bool,
    as_json: bool,
    report_only: bool,
    output_dir: Path | None,
    shard: str | None,
    shard_by: str,
    executor: str,
    ray_address: str | None,
    ray_node_ip_address: str | None,
    max_cells: int | None,
    push_repo: str | None,
    push_dry_run: Path | None,
    private: bool,
    token: str | None,
    plain: bool | None,
    resamples: int,
    retry_errors: str,
    max_error_rate: float,
) -> None:
    """Run every cell of SWEEP (a sweep file, or a shipped sweep such as `paper-panel`).

    The same command again continues where the last one stopped: each cell's run directory is
    named after the cell and resumed by `run --resume`'s rules, so no finished pair is redone
    or duplicated.
    """
    from hf_skillfollow import sweep as sw

    if plan_only and report_only:
        raise click.UsageError("--plan and --report: choose one")
    if push_dry_run and not push_repo:
        raise click.UsageError("--push-dry-run: only with --push ORG/NAME")
    try:
        path, spec, cells = sw.load(sweep_file)
        if shard is not None:  # `--shard ""` is a mistake, not "every cell"
            index, count = sw.parse_shard(shard)
            cells = sw.select_shard(cells, index, count, shard_by)  # type: ignore[arg-type]
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    out = output_dir or spec.output_dir or Path("runs") / spec.name
    jobs = sw.jobs_for(cells, out, retry_errors)
    summary = sw.plan(jobs, out)
    if plan_only:
        _print_plan(summary, path, out, shard, as_json)
        return
    if report_only:
        _report(summary, resamples)
        return
    _run(summary, spec, out, executor, ray_address, ray_node_ip_address, max_cells,
         push_repo, push_dry_run, private, token, plain, max_error_rate)  # fmt: skip


def _print_plan(summary, path: Path, out: Path, shard: str | None, as_json: bool) -> None:  # noqa: ANN001
    if as_json:
        data(json.dumps({"sweep": str(path), "output_dir": str(out), "shard": shard,
                         **summary.as_dict()}, indent=2))  # fmt: skip
        return
    tokens, basis = summary.estimated_tokens()
    echo(f"sweep {path}" + (f" (shard {shard})" if shard else "") + f" -> {out}")
    echo(
        f"{summary.cells} cells, {len(summary.states)} runs, {summary.pairs:,} pairs "
        f"({2 * summary.pairs:,} conversations); runs done {summary.count('done')}, partial "
        f"{summary.count('partial')}, pending {summary.count('pending')}, broken {summary.count('broken')}"
    )
    echo(
        f"tokens still to spend: about {tokens:,} ({basis})" if tokens is not None
        else f"tokens still to spend: unknown ({basis})"
    )  # fmt: skip
    width = len(str(len(summary.states)))
    for n, s in enumerate(summary.states, start=1):
        extra = f"  ! {s.problem}" if s.problem else (
            f"  (last session: failed, {s.last_failure})" if s.last_failure else "")  # fmt: skip
        if s.errors:
            extra += f"  [{s.errors} errored pair(s), {s.retryable} to retry]"
        echo(
            f"{n:>{width}}  {s.status:<7} {s.done_pairs:>4}/{s.job.n_pairs:<4} "
            f"{s.job.cell.label} r{s.job.repeat_index}  {s.job.run_dir.name}{extra}"
        )


def _error_heavy(summary, max_error_rate: float) -> list[str]:  # noqa: ANN001
    """Runs whose errored pairs pass `max_error_rate` percent of their finished pairs."""
    return [
        f"{s.job.cell.label} r{s.job.repeat_index} ({100 * s.errors / s.done_pairs:.0f}%)"
        for s in summary.states
        if s.done_pairs and 100 * s.errors / s.done_pairs > max_error_rate
    ]


def _report(summary, resamples: int) -> None:  # noqa: ANN001
    from hf_skillfollow.cli._run import _print_report
    from hf_skillfollow.store import TRANSITIONS

    dirs = [s.job.run_dir for s in summary.states if (s.job.run_dir / TRANSITIONS).is_file()]
    if not dirs:
        raise click.ClickException("no finished run of this sweep yet (nothing to report)")
    echo(f"report over {len(dirs)} of the sweep's {len(summary.states)} runs")
    _print_report(dirs, resamples)


def _run(
    summary,
    spec,
    out: Path,
    executor: str,
    ray_address,
    ray_ip,
    max_cells,  # noqa: ANN001
    push_repo,
    push_dry_run,
    private,
    token,
    plain,
    max_error_rate: float,
) -> None:  # noqa: ANN001
    from hf_skillfollow.sweep import plan as sw_plan
    from hf_skillfollow.sweep._run import PushTarget, broken_advice, run_sweep
    from hf_skillfollow.sweep._view import Tally, make_view

    broken = [s for s in summary.states if s.status == "broken"]
    for s in broken:
        echo(f"cannot continue {s.job.run_dir}: {broken_advice(s.job.run_dir, s.problem)}",
             err=True)  # fmt: skip
    todo = [s.job for s in summary.states if s.status in ("pending", "partial")]
    done = [s.job for s in summary.states if s.status == "done"]
    push = PushTarget(push_repo, token, private, push_dry_run) if push_repo else None
    tally = Tally.of(summary.states)
    out.mkdir(parents=True, exist_ok=True)

    async def go():  # noqa: ANN202
        async with EXECUTORS.resolve(executor)(address=ray_address, node_ip_address=ray_ip) as ex:
            with make_view(tally, plain) as view:
                view.note(f"{len(todo)} run(s) to do, {len(done)} already done -> {out}")
                return await run_sweep(
                    todo, ex, view, retry=spec.retry, max_cells=max_cells or spec.max_cells,
                    push=push, already_done=done, output_dir=out,
                    broken=[(s.job, s.problem or "") for s in broken],
                )  # fmt: skip

    try:
        result = asyncio.run(go())
    except KeyboardInterrupt:
        raise click.ClickException(
            "interrupted: finished pairs are saved; run the same command again to continue"
        ) from None
    except RuntimeError as exc:  # an executor that cannot start (no Ray, no cluster)
        raise click.ClickException(str(exc)) from None
    echo(tally.line())
    problems = []
    if result.failed:
        problems.append(f"{len(result.failed)} run(s) failed: run the same command again to "
                        "retry them")  # fmt: skip
    if result.broken:
        problems.append(f"{len(result.broken)} run folder(s) cannot be continued as they are: "
                        "`hf-skillfollow run --resume DIR --set-aside-bad-records` (above) "
                        "continues one with bad record lines")  # fmt: skip
    heavy = _error_heavy(sw_plan([s.job for s in summary.states], out), max_error_rate)
    if heavy:
        problems.append(f"{len(heavy)} run(s) error-heavy (more than {max_error_rate:g}% of pairs "
                        f"ended in a provider error: {', '.join(heavy[:5])}"
                        f"{' ...' if len(heavy) > 5 else ''}); reports flag their cells")  # fmt: skip
    if result.push_failures:
        problems.append(f"{len(result.push_failures)} push(es) failed: the runs are kept, "
                        "`hf-skillfollow push` or the next sweep publishes them")  # fmt: skip
    if problems:
        raise click.ClickException(
            "; ".join(problems) + f" (reasons above and in {out / 'sweep-status.json'})"
        )

"""`hf-skillfollow import FORMAT ...`: another harness's with/without-skills runs as run folders."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from hf_skillfollow._text import safe_text
from hf_skillfollow.cli._echo import echo

_PATH = click.Path(path_type=Path)
_MAX_LISTED = 20


def _common(f: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--skills", type=_PATH, default=None,
                     help="The skill pool offered to the with-skills arm: its hash identifies the "
                          "cell and its names are the skills detected [the names the transcripts list]."),
        click.option("--tasks", type=_PATH, default=None,
                     help="Harbor tasks folder: <task>/environment/skills/ names each task's intended "
                          "skills (trigger precision)."),
        click.option("--trigger", type=click.Choice(["any", "instructions"]), default="any",
                     show_default=True,
                     help="What puts a pair in S_call: any activation, or only loaded instructions "
                          "(Skill tool, SKILL.md read; not a resource used alone)."),
        click.option("--loading", type=click.Choice(["on-demand", "nudge", "inject"]), default=None,
                     help="How the skills reached the agent (the access column) [on-demand; "
                          "skill-creator: nudge]."),
        click.option("--benchmark", default=None, help="Benchmark name of the rows [the registry dataset "
                     "the trials record (Harbor's source), else the format]."),
        click.option("-o", "--output", "output_dir", type=_PATH, default=Path("runs"),
                     show_default=True, help="Folder the run folders go in."),
        click.option("--set-aside-bad-records", is_flag=True,
                     help="Move bad lines of the run folders' records.jsonl to records.rejected "
                          "and write their pairs again."),
    ]  # fmt: skip
    for option in reversed(options):
        f = option(f)
    return f


@click.group("import")
def import_() -> None:
    """Import with/without-skills runs of another harness as paired run folders (docs/import.md)."""


def _trial_arms(
    harness: str, jobs: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The arm and verdict options of a format whose trials are folders given per arm; `jobs`:
    also `--job`, a job that ran both arms (then the per-arm flags are optional)."""

    def add(f: Callable[..., Any]) -> Callable[..., Any]:
        options = [
            click.option("--with-skills", "with_paths", type=_PATH, multiple=True,
                         required=not jobs,
                         help=f"{harness} job or trial folder of the with-skills arm (repeatable; "
                              "searched recursively)."),
            click.option("--without-skills", "without_paths", type=_PATH, multiple=True,
                         required=not jobs,
                         help=f"{harness} job or trial folder of the without-skills arm "
                              "(repeatable)."),
            *([click.option("--job", "paths", type=_PATH, multiple=True,
                            help=f"{harness} job that ran both arms: two agent entries that "
                                 "differ only in skills; each trial's arm is whether its "
                                 "recorded agent had skills (repeatable).")] if jobs else []),
            click.option("--pass-threshold", type=float, default=1.0, show_default=True,
                         help="A trial passes when its verifier reward reaches this."),
        ]  # fmt: skip
        f = _common(f)
        for option in reversed(options):
            f = option(f)
        return f

    return add


@import_.command("harbor")
@_trial_arms("Harbor", jobs=True)
def harbor(**kwargs: Any) -> None:
    """Harbor trial folders (result.json, config.json, agent/...): SkillsBench, Terminal-Bench."""
    _import("harbor", **kwargs)


@import_.command("benchflow")
@_trial_arms("BenchFlow")
def benchflow(**kwargs: Any) -> None:
    """BenchFlow trial folders (result.json with n_skill_invocations)."""
    _import("benchflow", **kwargs)


@import_.command("skill-creator")
@click.argument("paths", nargs=-1, required=True, type=_PATH)
@click.option("--pass-rate-threshold", type=click.FloatRange(0.0, 1.0), default=None,
              help="A run passes when this share of its expectations passed [every one].")  # fmt: skip
@click.option("--baseline", type=click.Choice(["without_skill", "old_skill"]), default=None,
              help="The without-skills arm [the one the workspace holds].")  # fmt: skip
@_common
def skill_creator(**kwargs: Any) -> None:
    """skill-creator workspaces (iteration-N/eval-*/with_skill|without_skill|old_skill)."""
    _import("skill-creator", **kwargs)


def _import(fmt: str, **kw: Any) -> None:
    from hf_skillfollow.importers import ImportInputError, ImportOptions, import_runs
    from hf_skillfollow.store import RunDirError

    options = ImportOptions(
        pass_threshold=kw.get("pass_threshold", 1.0),
        pass_rate_threshold=kw.get("pass_rate_threshold"),
        trigger=kw["trigger"],
        skills=kw["skills"],
        tasks=kw["tasks"],
        loading=kw["loading"] or ("nudge" if fmt == "skill-creator" else "on-demand"),
        benchmark=kw["benchmark"],
        baseline=kw.get("baseline"),
    )
    try:
        with _progress() as (on_read, on_total, on_pair):
            result = import_runs(
                fmt, kw.get("with_paths", ()), kw.get("without_paths", ()), options,
                output_dir=kw["output_dir"], paths=kw.get("paths", ()),
                on_total=on_total, on_pair=on_pair, on_read=on_read,
                set_aside_bad_records=kw["set_aside_bad_records"],
            )  # fmt: skip
    except (ImportInputError, RunDirError) as exc:
        raise click.ClickException(safe_text(str(exc))) from None
    for note in result.notes[:_MAX_LISTED]:
        echo(f"note: {note}", err=True)
    echo(
        f"{result.n_pairs} pair(s) in {len(result.run_dirs)} run folder(s) "
        f"({result.n_written} written, {result.n_already} already there); "
        f"{result.n_dropped} unpaired trial(s) dropped; "
        f"{result.n_checksum_differs} pair(s) whose task checksum differs between the arms; "
        f"{len(result.violations)} arm-integrity violation(s)"
    )
    for task, (arm, n) in sorted(result.dropped.items())[:_MAX_LISTED]:
        echo(
            f"  unpaired: {task}: {n} extra {'with' if arm == 'se' else 'without'}-skills trial(s)"
        )
    for violation in result.violations[:_MAX_LISTED]:
        echo(f"  arm-integrity violation: {violation}")
    for run_dir in result.run_dirs:
        echo(f"run folder: {run_dir}")


@contextmanager
def _progress() -> Iterator[
    tuple[Callable[[int], None], Callable[[int], None], Callable[[bool], None]]
]:
    """A bar on stderr: first a count of the trials' result files read (their number is not
    known until the walk ends), then, once the number of steps is known, each pair read
    (without --skills, all are read first) and written."""
    from hf_skillfollow.cli._progress import bar

    progress = bar("import", "{task.fields[tally]}", stderr=True)
    state: dict[str, Any] = {"read": None, "n_read": 0, "task": None, "failed": 0}

    def on_read(n: int) -> None:
        if state["read"] is None:
            progress.start()
            state["read"] = progress.add_task("read", total=None, tally="")
        state["n_read"] = n
        progress.update(state["read"], completed=n, tally=f"{n:,} result file(s) read")

    def on_total(total: int) -> None:
        progress.start()
        if state["read"] is not None:  # the reading is done: its line shows it whole
            progress.update(state["read"], total=state["n_read"])
        state["task"] = progress.add_task("import", total=total, tally="0 pair(s) with an error")

    def on_pair(error: bool) -> None:
        state["failed"] += int(error)
        progress.update(state["task"], advance=1,
                        tally=f"{state['failed']} pair(s) with an error")  # fmt: skip

    try:
        yield on_read, on_total, on_pair
    except BaseException:
        progress.live.transient = True  # the error line stands alone
        raise
    finally:
        progress.stop()

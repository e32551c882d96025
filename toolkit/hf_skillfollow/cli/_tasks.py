"""`hf-skillfollow tasks`: work with a maintainer's own task files.

`tasks export-harbor` writes a `--benchmark custom` task file's `tests` tasks as Harbor
tasks, so one task set serves the chat loop and the agents (docs/harness.md, "One task set
for both"). Task ids and error texts come from an untrusted file: every line goes through
`echo`, which shows control characters as escapes.
"""

from __future__ import annotations

import click

from hf_skillfollow.cli._echo import echo


@click.group()
def tasks() -> None:
    """Work with your own task files (docs/tasks.md)."""


@tasks.command("export-harbor")
@click.argument("tasks_file", type=click.Path(dir_okay=False, path_type=str))
@click.option(
    "-o", "--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=str),
    help="Folder to write the Harbor tasks into (one folder per task).",
)  # fmt: skip
@click.option("--overwrite", is_flag=True, help="Replace task folders that already exist.")
def export_harbor(tasks_file: str, out_dir: str, overwrite: bool) -> None:
    """Write the `tests` tasks of TASKS_FILE (a --benchmark custom task file) as Harbor tasks.

    Each task's verifier runs its asserts against the solution file the agent writes, each
    assert judged by its own comparison, as the chat loop's `tests` grader does. Tasks graded
    by `answer` or `expectations` are skipped, each with one line saying why.
    """
    from hf_skillfollow._task import TaskLoadError
    from hf_skillfollow.harness._export import ExportError, export_harbor

    try:
        result = export_harbor(tasks_file, out_dir, overwrite=overwrite)
    except (TaskLoadError, ExportError) as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"{out_dir}: cannot write ({exc.strerror or exc})") from None
    for task_id, folder in result.written.items():
        echo(f"exported {task_id!r} -> {folder}")
    for task_id, why in result.skipped:
        echo(f"skipped {task_id!r}: {why}")
    echo(f"{len(result.written)} task(s) exported to {out_dir}, {len(result.skipped)} skipped")

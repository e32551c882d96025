"""`hf-skillfollow score`: score EvalPlus-format samples in the sandbox, one verdict per line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from hf_skillfollow.benchmarks import BENCHMARK_NAMES, BENCHMARKS
from hf_skillfollow.cli._echo import echo


def read_samples(path: Path, problems: dict[str, Any]) -> list[tuple[Any, str]]:
    """(task, text) per sample line. ``completion`` is appended to the task's EvalPlus prompt."""
    pairs = []
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            pairs.append(_sample(path, n, _text_line(path, n, raw), problems))
    if not pairs:
        raise click.ClickException(f"{path}: no samples")
    return pairs


def _text_line(path: Path, n: int, raw: bytes) -> str:
    if b"\0" in raw:
        raise click.ClickException(
            f"{path}: line {n}: binary data (NUL byte); --samples takes a UTF-8 JSON-lines file"
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise click.ClickException(
            f"{path}: line {n}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at column "
            f"{exc.start + 1}); --samples takes a UTF-8 JSON-lines file"
        ) from None


def _sample(path: Path, n: int, line: str, problems: dict[str, Any]) -> tuple[Any, str]:
    where = f"{path}: line {n}"
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise click.ClickException(f"{where}: not valid JSON ({exc.msg})") from None
    if not isinstance(row, dict) or not isinstance(row.get("task_id"), str):
        raise click.ClickException(f"{where}: field 'task_id' (a string) is missing")
    task = problems.get(row["task_id"])
    if task is None:
        from hf_skillfollow.tasks import benchmark_of_id

        owner = benchmark_of_id(row["task_id"])
        ours = {t.benchmark for t in problems.values()}
        hint = (
            f" (it is a {owner} id: pass --benchmark {owner})"
            if owner and owner not in ours
            else ""
        )
        raise click.ClickException(
            f"{where}: task_id {row['task_id']!r} is not in the benchmark{hint}"
        )
    for field in ("solution", "completion"):
        if field in row:
            if not isinstance(row[field], str):
                raise click.ClickException(f"{where}: field {field!r} must be a string")
            if field == "completion" and BENCHMARKS[task.benchmark].scorer == "code":
                return task, task.problem["prompt"] + row[field]
            return task, row[field]
    raise click.ClickException(f"{where}: needs a 'solution' or a 'completion' field")


def write_verdicts(path: Path, verdicts: list[Any]) -> None:
    from hf_skillfollow.store import atomic_write_bytes

    lines = (
        json.dumps(
            {"task_id": v.task_id, "passed": v.passed, "reason": v.reason, "details": v.details}
        )
        + "\n"
        for v in verdicts
    )
    atomic_write_bytes(path, "".join(lines).encode("utf-8"))


@click.command("score")
@click.option(
    "--benchmark",
    type=click.Choice(BENCHMARK_NAMES),
    default="mbppplus",
    show_default=True,
)
@click.option(
    "--samples",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="JSONL: task_id + solution or completion.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Verdicts JSONL to write.",
)
@click.option(
    "--tasks-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Local benchmark file instead of the official source.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Programs scored concurrently.",
)
def score(
    benchmark: str, samples: Path, output: Path, tasks_file: Path | None, workers: int
) -> None:
    """Score EvalPlus-format samples; code runs in the sandbox (base + plus inputs)."""
    import gc

    from hf_skillfollow.scoring import prepare

    if BENCHMARKS[benchmark].scorer == "code":
        # first: the sandbox starts on the other CPU while the rest imports and the tasks load
        prepare(workers)
    from hf_skillfollow.cli._progress import unit_progress
    from hf_skillfollow.scoring import score_many
    from hf_skillfollow.tasks import TaskLoadError, load_tasks

    try:
        tasks, version = load_tasks(benchmark, tasks_file)
    except TaskLoadError as exc:
        raise click.ClickException(str(exc)) from None
    pairs = read_samples(samples, {t.task_id: t for t in tasks})
    # The tasks live until the process ends: no collection need walk them again, during the
    # scoring or at exit (HumanEval+'s inputs, where decoded: 0.1 s of the interpreter's exit).
    gc.freeze()
    judged = [t.task_id for t, _ in pairs if t.grader == "expectations"]
    if judged:  # a judge model grades these; `score` runs no model (docs/tasks.md)
        raise click.ClickException(
            f"--benchmark {benchmark}: task(s) {', '.join(judged[:3])} are graded by a judge "
            "(expectations); score them with `run`, re-grade them with `verify`"
        )
    try:
        with unit_progress(len(pairs), "scoring") as on_done:
            verdicts = score_many(
                pairs, workers=workers, extract=False, progress=lambda v: on_done(not v.passed)
            )
    except TaskLoadError as exc:  # inputs decoded when first read (`_evalplus_files`)
        raise click.ClickException(str(exc)) from None
    write_verdicts(output, verdicts)
    n_pass = sum(v.passed for v in verdicts)
    echo(f"{benchmark} ({version}): {n_pass}/{len(verdicts)} passed; verdicts in {output}")

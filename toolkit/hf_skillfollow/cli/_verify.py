"""`hf-skillfollow verify SOURCE...`: re-score published answers and compare with the recorded bits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from hf_skillfollow.cli._echo import data, echo
from hf_skillfollow.columns import agent_ran
from hf_skillfollow.verify._render import FORMATS

#: exit status: every checked row agrees / some row disagrees / verification could not run /
#: (--strict) every checked row agrees but some rows could not be re-scored (no traces)
EXIT_AGREE, EXIT_DISAGREE, EXIT_CANNOT_RUN, EXIT_INCOMPLETE = 0, 1, 2, 3


class CannotVerify(click.ClickException):
    exit_code = EXIT_CANNOT_RUN


def _tasks_files(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> dict[str, Path]:
    from hf_skillfollow.benchmarks import BENCHMARK_NAMES

    out: dict[str, Path] = {}
    for item in values:
        benchmark, sep, path = item.partition("=")
        if not sep or benchmark not in BENCHMARK_NAMES or not path:
            raise click.BadParameter(
                f"expected BENCHMARK=PATH with BENCHMARK one of {', '.join(BENCHMARK_NAMES)}, got {item!r}",
                ctx=ctx,
                param=param,
            )
        if not (Path(path).is_dir() if benchmark == "skill-evals" else Path(path).is_file()):
            what = "folder (the skill pool)" if benchmark == "skill-evals" else "file"
            raise click.BadParameter(f"{path}: no such {what}", ctx=ctx, param=param)
        out[benchmark] = Path(path)
    return out


@click.command("verify")
@click.argument("sources", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
              help="Output format.")  # fmt: skip
@click.option("--tasks-file", "tasks_files", multiple=True, callback=_tasks_files,
              metavar="BENCHMARK=PATH",
              help="Local file holding the benchmark release the rows were scored against (repeatable).")  # fmt: skip
@click.option("--workers", type=click.IntRange(min=1), default=2, show_default=True,
              help="Answers scored concurrently.")  # fmt: skip
@click.option("--state", "state_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Resume file of re-scored verdicts [one per set of sources, in the cache folder].")  # fmt: skip
@click.option(
    "--fresh", is_flag=True, help="Ignore verdicts saved by an earlier, interrupted verify."
)
@click.option("--record-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where to write the verification record [RUN_DIR/verifications/ beside a run "
                   "directory, else ./verifications/]; publish it with `push`.")  # fmt: skip
@click.option("--no-record", is_flag=True, help="Write no verification record.")
@click.option("--by", "verified_by", metavar="NAME",
              help="Who is verifying, as named in the record [user@host].")  # fmt: skip
@click.option("--strict", is_flag=True,
              help="Exit 3 unless every row was re-scored (rows without traces make it fail).")  # fmt: skip
@click.option("--judge-base-url", help="Where the recorded judge of expectations rows is served "
              "(needed to re-grade them, except with the embedded local judge).")  # fmt: skip
@click.option("--judge-api-key-env", help="Variable holding the judge's API key [OPENAI_API_KEY].")
@click.option("--judge-backend", type=click.Choice(["local", "openai", "vllm", "vllm-server"]),
              help="How to reach the recorded judge model [the recorded backend].")  # fmt: skip
def verify(
    sources: tuple[str, ...],
    fmt: str,
    tasks_files: dict[str, Path],
    workers: int,
    state_path: Path | None,
    fresh: bool,
    record_dir: Path | None,
    no_record: bool,
    verified_by: str | None,
    strict: bool,
    judge_base_url: str | None,
    judge_api_key_env: str | None,
    judge_backend: str | None,
) -> None:
    """Re-extract every SE and SD final answer from the traces, re-score it with the scorer and
    benchmark release recorded in the row, and compare with the published se_correct/sd_correct.

    Exit status: 0 when every checked row agrees, 1 on any disagreement, 2 when verification
    could not run (unreadable source, no traces, release or scorer not available here, a run
    id that cannot name a record file, a record folder that is a symbolic link), 3 with
    --strict when no row disagrees but some rows were not re-scored.
    """
    from hf_skillfollow.verify._inputs import VerifyInputError, read_rows
    from hf_skillfollow.verify._releases import UnavailableError, resolve
    from hf_skillfollow.verify._render import render
    from hf_skillfollow.verify._state import VerifyState, default_state_path

    try:
        rows = _without_imported(read_rows(list(sources)))
        if not any(r.has_traces for r in rows):
            raise CannotVerify(
                f"nothing to verify: none of the {len(rows)} row(s) in {', '.join(sources)} has "
                "SE and SD traces (push runs with their traces.parquet)"
            )
        releases = resolve(rows, tasks_files)
        # Where the records go is checked before any answer is scored, not after.
        folders = None if no_record else _record_folders(rows, record_dir)
        regrade = _regrader(rows, releases, judge_base_url, judge_api_key_env, judge_backend)
    except (VerifyInputError, UnavailableError, ValueError) as exc:
        raise CannotVerify(f"cannot verify: {exc}") from None
    path = state_path or default_state_path(list(sources))
    try:
        with VerifyState(path, fresh=fresh) as state, _progress() as (on_start, on_verdict):
            endpoint = f"{judge_backend or ''} {judge_base_url or ''}"
            result = _run(
                rows, releases, state, workers, verified_by, on_start, on_verdict, regrade,
                endpoint,
            )  # fmt: skip
    except UnavailableError as exc:  # the recorded judge did not answer
        raise CannotVerify(f"cannot verify: {exc}") from None
    data(render(result, fmt), nl=False)
    if folders is not None and result.checked:
        for written in _write_record(result, folders):
            echo(f"verification record: {written}", err=True)
    if result.disagreements:
        raise SystemExit(EXIT_DISAGREE)
    raise SystemExit(EXIT_INCOMPLETE if strict and result.unchecked else EXIT_AGREE)


def _without_imported(rows: list[Any]) -> list[Any]:
    """The rows verify can re-score: an imported row's verdict is another harness's verifier
    result (a reward in its result.json), which this toolkit cannot re-run (docs/import.md)."""
    imported = [r for r in rows if agent_ran(r.provenance)]
    if not imported:
        return rows
    kinds = ", ".join(sorted({r.provenance for r in imported}))
    says = (
        f"{len(imported)} row(s) are {kinds}: their verdicts are the harness's own verifier "
        "results, which hf-skillfollow cannot re-score; re-run those trials with that harness "
        "to check them"
    )
    if len(imported) == len(rows):
        raise CannotVerify(f"cannot verify: {says}")
    echo(f"not verified: {says}", err=True)
    return [r for r in rows if not agent_ran(r.provenance)]


def _run(rows, releases, state, workers, verified_by, on_start, on_verdict, regrade=None,  # noqa: ANN001
         endpoint="") -> Any:  # fmt: skip
    from hf_skillfollow.verify._core import run_verification

    return run_verification(
        rows, releases, state, workers=workers, verified_by=verified_by,
        on_start=on_start, on_verdict=on_verdict, regrade=regrade, judge_endpoint=endpoint,
    )  # fmt: skip


def _regrader(rows, releases, base_url, api_key_env, backend) -> Any:  # noqa: ANN001
    """The re-grader of judged rows (None when no row is judged); UnavailableError, plainly,
    when their recorded judge cannot be reached from here."""
    from hf_skillfollow.verify._judged import judges_needed, regrader

    judges = judges_needed(rows, releases)
    if not judges:
        return None
    return regrader(judges, base_url=base_url, api_key_env=api_key_env, backend=backend)


def _record_folders(rows: list[Any], record_dir: Path | None) -> dict[str, Path]:
    """run_id -> the folder its record goes to; ValueError for a run id that cannot name a
    file or a folder that is a symbolic link (see `verify._write`)."""
    from hf_skillfollow.hub._layout import is_run_dir
    from hf_skillfollow.verify._record import RECORD_DIR
    from hf_skillfollow.verify._write import check_record_folder, check_run_id

    folders: dict[str, Path] = {}
    for row in rows:
        if row.has_traces:
            check_run_id(row.run_id, row.source)
        here = Path(row.source)
        folders[row.run_id] = record_dir or (
            here / RECORD_DIR if is_run_dir(here) else Path(RECORD_DIR)
        )
    for folder in set(folders.values()) - {record_dir}:  # --record-dir is the user's own choice
        check_record_folder(folder)
    return folders


def _write_record(result: Any, folders: dict[str, Path]) -> list[Path]:
    from hf_skillfollow.verify._write import write_records

    try:
        return write_records(result, folders)
    except (OSError, ValueError) as exc:
        raise CannotVerify(f"the verification ran but its record was not written: {exc}") from None


class _progress:
    """A progress bar on stderr (stdout carries the result, possibly JSON)."""

    def __enter__(self) -> tuple[Any, Any]:
        from hf_skillfollow.cli._progress import bar

        self.progress = bar("re-scoring", "{task.fields[passed]} passed", stderr=True)
        self.progress.start()
        self.bar = None
        self.passed = 0
        return self.on_start, self.on_verdict

    def on_start(self, total: int, done: int) -> None:
        self.bar = self.progress.add_task("verify", total=total, completed=done, passed=0)

    def on_verdict(self, passed: bool) -> None:
        self.passed += int(passed)
        self.progress.update(self.bar, advance=1, passed=self.passed)

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

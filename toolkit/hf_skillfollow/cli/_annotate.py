"""`hf-skillfollow annotate`: blinded LLM labels for retrieval-invoked SE executions, plus
the human audit (`annotate audit-sheet`, `annotate agreement`)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, get_args

import click

from hf_skillfollow.cli._echo import data, echo
from hf_skillfollow.config import ToolMode
from hf_skillfollow.registries import BACKENDS

_DEFAULT = "label"


class _DefaultGroup(click.Group):
    """`annotate SOURCE...` runs the `label` subcommand; named subcommands work as usual."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = [_DEFAULT, *args]
        return super().parse_args(ctx, args)


@click.group("annotate", cls=_DefaultGroup)
def annotate() -> None:
    """Label why retrieval helped or hurt (blinded LLM annotator), and audit the labels.

    \b
    hf-skillfollow annotate SOURCE...          label the discordant retrieval-invoked tasks
    hf-skillfollow annotate audit-sheet ...    sample units into CSV sheets for human annotators
    hf-skillfollow annotate agreement SHEET... agreement among humans and with the LLM
    """


@annotate.command(_DEFAULT)
@click.argument("sources", nargs=-1, required=True)
@click.option("--all", "everything", is_flag=True,
              help="Every retrieval-invoked task, not only the helpful and harmful flips.")  # fmt: skip
@click.option("--model", help="Annotator model at the backend (default: the embedded GGUF).")
@click.option("--backend", type=click.Choice(list(BACKENDS)),
              help="Default: local without --model, openai with it.")  # fmt: skip
@click.option("--base-url", help="OpenAI-compatible endpoint (openai backend).")
@click.option("--api-key-env", help="Environment variable holding the API key [OPENAI_API_KEY].")
@click.option("--tool-mode", type=click.Choice(get_args(ToolMode)),
              help="How the forced labelling call reaches the model [native].")  # fmt: skip
@click.option("--tool-parser", help="vLLM tool-call parser, e.g. hermes.")
@click.option("--engine-option", multiple=True, help="vLLM engine option KEY=VALUE (repeatable).")
@click.option("--temperature", type=float, default=0.0, show_default=True)
@click.option("--max-tokens", type=click.IntRange(min=16), default=256, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the first attempt; attempt k uses seed + k.")  # fmt: skip
@click.option("--max-attempts", type=click.IntRange(min=1), default=3, show_default=True,
              help="Tries per unit before it is recorded as a failure.")  # fmt: skip
@click.option("--retry-failed", is_flag=True, help="Annotate recorded failures again.")
@click.option("--concurrency", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--request-timeout", type=float, help="Seconds per request [600].")
@click.option("--threads", "n_threads", type=int, help="CPU threads for the embedded server.")
@click.option("-o", "--output-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Keep all annotations in this folder (default: each run's own directory; "
                   "required for Hub ids and results repo folders).")  # fmt: skip
def label(
    sources: tuple[str, ...],
    everything: bool,
    temperature: float,
    max_tokens: int,
    seed: int,
    max_attempts: int,
    retry_failed: bool,
    concurrency: int,
    output_dir: Path | None,
    **backend_params: Any,
) -> None:
    """Label each retrieval-invoked SE execution of SOURCE(s) with a blinded LLM annotator.

    The annotator sees the task prompt, the retrieval queries, the returned skills and the SE
    final answer; never the SD answer or any correctness. Finished units are kept, so running
    the same command again continues where it stopped.
    """
    from hf_skillfollow.annotate._annotator import AnnotatorSettings
    from hf_skillfollow.annotate._store import AnnotationStore, AnnotationStoreError
    from hf_skillfollow.annotate._units import load_units
    from hf_skillfollow.cli._run import _build_config
    from hf_skillfollow.runner import published_model_name

    config = _build_config({**backend_params, "concurrency": concurrency})
    settings = AnnotatorSettings(
        model=published_model_name(config.model),
        backend=config.backend,
        temperature=temperature,
        max_tokens=max_tokens,
        seed=seed,
        max_attempts=max_attempts,
    )
    try:
        units = load_units(sources, everything=everything)
    except (ValueError, RuntimeError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    stores: dict[Path, AnnotationStore] = {}

    def store_of(unit) -> AnnotationStore:  # noqa: ANN001 - Unit, imported lazily
        root = output_dir or unit.run_dir
        if root is None:
            raise click.UsageError(
                f"run {unit.run_id} is not a local run directory; pass -o/--output-dir"
            )
        return stores.setdefault(root, AnnotationStore(root))

    for unit in units:  # every store resolved (and bad input refused) before the model starts
        store_of(unit)
    try:
        for store in stores.values():
            store.repair_tail()
        done = {k for s in stores.values() for k in s.finished(retry_failed=retry_failed)}
    except AnnotationStoreError as exc:
        raise click.ClickException(str(exc)) from None
    pending = [
        u for u in units
        if (u.run_id, u.task_id, u.repeat_index, settings.annotator) not in done
    ]  # fmt: skip
    echo(
        f"{len(units)} unit(s) ({'all retrieval-invoked' if everything else 'helpful and harmful flips'}), "
        f"{len(units) - len(pending)} already annotated by {settings.annotator}",
        err=True,
    )
    from hf_skillfollow.backends._base import BackendStartupError

    try:
        if pending:
            asyncio.run(_annotate(pending, config, settings, store_of))
    except BackendStartupError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        for root, store in stores.items():
            if store.path.is_file():
                n = store.write_table()
                echo(f"wrote {n} annotation(s) to {root}", err=True)
    _print_summary([r for s in stores.values() for r in s.rows()], settings.annotator)


async def _annotate(pending, config, settings, store_of) -> None:  # noqa: ANN001
    from hf_skillfollow.annotate._annotator import annotate_all
    from hf_skillfollow.backends import open_backend
    from hf_skillfollow.cli._progress import unit_progress

    async with open_backend(config) as backend:
        with unit_progress(len(pending), "units") as on_done:
            await annotate_all(
                pending,
                backend,
                settings,
                store_of,
                concurrency=config.concurrency,
                on_row=lambda row: on_done(row["label"] is None),
            )


def _print_summary(rows: list[dict[str, Any]], annotator: str) -> None:
    from collections import Counter

    from hf_skillfollow.annotate._labels import LABELS

    mine = [r for r in rows if r["annotator"] == annotator]
    counts = Counter(r["label"] for r in mine)
    for flip in ("helpful", "harmful", "concordant"):
        of_flip = [r for r in mine if r["flip"] == flip]
        if of_flip:
            by = Counter(r["label"] for r in of_flip)
            parts = [f"{lab} {by[lab]}" for lab in LABELS if by[lab]]
            if by[None]:
                parts.append(f"failed {by[None]}")
            echo(f"{flip}: {len(of_flip)} · " + " · ".join(parts))
    echo(
        f"{len(mine)} annotated by {annotator}: {len(mine) - counts[None]} labelled, {counts[None]} failed"
    )


@annotate.command("audit-sheet")
@click.argument("sources", nargs=-1, required=True)
@click.option("--annotations", "annotation_paths", multiple=True, type=click.Path(path_type=Path),
              help="Folder or annotations.parquet holding the LLM labels (default: the SOURCES).")  # fmt: skip
@click.option("--annotator", default=None,
              help="Which annotator's labels to sample (needed when the sources hold several).")  # fmt: skip
@click.option("-n", "--units", "n_units", type=click.IntRange(min=1), default=60, show_default=True)
@click.option("--humans", type=click.IntRange(min=1), default=3, show_default=True,
              help="One CSV sheet per human annotator.")  # fmt: skip
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("-o", "--output-dir", type=click.Path(file_okay=False, path_type=Path), required=True)
def audit_sheet(
    sources: tuple[str, ...],
    annotation_paths: tuple[Path, ...],
    annotator: str | None,
    n_units: int,
    humans: int,
    seed: int,
    output_dir: Path,
) -> None:
    """Write a stratified sample (by label and flip) of LLM-labelled units as CSV sheets for
    human annotators, plus audit-key.csv with the LLM labels (keep it away from the humans)."""
    from hf_skillfollow.annotate._audit import (
        KEY_FILE,
        MAX_SHEET_ROWS,
        sheet_rows,
        stratified_sample,
        unit_id,
        write_sheets,
    )
    from hf_skillfollow.annotate._read import read_annotations
    from hf_skillfollow.annotate._units import load_units

    if n_units > MAX_SHEET_ROWS:  # `agreement` would refuse the sheets
        raise click.BadParameter(f"at most {MAX_SHEET_ROWS:,} units", param_hint="-n/--units")
    try:
        table = read_annotations(*(annotation_paths or sources), required=True)
        rows = _one_annotator(table.to_pylist(), annotator)
        units = {f"{u.run_id}|{u.task_id}": u for u in load_units(sources, everything=True)}
    except (ValueError, RuntimeError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    rows = [r for r in rows if unit_id(r) in units]
    sample = stratified_sample(rows, n_units, seed)
    key = [
        {"unit_id": unit_id(r), "run_id": r["run_id"], "task_id": r["task_id"],
         "repeat_index": r["repeat_index"], "flip": r["flip"], "annotator": r["annotator"],
         "llm_label": r["label"]}
        for r in sample
    ]  # fmt: skip
    paths = write_sheets(output_dir, sheet_rows(sample, units), key, humans, seed)
    echo(f"sampled {len(sample)} of {len(rows)} labelled unit(s), seed {seed}")
    for path in paths:
        echo(f"  wrote {path}")
    echo(f"  wrote {output_dir / KEY_FILE} (LLM labels: do not hand out)")


def _one_annotator(rows: list[dict[str, Any]], annotator: str | None) -> list[dict[str, Any]]:
    names = sorted({r["annotator"] for r in rows})
    # The names are the annotations file's (a third party's): cut, at most 10 listed.
    shown = [n if len(n) <= 80 else n[:80] + "…" for n in names[:10]]
    have = f"{shown}{f' and {len(names) - 10} more' if len(names) > 10 else ''}"
    if annotator is None:
        if len(names) > 1:
            raise click.UsageError(f"several annotators {have}; choose one with --annotator")
        return rows
    if annotator not in names:
        raise click.UsageError(f"--annotator {annotator[:80]!r}: not found (have {have})")
    return [r for r in rows if r["annotator"] == annotator]


@annotate.command("agreement")
@click.argument("sheets", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--key", "key_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The audit-key.csv written with the sheets [next to the first sheet].")  # fmt: skip
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
def agreement_cmd(sheets: tuple[Path, ...], key_path: Path | None, fmt: str) -> None:
    """Agreement of filled audit SHEETS: among humans (Krippendorff's α, five labels and
    engaged/not engaged) and between the human majority and the LLM."""
    import json

    from hf_skillfollow.annotate._agreement import agreement
    from hf_skillfollow.annotate._audit import KEY_FILE, read_key, read_sheet

    key_path = key_path or sheets[0].parent / KEY_FILE
    try:
        llm = read_key(key_path)
        human: dict[str, dict[str, str]] = {}
        coders: dict[Path, Path] = {}
        for sheet in sheets:
            # One human per file: two humans' audit-1.csv from two folders are two coders,
            # and one file given twice is refused rather than counted as one human twice.
            coder = sheet.resolve()
            if coder in coders:
                raise click.ClickException(f"{sheet}: the same sheet as {coders[coder]}")
            coders[coder] = sheet
            for unit, label in read_sheet(sheet).items():
                if unit not in llm:
                    raise click.ClickException(
                        f"{sheet}: unit {unit[:80]!r} is not in {key_path}"
                    )
                human.setdefault(unit, {})[str(coder)] = label
        result = agreement(human, llm)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    if fmt == "json":
        data(json.dumps(result.as_dict(), indent=2, default=_nan_as_none))
        return
    for line in agreement_lines(result):
        echo(line)


def _nan_as_none(value: object) -> None:
    return None


def agreement_lines(r) -> list[str]:  # noqa: ANN001 - Agreement, imported lazily
    def f(x: float, pct: bool = True) -> str:
        return "—" if x != x else (f"{x:.1f}%" if pct else f"{x:.3f}")

    return [
        f"{r.n_units} unit(s) labelled by {r.n_humans} human(s)",
        f"Krippendorff's α (nominal, five labels, humans): {f(r.alpha_five, False)}",
        f"human majority vs LLM, five labels: {f(r.majority_vs_llm)} agree over {r.n_majority} unit(s) "
        f"with a strict majority; {r.n_no_majority} unit(s) without one",
        f"engaged / not engaged, human pairs: {f(r.binary_human_pairs)} agree",
        f"engaged / not engaged, human majority vs LLM: {f(r.binary_majority_vs_llm)} agree over "
        f"{r.n_binary_majority} unit(s); {r.n_binary_no_majority} without a strict majority",
        f"Krippendorff's α (nominal, engaged / not engaged, humans): {f(r.alpha_binary, False)}",
        f"appropriate adherence rate: humans {f(r.appropriate_rate_human)} of their labels, "
        f"LLM {f(r.appropriate_rate_llm)} of the audited units",
    ]

"""`hf-skillfollow run`: a paired SE/SD evaluation, resumable, with a live progress bar."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, get_args

import click

from hf_skillfollow._errors import RETRY_CHOICES
from hf_skillfollow._terminate import sigterm_unwinds
from hf_skillfollow.benchmarks import BENCHMARK_NAMES
from hf_skillfollow.cli._echo import echo
from hf_skillfollow.config import Access, Condition, RetrievalPolicy, ToolMode
from hf_skillfollow.harness._harbor import LOADINGS
from hf_skillfollow.registries import BACKENDS, HARNESSES, RETRIEVERS

# The embedded model decodes ~100 tok/s on 2 cores; the protocol's 8,192-token default would
# make the README's main job take hours, so the local backend's defaults are smaller (recorded
# in the cell config like any other setting).
_LOCAL_DEFAULTS = {"max_tokens": 512, "partition_size": 10}


def _engine_options(values: tuple[str, ...], flag: str = "--engine-option") -> dict[str, Any]:
    import json

    options: dict[str, Any] = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint=flag)
        try:
            options[key] = json.loads(raw)
        except json.JSONDecodeError:
            options[key] = raw
    return options


def _given(params: dict[str, Any]) -> dict[str, Any]:
    """The settings typed on the command line (not defaults), as RunConfig fields."""
    from click.core import ParameterSource

    ctx = click.get_current_context()
    given = {
        k: v for k, v in params.items() if ctx.get_parameter_source(k) != ParameterSource.DEFAULT
    }
    if "engine_option" in given:
        given["engine_options"] = _engine_options(given.pop("engine_option"))
    return given


def _own_tasks(benchmark: object) -> bool:
    from hf_skillfollow.benchmarks import BENCHMARKS

    spec = BENCHMARKS.get(str(benchmark))
    return spec is not None and spec.loader in ("custom", "skill-evals")


def _build_config(params: dict[str, Any]):
    from pydantic import ValidationError

    from hf_skillfollow.config import RunConfig

    backend = params.pop("backend") or ("openai" if params.get("model") else "local")
    values = {k: v for k, v in params.items() if v is not None}
    if backend == "local":
        for key, value in _LOCAL_DEFAULTS.items():
            if key != "partition_size" or not _own_tasks(values.get("benchmark")):
                values.setdefault(key, value)  # own tasks run every task by default
    values["engine_options"] = _engine_options(values.pop("engine_option", ()))
    try:
        return RunConfig(backend=backend, **values)
    except ValidationError as exc:
        problems = "; ".join(
            f"--{'-'.join(str(p) for p in err['loc']).replace('_', '-')}: {err['msg']}"
            for err in exc.errors()
        )
        raise click.UsageError(problems) from None


@click.command("run")
@click.option(
    "--model", help="Model name at the backend (default: the embedded SmolLM2-135M GGUF)."
)
@click.option(
    "--backend",
    type=click.Choice(list(BACKENDS)),
    help="Default: local without --model, openai with it.",
)
@click.option("--base-url", help="OpenAI-compatible endpoint (openai backend).")
@click.option("--api-key-env", help="Environment variable holding the API key [OPENAI_API_KEY].")
@click.option(
    "--tool-mode",
    type=click.Choice(get_args(ToolMode)),
    help="How the tool reaches the model [native].",
)
@click.option(
    "--retrieval-policy",
    type=click.Choice(get_args(RetrievalPolicy)),
    help="forced: SE's first turn must search (not for published comparisons) [auto].",
)
@click.option("--tool-parser", help="vLLM tool-call parser, e.g. hermes.")
@click.option("--engine-option", multiple=True, help="vLLM engine option KEY=VALUE (repeatable).")
@click.option("--benchmark", type=click.Choice(BENCHMARK_NAMES), help="[mbppplus]")
@click.option(
    "--tasks-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Local benchmark file instead of the official source; with --benchmark custom, "
    "the JSONL task file (docs/tasks.md).",
)
@click.option("--partition-seed", type=int, help="[42]")
@click.option(
    "--partition-size",
    type=int,
    help="[80; 10 with the local backend; every task for custom and skill-evals]",
)
@click.option(
    "--limit",
    type=int,
    help="Only the first N tasks of the partition (a smoke run: part of the cell id, never pooled with the full partition).",
)
@click.option(
    "--skills",
    "skills_dir",
    type=click.Path(path_type=Path),
    help="Skill pool directory [shipped pool of the benchmark's domain].",
)
@click.option(
    "--merged-library", is_flag=True, default=None, help="One merged library of all shipped pools."
)
@click.option(
    "--condition",
    type=click.Choice(get_args(Condition)),
    help="[normal]",
)
@click.option(
    "--access",
    type=click.Choice(get_args(Access)),
    help="How SE reaches the skills: search (the paper's search_skills BM25 tool) or catalog "
    "(the skill catalog in the prompt, activate_skill, read_skill_file) [search].",
)
@click.option("--retriever", type=click.Choice(list(RETRIEVERS)), help="[bm25s] (search only)")
@click.option("--top-k", type=int, help="[3] (search only)")
@click.option(
    "--max-calls", type=int, help="Skill tool calls per task (catalog: activations and reads) [3]."
)
@click.option("--temperature", type=float, help="[0.7]")
@click.option("--max-tokens", type=int, help="[8192; 512 with the local backend]")
@click.option("--seed", type=int, help="[0]")
@click.option("--repeats", type=int, help="Independent reruns of the cell (seed, seed+1, ...) [1].")
@click.option("--judge-model", help="Judge of expectations tasks [the run's model].")
@click.option("--judge-backend", type=click.Choice(list(BACKENDS)), help="[the run's backend]")
@click.option("--judge-base-url", help="Judge endpoint [the run's --base-url].")
@click.option("--judge-api-key-env", help="Variable holding the judge's API key [the run's].")
@click.option(
    "--judge-repeats",
    type=int,
    help="Times the judge grades each answer; majority verdict, ties fail [2].",
)
@click.option("--judge-max-tokens", type=int, help="Judge output tokens per request [1024].")
@click.option("--concurrency", type=int, help="Pairs in flight [4].")
@click.option("--request-timeout", type=float, help="Seconds per request [600].")
@click.option("--threads", "n_threads", type=int, help="CPU threads for the embedded server.")
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("runs"),
    show_default=True,
)
@click.option(
    "--resume",
    "resume_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Continue an interrupted run directory (flags other than --concurrency, "
    "--request-timeout, --threads, --base-url, --api-key-env, --tasks-file, "
    "--judge-base-url, --judge-api-key-env must match the run).",
)
@click.option(
    "--set-aside-bad-records",
    is_flag=True,
    help="With --resume: move bad lines of records.jsonl to records.rejected and rerun their "
    "tasks; with --harness: the same for the run folders its import appends to.",
)
@click.option(
    "--retry-errors",
    type=click.Choice(list(RETRY_CHOICES)),
    default="transport",
    show_default=True,
    help="With --resume: run again the pairs that ended in a provider error: transport "
    "(timeouts, connection, HTTP 408/409/429/5xx; never a context overflow, which is part of "
    "the measurement), malformed (answers that were no chat completion, once the endpoint is "
    "mended), all, or none. Their records move to records.rejected.",
)
@click.option(
    "--harness",
    type=click.Choice(list(HARNESSES)),
    help="Run both arms with another program's agent on workspace tasks instead of the chat "
    "loop (docs/harness.md).",
)
@click.option("--agent", help="--harness: a Harbor agent name or module:Class [terminus-2].")
@click.option(
    "--tasks", "harness_tasks", help="--harness: a folder of Harbor tasks, or name@version."
)
@click.option("--trials", type=int, help="--harness: trials per task and arm [1].")
@click.option(
    "--env",
    "harness_env",
    help="--harness: sandbox (ours, no Docker) or a Harbor environment: docker, daytona, "
    "modal, e2b, ... or module:Class [sandbox].",
)
@click.option(
    "--env-option",
    multiple=True,
    help="--harness: the environment's own option KEY=VALUE (JSON value; repeatable), e.g. "
    'read_only_paths=["/opt/agents"] for --env sandbox.',
)
@click.option(
    "--loading",
    type=click.Choice(LOADINGS),
    help="--harness: how SE gets the skills: installed (on-demand), plus a line naming where "
    "(nudge), or their bodies in the instruction (inject) [on-demand].",
)
@click.option("--report/--no-report", default=True, help="Print the report at the end.")
@click.option(
    "--resamples",
    type=int,
    default=20000,
    show_default=True,
    help="Bootstrap resamples for the final report.",
)
@sigterm_unwinds()  # a terminated run stops the model server and Harbor jobs it started
def run(
    output_dir: Path,
    resume_dir: Path | None,
    set_aside_bad_records: bool,
    retry_errors: str,
    report: bool,
    resamples: int,
    **params: Any,
) -> None:
    """Run every task skill-enabled (SE) and skill-disabled (SD), score both, record the pairs."""
    from hf_skillfollow._redact import scrub, url_secrets
    from hf_skillfollow.runner import plan_new_run, plan_resume

    secrets = url_secrets(params.get("base_url"))
    harness = {k: params.pop(k) for k in _HARNESS_ONLY}
    if any(v not in (None, ()) for v in harness.values()):
        harness["set_aside_bad_records"] = set_aside_bad_records
        _run_harness(harness, params, output_dir, resume_dir, report, resamples, secrets)
        return
    if set_aside_bad_records and resume_dir is None:
        raise click.UsageError("--set-aside-bad-records: only with --resume RUN_DIR")
    try:
        if resume_dir is not None:
            if _given({"output_dir": output_dir}):
                raise click.UsageError(
                    "--output-dir: not used with --resume (the run stays in RUN_DIR)"
                )
            plans = [
                plan_resume(
                    resume_dir,
                    _given(params),
                    set_aside=set_aside_bad_records,
                    retry_errors=retry_errors,
                )  # fmt: skip
            ]
        else:
            config = _build_config(params)
            plans = [plan_new_run(config, output_dir, r) for r in range(config.repeats)]
    except (ValueError, FileNotFoundError) as exc:
        raise click.ClickException(scrub(str(exc), secrets)) from None
    for note in (
        *plans[0].notes,
        *_ignored_by_access(plans[0].config, params),
        *_pool_warnings(plans[0]),
    ):
        echo(note, err=True)
    from hf_skillfollow.backends._server import BackendStartupError

    try:
        asyncio.run(_run_all(plans))
    except BackendStartupError as exc:
        raise click.ClickException(scrub(str(exc), secrets)) from None
    except (ConnectionError, RuntimeError, OSError) as exc:
        raise click.ClickException(
            scrub(
                f"{exc} (finished pairs are saved; continue with --resume {plans[0].store.root})",
                secrets,
            )
        ) from None
    for plan in plans:
        try:
            n_rows, _ = plan.store.write_tables()
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
        echo(f"wrote {n_rows} transitions to {plan.store.root}")
    if report:
        _print_report([p.store.root for p in plans], resamples)


#: `run` flags that only a harness reads (popped before the chat loop's config is built)
_HARNESS_ONLY = (
    "harness", "agent", "harness_tasks", "trials", "harness_env", "env_option", "loading",
)  # fmt: skip
#: the chat loop's flags that a harness reads too
_HARNESS_SHARED = {"model", "base_url", "api_key_env", "skills_dir", "concurrency", "benchmark",
                   "judge_model", "judge_backend", "judge_base_url", "judge_api_key_env",
                   "judge_repeats", "judge_max_tokens"}  # fmt: skip


def _run_harness(
    harness: dict[str, Any],
    params: dict[str, Any],
    output_dir: Path,
    resume_dir: Path | None,
    report: bool,
    resamples: int,
    secrets: list[str],
) -> None:
    """`run --harness NAME`: both arms through another program's agent (docs/harness.md)."""
    from hf_skillfollow._redact import scrub
    from hf_skillfollow.harness._harbor import HarborOptions, HarnessError

    name = harness.pop("harness")
    # the import's flag (not typed: False), which the chat loop reads with --resume only
    set_aside = harness.pop("set_aside_bad_records", False)
    if name is None:
        given = next(k for k, v in harness.items() if v not in (None, ()))
        flag = given.removeprefix("harness_").replace("_", "-")
        raise click.UsageError(f"--{flag}: only with --harness")
    if resume_dir is not None:
        raise click.UsageError("--resume: with --harness, the same command again resumes")
    for key in _given(params):
        if key not in _HARNESS_SHARED:
            flag = "skills" if key == "skills_dir" else key.replace("_", "-")
            raise click.UsageError(f"--{flag}: not used with --harness {name}")
    values = {
        "agent": harness["agent"],
        "model": params.get("model"),
        "base_url": params.get("base_url"),
        "api_key_env": params.get("api_key_env"),
        "tasks": harness["harness_tasks"],
        "skills": params.get("skills_dir"),
        "trials": harness["trials"],
        "env": harness["harness_env"],
        "concurrency": params.get("concurrency"),
        "loading": harness["loading"],
        "env_options": _engine_options(harness["env_option"], "--env-option") or None,
        # --benchmark skill-evals: the pool's evals as workspace tasks, judged (docs/harness.md)
        "benchmark": params.get("benchmark"),
        "judge": {k: v for k, v in params.items() if k.startswith("judge_") and v is not None}
        or None,
        "set_aside_bad_records": set_aside or None,
    }
    options = HarborOptions(**{k: v for k, v in values.items() if v is not None})
    try:
        outcome = HARNESSES.resolve(name)(options, output_dir, lambda line: echo(line, err=True))
    except (HarnessError, ValueError, OSError) as exc:
        raise click.ClickException(scrub(str(exc), secrets)) from None
    for note in outcome.notes:
        echo(scrub(note, secrets), err=True)
    for run_dir in outcome.run_dirs:
        echo(f"wrote {run_dir}")
    if report and outcome.run_dirs:
        _print_report(outcome.run_dirs, resamples, transcripts=True)


def _pool_warnings(plan: Any) -> list[str]:
    """One line when the skill pool loaded with warnings (they are on `pool.findings`)."""
    findings = plan.pool.findings
    if not findings:
        return []
    config = plan.config
    pool = str(config.skills_dir) if config.skills_dir else config.domain
    if not config.skills_dir and plan.pool.root is not None and Path(pool).exists():
        # the shipped pool by its path: here its bare name is refused as ambiguous
        pool = str(plan.pool.root)
    return [
        f"note: skill pool {plan.pool.name} loaded with {len(findings)} warning(s): "
        f"`hf-skillfollow skills validate {pool}` prints them"
    ]


def _ignored_by_access(config: Any, params: dict[str, Any]) -> list[str]:
    """Notes for flags given that the run's access protocol does not use."""
    if config.access != "catalog":
        return []
    given = _given(params)
    return [
        f"note: {flag} is ignored with --access catalog (an activation returns one whole skill, "
        "chosen by name; nothing is searched)"
        for flag, key in (("--top-k", "top_k"), ("--retriever", "retriever"))
        if key in given
    ]


async def _run_all(plans: list) -> None:
    from hf_skillfollow.backends import open_backend
    from hf_skillfollow.cli._progress import pair_progress
    from hf_skillfollow.runner import execute

    total = sum(len(p.pending) for p in plans)
    if total == 0:
        return
    async with (
        open_backend(plans[0].config) as backend,
        _judge_backend(plans[0], backend) as judge,
    ):
        with pair_progress(total) as on_pair:
            for plan in plans:
                await execute(plan, backend, on_pair, judge_backend=judge)


@asynccontextmanager
async def _judge_backend(plan: Any, backend: Any) -> AsyncIterator[Any]:
    """The judge's backend: the run's own, unless the judge is another model or endpoint."""
    from hf_skillfollow.backends import open_backend

    if plan.judge is None or plan.config.judge_is_run_model():
        yield backend
        return
    async with open_backend(plan.config.judge_config()) as judge:
        yield judge


def _print_report(run_dirs: list[Path], resamples: int, transcripts: bool = False) -> None:
    """The report of the runs just made; `transcripts` (a harness run, activation read from the
    agents' transcripts) applies `report`'s rules and section for such cells, as `report` would."""
    from hf_skillfollow.metrics import compute_cells
    from hf_skillfollow.report import arm_integrity_text, render
    from hf_skillfollow.report_own import text_for
    from hf_skillfollow.sources import read_transitions

    read = table = read_transitions(*run_dirs)
    imported = None
    if transcripts:
        from hf_skillfollow.cli._report import _imported_view

        table, imported = _imported_view(read, "any", False)
    cells = compute_cells(table, resamples=resamples)
    if imported is not None:
        from hf_skillfollow.metrics import mark_unknown

        cells = mark_unknown(cells, imported["unknown"])
    text = render(cells, "table") + text_for(table, run_dirs, "table")
    text += arm_integrity_text(read, "table")
    if imported is not None:
        from hf_skillfollow.cli._report import _with_imported

        text = _with_imported(text, imported["summary"], "table", None)
    echo(text, block=True)

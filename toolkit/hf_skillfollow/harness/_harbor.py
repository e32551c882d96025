"""`run --harness harbor`: both arms through Harbor (one job where it allows), then the import.

Harbor (PyPI ``harbor``, Python >= 3.12) runs in its own virtual environment and is driven
only through its command line and job files (docs/harness.md says why). One run is a work
folder ``<output>/harbor-<key>/`` whose key hashes every setting, so the same command again
finds it and resumes: a job folder that exists is continued with ``harbor job resume``
(Harbor keeps the finished trials and redoes only the unfinished ones), and the import
appends only the pairs its run folders lack.

One job (``both``) runs both arms where they can share it: its two agent entries are the
same agent, with and without ``skills`` (Harbor installs them where that agent looks), over
one copy of the tasks, so each task's two trials start side by side and one pool of
``--concurrency`` trials serves both arms to the end. Two jobs (``se``, ``sd``, each with
half of ``--concurrency``) where they cannot: a loading line (`nudge`, `inject`) is a job's
instruction that only SE may get, a task that ships its own skills needs a copy without them
for SD, and a work folder begun with two jobs resumes as two (`_two_jobs_because`).

- ``skills/``: the pool as the loader accepted it (`_stage.stage_pool`);
- ``tasks/both`` or ``tasks/se`` and ``tasks/sd``: the tasks as the job(s) read them
  (`_stage.stage_tasks`);
- ``both.json`` or ``se.json`` and ``sd.json``: the job file(s); the arms' settings are
  identical but for the skills, the loading line and each arm's task copy, which
  `arm_differences` checks;
- ``jobs/<job>``: Harbor's job and trial folders; ``jobs/<job>.log`` its output.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from hf_skillfollow.harness._errors import HarnessError

Loading = Literal["on-demand", "nudge", "inject"]
LOADINGS: tuple[str, ...] = ("on-demand", "nudge", "inject")
#: the shipped example tasks and skill pool (the defaults of --tasks and --skills)
EXAMPLES = Path(__file__).resolve().parent.parent / "_data" / "harbor_tasks"
#: --env names of ours; anything else is handed to Harbor as its environment type or path
ENVIRONMENTS = {"sandbox": "hf_skillfollow.harness._env:SandboxEnvironment"}
#: Harbor agents that run in Harbor's own process and only type into the trial: they need no
#: network inside it
HOST_SIDE_AGENTS = frozenset({"terminus", "terminus-1", "terminus-2", "oracle", "nop"})
#: where Harbor puts injected skills when a task names no skills_dir (its default)
SKILLS_DIR = "/runtime/skills"
#: the `nudge` mode's one line (protocol data: it enters the cell through the job file hash)
NUDGE = (
    "Agent Skills that may help with this task are installed under {skills_dir}: each folder "
    "holds a SKILL.md that says when and how to use that skill."
)
#: the `inject` mode's preface to the skill bodies
INJECT = "The following Agent Skills apply to this task. Use them where they help.\n\n{bodies}"
_MAX_INJECT_CHARS = 64_000
#: settings that do not identify the run: the same command with other values resumes it
_MAY_CHANGE_ON_RESUME = ("concurrency", "base_url", "api_key_env")
_LOG_TAIL = 2000
#: what frames a line of Harbor's (rich) traceback boxes
_BOX = " \t│┃╭╮╰╯─━"
#: seconds a Harbor job has to end after SIGTERM when the run is stopped
_STOP_GRACE_S = 30.0
#: the rows' `provenance`: hf-skillfollow ran both arms, through Harbor (not `imported:harbor`)
PROVENANCE = "run:harbor"
#: the one job of both arms; ``se`` and ``sd`` name the two jobs of one arm each
BOTH = "both"


@dataclass(frozen=True)
class HarborOptions:
    """One `run --harness harbor` invocation (each field is a flag of `run`)."""

    agent: str = "terminus-2"
    """A Harbor agent name, or ``module:Class`` of a custom agent."""
    model: str | None = None
    """Model name as the agent's client takes it (Terminus: a LiteLLM name, ``openai/NAME``);
    None: the embedded llama.cpp model, served here for the run."""
    base_url: str | None = None
    """OpenAI- or Anthropic-compatible endpoint the agent talks to."""
    api_key_env: str | None = None
    """Environment variable holding the endpoint's key (Harbor's ``model_api_key_name``)."""
    tasks: str = ""
    """A folder of Harbor tasks (or one task), or a registry dataset ``name@version``
    [the shipped example tasks]."""
    skills: Path | None = None
    """The skill pool installed in the skill-enabled arm [the shipped example pool]."""
    trials: int = 1
    """Trials per task and arm (Harbor's ``n_attempts``)."""
    env: str = "sandbox"
    """`sandbox` (ours, no Docker), or any Harbor environment type (docker, daytona, modal,
    e2b, ...) or ``module:Class``."""
    concurrency: int = 4
    """Trials in flight across both arms (two jobs: half each)."""
    loading: Loading = "on-demand"
    """How the skills reach the agent: installed (`on-demand`), plus one line naming where
    (`nudge`), or their bodies in the instruction (`inject`)."""
    agent_kwargs: dict[str, Any] = field(default_factory=dict)
    """Extra agent options as Harbor's ``--ak`` takes them."""
    env_options: dict[str, Any] = field(default_factory=dict)
    """The environment's own options (Harbor's ``--ek``); for `sandbox`: `read_only_paths`,
    `path_prepend`, `loopback_ports` (docs/harness.md)."""
    agent_timeout_multiplier: float | None = None
    """Harbor's multiplier of the tasks' agent timeouts (None: Harbor's own, 1.0)."""
    benchmark: str | None = None
    """`skill-evals`: the tasks are the pool's own evals as workspace tasks, graded by the
    blinded judge after the trials (`_evals_tasks`, `_judged`); None: `--tasks`."""
    judge: dict[str, Any] = field(default_factory=dict)
    """With `skill-evals`: the `--judge-*` flags as given (`_judged.JUDGE_FLAGS` names);
    unset ones default to the agent's model at its endpoint."""
    set_aside_bad_records: bool = False
    """Bad lines of the run folders' `records.jsonl` go to `records.rejected` at the import and
    their pairs are written again (else the first is an error naming file:line); not part of
    the work folder's key."""


@dataclass
class HarborOutcome:
    """What a harbor run did: the run folders written and what the user must read."""

    run_dirs: list[Path]
    notes: list[str]
    work_dir: Path


def harbor_executable() -> Path:
    """Harbor's command: $SKILLFOLLOW_HARBOR, else ./.venv-harbor/bin/harbor, else PATH."""
    given = os.environ.get("SKILLFOLLOW_HARBOR")
    candidates = [Path(given)] if given else [Path(".venv-harbor/bin/harbor")]
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path.absolute()
    found = None if given else shutil.which("harbor")
    if found:
        return Path(found)
    raise HarnessError(
        "--harness harbor: Harbor not found ($SKILLFOLLOW_HARBOR, ./.venv-harbor/bin/harbor or "
        "`harbor` on PATH); .ci/setup-harbor builds .venv-harbor (docs/harness.md)"
    )


def _dataset(tasks: str) -> dict[str, Any] | None:
    """A registry dataset reference (``name@version``) as Harbor's job file takes it."""
    if Path(tasks).exists() or "@" not in tasks:
        return None
    name, _, version = tasks.partition("@")
    return {"name": name, "version": version or None}


def job_config(
    options: HarborOptions, job: str, work: Path, skill_folders: list[Path], bodies: str
) -> dict[str, Any]:
    """The Harbor job file of `job`: ``both`` (the two arms as two agent entries, SE's first,
    sharing one task copy and every trial slot) or one arm's, ``se`` or ``sd``. The arms'
    settings differ only where `arm_differences` allows it; everything else (agent, model,
    endpoint, environment, attempts, timeouts) is the same object."""
    env = ENVIRONMENTS.get(options.env, options.env)
    arms = ("se", "sd") if job == BOTH else (job,)
    agents = [
        {
            ("import_path" if ":" in options.agent else "name"): options.agent,
            "model_name": options.model,
            "base_url": options.base_url,
            "model_api_key_name": options.api_key_env,
            "kwargs": dict(options.agent_kwargs),
            "skills": [str(p) for p in skill_folders] if arm == "se" else [],
        }
        for arm in arms
    ]
    extra: list[str] = []
    if job == BOTH and options.loading != "on-demand":
        raise HarnessError(f"--loading {options.loading}: its line is SE's alone, so two jobs")
    if job == "se" and options.loading == "nudge":
        extra = [NUDGE.format(skills_dir=SKILLS_DIR)]
    elif job == "se" and options.loading == "inject":
        extra = [INJECT.format(bodies=bodies)]
    dataset = _dataset(options.tasks) or {"path": str(work / "tasks" / job)}
    environment: dict[str, Any] = {("import_path" if ":" in env else "type"): env, "delete": True}
    kwargs = dict(options.env_options)
    port = _loopback_port(options.base_url)
    if options.env == "sandbox" and port and options.agent not in HOST_SIDE_AGENTS:
        # an agent that runs inside the trial reaches its endpoint through the relay only
        kwargs["loopback_ports"] = sorted({*kwargs.get("loopback_ports", []), port})
    if kwargs:
        environment["kwargs"] = kwargs
    return {
        "job_name": job,
        "jobs_dir": str(work / "jobs"),
        "n_attempts": options.trials,
        "agent_timeout_multiplier": options.agent_timeout_multiplier,
        # two jobs run at once, so each gets half of the trials in flight
        "n_concurrent_trials": options.concurrency
        if job == BOTH
        else max(1, options.concurrency // 2),
        "quiet": True,
        "environment": environment,
        "agents": agents,
        "datasets": [dataset],
        "extra_instructions": extra,
    }


def _loopback_port(url: str | None) -> int | None:
    """The port of an http(s) URL on 127.0.0.1/localhost, else None."""
    from urllib.parse import urlsplit

    if not url:
        return None
    parts = urlsplit(url)
    if parts.hostname not in ("127.0.0.1", "localhost"):
        return None
    return parts.port or (443 if parts.scheme == "https" else 80)


def arm_differences(configs: dict[str, dict[str, Any]]) -> list[str]:
    """Where the arms' settings differ beyond the skills, the loading line and each arm's own
    job name and task copy: each such difference breaks the arms' integrity. `configs`: the
    job files by name, ``both`` (its agent entries are the arms) or ``se`` and ``sd``."""
    if BOTH in configs:
        job = configs[BOTH]
        if len(job["agents"]) != 2:
            return ["agents"]
        se, sd = ({**job, "agents": [agent]} for agent in job["agents"])
    else:
        se, sd = configs["se"], configs["sd"]

    def neutral(config: dict[str, Any]) -> dict[str, Any]:
        out = json.loads(json.dumps(config))
        out.pop("job_name")
        out.pop("extra_instructions")
        out["agents"][0].pop("skills")
        if "path" in out["datasets"][0]:
            out["datasets"][0]["path"] = str(Path(out["datasets"][0]["path"]).parent)
        return out

    a, b = neutral(se), neutral(sd)
    differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    if not se["agents"][0]["skills"] or sd["agents"][0]["skills"]:
        differ.append("skills")  # SE has the pool, SD none
    return differ


def _two_jobs_because(options: HarborOptions, work: Path, own_skills: list[str]) -> str | None:
    """Why the arms cannot share one job, or None when they can (docs/harness.md, "What one
    run does")."""
    jobs = work / "jobs"
    if (jobs / "se").is_dir() or (jobs / "sd").is_dir():
        return "this work folder was begun with two jobs (before 5 Dec 2026): it resumes as two"
    if options.loading != "on-demand":
        return (f"--loading {options.loading} adds a line to the instruction, which Harbor "
                "gives every agent of a job, and only the with-skills arm may have it")  # fmt: skip
    if own_skills:
        return (f"{len(own_skills)} task(s) ship their own skills, which the without-skills "
                "arm's copy of the tasks must not have")  # fmt: skip
    return None


def _key(options: HarborOptions, pool_hash: str) -> str:
    from hf_skillfollow.config import stable_hash

    settings = asdict(options)
    settings["skills"] = pool_hash
    for plumbing in _MAY_CHANGE_ON_RESUME:
        settings.pop(plumbing)
    # the trials do not depend on the judge (its verdicts are kept per judge, `_judged`), and
    # a run of --tasks keeps the key it had before skill evals existed
    settings.pop("judge")
    settings.pop("set_aside_bad_records")  # how to mend the run folders, not what ran
    if settings["benchmark"] is None:
        settings.pop("benchmark")
    return stable_hash(settings)[:12]


def run_harbor(
    options: HarborOptions, output_dir: Path, echo: Callable[[str], None]
) -> HarborOutcome:
    """Plan, run (or resume) both jobs, import their trials; see the module docstring."""
    from hf_skillfollow.harness import _stage
    from hf_skillfollow.skills import SkillPoolError, load_pool

    _check_evals(options)
    embedded = None
    if options.model is None:
        options, embedded = _embedded(options)
    options = replace(
        options,
        tasks=options.tasks or ("" if options.benchmark else str(EXAMPLES / "tasks")),
        skills=options.skills or EXAMPLES / "skills",
    )
    _check(options)
    if options.tasks and _dataset(options.tasks) is None:
        # the work folder's key hashes the folder, not the words typed: `--tasks tasks` in two
        # projects is two runs, and `.` or `x/..` names a task by its folder's own name
        options = replace(options, tasks=str(Path(options.tasks).resolve()))
    assert options.skills is not None
    try:
        pool = load_pool(options.skills)
    except (SkillPoolError, OSError, ValueError) as exc:
        raise HarnessError(f"--skills {options.skills}: {str(exc).splitlines()[0]}") from None
    evals = judge = None
    if options.benchmark is not None:
        from hf_skillfollow.harness import _evals_tasks, _judged

        evals = _evals_tasks.load(pool)
        pool = evals.served  # the answer keys are withdrawn from what the SE arm is given
        judge = _judged.judge_config(options.model, options.base_url, options.api_key_env,
                                     options.judge, embedded is not None)  # fmt: skip
    harbor = harbor_executable()
    versions = pool.content_hash + (f"+{evals.version}" if evals is not None else "")
    work = output_dir / f"harbor-{_key(options, versions)}"
    notes: list[str] = []
    try:
        if evals is not None:
            options = replace(options, tasks=str(evals.write(work / "evals-tasks")))
        folders = _stage.stage_pool(pool, _fresh(work / "skills"))
        names = tuple(skill.name for skill in pool.skills)
        jobs, staged_note = _stage_jobs(options, work, evals is not None, names)
    except _stage.StageError as exc:
        raise HarnessError(str(exc)) from None
    notes += staged_note
    bodies = _inject_bodies(pool) if options.loading == "inject" else ""
    configs = {job: job_config(options, job, work, folders, bodies) for job in jobs}
    differ = arm_differences(configs)
    if differ:  # a bug of ours, never the user's input: refuse rather than run unpaired arms
        raise HarnessError(f"the arms' job settings differ beyond the skills: {', '.join(differ)}")
    for job, config in configs.items():
        (work / f"{job}.json").write_text(json.dumps(config, indent=2))
    if options.env == "sandbox":
        _check_sandbox_importable(harbor)
    notes.append(
        "note: the arms share the agent, model, endpoint, environment and attempts; Harbor's "
        "agents take no seed, so sampling is the agent's own in both arms"
    )
    if options.loading == "inject":
        notes.append(
            "note: --loading inject puts every skill body in the instruction, so every task "
            "had the skills: the rows put every task in S_call (detector inject), so RAE = "
            "OAE by design; the transcripts' own events stay in the traces"
        )
    if embedded is not None:
        notes.append(
            "note: no --model: the embedded SmolLM2-135M drives Terminus on this machine; a "
            "model this small mostly fails agentic tasks, so this run shows the machinery, "
            "not what the skills are worth"
        )
    asyncio.run(_run_jobs(harbor, work, list(configs), echo, embedded))
    judging = None
    if evals is not None:
        from hf_skillfollow.harness._judged import judge_trials

        judging = judge_trials(work, evals.tasks, judge, options.concurrency, echo)
    return _import(options, work, list(configs), notes, judging)


def _stage_jobs(
    options: HarborOptions, work: Path, evals: bool, pool_names: tuple[str, ...] = ()
) -> tuple[list[str], list[str]]:
    """Stage the tasks for one job of both arms where they can share it, else for two; return
    the job names and what the run must say about them. A task shipping a skill under a pool
    skill's name (`pool_names`) is refused."""
    from hf_skillfollow.harness import _stage

    notes: list[str] = []
    why = _two_jobs_because(options, work, [])
    staged = None
    if _dataset(options.tasks) is None:
        tasks = _stage.find_tasks(Path(options.tasks))
        if options.env == "sandbox":
            _check_recipes(tasks)
            _stage.check_sandbox_sizes(tasks)  # else refused per trial, each after a job start
        if not evals:
            from hf_skillfollow.harness._evals_tasks import refuse_judged

            refuse_judged(tasks)  # a skill eval's reward is a placeholder without the judge
        if why is None:
            staged = _stage.stage_tasks(tasks, _fresh(work / "tasks" / BOTH), None, pool_names)
            why = _two_jobs_because(options, work, staged.own_skills)
            if why is not None and (work / "jobs" / BOTH).is_dir():
                # the job's key names the tasks' folder, not its content: it changed since
                raise HarnessError(
                    f"{work / 'jobs' / BOTH}: this run began as one job of both arms, but now "
                    f"{why}; give another -o to start afresh"
                )
        if why is not None:
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(work / "tasks" / BOTH)
            staged = _stage.stage_tasks(
                tasks, work / "tasks" / "se", work / "tasks" / "sd", pool_names
            )
    else:
        notes.append(
            f"note: --tasks {options.tasks} is a registry dataset, passed to both arms as "
            "Harbor downloads it: a task that ships its own skills keeps them in the "
            "without-skills arm (download it and give the folder to strip them)"
        )
    if staged is not None and options.loading == "nudge":
        _check_nudge_dirs(work / "tasks" / "se", staged.own_skills)
    if staged is not None and staged.own_skills and why is not None:
        notes.append(
            f"note: {len(staged.own_skills)} task(s) ship their own skills "
            f"(environment/skills/): removed from the without-skills arm's copy: "
            + ", ".join(staged.own_skills[:10])
            + (" ..." if len(staged.own_skills) > 10 else "")
        )
    if why is None:
        return [BOTH], notes
    notes.append(f"note: the arms run as two Harbor jobs, each with half of --concurrency: {why}")
    return ["se", "sd"], notes


def _check_nudge_dirs(copies: Path, names: list[str]) -> None:
    """The nudge line names `SKILLS_DIR`, but Harbor installs the pool in a task's own
    ``[environment] skills_dir`` (`Trial._resolve_effective_skills_dir`): refuse a task whose
    with-skills copy names another, rather than tell the agent to look where nothing is."""
    import tomllib

    elsewhere = []
    for name in names:
        try:
            data = tomllib.loads((copies / name / "task.toml").read_text("utf-8", "replace"))
        except (ValueError, RecursionError, OSError):
            continue  # staging read it already; Harbor refuses what it cannot read
        environment = data.get("environment")
        place = environment.get("skills_dir") if isinstance(environment, dict) else None
        if place and place != SKILLS_DIR:
            elsewhere.append(f"{name} ({place})")
    if elsewhere:
        raise HarnessError(
            f"--loading nudge: its line says the skills are in {SKILLS_DIR}, but Harbor "
            f"installs them in the task's own [environment] skills_dir: "
            f"{', '.join(elsewhere[:5])}{' ...' if len(elsewhere) > 5 else ''}; use "
            "--loading on-demand or inject"
        )


def _check_recipes(tasks: list[Path]) -> None:
    """Each task's Dockerfile as the sandbox reads it, checked here: inside Harbor a refusal
    ends its job in a traceback box, not one line naming the task's own file."""
    from hf_skillfollow.harness._env_recipe import read_dockerfile

    for task in tasks:
        environment = task / "environment"
        if environment.is_symlink() or (environment / "Dockerfile").is_symlink():
            continue  # not staged (links are not copied): the sandbox never reads it
        try:
            read_dockerfile(task / "environment")
        except (ValueError, OSError) as exc:
            raise HarnessError(str(exc)) from None


def _check_evals(options: HarborOptions) -> None:
    """`--benchmark` and the judge flags with a harness: skill evals only, as the chat loop
    names them, and the judge only where something is judged."""
    if options.benchmark is None:
        if options.judge:
            flag = "--" + next(iter(options.judge)).replace("_", "-")
            raise HarnessError(
                f"{flag}: only with --benchmark skill-evals (nothing else is judged)"
            )
        return
    if options.benchmark != "skill-evals":
        raise HarnessError(
            f"--benchmark {options.benchmark}: with --harness, only skill-evals (the pool's "
            "evals as workspace tasks); give other tasks as Harbor tasks with --tasks"
        )
    if options.tasks:
        raise HarnessError(
            "--tasks: not with --benchmark skill-evals (its tasks are the pool's evals)"
        )
    if options.skills is None:
        raise HarnessError("--benchmark skill-evals: name the skill pool with --skills POOL")


def _check(options: HarborOptions) -> None:
    if options.loading not in LOADINGS:
        raise HarnessError(f"--loading {options.loading!r}: choose one of {', '.join(LOADINGS)}")
    if options.trials < 1:
        raise HarnessError(f"--trials {options.trials}: at least 1")
    if options.concurrency < 1:
        raise HarnessError(f"--concurrency {options.concurrency}: at least 1")
    if not options.tasks and options.benchmark is None:
        raise HarnessError("--tasks: a folder of Harbor tasks or a registry dataset name@version")


def _fresh(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def _inject_bodies(pool: Any) -> str:
    bodies = "\n\n".join(f"## Skill: {s.name}\n\n{s.body.strip()}" for s in pool.skills)
    if len(bodies) > _MAX_INJECT_CHARS:
        raise HarnessError(
            f"--loading inject: the pool's bodies are {len(bodies)} characters, over "
            f"{_MAX_INJECT_CHARS}; use on-demand or nudge"
        )
    return bodies


def _check_sandbox_importable(harbor: Path) -> None:
    """The sandbox environment is loaded by Harbor's own interpreter: it must import there."""
    python = _harbor_python(harbor)
    target = ENVIRONMENTS["sandbox"].split(":")[0]
    import subprocess

    # -P: `-c` would put the current folder first on the path, and a benchmark checkout
    # holding `hf_skillfollow/` would run on the host (seen before 5 Dec)
    try:
        probe = subprocess.run(
            [str(python), "-P", "-c", f"import {target}"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "no answer in 120 s"
        raise HarnessError(
            f"--env sandbox: cannot run Harbor's interpreter {python} ({why}) to check that the "
            "sandbox environment imports there; point $SKILLFOLLOW_HARBOR at the harbor "
            "command of the environment Harbor is installed in"
        ) from None
    if probe.returncode != 0:
        raise HarnessError(
            f"--env sandbox: {target} does not import in Harbor's interpreter ({python}); "
            "install this package there without dependencies: "
            f"{python} -m pip install --no-deps <hf-skillfollow> (.ci/setup-harbor does)"
        )


def _harbor_python(harbor: Path) -> Path:
    """The interpreter Harbor's command runs on: the ``#!`` line of its console script, else the
    ``python`` beside the script. `harbor` on PATH is often a link into the environment Harbor
    is installed in (pipx, uv tool), beside no ``python``: the script's own folder counts."""
    script = harbor.resolve()
    try:
        with script.open("rb") as f:
            first = f.readline(4096)
    except OSError:
        first = b""
    words = first[2:].decode("utf-8", "replace").split() if first.startswith(b"#!") else []
    if words and Path(words[0]).is_absolute() and Path(words[0]).name.startswith("python"):
        return Path(words[0])  # `#!/usr/bin/env python3` falls through: no interpreter named
    return script.parent / "python"


def harbor_env() -> dict[str, str]:
    """Harbor's process environment: ours, less the offline-hostile defaults."""
    env = dict(os.environ)
    # LiteLLM fetches a model price list from the internet at import unless told not to.
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # Harbor 0.26 reports every command and job to PostHog from a detached process unless
    # told not to: a measurement tool sends nothing a user did not ask for (HARBOR_TELEMETRY=1
    # in the user's environment turns it back on).
    env.setdefault("HARBOR_TELEMETRY", "0")
    env.setdefault(_EMBEDDED_KEY, "sk-no-key-required")
    env["PYTHONUNBUFFERED"] = "1"
    # Every Python Harbor starts here (the sandbox's init is `python -m ...`) leaves the
    # current folder off its path: a folder of downloaded tasks may hold `hf_skillfollow/`.
    env["PYTHONSAFEPATH"] = "1"
    return env


@dataclass(frozen=True)
class _Embedded:
    """The embedded llama.cpp server a run without --model starts for its agent."""

    gguf: Path
    port: int
    threads: int


#: the key variable the embedded server's agent is told to read (the server needs no key)
_EMBEDDED_KEY = "SKILLFOLLOW_EMBEDDED_KEY"
#: Terminus's completion budget per turn with the embedded model. Terminus sends no max_tokens
#: and llama.cpp then generates to the end of its 8,192-token context: a 135M model rarely
#: stops by itself, so one turn ran ~7 minutes here and every trial hit its agent timeout.
#: 512 tokens hold Terminus's JSON answer (analysis, plan, a few commands).
EMBEDDED_MAX_TOKENS = 512


def _embedded(options: HarborOptions) -> tuple[HarborOptions, _Embedded]:
    from hf_skillfollow.backends._base import BackendStartupError
    from hf_skillfollow.backends._local import choose_threads, resolve_gguf
    from hf_skillfollow.backends._server import free_port
    from hf_skillfollow.config import DEFAULT_LOCAL_MODEL

    if options.base_url:
        raise HarnessError("--base-url: give --model with it (no --model runs the embedded model)")
    try:
        gguf = resolve_gguf(DEFAULT_LOCAL_MODEL)
    except BackendStartupError as exc:
        raise HarnessError(str(exc)) from None
    server = _Embedded(gguf, free_port(), choose_threads(None))
    kwargs = dict(options.agent_kwargs)
    if options.agent == "terminus-2":
        kwargs.setdefault("max_turns", 4)  # bounded: a 135M model rarely declares the task done
        kwargs.setdefault("llm_call_kwargs", {"max_tokens": EMBEDDED_MAX_TOKENS})
    return replace(
        options,
        model=f"openai/{gguf.name}",
        base_url=f"http://127.0.0.1:{server.port}/v1",
        api_key_env=_EMBEDDED_KEY,
        agent_kwargs=kwargs,
        # one request at a time on this machine's CPU: a turn takes tens of seconds
        agent_timeout_multiplier=options.agent_timeout_multiplier or 4.0,
    ), server


@contextlib.asynccontextmanager
async def _serving(server: _Embedded | None) -> AsyncIterator[None]:
    """The embedded model's llama.cpp server for the duration of the jobs (nothing without)."""
    if server is None:
        yield
        return
    import tempfile

    from hf_skillfollow.backends._base import BackendStartupError
    from hf_skillfollow.backends._local import server_config
    from hf_skillfollow.backends._server import launched_server

    with tempfile.TemporaryDirectory(prefix="hf-skillfollow-llama-") as tmp:
        config = Path(tmp) / "server.json"
        config.write_text(json.dumps(server_config(
            server.gguf, server.gguf.name, port=server.port, n_threads=server.threads)))  # fmt: skip
        # -P: `-m` would put the current folder first on the path (a `llama_cpp/` there runs)
        cmd = [sys.executable, "-P", "-m", "llama_cpp.server", "--config_file", str(config)]
        try:
            async with launched_server(
                "llama.cpp", cmd, ready_url=f"http://127.0.0.1:{server.port}/v1/models",
                ready_timeout_s=180.0, env={"HOST": "127.0.0.1", "PORT": str(server.port)},
            ):  # fmt: skip
                yield
        except BackendStartupError as exc:
            raise HarnessError(str(exc)) from None


async def _run_jobs(
    harbor: Path,
    work: Path,
    names: list[str],
    echo: Callable[[str], None],
    server: _Embedded | None = None,
) -> None:
    """The job(s) `names`, at once (two jobs: arms interleaved in time, so the endpoint's load
    falls on both alike; one job interleaves them itself, task by task)."""
    jobs = work / "jobs"
    jobs.mkdir(exist_ok=True)

    async def one(name: str) -> None:
        job = jobs / name
        if (job / "config.json").is_file():
            _carry_endpoint(job / "config.json", work / f"{name}.json")
            argv = [str(harbor), "job", "resume", "-p", str(job)]
            echo(f"harbor: resuming the {name} job in {job}")
        else:
            argv = [str(harbor), "run", "-c", str(work / f"{name}.json"), "-y"]
        log = jobs / f"{name}.log"
        with log.open("ab") as out:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=out, env=harbor_env()
            )
            try:
                rc = await proc.wait()
            except BaseException:  # cancelled (Ctrl-C, SIGTERM: _terminate) or the other job failed
                await _stop(proc)
                raise
        if rc != 0:
            tail = log.read_bytes()[-_LOG_TAIL:].decode(errors="replace").splitlines()
            # the last line that says something: Harbor's tracebacks end in a box's border
            said = [line.strip(_BOX) for line in tail if any(c.isalnum() for c in line)]
            last = said[-1] if said else "no output"
            raise HarnessError(
                f"harbor ({name} job) exited with {rc}: {last[:300]} (log: {log}; finished "
                "trials are kept: the same command resumes)"
            )

    async with _serving(server):
        await asyncio.gather(*(one(name) for name in names))


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM a Harbor job and SIGKILL it if it has not ended within `_STOP_GRACE_S`; its
    trials' sandboxes die with it (their init's parent-death signal)."""
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        await asyncio.wait_for(proc.wait(), _STOP_GRACE_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()


def _carry_endpoint(recorded: Path, current: Path) -> None:
    """A resumed job talks to today's endpoint: the recorded job file takes the current
    `base_url` and key variable (Harbor resumes only an unchanged job file otherwise), and so
    do the job's `lock.json` and each finished trial's `config.json` and `lock.json`, which
    Harbor matches against the planned trials (else "Existing trial config does not match
    planned job config": the embedded server's port is new on every run). The endpoint a
    trial used stays in its `result.json`. Every agent entry takes it (the one job of both
    arms has two; they share the endpoint). The job folder's files are Harbor's, read bounded
    like any trial folder (the importers' reader): one that is too large, too deep or not JSON
    stops the resume with one line naming it."""
    from hf_skillfollow.importers._base import ImportInputError
    from hf_skillfollow.importers._walk import read_json

    now = json.loads(current.read_text())["agents"][0]
    job = recorded.parent
    files = [recorded, job / "lock.json"]
    for result in job.glob("*/result.json"):  # a finished trial; an unfinished one is redone
        files += [result.parent / "config.json", result.parent / "lock.json"]
    files = [path for path in files if path.is_file() and not path.is_symlink()]

    def read(path: Path) -> Any:
        try:
            return read_json(path, job)
        except ImportInputError as exc:
            raise HarnessError(f"cannot resume the job in {job}: {exc}") from None

    # All checked before any is rewritten (a bad one leaves the job as it was), one at a time:
    # a job of many trials is never held in memory whole.
    for path in files:
        read(path)
    for path in files:
        config = read(path)
        _set_endpoint(config, now["base_url"], now["model_api_key_name"])
        path.write_text(json.dumps(config, indent=2))


def _set_endpoint(node: Any, base_url: str, key_name: str, depth: int = 0) -> None:
    """Every agent entry (a dict with `base_url` and `model_api_key_name`) takes the endpoint."""
    if depth > 8:
        return
    if isinstance(node, dict):
        if "base_url" in node and "model_api_key_name" in node:
            node["base_url"], node["model_api_key_name"] = base_url, key_name
        children = list(node.values())
    else:
        children = node if isinstance(node, list) else []
    for child in children:
        _set_endpoint(child, base_url, key_name, depth + 1)


def _import(
    options: HarborOptions, work: Path, jobs: list[str], notes: list[str], judging: Any = None
) -> HarborOutcome:
    """The trial folders through part 1's Harbor importer into ordinary run folders: the one
    place this harness calls the importer. The one job of both arms is given as a job that ran
    both (each trial's arm is the skills its recorded agent had); two jobs as one per arm.
    `judging` (skill evals): the blinded judge's verdicts replace the trials' placeholder
    rewards."""
    from hf_skillfollow.importers import ImportInputError, ImportOptions, import_runs
    from hf_skillfollow.store import RunDirError

    dataset = _dataset(options.tasks)
    examples = Path(options.tasks).resolve() == (EXAMPLES / "tasks").resolve()
    benchmark = dataset["name"] if dataset else "examples" if examples else Path(options.tasks).name
    benchmark = options.benchmark or benchmark
    import_options = ImportOptions(
        skills=work / "skills",
        tasks=None if dataset else work / "tasks" / jobs[0],
        loading=options.loading,
        benchmark=f"harbor:{benchmark}",
    )
    folders = {name: [work / "jobs" / name] for name in jobs}
    try:
        result = import_runs(
            "harbor",
            folders.get("se", []),
            folders.get("sd", []),
            import_options,
            output_dir=work.parent,
            paths=folders.get(BOTH, []),
            provenance=PROVENANCE,
            judging=judging,
            set_aside_bad_records=options.set_aside_bad_records,
        )
    except ImportInputError as exc:
        raise HarnessError(f"import of {work / 'jobs'}: {exc}") from None
    except RunDirError as exc:
        # the importer's way out names `import`'s flag; here it is this command's. Another
        # run folder error (a manifest that is no JSON, another cell's folder) is no bad line:
        # that flag mends nothing there, so it is said as it is
        where, way_out, _ = str(exc).partition("; to move the bad line(s)")
        if not way_out:
            raise HarnessError(where) from None
        raise HarnessError(
            f"{where}; to move the bad line(s) to records.rejected and write their pairs "
            "again, give the same `run --harness harbor` command with --set-aside-bad-records"
        ) from None
    notes.extend(result.notes)
    notes.append(
        f"imported {result.n_pairs} pair(s) ({result.n_written} new, {result.n_already} "
        f"already recorded) from {work / 'jobs'}"
    )
    if result.n_dropped:
        notes.append(f"note: {result.n_dropped} trial(s) had no partner in the other arm")
    for violation in result.violations:
        notes.append(f"arm-integrity violation: {violation}")
    return HarborOutcome(result.run_dirs, notes, work)

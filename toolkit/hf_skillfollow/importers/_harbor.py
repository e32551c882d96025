"""Harbor trial folders (`harbor run` jobs; also SkillsBench's archive).

A trial folder holds `result.json` (Harbor's `TrialResult`: `task_name`, `trial_name`,
`task_checksum`, `agent_info`, `agent_result`, `verifier_result.rewards`, `exception_info`,
`started_at`), `config.json` and `agent/…` (the agent's own log, e.g. `agent/claude-code.txt`
stream-json, or the ATIF `agent/trajectory.json`). A job folder's own `result.json` (no
`trial_name`) is not a trial and is passed over. The arm of every trial is the flag its path
was given with, never a folder name. `collect` (the walk) also serves `_benchflow`.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Collection
from pathlib import Path, PurePosixPath
from typing import Any

from hf_skillfollow.importers._base import (
    CANCELLED,
    Arm,
    Collected,
    ImportInputError,
    ImportOptions,
    ImportRequest,
    Trial,
)
from hf_skillfollow.importers._pairing import start_key
from hf_skillfollow.importers._walk import (
    existing_files,
    field,
    find_file,
    given_path,
    read_json,
    walk_files,
)

_MAX_TEXT = 500
_MAX_NAME = 200
#: Where agents leave their transcript, in order of preference (the agent's own stream
#: first: it carries tool results, which tell a failed load from a successful one).
_TRANSCRIPTS = (
    "agent/{agent}.txt", "agent/{agent}.jsonl", "agent/trajectory.json",
    # Gemini CLI's own chat recording, for a trial that left no trajectory.json
    "agent/{agent}.trajectory.json",
    "agent/claude-code.txt", "agent/codex.txt", "agent/opencode.txt", "agent/gemini-cli.txt",
    "agent/openhands.txt", "agent/claude_agent_acp.txt", "agent/trajectory.jsonl",
)  # fmt: skip


#: Harbor's TrialResult fields: a BenchFlow rollout names itself `rollout_name` or, as
#: SkillsBench's 2026-05 OpenCode rollouts do, `trial_name`, but has none of these.
HARBOR_FIELDS = ("verifier_result", "agent_info", "exception_info")

#: A trial from its parsed `result.json` (an object) and that file's path.
TrialReader = Callable[[dict[str, Any], Path, Arm, ImportOptions], "Trial | Unfinished | None"]


@dataclasses.dataclass(frozen=True)
class Unfinished:
    """A reader's answer for a trial still running (no end, no verdict, no exception): left
    out with a note, so a later import records it once it has finished. Its task and start
    time (as recorded, else None and '') hold back the finished trials of its task and arm
    that started at or after it: pairs are by ordinal, and once it finishes they would shift
    (`_hold_back`)."""

    task: str | None
    started_at: str


def collect_harbor(request: ImportRequest) -> Collected:
    return collect(request, "harbor", read_trial, jobs=True)


def collect(
    request: ImportRequest, harness: str, reader: TrialReader, *, jobs: bool = False
) -> Collected:
    """Every trial under the with/without-skills paths, each made by `reader` from its
    `result.json`, read once here (None: not a trial, such as a job's own result.json); with
    `jobs`, also under `request.paths`, jobs that ran both arms (`_JobArms` gives each trial's
    arm)."""
    if request.paths and not jobs:
        raise ImportInputError(
            f"--job: not for {harness} (give --with-skills and --without-skills)"
        )
    if not request.paths and (not request.with_paths or not request.without_paths):
        raise ImportInputError(
            "give the trials of both arms: --with-skills PATH... and --without-skills PATH..."
            + (", or --job PATH... (a job that ran both)" if jobs else "")
        )
    trials: list[Trial] = []
    notes: list[str] = []
    where: dict[Path, str] = {}
    ids: dict[str, Trial] = {}
    # the trials of two jobs, one per arm: each recorded agent must be the first one's but for
    # the skills (a job's own are checked by _JobArms)
    same = _FirstAgent("config.agent", "the arms", _NOT_COMPARED) if jobs else None
    running: list[tuple[Unfinished, Arm | None]] = []
    lacking: list[Path] = []  # trial folders with no result.json
    unstarted: list[tuple[Path, Path, Arm | None]] = []  # (folder, root, arm) of those
    tasks: dict[str, str] = {}  # a recorded `config.task` -> its trials' task name
    cancelled: dict[Path, str] = {}  # a cancelled trial's folder -> when it ended
    n_read = 0
    for arm, flag, paths in (
        ("se", "--with-skills", request.with_paths),
        ("sd", "--without-skills", request.without_paths),
        (None, "--job", request.paths),
    ):
        for root in paths:
            given_path(root, flag)
            found = 0
            arms = _JobArms(root) if arm is None else None
            n_lacking = len(lacking)
            for result_path in walk_files(root, "result.json", lacking):
                data = read_json(result_path, root)
                n_read += 1
                if request.on_read:
                    request.on_read(n_read)
                if not isinstance(data, dict):
                    raise ImportInputError(
                        f"{result_path}: a JSON {type(data).__name__}, not a result object"
                    )
                trial = reader(data, result_path, arm or "se", request.options)
                if isinstance(trial, Unfinished):
                    running.append((trial, arm))  # a job's (--job): both arms held back
                    continue
                if trial is None:
                    continue
                recorded = _task_key(field(data, result_path, "config", "task"))
                if jobs and recorded:
                    tasks.setdefault(recorded, trial.task)
                if arms is not None:
                    trial = dataclasses.replace(trial, arm=arms.arm(result_path, data))
                elif same is not None:
                    agent = field(data, result_path, "config", "agent")
                    if isinstance(agent, dict):  # an older result.json records none
                        same.check(result_path, agent)
                key = result_path.resolve()
                if key in where:
                    raise ImportInputError(
                        f"{result_path}: given twice" if where[key] == flag
                        else f"{result_path}: given under both {where[key]} and {flag}"
                    )  # fmt: skip
                where[key] = flag
                if trial.trial_id:
                    _once(trial, ids, flag)
                if (end := _cancelled_at(data)) is not None:
                    cancelled[trial.source] = end
                trials.append(trial)
                found += 1
            unstarted.extend((folder, root, arm) for folder in lacking[n_lacking:])
            if not found:
                notes.append(f"{flag} {root}: no {harness} trial (result.json) found")
    trials, reruns = _set_aside_cancelled(trials, cancelled)
    if reruns:
        first, rerun = reruns[0]
        notes.append(
            f"{len(reruns)} cancelled trial(s) (CancelledError) set aside for their rerun in the "
            f"same job, e.g. {first.source} (rerun: {rerun.source.name}); each rerun's trace "
            "notes name the trial it replaces"
        )
    waiting = {t.source for t in trials} & cancelled.keys()  # cancelled, no rerun finished yet
    if lacking and jobs:
        # Harbor writes result.json when a trial ends: until then its folder is a trial
        # still running, which sorts first once it finishes (its start is not known yet)
        names: dict[str, list[str]] = {}  # Harbor's trial-name prefix -> its tasks
        for task in sorted({t.task for t in trials}):
            names.setdefault(task.split("/")[-1][:32].rstrip("_-"), []).append(task)
        unfinished = [(Unfinished(task, ""), a) for f, r, a in unstarted
                      for task in _folder_tasks(f, r, tasks, names)]  # fmt: skip
        trials, held = _hold_back(trials, unfinished, cancelled=waiting)
        notes.append(
            f"{len(lacking)} trial folder(s) without a result.json (still running, or killed "
            f"before writing it), e.g. {lacking[0]}: {held} finished trial(s) of their task "
            "and arm held back; import again once they finish, or resume the Harbor job, or "
            "remove the folder of a trial that was killed and will not be redone"
        )
    elif lacking:
        notes.append(
            f"{len(lacking)} trial folder(s) without a result.json passed over (killed before "
            f"writing it, or not a trial), e.g. {lacking[0]}"
        )
    if running:
        trials, held = _hold_back(trials, running, cancelled=waiting)
        notes.append(
            f"{len(running)} trial(s) still running (no finished_at, verdict or exception) left "
            + (f"out, and {held} finished trial(s) of their task and arm started at or after "
               "them held back" if held else "out")
            + ": import again once they finish"
        )  # fmt: skip
    return Collected(trials, notes, harness)


def _task_key(task: Any) -> str:
    """A recorded `config.task` (Harbor's TaskConfig) as a key: the copy in a finished trial's
    result.json and the one in a running trial's config.json are the same dump."""
    return json.dumps(task, sort_keys=True) if isinstance(task, dict) else ""


def _folder_tasks(
    folder: Path, root: Path, tasks: dict[str, str], names: dict[str, list[str]]
) -> list[str | None]:
    """The task of a Harbor trial folder without its result.json; [None] when not known
    (then every task of its arm is held back). Its config.json is Harbor's TrialConfig: the
    task its finished trials of the same `task` record, else Harbor's own naming
    (`task.name` of a registry package, else `task.path`'s folder name). Failing that (no
    readable config.json: a hostile one must not stop the import), the trial name's part
    before `__`: Harbor names a trial `<task>__<id>`, the task's last `/` part cut to 32
    characters, so every task read that it may stand for (`names`, by that prefix)."""
    path = find_file(folder, "config.json")
    try:
        config = read_json(path, root) if path is not None else None
    except ImportInputError:
        config = None
    task = config.get("task") if isinstance(config, dict) else None
    if isinstance(task, dict):
        if _task_key(task) in tasks:
            return [tasks[_task_key(task)]]
        name, where = task.get("name"), task.get("path")
        if isinstance(name, str) and 0 < len(name) <= _MAX_NAME:
            return [name]
        if isinstance(where, str) and PurePosixPath(where).name:
            return [PurePosixPath(where).name[:_MAX_NAME]]
    prefix, cut, _ = folder.name.partition("__")
    if not (cut and prefix):
        return [None]
    return list(names.get(prefix, [prefix]))


def _hold_back(
    trials: list[Trial],
    running: list[tuple[Unfinished, Arm | None]],
    cancelled: Collection[Path] = (),
) -> tuple[list[Trial], int]:
    """The trials to pair now, and how many were held back: those of a task and arm that has a
    trial still running, started at or after it. Once it finishes it sorts before them, so
    pairing them now would give pairs that a later import contradicts. A running trial whose
    arm is not known yet (a job of both arms: its record is checked once it has finished)
    holds back both arms; one without a task name, every task of its arm. A `cancelled` trial
    (its folder) of such a task and arm is held back whenever it started: the running one may
    be its rerun, which then replaces it (`_set_aside_cancelled`)."""
    first: dict[tuple[str | None, Arm | None], tuple[int, int, str]] = {}
    for unfinished, arm in running:
        key, start = (unfinished.task, arm), start_key(unfinished.started_at)
        first[key] = min(first.get(key, start), start)

    def held(t: Trial) -> bool:
        keys = ((task, arm) for task in (t.task, None) for arm in (t.arm, None))
        start = start_key(t.started_at)  # the order pairing uses
        waits = t.source in cancelled
        return any(waits or start >= first[k] for k in keys if k in first)

    kept = [t for t in trials if not held(t)]
    return kept, len(trials) - len(kept)


def _cancelled_at(data: dict[str, Any]) -> str | None:
    """When a cancelled trial ended (`finished_at`, else the exception's `occurred_at`, else
    its start; '' when none is recorded), None for a trial that was not cancelled."""
    info = data.get("exception_info")
    if not isinstance(info, dict) or info.get("exception_type") != CANCELLED:
        return None
    for value in (data.get("finished_at"), info.get("occurred_at"), data.get("started_at")):
        if isinstance(value, str) and 0 < len(value) <= _MAX_NAME:
            return value
    return ""


def _set_aside_cancelled(
    trials: list[Trial], cancelled: dict[Path, str]
) -> tuple[list[Trial], list[tuple[Trial, Trial]]]:
    """The trials without each cancelled one that its job reran, and the (cancelled, rerun)
    pairs. A cancelled trial is no outcome of the agent: its rerun is a trial of the same task
    and arm in the same job folder that started at or after the cancelled one ended (an
    attempt running beside it started before), the earliest not already taken by another. A
    rerun that was cancelled too is set aside for its own rerun in turn. The rerun's notes
    (its traces') name the trial it replaces. A cancelled trial without a rerun stays an
    error row. Harbor 0.26 never leaves both in one job folder (`harbor job resume` deletes
    a cancelled trial's folder before rerunning it): this is for trials copied together or
    another Harbor version; after a resume, `_runs._reruns` puts the rerun in the recorded
    pair of the cancelled trial."""
    if not cancelled:
        return trials, []
    groups: dict[tuple[Path, str, Arm], list[Trial]] = {}
    for trial in trials:
        groups.setdefault((trial.source.parent, trial.task, trial.arm), []).append(trial)
    aside: dict[Path, Trial] = {}  # a cancelled trial's folder -> its rerun
    for group in groups.values():
        group.sort(key=lambda t: (start_key(t.started_at), str(t.source)))
        taken: set[Path] = set()
        for trial in group:
            if trial.source not in cancelled:
                continue
            ended = start_key(cancelled[trial.source])
            rerun = next((r for r in group if r is not trial and r.source not in taken
                          and start_key(r.started_at) >= ended
                          and start_key(r.started_at) > start_key(trial.started_at)), None)  # fmt: skip
            if rerun is not None:
                taken.add(rerun.source)
                aside[trial.source] = rerun
    if not aside:
        return trials, []
    said: dict[Path, list[str]] = {}
    for source, rerun in aside.items():
        said.setdefault(rerun.source, []).append(
            f"rerun of the cancelled trial {source.name} ({CANCELLED}, ended "
            f"{cancelled[source] or 'at an unrecorded time'}), which was set aside"
        )
    kept = [
        dataclasses.replace(t, notes=(*t.notes, *said[t.source])) if t.source in said else t
        for t in trials
        if t.source not in aside
    ]
    by_source = {t.source: t for t in trials}
    return kept, [(by_source[s], r) for s, r in aside.items()]


class _JobArms:
    """The arm of each trial of one Harbor job that ran both arms (`--job`): the job's agent
    entries are one agent with and without `skills`, and a trial's arm is whether the agent
    its `config.json` records (what Harbor ran, and resumes by) had skills.

    A trial folder is untrusted, so its record is checked, each a one-line error naming the
    file: the copy in its `result.json` must record the same skills; the agent must be one of
    its job's (the job's own `config.json`, where there is one); and, the job's or not, every
    trial's agent must be the same but for the skills, one list of skills for every
    with-skills trial. A trial that records no skills but had them anyway is left to the
    arm-integrity check of its transcript, as in two jobs."""

    def __init__(self, root: Path) -> None:
        self.root = root if root.is_dir() else root.parent  # a result.json given alone
        self.jobs: dict[Path, list[dict[str, Any]] | None] = {}
        self.first = _FirstAgent("agent", "the arms of a job")
        self.skills: tuple[Path, list[Any]] | None = None

    def arm(self, result_path: Path, result: dict[str, Any]) -> Arm:
        """The arm of the trial whose `result.json` is `result_path`, parsed as `result`."""
        folder = result_path.parent
        path = find_file(folder, "config.json")
        if path is None:
            raise ImportInputError(
                f"{folder}: no config.json, so no recorded agent to tell its arm"
            )
        agent = field(read_json(path, self.root), path, "agent", kind=dict, required=True)
        skills = field(agent, path, "skills", kind=list) or []
        recorded = field(result, result_path, "config", "agent", "skills")
        if recorded is not None and recorded != skills:
            raise ImportInputError(
                f"{result_path}: field 'config.agent.skills' differs from {path}'s "
                "'agent.skills': the trial's arm is recorded two ways"
            )
        self._check(path, agent, skills, folder.parent)
        return "se" if skills else "sd"

    def _check(self, path: Path, agent: dict[str, Any], skills: list[Any], job: Path) -> None:
        agents = self._job_agents(job)
        if agents is not None and agent not in agents:
            raise ImportInputError(
                f"{path}: field 'agent' is none of the agents of its job ({job / 'config.json'})"
            )
        self.first.check(path, agent)
        if skills:
            if self.skills is None:
                self.skills = (path, skills)
            elif skills != self.skills[1]:
                raise ImportInputError(
                    f"{path}: field 'agent.skills' differs from {self.skills[0]}'s: the "
                    "with-skills trials of a job must have the same skills"
                )

    def _job_agents(self, job: Path) -> list[dict[str, Any]] | None:
        """The job's agent entries (its own `config.json`, inside the given folder), checked
        to differ only in the skills; None when the trial's folder has no job's config."""
        if job not in self.jobs:
            self.jobs[job] = None
            path = find_file(job, "config.json") if job.is_relative_to(self.root) else None
            data = read_json(path, self.root) if path is not None else None
            agents = field(data, path, "agents", kind=list) if path is not None else None
            if agents is not None:
                if not all(isinstance(a, dict) for a in agents):
                    raise ImportInputError(f"{path}: field 'agents' holds a non-object")
                neutral = [_but_skills(a) for a in agents]
                if any(n != neutral[0] for n in neutral):
                    raise ImportInputError(
                        f"{path}: field 'agents': the job's agents differ beyond their skills "
                        "(the arms must differ only in the skills)"
                    )
                self.jobs[job] = agents
        return self.jobs[job]


#: Agent fields of two jobs (one per arm) that may differ: the skills; how many trials ran at
#: once; and where the model was served (a resumed `run --harness harbor` serves it on a new
#: port, and result.json keeps the endpoint each trial used): none changes what the agent does.
_NOT_COMPARED = (
    "skills", "n_concurrent", "concurrency_group", "base_url", "model_api_key_name",
)  # fmt: skip


def _but_skills(agent: dict[str, Any], ignored: tuple[str, ...] = ("skills",)) -> dict[str, Any]:
    """An agent entry without its `ignored` fields (its `skills`): what the arms' entries share."""
    return {k: v for k, v in agent.items() if k not in ignored}


class _FirstAgent:
    """Every trial's recorded agent must be the first trial's but for `ignored` (the skills):
    the arms may differ only in the skills. One line naming the file and the first field that
    differs."""

    def __init__(self, where: str, arms: str, ignored: tuple[str, ...] = ("skills",)) -> None:
        self.where, self.arms, self.ignored = where, arms, ignored
        self.first: tuple[Path, dict[str, Any]] | None = None

    def check(self, path: Path, agent: dict[str, Any]) -> None:
        neutral = _but_skills(agent, self.ignored)
        if self.first is None:
            self.first = (path, neutral)
            return
        if neutral != self.first[1]:
            keys = sorted(k for k in neutral.keys() | self.first[1].keys()
                          if neutral.get(k) != self.first[1].get(k))  # fmt: skip
            raise ImportInputError(
                f"{path}: field '{self.where}.{keys[0][:_MAX_NAME]}' differs from "
                f"{self.first[0]}'s: {self.arms} must differ only in the skills"
            )


def _once(trial: Trial, seen: dict[str, Trial], flag: str) -> None:
    """A trial found a second time (a copy of its folder elsewhere: SkillsBench's archive holds
    some trials in two folders) would pair with itself or count twice: one error naming both."""
    other = seen.setdefault(trial.trial_id, trial)
    if other is not trial:
        where = ("under both --with-skills and --without-skills" if other.arm != trial.arm
                 else f"twice under {flag}")  # fmt: skip
        raise ImportInputError(
            f"{trial.source}: trial {trial.trial_id[:_MAX_NAME]!r} is also at {other.source} "
            f"({where}); give each trial once"
        )


def read_trial(
    data: dict[str, Any], path: Path, arm: Arm, options: ImportOptions
) -> Trial | Unfinished | None:
    """The trial whose `result.json` is `path`, parsed as `data`; None for a job-level
    result.json. A BenchFlow rollout is refused, one line: read as a Harbor trial, both arms
    would be "no verifier result" and the agent unknown."""
    if not any(k in data for k in HARBOR_FIELDS) and ("rollout_name" in data or "rewards" in data):
        raise ImportInputError(
            f"{path}: a BenchFlow rollout (rollout_name or rewards, none of Harbor's "
            f"{', '.join(HARBOR_FIELDS)}), not a Harbor trial; import it with "
            "`hf-skillfollow import benchflow`"
        )
    if "trial_name" not in data:
        return None  # a job's result.json (stats over its trials)
    if all(data.get(k) is None for k in ("finished_at", "verifier_result", "exception_info")):
        task = data.get("task_name")
        started = data.get("started_at")
        return Unfinished(task if isinstance(task, str) else None,
                          started if isinstance(started, str) else "")  # fmt: skip
    folder = path.parent
    task = field(data, path, "task_name", kind=str, required=True)
    # kept in every trace, and the checksums in the manifest's task list
    checksum = field(data, path, "task_checksum", kind=str, max_chars=_MAX_NAME) or ""
    started = field(data, path, "started_at", kind=str, max_chars=_MAX_NAME) or ""
    error = _exception(data, path)
    reward = None
    if error is None:
        reward, error = _reward(data, path)
    passed = error is None and reward is not None and reward >= options.pass_threshold
    agent = (
        field(data, path, "agent_info", "name", kind=str)
        or field(data, path, "config", "agent", "name", kind=str)
        or "unknown"
    )
    version = field(data, path, "agent_info", "version", kind=str) or "unknown"
    model = _model(data, path)
    check_names(path, task_name=task, **{"agent_info.name": agent,
                "agent_info.version": version, "model": model})  # fmt: skip
    return Trial(
        arm=arm,
        task=task,
        checksum=checksum,
        started_at=started,
        passed=bool(passed),
        error=error,
        source=folder,
        transcripts=transcripts(folder, agent),
        agent=agent,
        agent_version=version,
        model=model,
        reward=reward,
        harness_record=harness_record(data, path),
        tokens=tokens(data, path),
        seconds=_seconds(data),
        dataset=_dataset(data, path),
        trial_id=field(data, path, "trial_name", kind=str) or "",
    )


def _dataset(data: dict[str, Any], path: Path) -> str:
    """Harbor's `source` (the registry dataset, e.g. `terminal-bench@2.0`), bounded."""
    source = field(data, path, "source")
    return source if isinstance(source, str) and 0 < len(source) <= _MAX_NAME else ""


def check_names(path: Path, **names: str) -> None:
    """Task, agent and model names are bounded (they key cells and show in every output)."""
    for name, value in names.items():
        limit = 300 if name == "task_name" else _MAX_NAME
        if not value.strip() or len(value) > limit:
            raise ImportInputError(
                f"{path}: field {name!r} is empty or longer than {limit} characters"
            )


def _exception(data: dict[str, Any], path: Path) -> str | None:
    info = data.get("exception_info")
    if info is None:
        return None
    if not isinstance(info, dict):
        return f"exception: {str(info)[:_MAX_TEXT]}"
    kind = field(data, path, "exception_info", "exception_type", kind=str) or "exception"
    message = field(data, path, "exception_info", "exception_message", kind=str) or ""
    return f"{kind}: {message}"[:_MAX_TEXT].rstrip(": ")


def _reward(data: dict[str, Any], path: Path) -> tuple[float | None, str | None]:
    """(reward, None), or (None, why there is none)."""
    rewards = field(data, path, "verifier_result", "rewards")
    if rewards is None:
        return None, "no verifier result"
    if not isinstance(rewards, dict):
        raise ImportInputError(f"{path}: field 'verifier_result.rewards' is not an object")
    if "reward" in rewards:
        value = rewards["reward"]
        name = "reward"
    elif len(rewards) == 1:
        name, value = next(iter(rewards.items()))
    else:
        return None, f"no 'reward' among the verifier's rewards {sorted(rewards)[:5]}"[:_MAX_TEXT]
    return reward_value(value, path, f"verifier_result.rewards.{name}"), None


def _model(data: dict[str, Any], path: Path) -> str:
    name = field(data, path, "config", "agent", "model_name", kind=str)
    if name:
        return name
    info = field(data, path, "agent_info", "model_info", kind=dict) or {}
    model, provider = info.get("name"), info.get("provider")
    if isinstance(model, str) and model:
        return f"{provider}/{model}" if isinstance(provider, str) and provider else model
    return "unknown"


def harness_record(data: dict[str, Any], path: Path) -> dict[str, Any] | None:
    """What the harness itself recorded about skills, for the `harness-record` detector: the
    names some Harbor agents put in `agent_result.metadata.skills_loaded`, and BenchFlow's
    count `n_skill_invocations` (top level or in `agent_result`)."""
    record: dict[str, Any] = {}
    metadata = field(data, path, "agent_result", "metadata")
    if isinstance(metadata, dict) and "skills_loaded" in metadata:
        record["agent_result"] = {"metadata": {"skills_loaded": metadata["skills_loaded"]}}
    invocations = data.get("n_skill_invocations")
    if invocations is None:
        invocations = field(data, path, "agent_result", "n_skill_invocations")
    if invocations is not None:
        if isinstance(invocations, bool) or not isinstance(invocations, int) or invocations < 0:
            raise ImportInputError(
                f"{path}: field 'n_skill_invocations' is {invocations!r:.40}, not a count"
            )
        record["n_skill_invocations"] = invocations
    return record or None


def reward_value(value: Any, path: Path, name: str) -> float:
    """A verifier reward as a float; anything but a finite number names the file and field."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ImportInputError(f"{path}: field {name!r} is {value!r:.60}, not a finite number")
    return float(value)


def transcripts(folder: Path, agent: str, first: tuple[str, ...] = ()) -> tuple[Path, ...]:
    """The trial's transcript candidates, in order: `first` (relative paths), then where agents
    leave theirs; empty files are none. Which one holds a transcript is decided on reading
    (`_activation.detect_trial`): SkillsBench's `agent/gemini-cli.txt` is plain text."""
    safe = agent if agent.replace("-", "").replace("_", "").isalnum() else "claude-code"
    names = dict.fromkeys((*first, *(t.format(agent=safe) for t in _TRANSCRIPTS)))
    return tuple(p for p in existing_files(folder, *names) if p.stat().st_size > 0)


def tokens(data: dict[str, Any], path: Path) -> tuple[int, int]:
    """The (input, output) token counts in `agent_result` (Harbor's and BenchFlow's)."""
    return (
        _count(field(data, path, "agent_result", "n_input_tokens")),
        _count(field(data, path, "agent_result", "n_output_tokens")),
    )


#: Largest count a run folder's int64 token columns hold; a larger one is not a count.
_MAX_COUNT = 2**63 - 1


def _count(value: Any) -> int:
    """A recorded token count, 0 when absent or not a count (negative, or past int64: the
    tables could not hold it, and the record would already be in records.jsonl)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_COUNT:
        return value
    return 0


def seconds_value(value: Any) -> float:
    """A recorded duration in seconds, 0.0 when absent or not a finite number >= 0 (`1e400`
    parses as inf, which the run folder's tables refuse after the record is appended)."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok and math.isfinite(value) and value >= 0 else 0.0


def _seconds(data: dict[str, Any]) -> float:
    import datetime as dt

    phase = data.get("agent_execution")
    if not isinstance(phase, dict):
        return 0.0
    try:
        start = dt.datetime.fromisoformat(str(phase.get("started_at")))
        end = dt.datetime.fromisoformat(str(phase.get("finished_at")))
        seconds = (end - start).total_seconds()
    except (ValueError, TypeError):  # TypeError: one time with a zone, the other without
        return 0.0
    return seconds_value(seconds)

"""BenchFlow rollout folders (`bench run` jobs).

A rollout folder holds `result.json` (`task_name`, `rollout_name`, `rewards.reward`, `error`,
`verifier_error`, `export_error`, `agent`/`agent_name`, `model`, `n_tool_calls`,
`n_skill_invocations` (also in `agent_result`, with the token counts), `source.file_hashes`),
`timing.json` (seconds per phase) and `trajectory/acp_trajectory.jsonl`, the ACP tool calls
the `acp` detector reads. Some rollouts name themselves `trial_name` instead of `rollout_name`
(SkillsBench's 2026-05 OpenCode run) and are still rollouts. Older BenchFlow jobs wrote
Harbor's trial shape (`verifier_result`, `agent_info`, `exception_info`): those are read as
Harbor trials. Rollouts of one job sit in a timestamped folder
(`<job>/<YYYY-MM-DD__HH-MM-SS>/<rollout>/`), so without a start time the folder path orders
them. BenchFlow's own count of skill calls goes to the `harness-record` detector when the
rollout left no transcript.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hf_skillfollow.importers._base import (
    Arm,
    Collected,
    ImportOptions,
    ImportRequest,
    Trial,
)
from hf_skillfollow.importers._harbor import (
    HARBOR_FIELDS,
    Unfinished,
    check_names,
    collect,
    harness_record,
    read_trial,
    reward_value,
    seconds_value,
    tokens,
    transcripts,
)
from hf_skillfollow.importers._walk import field, find_file, read_json

_MAX_TEXT = 500
_MAX_NAME = 200
_ERRORS = ("error", "verifier_error", "export_error")


def collect_benchflow(request: ImportRequest) -> Collected:
    return collect(request, "benchflow", read_rollout)


def read_rollout(
    data: dict[str, Any], path: Path, arm: Arm, options: ImportOptions
) -> Trial | Unfinished | None:
    """The rollout whose `result.json` is `path`, parsed as `data` (a Harbor-shaped one as a
    Harbor trial); None for a job's summary."""
    if any(k in data for k in HARBOR_FIELDS):
        return read_trial(data, path, arm, options)
    name = "rollout_name" if "rollout_name" in data else "trial_name"
    if name not in data:
        return None  # a job's summary.json-like result
    folder = path.parent
    task = field(data, path, "task_name", kind=str, required=True)
    agent = (
        field(data, path, "agent_name", kind=str)
        or field(data, path, "agent", kind=str)
        or "unknown"
    )
    model = field(data, path, "model", kind=str) or "unknown"
    check_names(path, task_name=task, agent=agent, model=model)
    error = _error(data, path)
    reward = None
    if error is None:
        rewards = field(data, path, "rewards")
        if not isinstance(rewards, dict) or rewards.get("reward") is None:
            error = "no verifier result"
        else:
            reward = reward_value(rewards["reward"], path, "rewards.reward")
    return Trial(
        arm=arm,
        task=task,
        checksum=_checksum(data, path),
        started_at=field(data, path, "started_at", kind=str, max_chars=_MAX_NAME) or "",
        passed=error is None and reward is not None and reward >= options.pass_threshold,
        error=error,
        source=folder,
        transcripts=transcripts(folder, agent, ("trajectory/acp_trajectory.jsonl",)),
        agent=agent,
        agent_version=field(data, path, "agent_version", kind=str) or "unknown",
        model=model,
        reward=reward,
        harness_record=harness_record(data, path),
        tokens=tokens(data, path),
        seconds=_seconds(folder, data),
        trial_id=field(data, path, name, kind=str) or "",
    )


def _error(data: dict[str, Any], path: Path) -> str | None:
    for name in _ERRORS:
        value = data.get(name)
        if value:
            return f"{name}: {str(value)[:_MAX_TEXT]}"
    return None


def _checksum(data: dict[str, Any], path: Path) -> str:
    """The task's content identity: a hash of `source.file_hashes` ('' when not recorded)."""
    hashes = field(data, path, "source", "file_hashes")
    if not isinstance(hashes, dict) or not hashes:
        return ""
    from hf_skillfollow.config import stable_hash

    return stable_hash(sorted((str(k), str(v)) for k, v in hashes.items()), 32)


def _seconds(folder: Path, data: dict[str, Any]) -> float:
    timing = data.get("timing")
    if not isinstance(timing, dict):
        path = find_file(folder, "timing.json")
        timing = read_json(path, folder) if path is not None else {}
    return seconds_value(timing.get("agent_execution") if isinstance(timing, dict) else None)

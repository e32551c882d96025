"""`push_runs`: publish run directories to a Hub dataset repo (or a local folder, dry run).

One commit adds the new run files plus the regenerated card; nothing published is ever
rewritten or deleted. Tokens are resolved by huggingface_hub (argument, HF_TOKEN or the
cached login) and scrubbed from every error this module raises.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from hf_skillfollow.hub._card import render_card
from hf_skillfollow.hub._layout import CARD_PATH, MANIFEST, HubError, RunTables, read_run_dir
from hf_skillfollow.hub._numbers import known_tool_schemas
from hf_skillfollow.hub._plan import (
    PushPlan,
    RepoState,
    all_transitions,
    card_changed,
    has_traces,
    plan_push,
)
from hf_skillfollow.hub._repos import BRANCH, REPO_TYPE, HubRepo, LocalRepoFolder
from hf_skillfollow.hub._secrets import refuse_token_in, scrubbed

log = logging.getLogger("hf_skillfollow.hub")


@dataclass
class PushResult:
    """What a push added (or, for a dry run, wrote into the folder)."""

    repo_id: str
    target: str
    dry_run: bool
    added: dict[str, int] = field(default_factory=dict)  # path -> rows
    skipped: list[str] = field(default_factory=list)
    card_updated: bool = False
    commit_url: str | None = None

    @property
    def changed(self) -> bool:
        return bool(self.added) or self.card_updated


def build_repo(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path,
    *,
    repo_id: str | None = None,
    license: str = "cc-by-4.0",
) -> PushResult:
    """Write (or extend) a results repo folder from run directories; uploads nothing."""
    folder = LocalRepoFolder(Path(out_dir))
    runs = _read_runs(run_dirs)
    name = repo_id or folder.root.name
    plan, card = _plan_and_card(runs, folder, name, license, run_dirs)
    files = dict(plan.add)
    updated = card_changed(card, folder)
    if updated:
        files[CARD_PATH] = card.encode()
    folder.write(files)
    return PushResult(name, folder.name, True, dict(plan.rows), plan.skipped, updated)


def push_runs(
    run_dirs: Sequence[str | Path],
    repo_id: str,
    *,
    private: bool = False,
    token: str | None = None,
    dry_run_dir: str | Path | None = None,
    api: Any = None,
    license: str = "cc-by-4.0",
) -> PushResult:
    """Publish run directories to the dataset repo `repo_id` in one commit (see module doc)."""
    _check_repo_id(repo_id)
    if dry_run_dir is not None:
        return build_repo(run_dirs, dry_run_dir, repo_id=repo_id, license=license)
    runs = _read_runs(run_dirs)
    with scrubbed(token):
        api = api if api is not None else _hf_api(token)
        api.create_repo(repo_id, repo_type=REPO_TYPE, private=private, exist_ok=True)
        state = HubRepo(api, repo_id)
        plan, card = _plan_and_card(runs, state, repo_id, license, run_dirs)
        return _commit(api, state, plan, card, token)


def _commit(api: Any, state: HubRepo, plan: PushPlan, card: str, token: str | None) -> PushResult:
    from huggingface_hub import CommitOperationAdd

    result = PushResult(state.repo_id, state.name, False, dict(plan.rows), plan.skipped)
    result.card_updated = card_changed(card, state)
    if not result.changed:
        log.info("%s: nothing new to add", state.name)
        return result
    files = dict(plan.add) | ({CARD_PATH: card.encode()} if result.card_updated else {})
    refuse_token_in(files, token)
    ops = [
        CommitOperationAdd(path_in_repo=p, path_or_fileobj=data)
        for p, data in sorted(files.items())
    ]
    info = api.create_commit(
        state.repo_id,
        operations=ops,
        commit_message=_message(plan),
        repo_type=REPO_TYPE,
        revision=BRANCH,
        parent_commit=state.head,
    )
    result.commit_url = getattr(info, "commit_url", None)
    log.info("%s: added %d file(s)", state.name, len(ops))
    return result


def _plan_and_card(
    runs: list[RunTables],
    state: RepoState,
    repo_id: str,
    license: str,
    paths: Sequence[str | Path] = (),
) -> tuple[PushPlan, str]:
    from hf_skillfollow.hub._verifications import all_records, plan_records

    plan = plan_push(runs, state)
    plan_records(paths, state, plan)  # verification records given, or kept in the run dirs
    table = pa.concat_tables(all_transitions(plan, state))
    schemas = known_tool_schemas() | _manifest_tool_schemas(runs)
    card = render_card(
        table,
        repo_id=repo_id,
        has_traces=has_traces(plan, state),
        license=license,
        tool_schemas=schemas,
        verifications=all_records(plan, state),
    )
    return plan, card


def _read_runs(run_dirs: Sequence[str | Path]) -> list[RunTables]:
    from hf_skillfollow.hub._verifications import is_record_arg

    if not run_dirs:
        raise HubError("no run directories given")
    runs = [p for p in run_dirs if not is_record_arg(p)]  # record files are planned apart
    with ThreadPoolExecutor(max_workers=4) as pool:  # parquet reads release the GIL
        return list(pool.map(read_run_dir, runs))


def _manifest_tool_schemas(runs: list[RunTables]) -> dict[str, dict[str, Any]]:
    """prompts_hash -> tool schema recorded in the manifests of the runs being pushed."""
    out: dict[str, dict[str, Any]] = {}
    for run in runs:
        path = run.source / MANIFEST
        manifest = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        if isinstance(manifest.get("tool_schema"), dict) and isinstance(
            manifest.get("prompts_hash"), str
        ):
            out[manifest["prompts_hash"]] = manifest["tool_schema"]
    return out


def _message(plan: PushPlan) -> str:
    runs = sorted({Path(p).stem for p in plan.add})
    if not runs:
        return "Regenerate dataset card"
    head = ", ".join(runs[:5]) + (f" and {len(runs) - 5} more" if len(runs) > 5 else "")
    return f"Add skillfollow run(s) {head}"


def _check_repo_id(repo_id: str) -> None:
    parts = repo_id.split("/")
    if len(parts) != 2 or not all(parts):
        raise HubError(f"--repo {repo_id!r}: expected ORG/NAME (a Hub dataset repo id)")


def _hf_api(token: str | None) -> Any:
    from huggingface_hub import HfApi

    return HfApi(token=token)

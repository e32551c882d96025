"""Verification records in a results repo: `data/verifications/<id>--<run_id>.parquet`.

`push` adds record files given on its command line, and those a run directory keeps in its
`verifications/` folder, beside the runs they verify; like runs, a published record is never
rewritten (same name with other bytes is refused).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from hf_skillfollow.hub._layout import HubError, transitions_path
from hf_skillfollow.hub._plan import PushPlan, RepoState

REPO_DIR = "data/verifications"


def is_record_arg(path: str | Path) -> bool:
    from hf_skillfollow.verify._record import RECORD_DIR, is_record_file

    p = Path(path)
    return is_record_file(p) or (p.is_dir() and p.name == RECORD_DIR)


def plan_records(paths: Sequence[str | Path], state: RepoState, plan: PushPlan) -> None:
    """Add the record files found in `paths` to `plan` (runs they name must be in the repo)."""
    from hf_skillfollow.verify._record import read_record, record_files

    files = record_files(Path(p) for p in paths)
    if not files:
        return
    for file in files:
        data = file.read_bytes()
        table = read_record(data, str(file))
        for run_id in sorted(set(table.column("run_id").to_pylist())):
            where = transitions_path(run_id)
            if not state.exists(where) and where not in plan.add:
                raise HubError(
                    f"{file}: verifies run {run_id!r}, which is not in {state.name}; push a "
                    "record to the repo that holds the run it verifies"
                )
        path = f"{REPO_DIR}/{file.name}"
        if state.exists(path):
            if state.read(path) != data:
                raise HubError(
                    f"{file}: {path} is already published with other content; records are never "
                    "overwritten (a new verification gets a new id)"
                )
            plan.skipped.append(path)
        else:
            plan.add[path] = data
            plan.rows[path] = table.num_rows


def all_records(plan: PushPlan, state: RepoState) -> pa.Table | None:
    """Every record the repo will hold after the push, or None when it has none."""
    from hf_skillfollow.verify._record import read_record

    published = [p for p in state.files_in(REPO_DIR) if _is_record(p)]
    tables = [read_record(state.read(p), f"{state.name}:{p}") for p in published]
    tables += [read_record(data, p) for p, data in sorted(plan.add.items()) if _is_record(p)]
    return pa.concat_tables(tables) if tables else None


def _is_record(path: str) -> bool:
    return path.startswith(REPO_DIR + "/") and path.endswith(".parquet")


__all__ = ["all_records", "is_record_arg", "plan_records"]

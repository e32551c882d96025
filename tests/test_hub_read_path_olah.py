"""The real read path: a repo folder from `push --dry-run`, served by the olah Hub mirror
(tests/_olah.py), read by the unmodified `huggingface_hub` and `datasets` clients exactly as
they would read huggingface.co, each in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from hf_skillfollow.cli import cli
from tests._fixtures_hub import two_cell_runs
from tests._olah import client, git_commit, mirror

REPO_ID = "org/results"
TOKEN = "hf_TESTSECRETolahToken0987654321"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """Run dirs, pushed with `--dry-run` into a git repo that olah serves as `org/results`."""
    root = tmp_path_factory.mktemp("olah")
    runs = two_cell_runs(root / "runs")
    repo = root / "mirrors" / "datasets" / "org" / "results"
    res = CliRunner().invoke(
        cli, ["push", *map(str, runs), "--repo", REPO_ID, "--dry-run", str(repo)]
    )
    assert res.exit_code == 0, res.output
    git_commit(repo)
    _foreign_repo(root / "mirrors" / "datasets" / "org" / "other")
    _escaping_repos(root)
    with mirror(root, REPO_ID) as endpoint:
        yield {"endpoint": endpoint, "runs": runs, "root": root}


def _foreign_repo(folder: Path) -> None:
    import pyarrow as pa

    (folder / "data").mkdir(parents=True)
    pq.write_table(
        pa.table({"text": ["a", "b"], "label": [0, 1]}), folder / "data" / "train.parquet"
    )
    (folder / "README.md").write_text("---\nlicense: mit\n---\n# not a results repo\n")
    git_commit(folder)


#: data_files paths that leave the snapshot: up into the Hub cache (another repo's rows), and
#: an absolute folder outside it (written by `_escaping_repos`).
CLIMB = "../../../datasets--org--results/snapshots/*/data/transitions/*.parquet"


def _escaping_repos(root: Path) -> None:
    """org/climb and org/absolute: cards whose `data_files` point outside the repo."""
    from tests._fixtures_hub import CELL_A, write_run_dir

    leak = write_run_dir(root / "leak", "run-leak", CELL_A)
    for name, path in (("climb", CLIMB), ("absolute", f"{leak}/*.parquet")):
        folder = root / "mirrors" / "datasets" / "org" / name
        (folder / "data" / "transitions").mkdir(parents=True)
        card = (
            "---\nconfigs:\n- config_name: transitions\n  data_files:\n"
            f"  - split: train\n    path: {json.dumps(path)}\n---\n# rows elsewhere\n"
        )
        (folder / "README.md").write_text(card)
        (folder / "data" / "transitions" / "README.md").write_text("no rows here\n")
        git_commit(folder)


def _client(served: dict, code: str, *args: str, tmp: Path) -> subprocess.CompletedProcess:
    return client(served["endpoint"], code, *args, tmp=tmp)


def _sorted(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: (r["run_id"], r["task_id"], r.get("arm", "")))


def _run_rows(served: dict, name: str) -> list[dict]:
    return _sorted([r for d in served["runs"] for r in pq.read_table(d / name).to_pylist()])


LOAD_DATASET = """
import json, sys
import datasets
from huggingface_hub import HfApi
files = HfApi().list_repo_files(sys.argv[1], repo_type="dataset")
out = {"files": files}
for config in ("transitions", "traces"):
    ds = datasets.load_dataset(sys.argv[1], config, split="train")
    out[config] = ds.to_list()
out["default"] = datasets.load_dataset(sys.argv[1], split="train").num_rows
print(json.dumps(out))
"""


def test_load_dataset_by_config_name_through_the_mirror(served: dict, tmp_path: Path) -> None:
    proc = _client(served, LOAD_DATASET, REPO_ID, tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sorted(out["files"]) == [
        "README.md",
        "data/traces/run-a0.parquet",
        "data/traces/run-a1.parquet",
        "data/traces/run-b0.parquet",
        "data/transitions/run-a0.parquet",
        "data/transitions/run-a1.parquet",
        "data/transitions/run-b0.parquet",
        "stats/card_cells.json",
        "stats/runs.parquet",
        "stats/summary.json",
    ]
    assert _sorted(out["transitions"]) == _run_rows(served, "transitions.parquet")
    assert _sorted(out["traces"]) == _run_rows(served, "traces.parquet")
    assert out["default"] == 40  # transitions is the default config


LOAD_TOOLKIT = """
import json, sys
import hf_skillfollow
from hf_skillfollow.schema import TRACES_SCHEMA, TRANSITIONS_SCHEMA
t = hf_skillfollow.load_transitions(sys.argv[1])
tr = hf_skillfollow.load_traces(sys.argv[1])
assert t.schema.equals(TRANSITIONS_SCHEMA) and tr.schema.equals(TRACES_SCHEMA)
print(json.dumps({"transitions": t.to_pylist(), "traces": tr.to_pylist()}))
"""


def test_load_transitions_and_traces_by_repo_id(served: dict, tmp_path: Path) -> None:
    proc = _client(served, LOAD_TOOLKIT, REPO_ID, tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert _sorted(out["transitions"]) == _run_rows(served, "transitions.parquet")
    assert _sorted(out["traces"]) == _run_rows(served, "traces.parquet")


LOAD_FOREIGN = """
import sys
import hf_skillfollow
try:
    hf_skillfollow.load_transitions(sys.argv[1])
except Exception as exc:
    print(type(exc).__name__, exc)
"""


def test_a_foreign_hub_dataset_is_reported_as_not_skillfollow(served: dict, tmp_path: Path) -> None:
    proc = _client(served, LOAD_FOREIGN, "org/other", tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith(
        "HubError org/other: not a skillfollow results repo: it has no 'transitions' config"
    )


def test_report_reads_the_repo_id(served: dict, tmp_path: Path) -> None:
    code = "from hf_skillfollow.cli import main; main()"
    proc = _client(
        served, code, "report", REPO_ID, "--format", "json", "--resamples", "2000", tmp=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    cells = {c["model"]: c for c in json.loads(proc.stdout)}
    assert sorted(cells) == ["org/model-a", "org/model-b"]
    a, b = cells["org/model-a"], cells["org/model-b"]
    assert (a["n_pairs"], a["n_cond"], a["b_cond"], a["c_cond"]) == (20, 12, 5, 1)
    assert (a["rae"], a["oae"]) == (pytest.approx(100 * 4 / 12), pytest.approx(15.0))
    assert (b["rae"], b["agg_lift"]) == (pytest.approx(-20.0), pytest.approx(50.0))
    assert b["sign_disagree"] is True


PUSH_TO_MIRROR = """
import sys
from hf_skillfollow.hub import HubError, push_runs
try:
    push_runs(sys.argv[2:], "org/results", token=sys.argv[1])
except HubError as exc:
    print("HubError", exc)
"""


def test_real_push_client_against_a_read_only_mirror_fails_cleanly_without_the_token(
    served: dict, tmp_path: Path
) -> None:
    """olah answers writes with 405: the real huggingface_hub error path, scrubbed."""
    runs = [str(r) for r in served["runs"]]
    proc = _client(served, PUSH_TO_MIRROR, TOKEN, *runs, tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("HubError push failed:")
    assert "405" in proc.stdout
    assert TOKEN not in proc.stdout + proc.stderr


PLAN_AGAINST_MIRROR = """
import json, sys
from huggingface_hub import HfApi
from hf_skillfollow.hub._layout import HubError, read_run_dir
from hf_skillfollow.hub._plan import plan_push
from hf_skillfollow.hub._repos import HubRepo
state = HubRepo(HfApi(), "org/results")
plan = plan_push([read_run_dir(d) for d in sys.argv[2:]], state)
out = {"head": state.head, "add": sorted(plan.add), "skipped": sorted(plan.skipped)}
try:
    plan_push([read_run_dir(sys.argv[1])], state)
except HubError as exc:
    out["conflict"] = str(exc)
print(json.dumps(out))
"""


def test_push_planning_reads_the_published_repo_through_the_real_client(
    served: dict, tmp_path: Path
) -> None:
    """The read half of `push` (repo_info, list_repo_files, hf_hub_download) against the mirror."""
    from tests._fixtures_hub import CELL_A, write_run_dir

    impostor = write_run_dir(tmp_path / "other", "run-b0", CELL_A)
    runs = [str(r) for r in served["runs"]]
    proc = _client(served, PLAN_AGAINST_MIRROR, str(impostor), *runs, tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(out["head"]) == 40
    assert out["add"] == [] and len(out["skipped"]) == 6
    assert "run id 'run-b0'" in out["conflict"] and "hf://datasets/org/results" in out["conflict"]


LOAD_ESCAPING = """
import sys
import hf_skillfollow
hf_skillfollow.load_transitions("org/results")  # in the local Hub cache beside the others
for repo in sys.argv[1:]:
    try:
        rows = hf_skillfollow.load_transitions(repo)
        print(repo, "READ", rows.num_rows, sorted(set(rows.column("run_id").to_pylist())))
    except Exception as exc:
        print(repo, type(exc).__name__, exc)
"""


def test_card_paths_that_leave_the_snapshot_are_refused(served: dict, tmp_path: Path) -> None:
    """Item 14: `../` or an absolute `data_files` path read rows from outside the repo (another
    repo's snapshot in the Hub cache, any folder) on the Hub path `verify` and the Space use."""
    proc = _client(served, LOAD_ESCAPING, "org/climb", "org/absolute", tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()[-2:]
    for repo, line in zip(("org/climb", "org/absolute"), lines, strict=True):
        assert line.startswith(f"{repo} HubError"), line
        assert "leaves the repository" in line and "data_files" in line

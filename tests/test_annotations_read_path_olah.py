"""The annotations config through the real Hub read path: a repo folder from `push --dry-run`
served by the olah mirror (tests/_olah.py), read by the unmodified
`datasets` client and by `hf-skillfollow report ORG/NAME --annotations`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from hf_skillfollow.cli import cli
from tests._annotation_fixtures import ScriptedAnnotatorDouble, label_json, write_annotation_run
from tests._olah import client, git_commit, mirror

REPO_ID = "org/annotated"
LABELS = {
    "Mbpp/2": "appropriate adherence",
    "Mbpp/3": "appropriate adherence",
    "Mbpp/4": "ignored/independent",
    "Mbpp/5": "misapplied/overapplied",
    "Mbpp/6": "format/interface failure",
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    root = tmp_path_factory.mktemp("olah-annotations")
    run_dir = write_annotation_run(root / "runs")
    with ScriptedAnnotatorDouble({t: [label_json(lab)] for t, lab in LABELS.items()}) as server:
        args = ["--backend", "openai", "--base-url", server.url, "--model", "annotator-double"]
        res = CliRunner().invoke(cli, ["annotate", str(run_dir), *args])
        assert res.exit_code == 0, res.output
    repo = root / "mirrors" / "datasets" / "org" / "annotated"
    res = CliRunner().invoke(cli, ["push", str(run_dir), "--repo", REPO_ID, "--dry-run", str(repo)])
    assert res.exit_code == 0, res.output
    git_commit(repo)
    with mirror(root, REPO_ID) as endpoint:
        yield {"endpoint": endpoint, "run_dir": run_dir}


LOAD = """
import json, subprocess, sys
import datasets
rows = datasets.load_dataset(sys.argv[1], "annotations", split="train").to_list()
report = subprocess.run([sys.executable, "-m", "hf_skillfollow.cli", "report", sys.argv[1], "--annotations",
                         "--format", "json", "--resamples", "100"], capture_output=True, text=True)
print(json.dumps({"rows": rows, "report": report.stdout, "stderr": report.stderr[-2000:]}))
"""


def test_annotations_config_and_report_through_the_mirror(served: dict, tmp_path: Path) -> None:
    proc = client(served["endpoint"], LOAD, REPO_ID, tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    published = pq.read_table(served["run_dir"] / "annotations.parquet").to_pylist()
    key = lambda r: r["task_id"]  # noqa: E731
    assert sorted(out["rows"], key=key) == sorted(published, key=key)
    (cell,) = json.loads(out["report"] or "null") or pytest.fail(out["stderr"])
    (ann,) = cell["annotations"]
    assert (ann["labelled_b"], ann["labelled_c"], ann["rae_problematic"]) == (3, 2, -100.0)

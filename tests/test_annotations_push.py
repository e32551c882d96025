"""Annotations published as the third config of a results repo and loaded back with the
real `datasets.load_dataset` (repo folder written by `push --dry-run`)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import yaml
from click.testing import CliRunner

from hf_skillfollow.annotate._store import AnnotationStore
from hf_skillfollow.cli import cli
from hf_skillfollow.hub import build_repo, load_annotations
from hf_skillfollow.schema import ANNOTATIONS_SCHEMA
from tests._annotation_fixtures import ScriptedAnnotatorDouble, label_json, write_annotation_run

LABELS = {
    "Mbpp/2": "appropriate adherence",
    "Mbpp/3": "appropriate adherence",
    "Mbpp/4": "ignored/independent",
    "Mbpp/5": "misapplied/overapplied",
    "Mbpp/6": "format/interface failure",
}


def _annotated_run(tmp_path: Path) -> Path:
    run_dir = write_annotation_run(tmp_path / "runs")
    with ScriptedAnnotatorDouble({t: [label_json(lab)] for t, lab in LABELS.items()}) as server:
        args = ["--backend", "openai", "--base-url", server.url, "--model", "annotator-double"]
        result = CliRunner().invoke(cli, ["annotate", str(run_dir), *args])
        assert result.exit_code == 0, result.output
    return run_dir


def _sorted(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: (r["annotator"], r["task_id"]))


def test_push_adds_the_annotations_config_and_load_dataset_reads_it_back(tmp_path: Path) -> None:
    import datasets

    run_dir = _annotated_run(tmp_path)
    repo = tmp_path / "repo"
    result = build_repo([run_dir], repo, repo_id="org/results")
    (path,) = [p for p in result.added if p.startswith("data/annotations/")]
    assert path.startswith("data/annotations/run-ann-") and result.added[path] == 5
    card = (repo / "README.md").read_text()
    meta = yaml.safe_load(card.split("---")[1])
    configs = {c["config_name"]: c["data_files"][0]["path"] for c in meta["configs"]}
    assert configs["annotations"] == "data/annotations/*.parquet"
    assert "## Why did it help or hurt? (annotations)" in card
    assert "appropriate adherence 2; ignored/independent 1" in card
    assert "problematic -100.0 (b 0, c 2, n 2)" in card and "b 3/3, c 2/2" in card
    assert "### `annotations`" in card and "| `failure` |" in card
    # A private cache: datasets keys a local folder's cache on its base name only.
    ds = datasets.load_dataset(
        str(repo), "annotations", split="train", cache_dir=str(tmp_path / "cache")
    )
    published = pq.read_table(run_dir / "annotations.parquet").to_pylist()
    assert _sorted(ds.to_list()) == _sorted(published)
    table = load_annotations(repo)
    assert table.schema.equals(ANNOTATIONS_SCHEMA) and _sorted(table.to_pylist()) == _sorted(
        published
    )


def test_a_second_annotator_adds_a_file_and_republishing_adds_nothing(tmp_path: Path) -> None:
    run_dir = _annotated_run(tmp_path)
    repo = tmp_path / "repo"
    build_repo([run_dir], repo, repo_id="org/results")
    again = build_repo([run_dir], repo, repo_id="org/results")
    assert again.added == {} and not again.card_updated
    store = AnnotationStore(run_dir)
    first = store.rows()[0]
    store.append(
        first
        | {"annotator": "other-model@abc", "annotator_model": "other-model", "label": "unclear"}
    )
    store.write_table()
    more = build_repo([run_dir], repo, repo_id="org/results")
    assert len(more.added) == 1 and more.card_updated
    assert len(load_annotations(repo)) == 6


def test_report_annotations_reads_a_repo_folder(tmp_path: Path) -> None:
    run_dir = _annotated_run(tmp_path)
    repo = tmp_path / "repo"
    build_repo([run_dir], repo, repo_id="org/results")
    out = CliRunner().invoke(
        cli, ["report", str(repo), "--annotations", "--format", "markdown", "--resamples", "100"]
    )
    assert out.exit_code == 0, out.output
    assert "| 3 / 3 | 2 / 2 | yes |" in out.output


def test_a_repo_without_annotations_has_no_such_config(tmp_path: Path) -> None:
    run_dir = write_annotation_run(tmp_path / "runs")
    repo = tmp_path / "repo"
    build_repo([run_dir], repo, repo_id="org/results")
    assert "annotations" not in (repo / "README.md").read_text().split("---")[1]
    assert load_annotations(repo) is None

"""Repo folder layout, deterministic parquet, and loading a repo folder / run dir back."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from hf_skillfollow.hub import HubError, build_repo, load_traces, load_transitions
from hf_skillfollow.hub._layout import parquet_bytes, read_run_dir
from hf_skillfollow.schema import (
    TRACES_SCHEMA,
    TRANSITIONS_SCHEMA,
    SchemaError,
    transitions_from_rows,
)
from tests._fixtures_hub import CELL_A, CELL_B, outcome_rows, two_cell_runs, write_run_dir


def _sorted_rows(table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: (r["run_id"], r["task_id"], r.get("arm", "")))


def _run_rows(run_dirs: list[Path], name: str) -> list[dict]:
    rows = [r for d in run_dirs for r in pq.read_table(d / name).to_pylist()]
    return sorted(rows, key=lambda r: (r["run_id"], r["task_id"], r.get("arm", "")))


def test_build_repo_writes_the_layout(tmp_path: Path) -> None:
    runs = two_cell_runs(tmp_path / "runs")
    result = build_repo(runs, tmp_path / "repo", repo_id="org/name")
    files = sorted(
        p.relative_to(tmp_path / "repo").as_posix()
        for p in (tmp_path / "repo").rglob("*")
        if p.is_file()
    )
    assert files == [
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
    assert result.added["data/transitions/run-a0.parquet"] == 12
    assert result.added["data/traces/run-b0.parquet"] == 40
    assert result.card_updated


def test_parquet_has_explicit_schema_zstd_and_one_row_group(tmp_path: Path) -> None:
    runs = two_cell_runs(tmp_path / "runs")
    build_repo(runs, tmp_path / "repo", repo_id="org/name")
    for name, schema in (("transitions", TRANSITIONS_SCHEMA), ("traces", TRACES_SCHEMA)):
        meta = pq.ParquetFile(tmp_path / "repo" / f"data/{name}/run-b0.parquet").metadata
        arrow = meta.schema.to_arrow_schema()
        assert [(f.name, f.type) for f in arrow] == [(f.name, f.type) for f in schema]
        assert [f.nullable for f in arrow] == [f.nullable for f in schema]
        assert meta.num_row_groups == 1
        assert {meta.row_group(0).column(i).compression for i in range(meta.num_columns)} == {
            "ZSTD"
        }


def test_parquet_bytes_are_deterministic_and_independent_of_row_order(tmp_path: Path) -> None:
    rows = outcome_rows(CELL_B, run_id="r1")
    ordered = transitions_from_rows(rows)
    shuffled = transitions_from_rows(list(reversed(rows)))
    d1, d2 = tmp_path / "a", tmp_path / "b"
    for d, table in ((d1, ordered), (d2, shuffled)):
        d.mkdir()
        pq.write_table(table, d / "transitions.parquet")
    b1 = parquet_bytes(read_run_dir(d1).transitions, "transitions")
    b2 = parquet_bytes(read_run_dir(d2).transitions, "transitions")
    assert b1 == b2
    assert b1 == parquet_bytes(read_run_dir(d1).transitions, "transitions")


def test_load_repo_folder_through_load_dataset_equals_the_runs(tmp_path: Path) -> None:
    runs = two_cell_runs(tmp_path / "runs")
    build_repo(runs, tmp_path / "repo", repo_id="org/name")
    transitions = load_transitions(tmp_path / "repo")
    traces = load_traces(str(tmp_path / "repo"))
    assert transitions.schema.equals(TRANSITIONS_SCHEMA)
    assert traces.schema.equals(TRACES_SCHEMA)
    assert _sorted_rows(transitions) == _run_rows(runs, "transitions.parquet")
    assert _sorted_rows(traces) == _run_rows(runs, "traces.parquet")


def test_datasets_load_dataset_reads_the_folder_like_the_toolkit(tmp_path: Path) -> None:
    """Users call `datasets.load_dataset`; the counts file beside the rows must not confuse it."""
    import datasets

    runs = two_cell_runs(tmp_path / "runs")
    build_repo(runs, tmp_path / "repo", repo_id="org/name")
    cache = str(tmp_path / "hf-cache")
    for config in ("transitions", "traces"):
        ds = datasets.load_dataset(str(tmp_path / "repo"), config, split="train", cache_dir=cache)
        assert _sorted_rows_list(ds.to_list()) == _run_rows(runs, f"{config}.parquet")
    default = datasets.load_dataset(str(tmp_path / "repo"), split="train", cache_dir=cache)
    assert default.num_rows == 40  # the default config is transitions


def _sorted_rows_list(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: (r["run_id"], r["task_id"], r.get("arm", "")))


def test_load_run_dir_reads_its_parquet(tmp_path: Path) -> None:
    run = write_run_dir(tmp_path, "run-x", CELL_A)
    assert _sorted_rows(load_transitions(run)) == _run_rows([run], "transitions.parquet")
    assert len(load_traces(run)) == 40


def test_second_build_adds_nothing_and_conflicting_run_is_refused(tmp_path: Path) -> None:
    runs = two_cell_runs(tmp_path / "runs")
    repo = tmp_path / "repo"
    build_repo(runs, repo, repo_id="org/name")
    before = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file()}
    again = build_repo(runs, repo, repo_id="org/name")
    assert again.added == {} and not again.card_updated and not again.changed
    assert sorted(again.skipped)[0] == "data/traces/run-a0.parquet"
    other = write_run_dir(tmp_path / "other", "run-b0", CELL_A)  # same run id, other rows
    with pytest.raises(HubError, match=r"run id 'run-b0' .* different transitions rows"):
        build_repo([other], repo, repo_id="org/name")
    assert {p: p.read_bytes() for p in repo.rglob("*") if p.is_file()} == before


def test_run_dir_errors_name_the_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(HubError, match=r"empty: no transitions.parquet"):
        build_repo([empty], tmp_path / "repo")
    run = write_run_dir(tmp_path, "run-m", CELL_B)
    (run / "manifest.json").write_text(json.dumps({"run_id": "other"}))
    with pytest.raises(HubError, match=r"manifest.json: run_id 'other' differs"):
        build_repo([run], tmp_path / "repo")


def test_future_schema_version_is_refused(tmp_path: Path) -> None:
    import pyarrow as pa

    runs = two_cell_runs(tmp_path / "runs")
    repo = tmp_path / "repo"
    build_repo(runs, repo, repo_id="org/name")
    path = repo / "data/transitions/run-b0.parquet"
    table = pq.read_table(path)
    col = table.schema.get_field_index("schema_version")
    table = table.set_column(col, table.schema.field(col), pa.array([2] * len(table), pa.int32()))
    pq.write_table(table, path)
    with pytest.raises(SchemaError, match=r"schema_version \[1, 2\] is not supported"):
        load_transitions(repo)


def test_run_id_must_be_a_file_name(tmp_path: Path) -> None:
    run = tmp_path / "weird"
    run.mkdir()
    pq.write_table(
        transitions_from_rows(outcome_rows(CELL_B, run_id="../escape")), run / "transitions.parquet"
    )
    with pytest.raises(HubError, match=r"run_id '\.\./escape' cannot name a file"):
        build_repo([run], tmp_path / "repo")
    assert not (tmp_path / "repo").exists()


def test_several_run_ids_in_one_dir_are_refused(tmp_path: Path) -> None:
    run = tmp_path / "mixed"
    run.mkdir()
    rows = outcome_rows(CELL_B, run_id="r1")[:3] + outcome_rows(CELL_B, run_id="r2")[:3]
    pq.write_table(transitions_from_rows(rows), run / "transitions.parquet")
    with pytest.raises(HubError, match=r"holds several runs \['r1', 'r2'\]"):
        build_repo([run], tmp_path / "repo")


def test_foreign_repo_folder_is_reported_as_not_skillfollow(tmp_path: Path) -> None:
    import pyarrow as pa

    repo = tmp_path / "foreign"
    (repo / "data").mkdir(parents=True)
    pq.write_table(pa.table({"text": ["a", "b"], "label": [0, 1]}), repo / "data" / "train.parquet")
    (repo / "README.md").write_text("---\nlicense: mit\n---\n# some other dataset\n")
    with pytest.raises(
        HubError, match=r"not a skillfollow results repo: it has no 'transitions' config"
    ):
        load_transitions(repo)
    (repo / "README.md").write_text(
        "---\nconfigs:\n- config_name: transitions\n  data_files:\n  - split: train\n    path: data/*.parquet\n---\n"
    )
    with pytest.raises(SchemaError, match=r"not a skillfollow results repo .*missing column\(s\)"):
        load_transitions(repo)


def test_a_foreign_or_broken_file_in_a_repo_is_named(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    build_repo(two_cell_runs(tmp_path / "runs"), repo, repo_id="org/name")
    shard = repo / "data" / "transitions" / "run-b0.parquet"
    table = pq.read_table(shard)
    pq.write_table(table.drop_columns(["adherence"]), shard)
    with pytest.raises(SchemaError, match=rf"{shard} has other transitions columns or types"):
        load_transitions(repo)
    shard.write_bytes(b"PAR1 not really")
    with pytest.raises(SchemaError, match=rf"{shard}: not a readable parquet file"):
        load_transitions(repo)


def test_unknown_source_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(HubError, match=r"no such file or directory, and not a Hub dataset repo id"):
        load_transitions(str(tmp_path / "nope" / "x" / "y"))
    with pytest.raises(HubError, match=r"not a run directory"):
        load_transitions(tmp_path)


def test_same_rows_encoded_differently_count_as_published(tmp_path: Path) -> None:
    """Another pyarrow version may write other bytes for the same rows: not a conflict."""
    runs = two_cell_runs(tmp_path / "runs")
    repo = tmp_path / "repo"
    build_repo(runs, repo, repo_id="org/name")
    path = repo / "data/transitions/run-b0.parquet"
    pq.write_table(pq.read_table(path), path, compression="snappy")
    again = build_repo(runs, repo, repo_id="org/name")
    assert "data/transitions/run-b0.parquet" in again.skipped and again.added == {}


def test_importing_the_hub_package_stays_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys, hf_skillfollow.hub, hf_skillfollow.cli._push; "
        "print(sorted(m for m in ('pandas', 'datasets', 'huggingface_hub', 'jinja2', 'scipy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

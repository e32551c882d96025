"""Impossible rows (returned without invoked, negative counts, NaN decoding values) are schema
errors naming source, row and column, wherever rows are read: report, push and the Space."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from hf_skillfollow.cli import cli
from hf_skillfollow.schema import (
    TRACES_SCHEMA,
    TRANSITIONS_SCHEMA,
    SchemaError,
    validate_traces,
    validate_transitions,
)
from tests._fixtures_hub import CELL_A, outcome_rows, trace_rows
from tests._rows import transition_row

# (overrides of one transitions row, the columns the error must name)
BAD_TRANSITIONS = {
    "returned-without-invoked": ({"returned": True, "invoked": False, "skills_returned": ["s"]},
                                 "returned, invoked"),
    "negative-n_calls": ({"n_calls": -1}, "n_calls"),
    "nan-temperature": ({"temperature": math.nan}, "temperature"),
    "infinite-temperature": ({"temperature": math.inf}, "temperature"),
    "calls-without-invoked": ({"n_calls": 2, "queries": ["a", "b"]}, "n_calls, invoked"),
    "skills-without-returned": ({"invoked": True, "n_calls": 1, "skills_returned": ["s"]},
                                "skills_returned, returned"),
    "adherence-without-returned": ({"adherence": True}, "adherence, returned"),
    "more-queries-than-calls": ({"invoked": True, "n_calls": 1, "queries": ["a", "b"]},
                                "queries, n_calls"),
    "zero-top_k": ({"top_k": 0}, "top_k"),
    "negative-repeat_index": ({"repeat_index": -2}, "repeat_index"),
}  # fmt: skip

BAD_TRACES = {
    "negative-prompt_tokens": ({"prompt_tokens": -5}, "prompt_tokens"),
    "nan-latency": ({"latency_s": math.nan}, "latency_s"),
    "unknown-arm": ({"arm": "xx"}, "arm"),
    "sd-arm-with-calls": ({"arm": "sd", "n_calls": 1}, "arm, n_calls"),
}  # fmt: skip


def _rows(bad: dict[str, Any]) -> list[dict[str, Any]]:
    rows = [transition_row(task_id=f"Mbpp/{i}") for i in range(2, 6)]
    rows[2].update(bad)  # row 2 (0-based) is the bad one
    return rows


@pytest.mark.parametrize("case", sorted(BAD_TRANSITIONS))
def test_impossible_transitions_row_names_source_row_and_columns(case: str) -> None:
    bad, columns = BAD_TRANSITIONS[case]
    table = pa.Table.from_pylist(_rows(bad), schema=TRANSITIONS_SCHEMA)
    with pytest.raises(SchemaError) as info:
        validate_transitions(table, source="some.parquet")
    assert str(info.value).startswith(
        f"some.parquet: row 2 (task_id 'Mbpp/4'), column(s) {columns}:"
    )


@pytest.mark.parametrize("case", sorted(BAD_TRACES))
def test_impossible_traces_row_names_source_row_and_columns(case: str) -> None:
    bad, columns = BAD_TRACES[case]
    rows = trace_rows(outcome_rows({(True, False, True): 2}))
    rows[1].update(bad)
    table = pa.Table.from_pylist(rows, schema=TRACES_SCHEMA)
    with pytest.raises(
        SchemaError, match=rf"^t\.parquet: row 1 \(task_id '[^']+'\), column\(s\) {columns}:"
    ):
        validate_traces(table, source="t.parquet")


def test_the_fixture_rows_are_consistent() -> None:
    """The rules do not refuse what real runs produce (the hub fixtures mirror them)."""
    rows = outcome_rows(CELL_A)
    validate_transitions(pa.Table.from_pylist(rows, schema=TRANSITIONS_SCHEMA))
    validate_traces(pa.Table.from_pylist(trace_rows(rows), schema=TRACES_SCHEMA))


def _bad_run_dir(root: Path) -> Path:
    """A run directory whose transitions.parquet was written without validation."""
    rows = outcome_rows(CELL_A, run_id="run-bad")
    rows[3].update(returned=True, invoked=False)
    run = root / "run-bad"
    run.mkdir(parents=True)
    pq.write_table(
        pa.Table.from_pylist(rows, schema=TRANSITIONS_SCHEMA), run / "transitions.parquet"
    )
    (run / "manifest.json").write_text(json.dumps({"run_id": "run-bad"}))
    return run


def test_report_refuses_an_impossible_row_in_jsonl_and_parquet(tmp_path: Path) -> None:
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in _rows({"n_calls": -3})))
    res = CliRunner().invoke(cli, ["report", str(jsonl)])
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit), res.output
    assert f"{jsonl}: row 2 (task_id 'Mbpp/4'), column(s) n_calls: negative count" in res.output

    run = _bad_run_dir(tmp_path / "runs")
    res = CliRunner().invoke(cli, ["report", str(run)])
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit), res.output
    assert f"{run / 'transitions.parquet'}: row 3" in res.output
    assert "column(s) returned, invoked: returned without invoked" in res.output


def test_push_refuses_an_impossible_row_and_writes_nothing(tmp_path: Path) -> None:
    run = _bad_run_dir(tmp_path / "runs")
    out = tmp_path / "repo"
    res = CliRunner().invoke(cli, ["push", str(run), "--repo", "org/r", "--dry-run", str(out)])
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit), res.output
    assert f"{run / 'transitions.parquet'}: row 3" in res.output
    assert "returned without invoked" in res.output
    assert not out.exists() or not any(out.rglob("*"))


def test_space_loader_skips_the_source_with_a_warning_naming_it(tmp_path: Path) -> None:
    from hf_skillfollow.space_app._sources import load_sources
    from tests._fixtures_hub import write_run_dir

    good = write_run_dir(tmp_path / "good", "run-a0", CELL_A)
    bad = _bad_run_dir(tmp_path / "bad")
    loaded = load_sources([str(good), str(bad)])
    assert loaded.loaded == [str(good)]
    warning = next(w for w in loaded.warnings if str(bad) in w)
    assert "row 3" in warning and "returned, invoked" in warning


def test_report_on_a_folder_names_the_file_holding_the_impossible_row(tmp_path: Path) -> None:
    from tests._fixtures_hub import write_run_dir

    write_run_dir(tmp_path / "runs", "run-a0", CELL_A)
    bad = _bad_run_dir(tmp_path / "runs")
    res = CliRunner().invoke(cli, ["report", str(tmp_path / "runs")])
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit), res.output
    assert f"{bad / 'transitions.parquet'}: row 3" in res.output


def test_every_rule_names_declared_columns() -> None:
    from hf_skillfollow._row_rules import RULES

    names = {"transitions": set(TRANSITIONS_SCHEMA.names), "traces": set(TRACES_SCHEMA.names)}
    for rule in RULES:
        assert set(rule.columns) <= names[rule.config], rule

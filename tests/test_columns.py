"""The column declaration: what each derived fact (schemas, cell key, docs, roles) comes to."""

from __future__ import annotations

import pytest

from hf_skillfollow import columns
from hf_skillfollow.config import RUN_IDENTITY_FIELDS, RunConfig
from hf_skillfollow.hub._columns import schema_rows
from hf_skillfollow.schema import CELL_COLUMNS, TRACES_SCHEMA, TRANSITIONS_SCHEMA


def test_settings_outside_the_cell_are_the_runs_own() -> None:
    assert {
        "seed",
        "repeats",
        "concurrency",
        "request_timeout",
        "api_key_env",
        "base_url",
        "tasks_file",
        "n_threads",
        "server_port",
        "judge_base_url",  # where the judge is reached, like base_url (docs/tasks.md)
        "judge_api_key_env",
    } == RUN_IDENTITY_FIELDS
    assert set(RunConfig.model_fields) > RUN_IDENTITY_FIELDS


def test_cell_key_excludes_exactly_the_runs_own_identity() -> None:
    assert (
        tuple(
            c
            for c in columns.IDENTITY_COLUMNS
            if c not in {"schema_version", "run_id", "repeat_index", "created_at", "seed"}
        )
        == CELL_COLUMNS
    )
    assert "limit" not in RUN_IDENTITY_FIELDS  # a smoke run is another task set


@pytest.mark.parametrize(
    "schema", [TRANSITIONS_SCHEMA, TRACES_SCHEMA], ids=["transitions", "traces"]
)
def test_every_published_column_has_a_doc_in_the_card(schema: object) -> None:
    rows = schema_rows(schema)  # type: ignore[arg-type]
    assert [r["name"] for r in rows] == schema.names  # type: ignore[attr-defined]
    assert all(r["doc"].strip() for r in rows)


def test_identity_columns_name_their_manifest_source() -> None:
    identity = [c for c in columns.TRANSITIONS if c.role in ("run", "cell")]
    assert all(c.source for c in identity)
    assert not [c for c in columns.TRANSITIONS if c.role == "pair" and c.source]
    config_sourced = {c.source.split(".", 1)[1] for c in identity if c.source.startswith("config.")}  # type: ignore[union-attr]
    assert config_sourced <= set(RunConfig.model_fields)


def test_metrics_inputs_are_the_paired_outcomes() -> None:
    assert columns.METRIC_INPUTS == ("se_correct", "sd_correct", "invoked", "returned")


def test_agent_ran_over_every_provenance_the_project_writes() -> None:
    """`run` (the chat loop, and the backfill of rows from before the column, read as null
    where not filled) is no agent's run; `run:<harness>` (`run --harness harbor`) and
    `imported:<format>` (every import format) are, in the row and the pyarrow forms alike."""
    pa = pytest.importorskip("pyarrow")
    from hf_skillfollow.harness._harbor import PROVENANCE
    from hf_skillfollow.registries import IMPORTERS

    (backfill,) = (c.backfill for c in columns.TRANSITIONS if c.name == "provenance")
    assert (backfill, PROVENANCE) == ("run", "run:harbor")
    assert sorted(IMPORTERS) == ["benchflow", "harbor", "skill-creator"]
    truth = {"run": False, None: False, "run:harbor": True, "imported:harbor": True,
             "imported:benchflow": True, "imported:skill-creator": True}  # fmt: skip
    assert {p: columns.agent_ran(p) for p in truth} == truth
    mask = columns.agent_ran_mask(pa.array(list(truth), pa.string()))
    assert mask.to_pylist() == list(truth.values())

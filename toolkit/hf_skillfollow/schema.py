"""Transitions and traces schema v1 (DESIGN §5): one explicit pyarrow schema each.

Every writer (run store, hub push) and every reader (report, hub load, Space) goes through
these two schemas, so a published parquet file never carries inferred types.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa

SCHEMA_VERSION = 1

#: Columns that identify a run and its cell; repeated on every row of that run.
IDENTITY_FIELDS: tuple[pa.Field, ...] = (
    pa.field("schema_version", pa.int32(), nullable=False),
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("cell_id", pa.string(), nullable=False),
    pa.field("repeat_index", pa.int32(), nullable=False),
    pa.field("created_at", pa.string(), nullable=False),
    pa.field("model", pa.string(), nullable=False),
    pa.field("backend", pa.string(), nullable=False),
    pa.field("tool_mode", pa.string(), nullable=False),
    pa.field("retrieval_policy", pa.string(), nullable=False),
    pa.field("benchmark", pa.string(), nullable=False),
    pa.field("benchmark_version", pa.string(), nullable=False),
    pa.field("partition_seed", pa.int64(), nullable=False),
    pa.field("partition_size", pa.int64(), nullable=False),
    pa.field("skill_pool", pa.string(), nullable=False),
    pa.field("skill_pool_hash", pa.string(), nullable=False),
    pa.field("condition", pa.string(), nullable=False),
    pa.field("retriever", pa.string(), nullable=False),
    pa.field("top_k", pa.int32(), nullable=False),
    pa.field("max_calls", pa.int32(), nullable=False),
    pa.field("temperature", pa.float64(), nullable=False),
    pa.field("max_tokens", pa.int32(), nullable=False),
    pa.field("seed", pa.int64(), nullable=False),
    pa.field("prompts_hash", pa.string(), nullable=False),
    pa.field("toolkit_version", pa.string(), nullable=False),
)

#: Per-task paired outcome columns.
OUTCOME_FIELDS: tuple[pa.Field, ...] = (
    pa.field("task_id", pa.string(), nullable=False),
    pa.field("se_correct", pa.bool_(), nullable=False),
    pa.field("sd_correct", pa.bool_(), nullable=False),
    pa.field("invoked", pa.bool_(), nullable=False),
    pa.field("returned", pa.bool_(), nullable=False),
    pa.field("n_calls", pa.int32(), nullable=False),
    pa.field("queries", pa.list_(pa.string()), nullable=False),
    pa.field("skills_returned", pa.list_(pa.string()), nullable=False),
    pa.field("se_error", pa.string(), nullable=True),
    pa.field("sd_error", pa.string(), nullable=True),
    pa.field("adherence", pa.bool_(), nullable=True),
)

TRANSITIONS_SCHEMA = pa.schema(
    list(IDENTITY_FIELDS) + list(OUTCOME_FIELDS),
    metadata={
        b"skillfollow_schema_version": str(SCHEMA_VERSION).encode(),
        b"config": b"transitions",
    },
)

MESSAGE_TYPE = pa.struct(
    [
        pa.field("role", pa.string()),
        pa.field("content", pa.string()),
        pa.field("tool_calls", pa.string()),  # JSON text of the OpenAI tool_calls list, or null
        pa.field("tool_call_id", pa.string()),
        pa.field("name", pa.string()),
    ]
)

TRACES_SCHEMA = pa.schema(
    [
        pa.field("schema_version", pa.int32(), nullable=False),
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("cell_id", pa.string(), nullable=False),
        pa.field("task_id", pa.string(), nullable=False),
        pa.field("arm", pa.string(), nullable=False),  # "se" or "sd"
        pa.field("messages", pa.list_(MESSAGE_TYPE), nullable=False),
        pa.field("final_answer", pa.string(), nullable=False),
        pa.field("extracted", pa.string(), nullable=False),
        pa.field("correct", pa.bool_(), nullable=False),
        pa.field("scorer_details", pa.string(), nullable=False),  # JSON text
        pa.field("error", pa.string(), nullable=True),
        pa.field("n_calls", pa.int32(), nullable=False),
        pa.field("latency_s", pa.float64(), nullable=False),
        pa.field("prompt_tokens", pa.int64(), nullable=False),
        pa.field("completion_tokens", pa.int64(), nullable=False),
    ],
    metadata={b"skillfollow_schema_version": str(SCHEMA_VERSION).encode(), b"config": b"traces"},
)

TRANSITION_COLUMNS: tuple[str, ...] = tuple(TRANSITIONS_SCHEMA.names)
IDENTITY_COLUMNS: tuple[str, ...] = tuple(f.name for f in IDENTITY_FIELDS)
#: Identity columns that define a cell (a run's own identity excluded), for pooling and display.
CELL_COLUMNS: tuple[str, ...] = tuple(
    c
    for c in IDENTITY_COLUMNS
    if c not in {"schema_version", "run_id", "repeat_index", "created_at", "seed"}
)
TRACE_COLUMNS: tuple[str, ...] = tuple(TRACES_SCHEMA.names)


class SchemaError(ValueError):
    """A table does not follow a skillfollow schema; the message names source and column."""


def validate_table(table: pa.Table, schema: pa.Schema, source: str = "table") -> pa.Table:
    """Check `table` against `schema` and return it cast to exactly that schema.

    Missing columns, unknown columns, uncastable types, nulls in non-nullable columns and a
    wrong `schema_version` are reported by name. Compatible physical types (for example
    int64 read back from JSON where int32 is declared, or large_string) are cast.
    """
    have = set(table.column_names)
    missing = [n for n in schema.names if n not in have]
    if missing:
        raise SchemaError(
            f"{source}: missing column(s) {missing} (skillfollow schema v{SCHEMA_VERSION})"
        )
    extra = [n for n in table.column_names if n not in set(schema.names)]
    if extra:
        raise SchemaError(
            f"{source}: unexpected column(s) {extra} (skillfollow schema v{SCHEMA_VERSION})"
        )
    columns = []
    for field in schema:
        col = table.column(field.name)
        if not col.type.equals(field.type):
            try:
                col = col.cast(field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaError(
                    f"{source}: column {field.name!r} has type {col.type}, expected {field.type}: {exc}"
                ) from None
        if not field.nullable and col.null_count:
            raise SchemaError(f"{source}: column {field.name!r} has {col.null_count} null value(s)")
        columns.append(col)
    out = pa.Table.from_arrays(columns, schema=schema)
    versions = set(out.column("schema_version").to_pylist())
    if versions - {SCHEMA_VERSION}:
        raise SchemaError(
            f"{source}: schema_version {sorted(versions)} is not supported (this toolkit reads v{SCHEMA_VERSION})"
        )
    return out


def validate_transitions(table: pa.Table, source: str = "transitions") -> pa.Table:
    return validate_table(table, TRANSITIONS_SCHEMA, source)


def validate_traces(table: pa.Table, source: str = "traces") -> pa.Table:
    return validate_table(table, TRACES_SCHEMA, source)


def transitions_from_rows(rows: Sequence[Mapping[str, object]], source: str = "rows") -> pa.Table:
    """Build a validated transitions table from row dicts (missing nullable keys become null)."""
    return _from_rows(rows, TRANSITIONS_SCHEMA, source)


def traces_from_rows(rows: Sequence[Mapping[str, object]], source: str = "rows") -> pa.Table:
    return _from_rows(rows, TRACES_SCHEMA, source)


def _from_rows(rows: Sequence[Mapping[str, object]], schema: pa.Schema, source: str) -> pa.Table:
    for i, row in enumerate(rows):
        unknown = set(row) - set(schema.names)
        if unknown:
            raise SchemaError(f"{source}: row {i} has unexpected key(s) {sorted(unknown)}")
    try:
        table = pa.Table.from_pylist([dict(r) for r in rows], schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise SchemaError(f"{source}: {exc}") from None
    return validate_table(table, schema, source)


#: Annotations (docs/diagnostics.md): one blinded LLM label per annotated SE execution and
#: annotator. Keyed by (run_id, task_id, repeat_index, annotator); `label` is null exactly
#: when the annotator failed, and `failure` then says why.
ANNOTATIONS_SCHEMA = pa.schema(
    [
        pa.field("schema_version", pa.int32(), nullable=False),
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("cell_id", pa.string(), nullable=False),
        pa.field("task_id", pa.string(), nullable=False),
        pa.field("repeat_index", pa.int32(), nullable=False),
        pa.field("annotator", pa.string(), nullable=False),  # "<model>@<prompt_hash>"
        pa.field("annotator_model", pa.string(), nullable=False),
        pa.field("annotator_backend", pa.string(), nullable=False),
        pa.field("prompt_hash", pa.string(), nullable=False),
        pa.field("flip", pa.string(), nullable=False),  # helpful, harmful or concordant
        pa.field("label", pa.string(), nullable=True),
        pa.field("rationale", pa.string(), nullable=True),
        pa.field("failure", pa.string(), nullable=True),
        pa.field("attempts", pa.int32(), nullable=False),
        pa.field("raw_output", pa.string(), nullable=True),  # the last reply, kept for audits
        pa.field("annotated_at", pa.string(), nullable=False),
    ],
    metadata={
        b"skillfollow_schema_version": str(SCHEMA_VERSION).encode(),
        b"config": b"annotations",
    },
)
ANNOTATION_KEY: tuple[str, ...] = ("run_id", "task_id", "repeat_index", "annotator")


def validate_annotations(table: pa.Table, source: str = "annotations") -> pa.Table:
    return validate_table(table, ANNOTATIONS_SCHEMA, source)


def annotations_from_rows(rows: Sequence[Mapping[str, object]], source: str = "rows") -> pa.Table:
    return _from_rows(rows, ANNOTATIONS_SCHEMA, source)

"""Transitions and traces schema v1: one explicit pyarrow schema each.

Both are built from the column declaration in `hf_skillfollow.columns`. Every writer (run
store, hub push) and every reader (report, hub load, Space) goes through these two schemas,
so a published parquet file never carries inferred types.

See docs/design.md, "Published data".
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import pyarrow as pa

from hf_skillfollow import columns
from hf_skillfollow._text import safe_data
from hf_skillfollow.columns import Column

SCHEMA_VERSION = 1

MESSAGE_TYPE = pa.struct(
    [
        pa.field("role", pa.string()),
        pa.field("content", pa.string()),
        pa.field("tool_calls", pa.string()),  # JSON text of the OpenAI tool_calls list, or null
        pa.field("tool_call_id", pa.string()),
        pa.field("name", pa.string()),
    ]
)

_TYPES: dict[str, pa.DataType] = {
    "bool": pa.bool_(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float64": pa.float64(),
    "string": pa.string(),
    "list<string>": pa.list_(pa.string()),
    "list<message>": pa.list_(MESSAGE_TYPE),
}


def _field(column: Column) -> pa.Field:
    return pa.field(column.name, _TYPES[column.type], nullable=column.nullable)


def _schema(declared: tuple[Column, ...], config: str) -> pa.Schema:
    return pa.schema(
        [_field(c) for c in declared],
        metadata={
            b"skillfollow_schema_version": str(SCHEMA_VERSION).encode(),
            b"config": config.encode(),
        },
    )


TRANSITIONS_SCHEMA = _schema(columns.TRANSITIONS, "transitions")
TRACES_SCHEMA = _schema(columns.TRACES, "traces")
ANNOTATIONS_SCHEMA = _schema(columns.ANNOTATIONS, "annotations")
VERIFICATIONS_SCHEMA = _schema(columns.VERIFICATIONS, "verifications")
ANNOTATION_KEY = columns.ANNOTATION_KEY

TRANSITION_COLUMNS: tuple[str, ...] = tuple(TRANSITIONS_SCHEMA.names)
IDENTITY_COLUMNS = columns.IDENTITY_COLUMNS
CELL_COLUMNS = columns.CELL_COLUMNS
TRACE_COLUMNS: tuple[str, ...] = tuple(TRACES_SCHEMA.names)


class SchemaError(ValueError):
    """A table does not follow a skillfollow schema; the message names source and column."""


def validate_table(
    table: pa.Table,
    schema: pa.Schema,
    source: str = "table",
    *,
    dictionaries: Collection[str] = (),
) -> pa.Table:
    """Check `table` against `schema` and return it cast to exactly that schema.

    Missing columns, unknown columns, uncastable types, nulls in non-nullable columns, a
    wrong `schema_version` and rows breaking a consistency rule (`_row_rules.RULES`) are
    reported by name. Compatible physical types (for example int64 read back from JSON where
    int32 is declared, or large_string) are cast; a boolean column of any other type but
    null is refused (a cast reads NaN, 0.5, 2 and any text as True).

    `dictionaries`: columns that, read as a dictionary of exactly their declared type, are
    checked the same and returned as that dictionary, not expanded (the board's cold load,
    which groups by the indices; `plain` gives the exact schema later).
    """
    table = _backfilled(table, schema)
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
    if table.schema.equals(schema, check_metadata=True):
        # Already exact (the usual case: files this toolkit wrote). Rebuilding it column by
        # column costs seconds for a repo read as 10^4 chunks, and would change nothing.
        return _checked_values(table, schema, source)
    columns, fields = [], []
    for field in schema:
        col = table.column(field.name)
        kept = field.name in dictionaries and _dictionary_of(col.type, field.type)
        if not kept and not col.type.equals(field.type):
            if pa.types.is_boolean(field.type) and not pa.types.is_null(col.type):
                # a cast would read NaN, 0.5, 2 or "false-ish" text as True: a publisher's
                # unknown verdict counted as a pass. A column of type null holds no value to
                # misread (pandas writes an optional flag that no row set, `adherence`, so);
                # cast, its nulls are checked as any column's are.
                raise SchemaError(
                    f"{source}: column {field.name!r} has type {col.type}, expected bool "
                    "(only booleans are read as booleans)"
                )
            try:
                col = col.cast(field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaError(
                    f"{source}: column {field.name!r} has type {col.type}, expected {field.type}: {exc}"
                ) from None
        columns.append(col)
        fields.append(field.with_type(col.type) if kept else field)
    out = pa.Table.from_arrays(columns, schema=pa.schema(fields, metadata=schema.metadata))
    return _checked_values(out, schema, source)


def _dictionary_of(kind: pa.DataType, value: pa.DataType) -> bool:
    return pa.types.is_dictionary(kind) and kind.value_type.equals(value)


def plain(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` (from `validate_table(dictionaries=True)`) with its dictionary columns expanded
    to their declared types: exactly `schema` (columns outside it are left as they are)."""
    names = set(schema.names)
    for i, field in enumerate(table.schema):
        if field.name in names and pa.types.is_dictionary(field.type):
            declared = schema.field(field.name)
            table = table.set_column(i, declared, table.column(i).cast(declared.type))
    return table


#: column name -> value for rows written before the column existed (`Column.backfill`).
BACKFILL: dict[str, str] = {
    c.name: c.backfill
    for c in (*columns.TRANSITIONS, *columns.TRACES, *columns.ANNOTATIONS, *columns.VERIFICATIONS)
    if c.backfill is not None
}


def _backfilled(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` with every absent column that has a backfill added, at its declared place
    (`columns.ADDED_NULLABLE`: null, the files were written before the column existed)."""
    filled = BACKFILL.keys() | columns.ADDED_NULLABLE
    absent = [n for n in schema.names if n in filled and n not in table.column_names]
    for name in absent:
        field = schema.field(name)
        value = (
            pa.array([BACKFILL[name]] * table.num_rows, field.type)
            if name in BACKFILL
            else pa.nulls(table.num_rows, field.type)
        )
        before = schema.names[: schema.get_field_index(name)]
        at = sum(1 for n in table.column_names if n in before)
        table = table.add_column(at, field, value)
    return table


def _checked_values(out: pa.Table, schema: pa.Schema, source: str) -> pa.Table:
    """`out` (of exactly `schema`) after the null, version and row-consistency checks."""
    for field in schema:
        if not field.nullable and out.column(field.name).null_count:
            raise SchemaError(
                f"{source}: column {field.name!r} has {out.column(field.name).null_count} "
                "null value(s)"
            )
    import pyarrow.compute as pc

    versions = set(pc.unique(out.column("schema_version")).to_pylist())
    if versions - {SCHEMA_VERSION}:
        raise SchemaError(
            f"{source}: schema_version {sorted(versions)} is not supported (this toolkit reads v{SCHEMA_VERSION})"
        )
    from hf_skillfollow._row_rules import first_violation

    broken = first_violation(out, (schema.metadata or {}).get(b"config", b"").decode(), source)
    if broken is not None:
        raise SchemaError(broken)
    return out


def validate_transitions(
    table: pa.Table, source: str = "transitions", *, dictionaries: Collection[str] = ()
) -> pa.Table:
    return validate_table(table, TRANSITIONS_SCHEMA, source, dictionaries=dictionaries)


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
    fill = {n: v for n, v in BACKFILL.items() if n in schema.names}
    try:
        # safe_data: a lone surrogate in a string would make pyarrow raise UnicodeEncodeError
        table = pa.Table.from_pylist([safe_data({**fill, **r}) for r in rows], schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        column = _failing_column(rows, schema)
        where = f"{source}: column {column!r}" if column else source
        raise SchemaError(f"{where}: {exc}") from None
    return validate_table(table, schema, source)


def validate_annotations(table: pa.Table, source: str = "annotations") -> pa.Table:
    return validate_table(table, ANNOTATIONS_SCHEMA, source)


def annotations_from_rows(rows: Sequence[Mapping[str, object]], source: str = "rows") -> pa.Table:
    return _from_rows(rows, ANNOTATIONS_SCHEMA, source)


def validate_verifications(table: pa.Table, source: str = "verifications") -> pa.Table:
    return validate_table(table, VERIFICATIONS_SCHEMA, source)


def verifications_from_rows(rows: Sequence[Mapping[str, object]], source: str = "rows") -> pa.Table:
    return _from_rows(rows, VERIFICATIONS_SCHEMA, source)


def _failing_column(rows: Sequence[Mapping[str, object]], schema: pa.Schema) -> str | None:
    """The first column whose values do not convert (pyarrow's message does not name it)."""
    for field in schema:
        try:
            pa.array([r.get(field.name) for r in rows], type=field.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return field.name
    return None

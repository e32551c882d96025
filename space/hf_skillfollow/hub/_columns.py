"""The card's schema tables: each published column with its type and its declared meaning."""

from __future__ import annotations

import pyarrow as pa

from hf_skillfollow.columns import COLUMN_DOCS


def schema_rows(schema: pa.Schema) -> list[dict[str, str]]:
    """Rows of a Markdown schema table, straight from the pyarrow schema.

    Every column has a declared doc (`hf_skillfollow.columns`); a column without one is a
    declaration error, not an empty cell in the card.
    """
    return [
        {
            "name": field.name,
            "type": str(field.type),
            "nullable": "yes" if field.nullable else "no",
            "doc": COLUMN_DOCS[field.name],
        }
        for field in schema
    ]

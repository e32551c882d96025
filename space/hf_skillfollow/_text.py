"""Strings from untrusted sources, made safe to store and publish as UTF-8.

A Python ``str`` can hold lone surrogates (U+D800 to U+DFFF): JSON's ``"\\ud800"`` escape
decodes to one (a model server's reply, a published record), and so can a program's own
message to the scorer. UTF-8 cannot encode them, so writing such a string to
``records.jsonl`` or into a parquet table raised ``UnicodeEncodeError`` and lost the run's
work. ``safe_text`` writes each one as its escape (``\\ud800``, six ASCII characters) and
leaves every other character as it is, so nothing that can be encoded is changed. Applied
where strings enter records: ``RunStore.append_record``, the annotation store, every table
built by ``schema._from_rows``, and the code scorer's verdicts.
"""

from __future__ import annotations

import json
from typing import Any


def utf8_encodable(text: str) -> bool:
    """Whether UTF-8 can encode ``text``: it holds no lone surrogate."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def safe_text(text: str) -> str:
    """``text`` with every lone surrogate written as its ``\\uXXXX`` escape."""
    if utf8_encodable(text):
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def safe_data(value: Any) -> Any:
    """``value`` (JSON-like data) with every string in it, keys included, made safe.

    Containers are rebuilt only where a string in them changed."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, dict):
        items = [(safe_data(k), safe_data(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, list | tuple):
        items = [safe_data(v) for v in value]
        if all(v is v0 for v, v0 in zip(items, value, strict=True)):
            return value
        return type(value)(items) if type(value) in (list, tuple) else items
    return value


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A ``json.loads`` ``object_pairs_hook`` refusing a key given twice in one object (JSON
    parsers disagree on which value wins: the reader would decide) with ``ValueError``; one
    pass, since a 1 MiB line may hold 80,000 keys."""
    out = dict(pairs)
    if len(out) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key[:60]!r}")
            seen.add(key)
    return out


def loads_untrusted(text: str | bytes) -> Any:
    """``json.loads`` for text a third party wrote (model output, tool arguments); every way
    the parse can fail is a ``ValueError``.

    ``json.loads`` raises ``RecursionError`` on ``[[[[...`` nested a few thousand deep and a
    bare ``ValueError`` (not a ``JSONDecodeError``) on an integer of over 4,300 digits, so a
    caller catching only ``JSONDecodeError`` let one hostile tool call end the whole run.
    """
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deep") from None

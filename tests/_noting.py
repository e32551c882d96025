"""One value as the reference writes it: the bytes ``_reference._Sink`` encodes into the
payload file, and whether its pickler noted a class or function in them."""

from __future__ import annotations

import io
from typing import Any

from hf_skillfollow.scoring._reference import _Sink


def new_sink() -> _Sink:
    return _Sink(io.BytesIO(), True)


def noted(value: Any, sink: _Sink | None = None) -> tuple[bytes, bool]:
    """(bytes, named) for ``value``, written by ``sink`` (a fresh one by default)."""
    sink = sink or new_sink()
    start = sink.file.tell()
    sink._put(value)
    return sink.file.getvalue()[start:], sink.pickler.named

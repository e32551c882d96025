"""Model backends, opened by name from `registries.BACKENDS` (imported only when opened)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from hf_skillfollow.registries import BACKENDS

if TYPE_CHECKING:
    from hf_skillfollow.backends._base import ChatBackend
    from hf_skillfollow.config import RunConfig


@asynccontextmanager
async def open_backend(config: RunConfig) -> AsyncIterator[ChatBackend]:
    """Open the backend named by `config.backend` (imports it only now); in `emulated` tool
    mode the tool protocol is carried in text by a wrapper, whatever the backend."""
    async with BACKENDS.resolve(config.backend)(config) as backend:
        if config.tool_mode == "emulated":
            from hf_skillfollow.backends._emulated import EmulatedToolsBackend

            backend = EmulatedToolsBackend(backend)
        yield backend


__all__ = ["BACKENDS", "open_backend"]

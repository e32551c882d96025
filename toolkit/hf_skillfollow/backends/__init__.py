"""Model backends behind a tiny lazy registry (lm-eval style)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hf_skillfollow.backends._base import ChatBackend
    from hf_skillfollow.config import RunConfig

#: name -> "module:factory"; a factory takes a RunConfig and returns an async context manager
#: yielding a ChatBackend.
BACKENDS: dict[str, str] = {
    "openai": "hf_skillfollow.backends._openai:open_openai_backend",
    "local": "hf_skillfollow.backends._local:open_local_backend",
    "vllm": "hf_skillfollow.backends._vllm:open_vllm_backend",
    "vllm-server": "hf_skillfollow.backends._vllm_server:open_vllm_server_backend",
}


@asynccontextmanager
async def open_backend(config: RunConfig) -> AsyncIterator[ChatBackend]:
    """Open the backend named by `config.backend` (imports it only now); in `emulated` tool
    mode the tool protocol is carried in text by a wrapper, whatever the backend."""
    module, attr = BACKENDS[config.backend].split(":")
    async with getattr(import_module(module), attr)(config) as backend:
        if config.tool_mode == "emulated":
            from hf_skillfollow.backends._emulated import EmulatedToolsBackend

            backend = EmulatedToolsBackend(backend)
        yield backend

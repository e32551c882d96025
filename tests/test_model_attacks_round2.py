"""A hostile or broken OpenAI-compatible model server against the chat backend (round 2).

The server is a scripted *model provider double* (a real socket server on 127.0.0.1 writing
raw HTTP, so it can send what no well-behaved provider would); the client, HTTP stack and
backend are the toolkit's own. Every answer must end in bounded time and memory as one
error on the arm (a failed task row), never an exception out of `chat`.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable

import pytest

from hf_skillfollow.backends._base import ChatRequest
from hf_skillfollow.backends._openai import (
    MAX_ERROR_CHARS,
    MAX_RESPONSE_BYTES,
    OpenAIBackend,
    RetryPolicy,
)

Script = Callable[[socket.socket], None]


class RawServerDouble:
    """A model provider double: answers every POST with `script(conn)` (raw bytes)."""

    def __init__(self, script: Script, host: str = "127.0.0.1") -> None:
        self.script = script
        self.sock = socket.socket()
        self.sock.bind((host, 0))
        self.sock.listen(16)
        self.url = f"http://{host}:{self.sock.getsockname()[1]}/v1"
        self.posts: list[dict[str, str]] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as f:
            try:
                headers = {}
                f.readline()
                while (line := f.readline()) not in (b"\r\n", b"\n", b""):
                    key, _, value = line.decode().partition(":")
                    headers[key.strip().lower()] = value.strip()
                f.read(int(headers.get("content-length", 0)))
                self.posts.append(headers)
                self.script(conn)
            except OSError:
                pass  # the client gave up: that is what slow answers are for

    def close(self) -> None:
        self.sock.close()


def _send(conn: socket.socket, body: bytes, status: int = 200, extra: str = "") -> None:
    head = f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n"
    conn.sendall(f"{head}content-length: {len(body)}\r\n{extra}\r\n".encode() + body)


def _completion(message: object, usage: str = "") -> bytes:
    choice = json.dumps({"index": 0, "message": message, "finish_reason": "stop"})
    return f'{{"id":"x","choices":[{choice}]{usage}}}'.encode()


def _chat(script: Script, timeout: float = 5.0) -> tuple[object, float, RawServerDouble]:
    server = RawServerDouble(script)

    async def go() -> object:
        backend = OpenAIBackend(
            base_url=server.url, api_key="sk-SECRET", model="m", request_timeout=timeout,
            retry=RetryPolicy(base_delay_s=0.01),
        )  # fmt: skip
        try:
            return await backend.chat(ChatRequest([{"role": "user", "content": "q"}], 0, 0.0, 9))
        finally:
            await backend.aclose()

    start = time.monotonic()
    try:
        result = asyncio.run(go())
    finally:
        server.close()
    return result, time.monotonic() - start, server


MALFORMED: dict[str, Script] = {
    "not JSON": lambda c: _send(c, b'{"choices": ['),
    "html": lambda c: c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 4\r\n\r\n<a/>"),
    "choices a string": lambda c: _send(c, b'{"choices": "abc"}'),
    "choice a number": lambda c: _send(c, b'{"choices": [1]}'),
    "no message": lambda c: _send(c, b'{"choices": [{"index": 0}]}'),
    "content an object": lambda c: _send(c, _completion({"role": "assistant", "content": {"a": 1}})),
    "arguments an object": lambda c: _send(c, _completion({"role": "assistant", "content": "", "tool_calls": [
        {"id": "1", "type": "function", "function": {"name": "search_skills", "arguments": {"q": 1}}}]})),
    "nested 100,000 deep": lambda c: _send(c, b'{"choices": [{"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}]}"),
}  # fmt: skip


@pytest.mark.parametrize("name", list(MALFORMED))
def test_a_malformed_completion_is_an_arm_error_not_an_exception(name: str) -> None:
    result, _, server = _chat(MALFORMED[name])
    assert result.error is not None and result.error.startswith("malformed response"), result
    assert result.content == "" and not result.tool_calls
    assert len(server.posts) == 1  # a malformed answer is not asked again


@pytest.mark.parametrize(
    "usage", ["NaN", "-5", "1e999", "10000000000000000000000000000", '"abc"', "1.5"]
)
def test_usage_that_is_not_a_count_is_recorded_as_zero(usage: str) -> None:
    body = _completion({"role": "assistant", "content": "ok"}, f',"usage":{{"prompt_tokens":{usage},"completion_tokens":{usage}}}')  # fmt: skip
    result, _, _ = _chat(lambda c: _send(c, body))
    assert (result.error, result.content) == (None, "ok")
    assert (result.prompt_tokens, result.completion_tokens) == (0, 0)


def _chunked_forever(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n")  # fmt: skip
    while True:
        conn.sendall(b"10000\r\n" + b" " * 65536 + b"\r\n")


@pytest.mark.parametrize(
    "script",
    [
        lambda c: _send(c, _completion({"role": "assistant", "content": "A" * (3 * MAX_RESPONSE_BYTES)})),
        _chunked_forever,
        lambda c: _send(c, b"\x1f\x8b" + b"\0" * 100, extra="content-encoding: gzip\r\n"),
    ],
    ids=["one huge token", "a body that never ends", "compressed"],
)  # fmt: skip
def test_a_huge_or_endless_body_is_refused_at_the_cap(script: Script) -> None:
    result, elapsed, server = _chat(script)
    assert result.error is not None and result.error.startswith("malformed response"), result
    assert elapsed < 10 and len(server.posts) == 1


def _trickle(conn: socket.socket) -> None:
    body = _completion({"role": "assistant", "content": "late"})
    conn.sendall(f"HTTP/1.1 200 OK\r\ncontent-length: {len(body)}\r\n\r\n".encode())
    for byte in body:
        conn.sendall(bytes([byte]))
        time.sleep(0.3)


@pytest.mark.parametrize(
    "script", [_trickle, lambda c: time.sleep(60)], ids=["slow-loris", "stall"]
)
def test_a_slow_server_ends_within_the_request_timeout(script: Script) -> None:
    result, elapsed, server = _chat(script, timeout=1.0)
    assert result.error == "request timed out (after 3 retries)"
    assert elapsed < 4 * 1.0 + 2 and len(server.posts) == 4


def test_a_redirect_to_another_host_is_not_followed_and_the_key_stays() -> None:
    other = RawServerDouble(lambda c: _send(c, _completion({"role": "assistant", "content": "x"})), host="127.0.0.2")  # fmt: skip
    try:
        where = other.url + "/chat/completions"
        result, _, _ = _chat(lambda c: c.sendall(f"HTTP/1.1 307 R\r\nlocation: {where}\r\ncontent-length: 0\r\n\r\n".encode()))  # fmt: skip
    finally:
        other.close()
    assert other.posts == []
    assert result.error == f"HTTP 307: redirect to {where!r} not followed"


def test_a_huge_error_text_is_cut() -> None:
    body = json.dumps({"error": {"message": "\x1b[31m" + "E" * 1_000_000}}).encode()
    result, _, _ = _chat(lambda c: _send(c, body, status=400))
    assert result.error.startswith("HTTP 400") and len(result.error) <= MAX_ERROR_CHARS


def test_thousands_of_parallel_calls_do_not_grow_the_conversation() -> None:
    """50,000 calls in one answer (under the byte cap): the conversation and the trace keep
    MAX_PARALLEL_CALLS of them, the first executed, the rest answered Not executed."""
    from hf_skillfollow.access import make_access
    from hf_skillfollow.agent import MAX_PARALLEL_CALLS, NOT_EXECUTED, Decoding, run_se
    from hf_skillfollow.config import RunConfig
    from hf_skillfollow.skills import load_pool

    calls = [{"id": str(i), "type": "function", "function": {"name": "x", "arguments": ""}} for i in range(50_000)]  # fmt: skip
    first = _completion({"role": "assistant", "content": "", "tool_calls": calls})
    final = _completion({"role": "assistant", "content": "done"})

    server = RawServerDouble(lambda c: _send(c, final if len(server.posts) > 1 else first))
    access = make_access(RunConfig(seed=7), load_pool("coding"))

    async def go() -> object:
        backend = OpenAIBackend(base_url=server.url, api_key="k", model="m", request_timeout=30)
        try:
            return await run_se(backend, "coding", "q", Decoding(0, 0.0, 9), access, max_calls=3)
        finally:
            await backend.aclose()

    try:
        arm = asyncio.run(go())
    finally:
        server.close()
    assert arm.final_answer == "done" and arm.n_calls == 1
    assert len(arm.messages[2]["tool_calls"]) == MAX_PARALLEL_CALLS
    tool_replies = [m for m in arm.messages if m["role"] == "tool"]
    assert len(tool_replies) == MAX_PARALLEL_CALLS
    assert [m["content"] for m in tool_replies[1:]] == [NOT_EXECUTED] * (MAX_PARALLEL_CALLS - 1)


class _ListDouble(RawServerDouble):
    """A model provider double whose model list (GET /models) is `script`'s answer."""

    def _one(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as f:
            try:
                while f.readline() not in (b"\r\n", b"\n", b""):
                    pass
                self.script(conn)
            except OSError:
                pass


def _trickle_list(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n")
    for _ in range(100):
        conn.sendall(b" ")
        time.sleep(0.2)


MODEL_LISTS: dict[str, tuple[Script, str]] = {
    "not JSON": (lambda c: _send(c, b'{"data": ['), "did not answer a model list (malformed response: JSONDecodeError"),
    "html": (lambda c: c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 4\r\n\r\n<a/>"), "did not answer a model list (not JSON)"),
    "nested 100,000 deep": (lambda c: _send(c, b'{"data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"), "did not answer a model list (malformed response: RecursionError"),
    "slow-loris": (_trickle_list, "/models: request timed out"),
}  # fmt: skip


@pytest.mark.parametrize("name", list(MODEL_LISTS))
def test_a_broken_model_list_stops_the_start_with_one_line(name: str) -> None:
    from hf_skillfollow.backends._base import BackendStartupError

    script, expected = MODEL_LISTS[name]
    server = _ListDouble(script)

    async def go() -> None:
        backend = OpenAIBackend(base_url=server.url, api_key="k", model="m", request_timeout=5)
        try:
            await backend.check_reachable(timeout_s=1.0)
        finally:
            await backend.aclose()

    start = time.monotonic()
    try:
        with pytest.raises(BackendStartupError) as caught:
            asyncio.run(go())
    finally:
        server.close()
    assert time.monotonic() - start < 5
    assert expected in str(caught.value) and "\n" not in str(caught.value)
    assert str(caught.value).startswith(f"cannot reach the model endpoint {server.url}/models") or (
        str(caught.value).startswith(f"the model endpoint {server.url}/models")
    )

"""Any OpenAI-compatible chat-completions endpoint (OpenAI, OpenRouter, vLLM, llama.cpp, Ollama).

The client's own retries are off (`max_retries=0`): this module retries transient failures
itself so that the policy (3 retries, exponential backoff with jitter, honouring `Retry-After`;
docs/design.md, "Protocol") is the same for every provider and is tested against a real HTTP
server.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import math
import os
import random
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx2
import openai

from hf_skillfollow.backends._base import (
    BackendStartupError,
    ChatRequest,
    ChatResult,
    Message,
    ToolCall,
)
from hf_skillfollow.backends._server import is_loopback_url

if TYPE_CHECKING:
    from hf_skillfollow.config import RunConfig

#: Status codes worth another try: request timeout, conflict/lock, rate limit, server errors.
_RETRYABLE_STATUS = frozenset({408, 409, 429})
_LOOPBACK_DUMMY_KEY = "sk-no-key-required"
#: The most bytes read of one response: a chat answer of any sane `--max-tokens` is far
#: smaller; a hostile server's 100 MB body stops here instead of filling memory and records.
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
#: The most characters of a provider's error text kept in an arm's `error`.
MAX_ERROR_CHARS = 500
#: A token count above this is not a count (usage is the server's say, unchecked).
_MAX_TOKENS_COUNT = 2**31 - 1


class MalformedResponse(Exception):
    """A response the toolkit refuses to read: too large, compressed against our ask, not a
    chat completion. Never retried (the same server answers the same way)."""


class _CappedStream(httpx2.AsyncByteStream):
    """A response body stream that refuses to yield more than MAX_RESPONSE_BYTES."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self.inner:
            seen += len(chunk)
            if seen > MAX_RESPONSE_BYTES:
                raise MalformedResponse(f"response larger than {MAX_RESPONSE_BYTES} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


async def _bound_response(response: httpx2.Response) -> None:
    # Identity was asked: a compressed body could expand without bound past the byte cap.
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise MalformedResponse(f"compressed response (content-encoding {encoding[:40]!r})")
    length = response.headers.get("content-length", "")
    if length.isdigit() and int(length) > MAX_RESPONSE_BYTES:
        raise MalformedResponse(f"response of {length[:20]} bytes, over {MAX_RESPONSE_BYTES}")
    response.stream = _CappedStream(response.stream)


def _bounded_http_client() -> httpx2.AsyncClient:
    """The HTTP client of every request: no redirect followed (a redirect to another host
    would carry the conversation there), uncompressed bodies of bounded size."""
    return openai.DefaultAsyncHttpxClient(
        follow_redirects=False,
        headers={"accept-encoding": "identity"},
        event_hooks={"response": [_bound_response]},
    )


@dataclass
class RetryPolicy:
    """Exponential backoff with jitter; a server's `Retry-After` is a lower bound on the wait."""

    max_retries: int = 3
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0
    #: A `Retry-After` longer than this is treated as an outage, not waited for.
    max_retry_after_s: float = 300.0

    def backoff(self, retry_index: int) -> float:
        delay = min(self.max_delay_s, self.base_delay_s * 2**retry_index)
        return delay + random.uniform(0.0, self.base_delay_s)


@dataclass
class UsageTotals:
    """Running totals for progress displays (tokens, requests, retries, failed calls)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    retries: int = 0
    errors: int = 0


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `Retry-After` as seconds or an HTTP date."""
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        with contextlib.suppress(ValueError):
            return max(0.0, float(millis) / 1000.0)
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    with contextlib.suppress(TypeError, ValueError):
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    return None


def _is_retryable(exc: Exception) -> bool:
    if isinstance(exc, (openai.APIConnectionError, TimeoutError)):  # incl. APITimeoutError
        return _refusal(exc) is None
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in _RETRYABLE_STATUS or exc.status_code >= 500
    return False


def _refusal(exc: BaseException) -> MalformedResponse | None:
    """The MalformedResponse behind `exc` (the client wraps what its hooks raise), if any."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None or isinstance(seen, MalformedResponse):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _describe(exc: Exception) -> str:
    """One bounded line: a provider's error text is third-party and may be megabytes."""
    return _describe_unbounded(exc)[:MAX_ERROR_CHARS]


def _describe_unbounded(exc: Exception) -> str:
    refusal = _refusal(exc)
    if refusal is not None:
        return f"malformed response: {refusal}"
    if isinstance(exc, (openai.APITimeoutError, TimeoutError)):
        return "request timed out"
    if isinstance(exc, openai.APIConnectionError):
        return f"connection error: {exc}"
    if isinstance(exc, openai.APIStatusError):
        if 300 <= exc.status_code < 400:
            where = exc.response.headers.get("location", "")[:200]
            return f"HTTP {exc.status_code}: redirect to {where!r} not followed"
        return f"HTTP {exc.status_code}: {exc.message}"
    return f"malformed response: {type(exc).__name__}: {exc}"


def sanitize_messages(messages: list[Message]) -> list[Message]:
    """Copy of `messages` safe for every server: assistant `content=None` becomes "" (llama.cpp
    answers HTTP 500 to None)."""
    out = []
    for message in messages:
        if message.get("content") is None:
            message = {**message, "content": ""}
        out.append(message)
    return out


def _token_count(value: Any) -> int:
    """A usage count as reported, or 0 where it is not a count (negative, NaN, text, huge)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if not math.isfinite(value) or value != int(value) or not 0 <= value <= _MAX_TOKENS_COUNT:
        return 0
    return int(value)


def _text(value: Any, what: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    raise MalformedResponse(f"{what} is {type(value).__name__}, not text")


def _to_result(completion: Any, latency_s: float) -> ChatResult:
    """The first choice of a chat completion; MalformedResponse where it is not one."""
    if isinstance(completion, (str, bytes)):  # the client's answer to a non-JSON body
        raise MalformedResponse("the body is not a JSON chat completion")
    choices = getattr(completion, "choices", None)
    if choices is not None and not isinstance(choices, list):
        raise MalformedResponse(f"'choices' is {type(choices).__name__}, not a list")
    if not choices:
        return ChatResult(content="", latency_s=latency_s, error="response had no choices")
    message = getattr(choices[0], "message", None)
    if message is None:
        raise MalformedResponse("the first choice has no 'message'")
    raw_calls = getattr(message, "tool_calls", None) or []
    if not isinstance(raw_calls, list):
        raise MalformedResponse(f"'tool_calls' is {type(raw_calls).__name__}, not a list")
    calls = [
        ToolCall(
            id=_text(getattr(c, "id", None), "a tool call id") or f"call_{i}",
            name=_text(getattr(c.function, "name", None), "a tool name"),
            arguments=_text(getattr(c.function, "arguments", None), "a tool call's arguments"),
        )
        for i, c in enumerate(raw_calls)
        if getattr(c, "function", None) is not None
    ]
    usage = getattr(completion, "usage", None)
    finish = getattr(choices[0], "finish_reason", None)
    return ChatResult(
        content=_text(getattr(message, "content", None), "the message content"),
        tool_calls=calls,
        prompt_tokens=_token_count(getattr(usage, "prompt_tokens", 0)),
        completion_tokens=_token_count(getattr(usage, "completion_tokens", 0)),
        latency_s=latency_s,
        finish_reason=finish if isinstance(finish, str) else None,
    )


def _is_redirect(exc: Exception) -> bool:
    return isinstance(exc, openai.APIStatusError) and 300 <= exc.status_code < 400


def redirect_refused(where: str, error: str) -> str:
    """The line that stops a run whose endpoint answers a redirect (`error`, `_describe`'s
    text): every request would be refused the same way, so the user is told the way out."""
    return (
        f"{where} answered a redirect ({error}): none is followed, so that neither the "
        "conversation nor the API key goes elsewhere; give the address it redirects to as "
        "--base-url (--judge-base-url for the judge's endpoint)"
    )


def _not_a_model_list(where: str, why: str) -> str:
    return (
        f"{where} did not answer a model list ({why}); is --base-url the API's address "
        "(often ending in /v1)?"
    )


class OpenAIBackend:
    """ChatBackend over `openai.AsyncOpenAI` with our own retries and bounded concurrency.

    `latency_s` in results is the wall time of the whole call, retries and waits included.
    """

    name = "openai"

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        concurrency: int = 4,
        request_timeout: float = 600.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.retry = retry or RetryPolicy()
        self.usage = UsageTotals()
        self._semaphore = asyncio.Semaphore(concurrency)
        self.request_timeout = request_timeout
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key,
            timeout=request_timeout,
            max_retries=0,
            http_client=_bounded_http_client(),
        )

    async def aclose(self) -> None:
        await self._client.close()

    async def check_reachable(self, timeout_s: float = 15.0) -> None:
        """Fail fast with one clear message if the endpoint is down or rejects the key."""
        where = f"the model endpoint {self.base_url}/models"
        try:
            # wait_for: the client's timeout is per read, and a trickling server never ends
            page = await asyncio.wait_for(
                self._client.with_options(timeout=timeout_s).models.list(), timeout_s
            )
        except openai.AuthenticationError as exc:
            raise BackendStartupError(
                f"{self.base_url} rejected the API key (HTTP {exc.status_code}); check the key "
                "in the environment variable named by --api-key-env."
            ) from exc
        except (openai.NotFoundError, openai.PermissionDeniedError):
            return  # the server answered; some providers do not list models
        except openai.APIStatusError as exc:
            if _is_redirect(exc):
                raise BackendStartupError(redirect_refused(where, _describe(exc))) from exc
            raise BackendStartupError(f"cannot reach {where}: {_describe(exc)}") from exc
        except (openai.APIConnectionError, TimeoutError) as exc:
            raise BackendStartupError(f"cannot reach {where}: {_describe(exc)}") from exc
        except (MalformedResponse, ValueError, RecursionError) as exc:
            raise BackendStartupError(_not_a_model_list(where, _describe(exc))) from exc
        except (TypeError, AttributeError) as exc:  # the client's own parse of a non-JSON body
            raise BackendStartupError(_not_a_model_list(where, "not JSON")) from exc
        if isinstance(page, (str, bytes)):
            raise BackendStartupError(_not_a_model_list(where, "not JSON"))

    async def chat(self, request: ChatRequest) -> ChatResult:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": sanitize_messages(request.messages),
            "seed": request.seed,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.tools:
            body["tools"] = request.tools
            if request.tool_choice is not None:
                body["tool_choice"] = request.tool_choice
        return await self.send(body)

    async def send(self, request: dict[str, Any]) -> ChatResult:
        """POST one chat-completions request with the retry policy; never raises for provider
        failures (the returned result carries `error` instead)."""
        start = time.monotonic()
        for attempt in range(self.retry.max_retries + 1):
            try:
                async with self._semaphore:
                    self.usage.requests += 1
                    # The client's timeout is per read: a server trickling one byte at a time
                    # would never end; this bounds the whole request.
                    completion = await asyncio.wait_for(
                        self._client.chat.completions.create(**request), self.request_timeout
                    )
                result = _to_result(completion, time.monotonic() - start)
            except (openai.OpenAIError, TimeoutError, MalformedResponse, ValueError,
                    TypeError, AttributeError, RecursionError) as exc:  # fmt: skip
                # ValueError & co.: a body the client could not read as a chat completion
                wait = self._retry_wait(exc, attempt)
                if wait is None:
                    self.usage.errors += 1
                    error = _describe(exc)
                    if attempt:
                        error += f" (after {attempt} retries)"
                    return ChatResult(content="", latency_s=time.monotonic() - start, error=error)
                self.usage.retries += 1
                await asyncio.sleep(wait)
                continue
            self.usage.prompt_tokens += result.prompt_tokens
            self.usage.completion_tokens += result.completion_tokens
            return result
        raise AssertionError("unreachable: the last attempt always returns")

    def _retry_wait(self, exc: Exception, attempt: int) -> float | None:
        """Seconds to wait before the next attempt, or None to give up now."""
        if attempt >= self.retry.max_retries or not _is_retryable(exc):
            return None
        response = getattr(exc, "response", None)
        retry_after = parse_retry_after(getattr(response, "headers", None))
        if retry_after is not None and retry_after > self.retry.max_retry_after_s:
            return None
        return max(retry_after or 0.0, self.retry.backoff(attempt))


def resolve_api_key(config: RunConfig) -> str:
    """The key from `config.api_key_env`; a dummy for loopback servers, else a clear error."""
    key = os.environ.get(config.api_key_env)
    if key:
        return key
    if config.base_url and is_loopback_url(config.base_url):
        return _LOOPBACK_DUMMY_KEY
    raise BackendStartupError(
        f"no API key: environment variable {config.api_key_env} is not set "
        f"(needed for {config.base_url}; choose another variable with --api-key-env)"
    )


@contextlib.asynccontextmanager
async def open_openai_backend(config: RunConfig) -> AsyncIterator[OpenAIBackend]:
    """Open the `openai` backend from a RunConfig, checking the endpoint before any task runs."""
    backend = OpenAIBackend(
        base_url=str(config.base_url),
        api_key=resolve_api_key(config),
        model=config.model,
        concurrency=config.concurrency,
        request_timeout=config.request_timeout,
    )
    try:
        await backend.check_reachable()
        yield backend
    finally:
        await backend.aclose()

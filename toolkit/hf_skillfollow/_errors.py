"""What kind of failure ended an arm: the `se_error` / `sd_error` texts the backends write.

- `context`: the conversation outgrew the model's context window (vLLM's `max_model_len`, a
  provider's "maximum context length"). The same prompt fails the same way again: it is part
  of the measurement, and is not retried unless asked.
- `transport`: the request did not get an answer from the model (timeout, connection error,
  HTTP 408/409/429/5xx, an empty response, a failed vLLM batch). A short outage says nothing
  about the model: these pairs are retried on resume (`--retry-errors`, docs/runs.md).
- `malformed`: the server answered, but not with a chat completion (`malformed response: ...`,
  `backends/_openai.MalformedResponse`: a proxy's HTML page, `choices` not a list, a body over
  the cap). The same server answers the same request the same way, so it is not retried by
  default; once the endpoint is mended, `--retry-errors malformed` runs exactly these pairs.
- `other`: anything else the provider refused (an HTTP 4xx other than those).

The texts are the backends' own (`backends/_openai._describe`, `backends/_vllm`), matched
here in one place.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

ErrorKind = Literal["transport", "context", "malformed", "other"]
#: `--retry-errors` choices -> the kinds of errored pairs retried on resume
RETRY_CHOICES: dict[str, frozenset[str]] = {
    "transport": frozenset({"transport"}),
    "malformed": frozenset({"malformed"}),
    "all": frozenset({"transport", "context", "malformed", "other"}),
    "none": frozenset(),
}

_CONTEXT = re.compile(
    r"max_model_len|context length|context window|maximum context|context_length_exceeded"
    r"|prompt is too long|too many tokens|reduce the length of the (messages|prompt)",
    re.IGNORECASE,
)
_TRANSPORT = re.compile(
    r"^(request timed out|connection error|response had no choices|vLLM batch failed"
    r"|HTTP (408|409|429|5\d\d)\b)",
    re.IGNORECASE,
)
#: the openai backend's own prefix (`backends/_openai._describe`), never a provider's text:
#: those start with `HTTP `, `connection error` or `request timed out`
_MALFORMED = "malformed response:"
#: `runner.failed_pair`'s prefix: a pair that raised inside the toolkit, whose exception text
#: may quote anything the task held ("reduce the length of the prompt" too)
PAIR_FAILED = "pair failed: "


def error_kind(text: str | None) -> ErrorKind | None:
    """The kind of an arm's error text; None when the arm ended without one."""
    if not text:
        return None
    # First: the body of a malformed answer may quote anything ("context length" too).
    if text.startswith(_MALFORMED):
        return "malformed"
    if text.startswith(PAIR_FAILED):
        return "other"
    if _CONTEXT.search(text):
        return "context"
    if _TRANSPORT.search(text.strip()):
        return "transport"
    return "other"


def pair_error_kinds(transition: Mapping[str, Any]) -> set[str]:
    """The kinds of error that ended either arm of one pair (a transitions row)."""
    kinds = {error_kind(transition.get("se_error")), error_kind(transition.get("sd_error"))}
    return {k for k in kinds if k is not None}

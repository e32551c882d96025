"""Credentials carried in an endpoint URL never reach a stored file (manifest, rows, traces).

`--base-url https://user:pass@host/v1` or `...?api_key=...` is a common way to reach a
gateway. The run keeps the real URL in memory to talk to the model; what it writes has the
user-info and every credential-like query value replaced by `***` (docs/runs.md, "Credentials in --base-url").
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

REDACTED = "***"
#: Query parameter names whose value is a credential (api_key, access_token, sig, ...).
_SECRET_PARAM = re.compile(r"key|token|secret|passw|pwd|auth|sig|credential|session", re.I)
#: A bare password shorter than this is not scrubbed from free text: it would also erase
#: ordinary words from traces. The `user:pass@` form is always scrubbed.
_MIN_BARE_SECRET = 8


def _query_items(query: str) -> list[tuple[str, str, str]]:
    """(name, separator, raw value) per `&` item, percent-encoding kept."""
    return [item.partition("=") for item in query.split("&") if item]  # type: ignore[misc]


def _is_secret(name: str) -> bool:
    return bool(_SECRET_PARAM.search(unquote(name)))


def redact_url(url: str | None) -> str | None:
    """`url` with its user-info and credential query values replaced by `***`."""
    if not url:
        return url
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rpartition('@')[2]}"
    query = "&".join(
        f"{k}={REDACTED}" if _is_secret(k) else f"{k}{sep}{v}"
        for k, sep, v in _query_items(parts.query)
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def is_redacted(url: str | None) -> bool:
    """Whether `url` is a stored form whose credentials were removed (so it cannot be used)."""
    if not url:
        return False
    parts = urlsplit(url)
    return parts.netloc.startswith(f"{REDACTED}@") or f"={REDACTED}" in parts.query


def url_secrets(url: str | None) -> list[str]:
    """The substrings of `url` that must not appear in anything written."""
    if not url:
        return []
    parts = urlsplit(url)
    found: set[str] = set()
    if "@" in parts.netloc:
        userinfo = parts.netloc.rpartition("@")[0]
        found |= {f"{userinfo}@", f"{unquote(userinfo)}@"}
        if parts.password and len(unquote(parts.password)) >= _MIN_BARE_SECRET:
            found |= {parts.password, unquote(parts.password)}
    for name, _, value in _query_items(parts.query):
        if _is_secret(name) and len(unquote(value)) >= 4:
            found |= {value, unquote(value)}
    # Longest first, so a secret that contains another is replaced whole.
    return sorted(found, key=len, reverse=True)


def scrub(value: Any, secrets: list[str]) -> Any:
    """`value` (str, or nested dicts/lists of them) with every secret replaced by `***`."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, f"{REDACTED}@" if secret.endswith("@") else REDACTED)
        return value
    if isinstance(value, dict):
        return {k: scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, secrets) for v in value]
    return value

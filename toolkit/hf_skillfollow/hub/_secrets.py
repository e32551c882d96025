"""Keep Hub tokens out of everything this package prints, raises or uploads."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from hf_skillfollow.hub._layout import HubError


def effective_tokens(token: str | None) -> list[str]:
    """Every token that could appear in a message: the explicit one and the resolved one."""
    tokens = [token] if token else []
    try:
        from huggingface_hub import get_token

        resolved = get_token()
    except Exception:  # noqa: BLE001 - a broken login cache must not mask the real error
        resolved = None
    if resolved:
        tokens.append(resolved)
    return [t for t in tokens if len(t) >= 4]


def scrub(text: str, tokens: Sequence[str]) -> str:
    for t in tokens:
        text = text.replace(t, "***")
    return text


@contextmanager
def scrubbed(token: str | None) -> Iterator[None]:
    """Re-raise any failure as HubError with tokens removed and no chained original."""
    try:
        yield
    except HubError as exc:
        raise HubError(scrub(str(exc), effective_tokens(token))) from None
    except Exception as exc:
        message = scrub(f"{type(exc).__name__}: {exc}", effective_tokens(token))
        raise HubError(f"push failed: {message}") from None


def refuse_token_in(files: dict[str, bytes], token: str | None) -> None:
    for t in effective_tokens(token):
        for path, data in files.items():
            if t.encode() in data:
                raise HubError(f"refusing to upload {path}: it contains the Hub token")

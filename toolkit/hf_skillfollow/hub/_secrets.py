"""Keep Hub tokens out of everything this package prints, raises or uploads."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
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


def refuse_token_in(
    files: dict[str, bytes], token: str | None, keys: Mapping[str, str] | None = None
) -> None:
    """Refuse (HubError) if any file holds a Hub token or one of `keys` (what it is -> the
    secret, e.g. the API key a run's manifest names), in its bytes or, for parquet, in any
    string value: compressed pages need not show the secret's bytes."""
    secrets = {t: "the Hub token" for t in effective_tokens(token)}
    secrets |= {v: k for k, v in (keys or {}).items() if len(v) >= _MIN_KEY}
    if not secrets:
        return
    for path, data in files.items():
        found = next((t for t in secrets if t.encode() in data), None)
        if found is None and path.endswith(".parquet"):
            found = _parquet_holds(data, list(secrets))
        if found is not None:
            raise HubError(f"refusing to upload {path}: it contains {secrets[found]}")


#: A shorter value of a key variable is no credential (and would match everywhere).
_MIN_KEY = 8


def _parquet_holds(data: bytes, tokens: list[str]) -> str | None:
    """The first of `tokens` that a string value of the parquet file (nested lists and structs
    included) contains, or None; a vectorised substring scan, no Python objects per value."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    def strings(array: pa.Array) -> Iterator[pa.Array]:
        if pa.types.is_list(array.type) or pa.types.is_large_list(array.type):
            yield from strings(array.flatten())
        elif pa.types.is_struct(array.type):
            for i in range(array.type.num_fields):
                yield from strings(array.field(i))
        elif pa.types.is_dictionary(array.type):
            yield from strings(array.dictionary)
        elif pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
            yield array

    table = pq.read_table(pa.BufferReader(data))
    for column in table.columns:
        for chunk in column.chunks:
            for array in strings(chunk):
                for t in tokens:
                    if pc.any(pc.match_substring(array, t)).as_py():
                        return t
    return None

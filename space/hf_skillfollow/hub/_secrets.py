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
    """Refuse (HubError) if any file holds a Hub token, in its bytes or, for parquet, in any
    string value: compressed pages need not show the token's bytes."""
    tokens = effective_tokens(token)
    if not tokens:
        return
    for path, data in files.items():
        if any(t.encode() in data for t in tokens) or (
            path.endswith(".parquet") and _parquet_holds(data, tokens)
        ):
            raise HubError(f"refusing to upload {path}: it contains the Hub token")


def _parquet_holds(data: bytes, tokens: list[str]) -> bool:
    """Whether any string value of the parquet file (nested lists and structs included)
    contains one of `tokens`; a vectorised substring scan, no Python objects per value."""
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
                if any(pc.any(pc.match_substring(array, t)).as_py() for t in tokens):
                    return True
    return False

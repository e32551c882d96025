"""Lucene's lossy one-byte document-length norm (org.apache.lucene.util.SmallFloat).

BM25Similarity stores each document's length as `intToByte4(length)` and scores with the
decoded `byte4ToInt(norm)`: lengths below 24 survive exactly, longer ones are rounded down to
4 significant bits. Reproducing this is what makes scores, not only ranks, equal Lucene's.
"""

from __future__ import annotations

# intToByte4 keeps the first NUM_FREE_VALUES lengths verbatim: 255 - longToInt4(Integer.MAX_VALUE).
_NUM_FREE_VALUES = 24


def _long_to_int4(i: int) -> int:
    num_bits = i.bit_length()
    if num_bits < 4:
        return i  # subnormal
    shift = num_bits - 4
    # keep the 4 most significant bits, the leading one implicit
    return ((i >> shift) & 0x07) | ((shift + 1) << 3)


def _int4_to_long(i: int) -> int:
    bits = i & 0x07
    shift = (i >> 3) - 1
    return bits if shift == -1 else (bits | 0x08) << shift


def int_to_byte4(length: int) -> int:
    """SmallFloat.intToByte4 as an unsigned byte value (0..255)."""
    if length < 0:
        raise ValueError(f"length must be >= 0, got {length}")
    if length < _NUM_FREE_VALUES:
        return length
    return _NUM_FREE_VALUES + _long_to_int4(length - _NUM_FREE_VALUES)


def byte4_to_int(byte: int) -> int:
    """SmallFloat.byte4ToInt of an unsigned byte value."""
    if byte < _NUM_FREE_VALUES:
        return byte
    return _NUM_FREE_VALUES + _int4_to_long(byte - _NUM_FREE_VALUES)


def lucene_length(length: int) -> int:
    """The document length BM25Similarity actually scores with."""
    return byte4_to_int(int_to_byte4(length))

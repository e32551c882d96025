"""``PCG64(SeedSequence([seed, n, b, c]))`` states for many keys at once.

Constructing a SeedSequence and a PCG64 costs about 45 us of Python-level work per key,
which dominated the bootstrap once the resampling itself became cheap. The hash below is
numpy's SeedSequence algorithm (``numpy/random/bit_generator.pyx``: ``mix_entropy`` and
``generate_state``, default pool of four words) evaluated on arrays, followed by PCG64's
seeding step (``pcg64_set_seed``). It yields the very states numpy would; the tests compare
them with numpy's own objects, so a change in numpy cannot go unnoticed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_MASK32 = 0xFFFFFFFF
_MASK128 = (1 << 128) - 1
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_MULT_L, _MIX_MULT_R = 0xCA01F9DD, 0x4973F715
_POOL_SIZE = 4
_PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645  # PCG_DEFAULT_MULTIPLIER_128


def pcg64_states(seed: int, keys: np.ndarray) -> list[dict[str, Any]]:
    """``np.random.PCG64(np.random.SeedSequence([seed, *key])).state`` for each row of `keys`.

    `keys` holds non-negative integers below 2**32 (one entropy word each), as counts do.
    """
    keys = np.asarray(keys, dtype=np.int64)
    if keys.size and (keys.min() < 0 or keys.max() > _MASK32):
        raise ValueError("bootstrap keys must be integers in [0, 2**32)")
    entropy = [*(np.uint32(w) for w in _int_words(int(seed))), *keys.T.astype(np.uint32)]
    words = _generate_state(_mix_entropy(entropy, len(keys)), 8)
    w = [col.astype(np.uint64).tolist() for col in words]
    return [_pcg64_state(key_words) for key_words in zip(*w, strict=True)]


def _pcg64_state(words: tuple[int, ...]) -> dict[str, Any]:
    # generate_state(4, uint64) pairs the words little-endian: u64 k = w[2k] | w[2k+1] << 32,
    # and PCG64 takes (u64 0, u64 1) as its 128-bit seed and (u64 2, u64 3) as its stream.
    u64 = [words[2 * k] | (words[2 * k + 1] << 32) for k in range(4)]
    state, inc = _pcg64_seed((u64[0] << 64) | u64[1], (u64[2] << 64) | u64[3])
    return {
        "bit_generator": "PCG64",
        "state": {"state": state, "inc": inc},
        "has_uint32": 0,
        "uinteger": 0,
    }


def _int_words(value: int) -> list[int]:
    """SeedSequence's coercion of one non-negative int: 32-bit words, least significant first."""
    if value < 0:
        raise ValueError(f"seed must be a non-negative integer, got {value}")
    words = [0] if value == 0 else []
    while value > 0:
        words.append(value & _MASK32)
        value >>= 32
    return words


class _Hash:
    """SeedSequence's ``hashmix``: the multiplier evolves per call, the same for every key."""

    def __init__(self, init: int, mult: int) -> None:
        self.const, self.mult = init, mult

    def __call__(self, value: np.ndarray) -> np.ndarray:
        value = value ^ np.uint32(self.const)
        self.const = (self.const * self.mult) & _MASK32
        value = value * np.uint32(self.const)
        return value ^ (value >> np.uint32(16))


def _mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    result = np.uint32(_MIX_MULT_L) * x - np.uint32(_MIX_MULT_R) * y
    return result ^ (result >> np.uint32(16))


def _mix_entropy(entropy: list[Any], n_keys: int) -> list[np.ndarray]:
    hashmix = _Hash(_INIT_A, _MULT_A)
    zeros = np.zeros(n_keys, dtype=np.uint32)
    words = [zeros + np.uint32(w) for w in entropy]  # broadcast the shared seed words
    pool = [hashmix(words[i] if i < len(words) else zeros) for i in range(_POOL_SIZE)]
    for src in range(_POOL_SIZE):
        for dst in range(_POOL_SIZE):
            if src != dst:
                pool[dst] = _mix(pool[dst], hashmix(pool[src]))
    for src in range(_POOL_SIZE, len(words)):
        for dst in range(_POOL_SIZE):
            pool[dst] = _mix(pool[dst], hashmix(words[src]))
    return pool


def _generate_state(pool: list[np.ndarray], n_words: int) -> list[np.ndarray]:
    hashmix = _Hash(_INIT_B, _MULT_B)
    return [hashmix(pool[i % _POOL_SIZE]) for i in range(n_words)]


def _pcg64_seed(initstate: int, initseq: int) -> tuple[int, int]:
    """pcg_setseq_128_srandom_r: returns (state, inc)."""
    inc = ((initseq << 1) | 1) & _MASK128
    state = inc  # one step from state 0
    state = ((state + initstate) * _PCG_MULT + inc) & _MASK128
    return state, inc

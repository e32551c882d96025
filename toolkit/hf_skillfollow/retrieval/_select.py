"""Turning per-skill scores into the ranked hits every backend returns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hf_skillfollow.retrieval._base import Hit
from hf_skillfollow.skills import SKILL_TYPES

if TYPE_CHECKING:
    from hf_skillfollow.skills import SkillPool

#: The type label of an untyped (spec-only) skill: no filter value equals it.
UNTYPED = ""


def type_labels(pool: SkillPool) -> np.ndarray:
    """Each skill's type in pool order, `UNTYPED` for a skill that declares none."""
    return np.array([s.type or UNTYPED for s in pool.skills], dtype=object)


def check_types(types: Sequence[str] | None) -> frozenset[str] | None:
    """Validate a type filter; None or empty means no filter."""
    if not types:
        return None
    if isinstance(types, str):
        raise ValueError(f"types: expected a list of types, got the string {types!r}")
    unknown = sorted(set(types) - set(SKILL_TYPES))
    if unknown:
        raise ValueError(
            f"types: unknown skill type(s) {unknown}; allowed: {'|'.join(SKILL_TYPES)}"
        )
    return frozenset(types)


def rank_hits(
    names: Sequence[str],
    scores: np.ndarray,
    skill_types: np.ndarray,
    *,
    k: int,
    types: Sequence[str] | None,
) -> list[Hit]:
    """Top-`k` hits: type filter first, zero scores dropped, ties broken by name ascending.

    An untyped skill passes only when `types` is omitted (None or empty): the search tool's
    "Omit for all types" stays true, and a filter asks for skills that declare a type.
    """
    if k < 1:
        raise ValueError(f"k: must be >= 1, got {k}")
    allowed = check_types(types)
    keep = scores > 0
    if allowed is not None:
        keep &= np.isin(skill_types, list(allowed))
    ranked = sorted((-float(scores[i]), names[i]) for i in np.flatnonzero(keep))
    return [Hit(name=name, score=-neg) for neg, name in ranked[:k]]

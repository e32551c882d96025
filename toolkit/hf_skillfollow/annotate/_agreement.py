"""Agreement of human audit labels among themselves and with the LLM annotator: pure
computation (Krippendorff's α from the `krippendorff` package), no I/O.

`human` maps unit id -> {human annotator -> label}; `llm` maps unit id -> the LLM's label.
A unit's human majority is a label chosen by strictly more than half of its human labels.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from hf_skillfollow.annotate._labels import APPROPRIATE, LABELS, engaged

Labels = Mapping[str, Mapping[str, str]]


@dataclass(frozen=True)
class Agreement:
    """The audit figures (percentages in 0-100; NaN where undefined)."""

    n_units: int
    n_humans: int
    alpha_five: float  # nominal α over the five labels, among humans
    alpha_binary: float  # nominal α over engaged / not engaged, among humans
    majority_vs_llm: float  # % of units with a strict human majority where the LLM agrees
    n_majority: int
    n_no_majority: int
    binary_human_pairs: float  # mean % agreement of human pairs on engaged / not engaged
    binary_majority_vs_llm: float
    n_binary_majority: int
    n_binary_no_majority: int
    appropriate_rate_human: float  # % of all human labels that are appropriate adherence
    appropriate_rate_llm: float  # % of audited units the LLM labelled appropriate adherence

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def krippendorff_alpha(human: Labels, categories: list[str]) -> float:
    """Nominal α among the human annotators (units with < 2 labels carry no information)."""
    import krippendorff
    import numpy as np

    coders = sorted({h for per_unit in human.values() for h in per_unit})
    units = sorted(human)
    code = {c: float(i) for i, c in enumerate(categories)}
    data = np.full((len(coders), len(units)), np.nan)
    for j, unit in enumerate(units):
        for i, coder in enumerate(coders):
            label = human[unit].get(coder)
            if label is not None:
                data[i, j] = code[label]
    values = data[~np.isnan(data)]
    if len(coders) < 2 or len(set(values.tolist())) < 2:
        return math.nan  # α is undefined without two coders and two observed values
    return float(
        krippendorff.alpha(
            reliability_data=data,
            level_of_measurement="nominal",
            value_domain=list(code.values()),
        )
    )


def strict_majority(labels: list[str]) -> str | None:
    if not labels:
        return None
    label, count = Counter(labels).most_common(1)[0]
    return label if count * 2 > len(labels) else None


def _majority_agreement(human: Labels, llm: Mapping[str, str], key: Any) -> tuple[float, int, int]:
    agree = with_majority = without = 0
    for unit, per_unit in human.items():
        if unit not in llm:
            continue
        majority = strict_majority([key(v) for v in per_unit.values()])
        if majority is None:
            without += 1
            continue
        with_majority += 1
        agree += int(majority == key(llm[unit]))
    return _pct(agree, with_majority), with_majority, without


def _pairwise(human: Labels, key: Any) -> float:
    agree = pairs = 0
    for per_unit in human.values():
        for x, y in itertools.combinations(sorted(per_unit), 2):
            pairs += 1
            agree += int(key(per_unit[x]) == key(per_unit[y]))
    return _pct(agree, pairs)


def _pct(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else math.nan


def agreement(human: Labels, llm: Mapping[str, str]) -> Agreement:
    """All audit figures; see the module docstring for the inputs."""
    unknown = sorted({v for per in human.values() for v in per.values()} - set(LABELS))
    if unknown:
        raise ValueError(f"unknown label(s) {unknown}; use one of {list(LABELS)}")
    binary = {u: {h: str(engaged(v)) for h, v in per.items()} for u, per in human.items()}
    five, n_major, n_none = _majority_agreement(human, llm, lambda v: v)
    bin_major, n_bin_major, n_bin_none = _majority_agreement(human, llm, engaged)
    all_human = [v for per in human.values() for v in per.values()]
    audited = [llm[u] for u in human if u in llm]
    return Agreement(
        n_units=len(human),
        n_humans=len({h for per in human.values() for h in per}),
        alpha_five=krippendorff_alpha(human, list(LABELS)),
        alpha_binary=krippendorff_alpha(binary, ["True", "False"]),
        majority_vs_llm=five,
        n_majority=n_major,
        n_no_majority=n_none,
        binary_human_pairs=_pairwise(human, engaged),
        binary_majority_vs_llm=bin_major,
        n_binary_majority=n_bin_major,
        n_binary_no_majority=n_bin_none,
        appropriate_rate_human=_pct(sum(v == APPROPRIATE for v in all_human), len(all_human)),
        appropriate_rate_llm=_pct(sum(v == APPROPRIATE for v in audited), len(audited)),
    )

"""The five annotation labels, their display groups and the binary engaged split.

An annotation describes *why* a retrieval-invoked SE execution went the way it did; it never
feeds back into RAE (docs/diagnostics.md).
"""

from __future__ import annotations

from typing import Any

from hf_skillfollow._text import loads_untrusted

APPROPRIATE = "appropriate adherence"
IGNORED = "ignored/independent"
MISAPPLIED = "misapplied/overapplied"
FORMAT_FAILURE = "format/interface failure"
UNCLEAR = "unclear"

#: Primary labels, in display order.
LABELS: tuple[str, ...] = (APPROPRIATE, IGNORED, MISAPPLIED, FORMAT_FAILURE, UNCLEAR)

#: Collapsed groups for display: label -> group.
GROUP_OF: dict[str, str] = {
    APPROPRIATE: "appropriate",
    MISAPPLIED: "problematic",
    FORMAT_FAILURE: "problematic",
    IGNORED: "no clear adherence",
    UNCLEAR: "no clear adherence",
}
GROUPS: tuple[str, ...] = ("appropriate", "problematic", "no clear adherence")

#: The binary audit split: the model engaged with the skill (well or badly) or it did not.
ENGAGED_LABELS = frozenset({APPROPRIATE, MISAPPLIED})

RATIONALE_MAX_CHARS = 400

#: JSON Schema of one annotation; strict-mode compatible (all keys required, no extras, no
#: length keywords, which OpenAI's strict mode rejects; the rationale is cut on our side).
LABEL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "label": {"type": "string", "enum": list(LABELS)},
        "rationale": {"type": "string"},
    },
    "required": ["label", "rationale"],
    "additionalProperties": False,
}


def engaged(label: str) -> bool:
    return label in ENGAGED_LABELS


def parse_label(text: str) -> tuple[str, str]:
    """(label, rationale) from the annotator's JSON; ValueError saying what is wrong otherwise.

    Only an exact label from LABELS is accepted: a near miss is invalid output to retry,
    never mapped to the closest label.
    """
    try:
        data = loads_untrusted(text)
    except (TypeError, ValueError):
        raise ValueError(f"not valid JSON: {text[:120]!r}") from None
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    label, rationale = data.get("label"), data.get("rationale")
    if label not in LABELS:
        raise ValueError(f"'label' must be one of {list(LABELS)}, got {label!r}")
    if not isinstance(rationale, str):
        raise ValueError("'rationale' must be a string")
    extra = sorted(set(data) - {"label", "rationale"})
    if extra:
        raise ValueError(f"unexpected key(s) {extra}")
    return label, rationale.strip()[:RATIONALE_MAX_CHARS]

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

#: A unit's paired outcome: SE right and SD wrong, the reverse, or both the same.
HELPFUL, HARMFUL, CONCORDANT = "helpful", "harmful", "concordant"
FLIPS: tuple[str, ...] = (HELPFUL, HARMFUL, CONCORDANT)

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


#: An annotator is `<model>@<prompt hash>`: a model id is well under this.
MAX_ANNOTATOR_CHARS = 256


def check_annotation_rows(table: Any, source: str, *, names: bool = True) -> None:
    """ValueError naming `source`, the task and the column for an annotations row outside the
    scheme: a label not one of `LABELS` (null is a failure), a flip not helpful / harmful /
    concordant, and (with `names`, for what is published) an annotator with a control
    character or longer than `MAX_ANNOTATOR_CHARS`. An annotations file may be a third
    party's (a results repo, a run folder handed over), and these values are counted,
    sampled into audit sheets and published; readers that only show it (the board) cut a
    long name instead."""
    import pyarrow as pa
    import pyarrow.compute as pc

    label, flip, annotator = (table.column(c) for c in ("label", "flip", "annotator"))
    bad = {
        "label": pc.invert(pc.or_kleene(pc.is_null(label), pc.is_in(label, pa.array(LABELS)))),
        "flip": pc.invert(pc.is_in(flip, pa.array(FLIPS))),
        "annotator": pc.or_(
            pc.greater(pc.utf8_length(annotator), MAX_ANNOTATOR_CHARS),
            pc.match_substring_regex(annotator, r"[\x00-\x1f\x7f]"),
        ),
    }
    if not names:
        del bad["annotator"]
    for column, mask in bad.items():
        rows = pc.indices_nonzero(pc.fill_null(mask, True))
        if len(rows):
            row = rows[0].as_py()
            value = table.column(column)[row].as_py()
            shown = repr(value if value is None or len(value) <= 80 else value[:80] + "…")
            task = str(table.column("task_id")[row].as_py())[:80]
            raise ValueError(
                f"{source}: task_id {task!r}, column {column}: {shown} is not "
                + {
                    "label": f"one of {list(LABELS)} or null",
                    "flip": "helpful, harmful or concordant",
                    "annotator": f"an annotator name (at most {MAX_ANNOTATOR_CHARS} characters, "
                    "no control characters)",
                }[column]
            )

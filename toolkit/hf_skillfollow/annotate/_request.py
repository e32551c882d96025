"""The blinded annotation request.

Blinding is structural: `build_request` takes a `BlindedView`, which holds only the task
prompt, the retrieval queries, the returned skill names with excerpts of what the tool gave
back, and the SE final answer. It has no field for the SD answer or for any correctness
label, so no request built here can carry them (tests check the request bytes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hf_skillfollow.annotate._labels import LABEL_SCHEMA, LABELS

TOOL_NAME = "record_annotation"
#: Character caps per field, so that a request fits a small model's context (8k tokens).
PROMPT_MAX_CHARS = 3000
EXCERPT_MAX_CHARS = 1500
ANSWER_MAX_CHARS = 4000
_CUT = "\n[... cut ...]"

SYSTEM_PROMPT = (
    "You review one attempt by an assistant that could search a skill library before solving a "
    "coding or math task. You see the task, the searches it made, the skills it got back and its "
    "final answer. You are not told whether the answer is correct; do not try to judge that. "
    "Decide how the final answer relates to the retrieved skills and choose exactly one label:\n"
    "- appropriate adherence: the answer uses a retrieved skill's method, code or steps, and they "
    "fit this task.\n"
    "- ignored/independent: the answer solves the task its own way; the retrieved skills leave no "
    "visible trace in it.\n"
    "- misapplied/overapplied: the answer follows a retrieved skill where it does not fit, or "
    "bends the task to the skill (another variant of the problem, copied code for a different "
    "problem, steps forced onto the task).\n"
    "- format/interface failure: the answer does not have the expected form (no final answer, "
    "no or broken code block, wrong function name or signature, tool-call text instead of an "
    "answer), whatever the skills said.\n"
    "- unclear: the evidence supports none of the above.\n"
    f"Reply by calling `{TOOL_NAME}` with one JSON object: "
    '{"label": "<one label, spelled exactly as above>", "rationale": "<one or two sentences '
    'naming the evidence>"}.'
)


@dataclass(frozen=True, slots=True)
class BlindedView:
    """Everything the annotator may see of one SE execution, and nothing else."""

    task_prompt: str
    queries: tuple[str, ...]
    skill_names: tuple[str, ...]
    tool_results: tuple[str, ...]
    se_answer: str


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + _CUT


def user_message(view: BlindedView) -> str:
    """The request's user turn: the blinded fields in fixed sections."""
    queries = "\n".join(f"{i}. {q}" for i, q in enumerate(view.queries, 1)) or "(none)"
    results = "\n\n".join(
        f"### Tool result {i}\n{_cut(text, EXCERPT_MAX_CHARS)}"
        for i, text in enumerate(view.tool_results, 1)
    )
    return (
        f"## Task\n{_cut(view.task_prompt, PROMPT_MAX_CHARS)}\n\n"
        f"## Skill searches\n{queries}\n\n"
        f"## Skills returned\n{', '.join(view.skill_names) or '(none)'}\n\n"
        f"{results}\n\n"
        f"## Final answer\n{_cut(view.se_answer, ANSWER_MAX_CHARS) or '(empty)'}"
    )


def label_tool() -> dict[str, Any]:
    """The forced tool whose arguments are the annotation; `strict` asks for schema-exact JSON."""
    from hf_skillfollow._structured import forced_tool

    return forced_tool(
        TOOL_NAME, "Record the label and a short rationale for this attempt.", LABEL_SCHEMA
    )


def build_request(view: BlindedView) -> dict[str, Any]:
    """messages, tools and tool_choice of one annotation request (see the module docstring)."""
    from hf_skillfollow._structured import tool_choice

    return {
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": user_message(view)},
        ],
        "tools": [label_tool()],
        "tool_choice": tool_choice(TOOL_NAME),
    }


def prompt_hash() -> str:
    """Identifies the annotation instructions: prompt, tool, labels and field caps."""
    from hf_skillfollow.config import stable_hash

    return stable_hash(
        {
            "system": SYSTEM_PROMPT,
            "tool": label_tool(),
            "labels": list(LABELS),
            "caps": [PROMPT_MAX_CHARS, EXCERPT_MAX_CHARS, ANSWER_MAX_CHARS],
            "layout": user_message(BlindedView("T", ("Q",), ("S",), ("R",), "A")),
        },
        length=12,
    )


def request_json(view: BlindedView) -> str:
    """Canonical JSON of the request (what the blinding tests inspect)."""
    return json.dumps(build_request(view), sort_keys=True, ensure_ascii=False)

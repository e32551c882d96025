"""The arms differ only in the skills: no pool skill's content in a skill-disabled request.

`sd_request_integrity(pool, messages)` checks one recorded SD request (every message sent to
the model: system prompt, task, attached files) for the text of any pool skill: a SKILL.md
body, a description or a served file. A task's prompt that quotes a skill (an eval attaching a reference, a
task file pasting a SKILL.md) hands the SD arm what only the SE arm should read, and the pair
no longer measures the skills. The verdict is the transitions column `arm_integrity`, in the
form the importers use for a without-skills trial (docs/import.md): `ok`, or
`violation: <what>`; `hf-skillfollow report` counts them (docs/design.md, "Arm integrity").

Texts are compared with whitespace runs collapsed (re-wrapping does not hide a copy); a text
shorter than `MIN_CHARS` is not looked for (a one-line body such as "Return early." occurs in
ordinary prompts by chance).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hf_skillfollow.skills import SkillPool

#: Characters (whitespace collapsed) below which a skill text is not looked for.
MIN_CHARS = 40
OK = "ok"
VIOLATION = "violation: "
#: Named in the verdict at most; the count says how many more.
_NAMED = 3
#: pools whose texts were gathered, by id (the pool is kept so its id is not reused)
_TEXTS: dict[int, tuple[SkillPool, tuple[tuple[str, str], ...]]] = {}


def _collapse(text: str) -> str:
    return " ".join(text.split())


def pool_texts(pool: SkillPool) -> tuple[tuple[str, str], ...]:
    """(what, collapsed text) of every skill body, description and served file of `pool` worth
    looking for: the description is SE-only too (the catalog shows it, a search hit's SKILL.md
    starts with it)."""
    cached = _TEXTS.get(id(pool))
    if cached is not None and cached[0] is pool:
        return cached[1]
    found: dict[str, str] = {}
    for skill in pool.skills:
        named = [
            (f"skill {skill.name!r} SKILL.md body", skill.body),
            (f"skill {skill.name!r} description", skill.description),
        ]
        named += [
            (f"skill {skill.name!r} file {rel!r}", text)
            for rel, text in zip(skill.resources, skill.resource_texts, strict=True)
        ]
        for what, text in named:
            collapsed = _collapse(text)
            if len(collapsed) >= MIN_CHARS:
                found.setdefault(collapsed, what)
    texts = tuple((what, text) for text, what in found.items())
    if len(_TEXTS) > 8:
        _TEXTS.clear()
    _TEXTS[id(pool)] = (pool, texts)
    return texts


def sd_request_integrity(pool: SkillPool, messages: Iterable[Mapping[str, Any]]) -> str:
    """`ok`, or `violation: ...` naming the pool texts found in the messages sent to the SD arm
    (its own answers, the assistant turns, are not what was sent)."""
    sent = _collapse(
        "\n".join(str(m.get("content") or "") for m in messages if m.get("role") != "assistant")
    )
    hits = [what for what, text in pool_texts(pool) if text in sent]
    if not hits:
        return OK
    more = f" and {len(hits) - _NAMED} more" if len(hits) > _NAMED else ""
    return (
        f"{VIOLATION}{len(hits)} pool skill text(s) in the skill-disabled request: "
        f"{', '.join(hits[:_NAMED])}{more}"
    )


def is_violation(status: object) -> bool:
    """Whether an `arm_integrity` value records a violation (null and `unchecked` do not)."""
    return isinstance(status, str) and status.startswith(VIOLATION.strip())

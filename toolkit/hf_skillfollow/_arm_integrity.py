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
ordinary prompts by chance). A *passage* of a text counts too: `PASSAGE_WORDS` consecutive words
of it (at least `PASSAGE_CHARS` characters, half of the words distinct) found in the request,
so a long paragraph of a skill pasted into a task is seen, not only the whole body. The pool's
passages are indexed at every `_STRIDE`-th word (a hash per passage), and every passage of the
request is looked up: a shared run of `PASSAGE_WORDS + _STRIDE - 1` words is always found, a
shorter one of at least `PASSAGE_WORDS` words often.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import accumulate
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hf_skillfollow.skills import SkillPool

#: Characters (whitespace collapsed) below which a skill text is not looked for.
MIN_CHARS = 40
#: Consecutive words of a pool text that, found in an SD request, are a violation: a passage
#: no task prompt shares with a skill by chance (none of the MBPP+, HumanEval+ or MATH-500
#: prompts shares more than 11 words in a row with the shipped pools, SD system prompt included)
PASSAGE_WORDS = 40
#: ... spanning at least this many characters (forty one-character tokens are no paragraph)
PASSAGE_CHARS = 200
#: every how many words of a pool text a passage is indexed (memory: one hash per stride)
_STRIDE = 20
OK = "ok"
VIOLATION = "violation: "
#: Named in the verdict at most; the count says how many more.
_NAMED = 3
#: pools whose texts were gathered, by id (the pool is kept so its id is not reused)
_TEXTS: dict[int, tuple[SkillPool, tuple[tuple[str, str], ...]]] = {}
#: the passage index of each pool's texts, by id, likewise
_PASSAGES: dict[int, tuple[SkillPool, dict[int, int]]] = {}


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


def _offsets(words: list[str]) -> list[int]:
    """Where each word of a collapsed text starts, and where a word after the last would."""
    return list(accumulate((len(w) + 1 for w in words), initial=0))


def _passages(words: list[str], offsets: list[int], text: str, step: int) -> Iterable[str]:
    """The passages of `PASSAGE_WORDS` words of the collapsed `text` starting at every
    `step`-th word, those long and varied enough to count (not a table rule or a run of
    brackets)."""
    for i in range(0, len(words) - PASSAGE_WORDS + 1, step):
        passage = text[offsets[i] : offsets[i + PASSAGE_WORDS] - 1]
        if len(passage) >= PASSAGE_CHARS and len(set(words[i : i + PASSAGE_WORDS])) * 2 >= (
            PASSAGE_WORDS
        ):
            yield passage


def _passage_index(pool: SkillPool) -> dict[int, int]:
    """The hash of every indexed passage of the pool's texts -> the text's place in
    `pool_texts(pool)`."""
    cached = _PASSAGES.get(id(pool))
    if cached is not None and cached[0] is pool:
        return cached[1]
    index: dict[int, int] = {}
    for place, (_, text) in enumerate(pool_texts(pool)):
        words = text.split(" ")
        for passage in _passages(words, _offsets(words), text, _STRIDE):
            index.setdefault(hash(passage), place)
    if len(_PASSAGES) > 8:
        _PASSAGES.clear()
    _PASSAGES[id(pool)] = (pool, index)
    return index


def _shared_passages(pool: SkillPool, sent: str, skip: set[int]) -> list[int]:
    """The places (in `pool_texts(pool)`) of the texts a passage of which `sent` holds, those
    in `skip` aside."""
    index = _passage_index(pool)
    if not index:
        return []
    texts = pool_texts(pool)
    words = sent.split(" ")
    found: list[int] = []
    for passage in _passages(words, _offsets(words), sent, 1):
        place = index.get(hash(passage))
        # a hash is no proof: the passage itself must be in the text
        if place is not None and place not in skip and passage in texts[place][1]:
            skip.add(place)
            found.append(place)
    return found


def sd_request_integrity(pool: SkillPool, messages: Iterable[Mapping[str, Any]]) -> str:
    """`ok`, or `violation: ...` naming the pool texts found in the messages sent to the SD arm
    (its own answers, the assistant turns, are not what was sent): whole, or a passage of
    `PASSAGE_WORDS` words."""
    sent = _collapse(
        "\n".join(str(m.get("content") or "") for m in messages if m.get("role") != "assistant")
    )
    texts = pool_texts(pool)
    whole = {place for place, (_, text) in enumerate(texts) if text in sent}
    partial = _shared_passages(pool, sent, set(whole))
    hits = [texts[place][0] for place in sorted(whole)]
    hits += [f"{texts[place][0]} (a passage of {PASSAGE_WORDS}+ words)" for place in partial]
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

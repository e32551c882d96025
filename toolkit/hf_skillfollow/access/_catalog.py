"""`catalog`: progressive disclosure as Agent Skills clients do it (docs/skills.md).

The SE system prompt carries the pool's `<available_skills>` catalog (names and
descriptions); `activate_skill(name)` returns the skill's SKILL.md body and the list of its
other files; `read_skill_file(name, path)` returns one of those files. The trigger event is
an activation that handed back a skill. A read is valid only for a skill activated earlier in
the same conversation and a path its activation listed, so no skill content reaches the
model without an activation.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from html import escape, unescape
from typing import TYPE_CHECKING, Any

from hf_skillfollow._skill_findings import short
from hf_skillfollow._text import loads_untrusted
from hf_skillfollow.access._base import CallOutcome, unknown_tool
from hf_skillfollow.prompts import (
    ACTIVATE_TOOL,
    CATALOG_FINAL_ANSWER_REQUEST,
    FILE_TEMPLATE,
    INVALID_CALL,
    READ_TOOL,
    catalog_tools,
    system_prompt,
)

if TYPE_CHECKING:
    from hf_skillfollow.backends._base import ToolCall
    from hf_skillfollow.config import RunConfig
    from hf_skillfollow.skill_content import Activation
    from hf_skillfollow.skills import SkillPool

#: The most the catalog may take of the context, in estimated tokens, when the model's context
#: is not known: half of the embedded model's 8,192-token window, leaving the other half for
#: the task, tool results and answer. Where the context is known (`model_context`), the budget
#: is half of it.
CATALOG_TOKEN_BUDGET = 4096
#: Estimated tokens per byte of catalog text (English BPE vocabularies average ~4 bytes/token).
_BYTES_PER_TOKEN = 4


class CatalogTooLargeError(ValueError):
    """The pool's catalog does not fit the context budget; the message says the way out."""


def catalog_tokens(catalog: str) -> int:
    """The estimated token count of a text (bytes / 4, rounded up)."""
    return math.ceil(len(catalog.encode("utf-8")) / _BYTES_PER_TOKEN)


def sent_tokens(catalog: str, tools: list[dict[str, Any]]) -> int:
    """The estimated tokens the pool adds to every SE request: its catalog in the system prompt
    and the tool definitions, whose `name` enums repeat every skill name once per tool."""
    return catalog_tokens(catalog + json.dumps(tools, ensure_ascii=False))


def token_budget(context_tokens: int | None) -> int:
    """The catalog's budget: half of the model's context where known, else the fixed default."""
    return context_tokens // 2 if context_tokens else CATALOG_TOKEN_BUDGET


def pool_catalog(pool: SkillPool) -> str:
    """The `<available_skills>` block of `pool` (no `<location>`: no local path in a prompt)."""
    from hf_skillfollow.skills import catalog_prompt

    return catalog_prompt(pool)


class CatalogAccess:
    """`activate_skill` and `read_skill_file` over the pool, content under the condition."""

    forced_tool = ACTIVATE_TOOL
    final_request = CATALOG_FINAL_ANSWER_REQUEST

    def __init__(self, pool: SkillPool, config: RunConfig) -> None:
        from hf_skillfollow.access import model_context

        self.pool = pool
        self.catalog = self.check(pool, model_context(config))
        self.condition, self.seed = config.condition, config.seed
        self.tools: list[dict[str, Any]] = catalog_tools(pool.names)

    @classmethod
    def check(cls, pool: SkillPool, context_tokens: int | None = None) -> str:
        """The catalog of `pool`, or CatalogTooLargeError when it and the tools naming its
        skills exceed the budget (`token_budget(context_tokens)`)."""
        catalog = pool_catalog(pool)
        tokens = sent_tokens(catalog, catalog_tools(pool.names))
        budget = token_budget(context_tokens)
        if tokens > budget:
            window = (
                f"half of the model's {context_tokens:,}-token context"
                if context_tokens
                else "default"
            )
            raise CatalogTooLargeError(
                f"--access catalog: the catalog of skill pool {pool.name!r} ({len(pool)} skills, "
                f"{len(catalog.encode('utf-8')):,} bytes, ~{tokens:,} tokens with the skill "
                f"names of the tools) exceeds the {budget:,}-token budget ({window}) for what "
                "the pool adds to each request; use --access search, or a smaller pool (--skills "
                "DIR with fewer skills, shorter names or shorter descriptions)"
            )
        return catalog

    def system_prompt(self, domain: str) -> str:
        return system_prompt(domain, skill_enabled=True, access="catalog", catalog=self.catalog)

    def session(self) -> CatalogSession:
        return CatalogSession(self)


@dataclass
class CatalogSession:
    """One SE conversation: remembers what each activation served, for later reads."""

    access: CatalogAccess
    activated: dict[str, Activation] = field(default_factory=dict)

    def execute(self, call: ToolCall, call_index: int) -> CallOutcome:
        if call.name not in (ACTIVATE_TOOL, READ_TOOL):
            return unknown_tool(call)
        args, problem = _arguments(call.arguments, self.access.pool.names, call.name)
        if problem:
            return _invalid(problem)
        if call.name == ACTIVATE_TOOL:
            return self._activate(args["name"])
        return self._read(args["name"], args["path"], call_index)

    def _activate(self, name: str) -> CallOutcome:
        from hf_skillfollow.skill_content import render_activation

        access = self.access
        activation = render_activation(
            access.pool, name, access.condition, rng_seed=f"{access.seed}:{name}"
        )
        self.activated[name] = activation
        return CallOutcome(activation.text, f"{ACTIVATE_TOOL}({name})", activation.names)

    def _read(self, name: str, path: str, call_index: int) -> CallOutcome:
        from hf_skillfollow.skill_content import render_file
        from hf_skillfollow.skills import SkillPoolError, read_resource

        activation = self.activated.get(name)
        if activation is None:
            return _invalid(f"skill {name!r} is not activated; call {ACTIVATE_TOOL} first")
        if activation.source is None or path not in activation.files:
            # the path is the model's own text: echoed back bounded
            return _invalid(f"{short(path)} is not a file listed for skill {name!r}")
        try:
            text = read_resource(activation.source, path)
        except (SkillPoolError, OSError, ValueError):
            # the error names a local path, which must not enter the trace: say only what failed
            return _invalid(
                f"{short(path)} of skill {name!r} cannot be served (too large or unreadable)"
            )
        content = render_file(
            text, self.access.condition, rng_seed=f"{self.access.seed}:{name}:{path}"
        )
        request = f"{READ_TOOL}({name}, {path})"
        text = FILE_TEMPLATE.format(name=escape(name), path=escape(path), content=content)
        return CallOutcome(text, request)


def _arguments(arguments: str, names: list[str], tool: str) -> tuple[dict[str, str], str | None]:
    try:
        args = loads_untrusted(arguments) if arguments.strip() else {}
    except (ValueError, AttributeError):
        return {}, "arguments are not valid JSON"
    if not isinstance(args, dict):
        return {}, "arguments must be a JSON object"
    name = args.get("name")
    if isinstance(name, str) and name not in names and unescape(name) in names:
        # typed exactly as the catalog lists it, HTML-escaped (`a&amp;b` for skill `a&b`); no
        # skill is named as another is listed (`skills._with_collisions`), so this is that one
        name = unescape(name)
    if not isinstance(name, str) or name not in names:
        return {}, "`name` must be one of the skill names in <available_skills>"
    if tool == READ_TOOL:
        path = args.get("path")
        if not isinstance(path, str) or not path.strip():
            return {}, "`path` must be a non-empty string"
        return {"name": name, "path": path.strip()}, None
    return {"name": name}, None


def _invalid(problem: str) -> CallOutcome:
    return CallOutcome(INVALID_CALL.format(problem=problem), None)

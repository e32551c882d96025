"""`catalog`: progressive disclosure as Agent Skills clients do it (docs/skills.md).

The SE system prompt carries the pool's `<available_skills>` catalog (names and
descriptions); `activate_skill(name)` returns the skill's SKILL.md body and the list of its
other files; `read_skill_file(name, path)` returns one of those files. The trigger event is
an activation that handed back a skill. A read is valid only for a skill activated earlier in
the same conversation and a path its activation listed, so no skill content reaches the
model without an activation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape
from typing import TYPE_CHECKING, Any

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

#: The most the catalog may take of the context, in estimated tokens: half of the embedded
#: model's 8,192-token window, leaving the other half for the task, tool results and answer.
CATALOG_TOKEN_BUDGET = 4096
#: Estimated tokens per byte of catalog text (English BPE vocabularies average ~4 bytes/token).
_BYTES_PER_TOKEN = 4


class CatalogTooLargeError(ValueError):
    """The pool's catalog does not fit the context budget; the message says the way out."""


def catalog_tokens(catalog: str) -> int:
    """The estimated token count of a catalog (bytes / 4, rounded up)."""
    return math.ceil(len(catalog.encode("utf-8")) / _BYTES_PER_TOKEN)


def pool_catalog(pool: SkillPool) -> str:
    """The `<available_skills>` block of `pool` (no `<location>`: no local path in a prompt)."""
    from hf_skillfollow.skills import catalog_prompt

    return catalog_prompt(pool)


class CatalogAccess:
    """`activate_skill` and `read_skill_file` over the pool, content under the condition."""

    forced_tool = ACTIVATE_TOOL
    final_request = CATALOG_FINAL_ANSWER_REQUEST

    def __init__(self, pool: SkillPool, config: RunConfig) -> None:
        self.pool = pool
        self.catalog = self.check(pool)
        self.condition, self.seed = config.condition, config.seed
        self.tools: list[dict[str, Any]] = catalog_tools(pool.names)

    @classmethod
    def check(cls, pool: SkillPool) -> str:
        """The catalog of `pool`, or CatalogTooLargeError when it exceeds the budget."""
        catalog = pool_catalog(pool)
        tokens = catalog_tokens(catalog)
        if tokens > CATALOG_TOKEN_BUDGET:
            raise CatalogTooLargeError(
                f"--access catalog: the catalog of skill pool {pool.name!r} ({len(pool)} skills, "
                f"{len(catalog.encode('utf-8')):,} bytes, ~{tokens:,} tokens) exceeds the "
                f"{CATALOG_TOKEN_BUDGET:,}-token budget for the catalog in the system prompt; "
                "use --access search, or a smaller pool (--skills DIR with fewer skills or "
                "shorter descriptions)"
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
            return _invalid(f"{path!r} is not a file listed for skill {name!r}")
        try:
            text = read_resource(activation.source, path)
        except (SkillPoolError, OSError, ValueError):
            # the error names a local path, which must not enter the trace: say only what failed
            return _invalid(
                f"{path!r} of skill {name!r} cannot be served (too large or unreadable)"
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

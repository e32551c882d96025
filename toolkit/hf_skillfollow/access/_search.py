"""`search`: the paper's protocol, the `search_skills` BM25 tool (docs/skills.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hf_skillfollow._text import loads_untrusted
from hf_skillfollow.access._base import CallOutcome, unknown_tool
from hf_skillfollow.prompts import (
    FINAL_ANSWER_REQUEST,
    SKILL_TYPES,
    TOOL_NAME,
    system_prompt,
    tool_schema,
)

if TYPE_CHECKING:
    from hf_skillfollow.backends._base import ToolCall
    from hf_skillfollow.config import RunConfig
    from hf_skillfollow.retrieval import Retriever
    from hf_skillfollow.skills import SkillPool


class SearchAccess:
    """`search_skills(query, types?)`: the top-`k` BM25 hits, rendered under the condition.

    Stateless, so each conversation's session is the protocol itself. The trigger event is
    a search that returned at least one skill.
    """

    forced_tool = TOOL_NAME
    final_request = FINAL_ANSWER_REQUEST

    def __init__(self, pool: SkillPool, config: RunConfig) -> None:
        from hf_skillfollow.retrieval import make_retriever

        self.pool = pool
        self.retriever: Retriever = make_retriever(config.retriever, pool)
        self.condition, self.top_k, self.seed = config.condition, config.top_k, config.seed
        self.tools = [tool_schema()]

    @classmethod
    def check(cls, pool: SkillPool, context_tokens: int | None = None) -> None:
        return None  # any pool can be searched

    def system_prompt(self, domain: str) -> str:
        return system_prompt(domain, skill_enabled=True)

    def session(self) -> SearchAccess:
        return self

    def execute(self, call: ToolCall, call_index: int) -> CallOutcome:
        from hf_skillfollow.skill_content import NO_RESULTS, render

        if call.name != TOOL_NAME:
            return unknown_tool(call)
        query, types, problem = parse_arguments(call.arguments)
        if problem:
            return CallOutcome(f"Invalid arguments: {problem}. No skill returned.", None)
        hits = self.retriever.search(query, k=self.top_k, types=types)
        rendered = render(self.pool, hits, self.condition, rng_seed=self.seed * 1000 + call_index)
        return CallOutcome(rendered.text or NO_RESULTS, query, rendered.names)


def parse_arguments(arguments: str) -> tuple[str, list[str] | None, str | None]:
    """Validate raw `search_skills` JSON: (query, types, problem); `problem` is None when valid."""
    try:
        args = loads_untrusted(arguments) if arguments.strip() else {}
    except (ValueError, AttributeError):
        return "", None, "arguments are not valid JSON"
    if not isinstance(args, dict):
        return "", None, "arguments must be a JSON object"
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        return "", None, "`query` must be a non-empty string"
    types = args.get("types")
    if types is not None and (
        not isinstance(types, list) or any(t not in SKILL_TYPES for t in types)
    ):
        return "", None, f"`types` must be a list of {list(SKILL_TYPES)}"
    return query.strip(), types or None, None

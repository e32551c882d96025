"""Skill access protocols: how the SE arm reaches the skills (docs/skills.md, "Access protocols").

`search` (the paper's `search_skills` BM25 tool) and `catalog` (the Agent Skills catalog in the
system prompt, `activate_skill` and `read_skill_file`) are entries of `registries.ACCESS`; each
supplies the SE prompt, the tools, the executor of a tool call and what counts as the trigger
event, so `agent.py` stays the one conversation loop for both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hf_skillfollow.access._base import AccessProtocol, AccessSession, CallOutcome
from hf_skillfollow.registries import ACCESS

if TYPE_CHECKING:
    from hf_skillfollow.config import RunConfig
    from hf_skillfollow.skills import SkillPool


def make_access(config: RunConfig, pool: SkillPool) -> AccessProtocol:
    """The access protocol `config.access` over `pool` (search builds its retriever now)."""
    return ACCESS.resolve(config.access)(pool, config)


def model_context(config: RunConfig) -> int | None:
    """The model's context in tokens where the run's settings say it (the embedded model's
    window, or vLLM's `max_model_len` engine option); None where only the server knows it."""
    given = config.engine_options.get("max_model_len")
    if isinstance(given, int) and not isinstance(given, bool) and given > 0:
        return given
    if config.backend == "local":
        from hf_skillfollow.backends._local import N_CTX

        return N_CTX
    return None


def check_access(access: str, pool: SkillPool, context_tokens: int | None = None) -> None:
    """Refuse, before any request, a pool the protocol cannot serve (a catalog too large for
    the model's context, `model_context`, where known)."""
    ACCESS.resolve(access).check(pool, context_tokens)


__all__ = [
    "ACCESS",
    "AccessProtocol",
    "AccessSession",
    "CallOutcome",
    "check_access",
    "make_access",
    "model_context",
]

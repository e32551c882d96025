"""hf-skillfollow: paired SE/SD measurement of whether retrieved skills actually help.

The public surface is re-exported lazily so that `import hf_skillfollow` stays light
(no pandas, datasets, gradio, torch or JVM at import).
"""

from __future__ import annotations

from hf_skillfollow._lazy import lazy_exports
from hf_skillfollow._version import __version__

_EXPORTS: dict[str, str] = {
    "RunConfig": "hf_skillfollow.config",
    "TRANSITIONS_SCHEMA": "hf_skillfollow.schema",
    "TRACES_SCHEMA": "hf_skillfollow.schema",
    "SchemaError": "hf_skillfollow.schema",
    "Skill": "hf_skillfollow.skills",
    "SkillPool": "hf_skillfollow.skills",
    "SkillPoolError": "hf_skillfollow.skills",
    "load_pool": "hf_skillfollow.skills",
    "make_retriever": "hf_skillfollow.retrieval",
    "compute_cells": "hf_skillfollow.metrics",
    "read_transitions": "hf_skillfollow.sources",
    "load_transitions": "hf_skillfollow.hub",
    "load_traces": "hf_skillfollow.hub",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


__getattr__ = lazy_exports(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return __all__

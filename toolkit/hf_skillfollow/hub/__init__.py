"""Publish and load results repos: Hub datasets of paired transitions and traces (docs/hub.md).

Layout: `README.md` (the card, regenerated on every push), `data/transitions/<run_id>.parquet`,
`data/traces/<run_id>.parquet` and `stats/runs.parquet` (per-run counts the card is computed
from). Heavy imports (datasets, huggingface_hub, jinja2) happen
inside the functions that need them.

See docs/design.md, "Published data".
"""

from __future__ import annotations

from hf_skillfollow._lazy import lazy_exports

# Imported on first use: a reader of one submodule (the board's read budget, `_budget`) does
# not load the push path (card, plan, repos) with the package.
_EXPORTS: dict[str, str] = {
    "HubError": "hf_skillfollow.hub._layout",
    "PushResult": "hf_skillfollow.hub._push",
    "build_repo": "hf_skillfollow.hub._push",
    "load_annotations": "hf_skillfollow.hub._load",
    "load_traces": "hf_skillfollow.hub._load",
    "load_transitions": "hf_skillfollow.hub._load",
    "push_runs": "hf_skillfollow.hub._push",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)

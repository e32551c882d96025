"""Publish and load results repos: Hub datasets of paired transitions and traces (docs/hub.md).

Layout: `README.md` (the card, regenerated on every push), `data/transitions/<run_id>.parquet`,
`data/traces/<run_id>.parquet` and `stats/runs.parquet` (per-run counts the card is computed
from). Heavy imports (datasets, huggingface_hub, jinja2) happen
inside the functions that need them.

See docs/design.md, "Published data".
"""

from __future__ import annotations

from hf_skillfollow.hub._layout import HubError
from hf_skillfollow.hub._load import load_annotations, load_traces, load_transitions
from hf_skillfollow.hub._push import PushResult, build_repo, push_runs

__all__ = [
    "HubError",
    "PushResult",
    "build_repo",
    "load_annotations",
    "load_traces",
    "load_transitions",
    "push_runs",
]

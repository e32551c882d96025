"""Where the toolkit keeps its local caches, declared once.

Expected outputs (``scoring``) and verification state (``verify``) live under one root, so a
user moves or clears them with one variable, and the sandbox hides that root from programs.
"""

from __future__ import annotations

import os
from pathlib import Path

#: overrides the cache root (default ``~/.cache/hf-skillfollow``)
ENV_CACHE = "SKILLFOLLOW_CACHE_DIR"


def cache_root() -> Path:
    """The toolkit's cache folder (read afresh: tests and users move it)."""
    return Path(os.environ.get(ENV_CACHE) or Path.home() / ".cache" / "hf-skillfollow")

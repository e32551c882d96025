"""Build and deploy the leaderboard as a self-contained Hugging Face Space folder.

`build_space` writes README.md (Space metadata), app.py, requirements.txt (PyPI pins) and the
board's part of the toolkit as source; `push_space` uploads that folder through `HfApi`.
See docs/space.md.
"""

from __future__ import annotations

from hf_skillfollow.space_build._folder import SpaceBuild, build_space, check_sources
from hf_skillfollow.space_build._push import SpacePushResult, push_space

__all__ = ["SpaceBuild", "SpacePushResult", "build_space", "check_sources", "push_space"]

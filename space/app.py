"""Hugging Face Space entry point, written by `hf-skillfollow space build` (toolkit 0.1.0).

`hf_skillfollow/` beside this file is the toolkit's board code, vendored because a Space
installs requirements.txt (PyPI only) before this folder is copied in. Sources: the Space
variable SKILLFOLLOW_SOURCES (set by `hf-skillfollow space push`), else SOURCES below; the Space
variable SKILLFOLLOW_DISCOVER turns discovery of tagged Hub datasets on or off. Every number is
recomputed from the sources' transitions rows when the Space starts, each source's apart.
"""

import os

SOURCES = []

os.environ.setdefault("SKILLFOLLOW_SOURCES", ",".join(SOURCES))
# A community board: every public Hub dataset tagged `skillfollow`, found at each start.
os.environ.setdefault("SKILLFOLLOW_DISCOVER", "1")

from hf_skillfollow.space_app import launch  # noqa: E402 - after the default sources are set

if __name__ == "__main__":
    launch()

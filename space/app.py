"""Hugging Face Space entry point: a thin shell around `hf_skillfollow.space_app`.

Sources: the Space variable SKILLFOLLOW_SOURCES (comma-separated Hub dataset repo ids or
local folders) plus every Hub dataset tagged `skillfollow` (SKILLFOLLOW_DISCOVER=0 turns
discovery off). SKILLFOLLOW_RESAMPLES sets the bootstrap resamples (default 20,000).
"""

from hf_skillfollow.space_app._launch import make_demo

demo = make_demo()

if __name__ == "__main__":
    demo.launch()  # the board's CSS, page script and CSV route are its launch defaults

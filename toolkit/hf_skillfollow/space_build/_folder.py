"""Write a Space folder: README.md with the Space metadata, app.py, requirements.txt, toolkit.

The requirements are the board's own imports pinned to the versions its tests ran with
(`requirements.txt` beside this module; tests/test_space_build.py installs exactly them into
a fresh venv and opens the board), and the Space's `sdk_version` is the gradio pin.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hf_skillfollow._version import __version__
from hf_skillfollow.space_build._vendor import vendor

PYTHON_VERSION = "3.11"
ENV_SOURCES = "SKILLFOLLOW_SOURCES"
ENV_DISCOVER = "SKILLFOLLOW_DISCOVER"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][A-Za-z0-9.+-]*)$")
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class SpaceBuildError(ValueError):
    """A bad `space build` / `space push` argument; the message names it."""


@dataclass
class SpaceBuild:
    """What `build_space` wrote."""

    folder: Path
    sources: list[str]
    gradio_version: str
    discover: bool
    requirements: list[str]
    vendored: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """What the board loads, in words (the CLI's first line)."""
        found = "every public Hub dataset tagged 'skillfollow'"
        if not self.sources:
            return found
        return ", ".join(self.sources) + (f" and {found}" if self.discover else "")


def pinned_requirements() -> list[str]:
    """`name==version` lines of the shipped pin list (comments and blanks dropped)."""
    text = (Path(__file__).parent / "requirements.txt").read_text(encoding="utf-8")
    pins = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    for pin in pins:
        if not _PIN.match(pin):
            raise SpaceBuildError(f"space_build/requirements.txt: {pin!r} is not NAME==VERSION")
    return pins


def gradio_pin(pins: Sequence[str]) -> str:
    for pin in pins:
        name, version = pin.split("==")
        if name.lower() == "gradio":
            return version
    raise SpaceBuildError("space_build/requirements.txt: no gradio pin")


def check_sources(sources: Sequence[str], *, discover: bool = False) -> list[str]:
    """Hub dataset repo ids, deduplicated; anything else is refused naming `--sources`. None
    at all only with `discover` (a community board of every tagged results repo)."""
    out = list(dict.fromkeys(s.strip() for s in sources if s.strip()))
    if not out and not discover:
        raise SpaceBuildError(
            "--sources: give at least one Hub dataset repo id (ORG/NAME), or --discover"
        )
    bad = [s for s in out if not _REPO_ID.match(s)]
    if bad:
        raise SpaceBuildError(
            f"--sources: {bad[0]!r} is not a Hub dataset repo id (ORG/NAME); a Space reads "
            f"results from the Hub (set {ENV_SOURCES} to a folder only when running app.py locally)"
        )
    return out


def build_space(
    folder: str | Path, sources: Sequence[str] = (), *, discover: bool = False
) -> SpaceBuild:
    """Write (or refresh) a complete Space folder reading `sources` (Hub dataset repo ids) and,
    with `discover`, every public Hub dataset tagged `skillfollow` (found at each start).

    The board keeps each source's rows, marks and annotations to itself (docs/leaderboard.md,
    "Sources"), which is what lets a discovering board show repos nobody vetted."""
    names = check_sources(sources, discover=discover)
    root = Path(folder)
    if root.exists() and not root.is_dir():
        raise SpaceBuildError(f"{root}: exists and is not a directory")
    root.mkdir(parents=True, exist_ok=True)
    pins = pinned_requirements()
    gradio = gradio_pin(pins)
    vendored = vendor(root)
    (root / "requirements.txt").write_text(_requirements_text(pins), encoding="utf-8")
    (root / "app.py").write_text(_app_text(names, discover), encoding="utf-8")
    (root / "README.md").write_text(_readme_text(names, gradio, discover), encoding="utf-8")
    return SpaceBuild(root, names, gradio, discover, pins, vendored)


def _requirements_text(pins: Sequence[str]) -> str:
    head = (
        f"# Written by `hf-skillfollow space build` (toolkit {__version__}): what the board\n"
        "# imports, pinned to the versions its tests ran with. The toolkit itself is vendored\n"
        "# in hf_skillfollow/ beside app.py (see README.md).\n"
    )
    return head + "\n".join(pins) + "\n"


def _app_text(sources: Sequence[str], discover: bool) -> str:
    setting = (
        f"\n# A community board: every public Hub dataset tagged `skillfollow`, found at each start."
        f'\nos.environ.setdefault("{ENV_DISCOVER}", "1")'
        if discover
        else ""
    )
    return f'''"""Hugging Face Space entry point, written by `hf-skillfollow space build` (toolkit {__version__}).

`hf_skillfollow/` beside this file is the toolkit's board code, vendored because a Space
installs requirements.txt (PyPI only) before this folder is copied in. Sources: the Space
variable {ENV_SOURCES} (set by `hf-skillfollow space push`), else SOURCES below; the Space
variable {ENV_DISCOVER} turns discovery of tagged Hub datasets on or off. Every number is
recomputed from the sources' transitions rows when the Space starts, each source's apart.
"""

import os

SOURCES = {list(sources)!r}

os.environ.setdefault("{ENV_SOURCES}", ",".join(SOURCES)){setting}

from hf_skillfollow.space_app import launch  # noqa: E402 - after the default sources are set

if __name__ == "__main__":
    launch()
'''


def _readme_text(sources: Sequence[str], gradio: str, discover: bool) -> str:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(
        loader=FileSystemLoader(str(Path(__file__).parent)),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    return env.get_template("space_readme.md.j2").render(
        sources=list(sources),
        gradio_version=gradio,
        python_version=PYTHON_VERSION,
        toolkit_version=__version__,
        env_sources=ENV_SOURCES,
        env_discover=ENV_DISCOVER,
        discover=discover,
    )

"""What a task's ``environment/Dockerfile`` asks that the sandbox environment can give.

The sandbox builds no image: the host's read-only ``/usr`` is the image. A Dockerfile may use
``FROM`` (ignored), ``WORKDIR``, ``ENV`` and ``COPY`` of files from ``environment/``; any
other instruction is refused with the file and line. Stdlib only (no Harbor), so the
toolkit's own interpreter checks every task before a sandbox run (`_harbor`), one line
naming the task's own Dockerfile, rather than each trial failing inside Harbor.
"""

from __future__ import annotations

import shlex
from pathlib import Path

_DOCKERFILE_KEEP = {"FROM", "WORKDIR", "ENV", "COPY"}
MAX_DOCKERFILE_BYTES = 65536


class Recipe:
    """What a task's Dockerfile asks that a sandbox can give: a workdir, variables, copies."""

    def __init__(self) -> None:
        self.workdir = "/app"
        self.env: dict[str, str] = {}
        self.copies: list[tuple[str, str]] | None = None


def read_dockerfile(environment_dir: Path) -> Recipe:
    recipe = Recipe()
    path = environment_dir / "Dockerfile"
    if not path.is_file():
        return recipe
    recipe.copies = []
    with path.open("rb") as f:
        data = f.read(MAX_DOCKERFILE_BYTES + 1)
    if len(data) > MAX_DOCKERFILE_BYTES:
        # read whole or not at all: an instruction past what is read would be neither done
        # nor refused
        raise ValueError(f"{path}: over {MAX_DOCKERFILE_BYTES} bytes")
    text = data.decode("utf-8", "replace").replace("\\\n", " ")
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        word = word.upper()
        if word not in _DOCKERFILE_KEEP:
            raise ValueError(
                f"{path}:{number}: {word} needs an image build, which the sandbox environment "
                "cannot do; run this task with a Docker-capable --env"
            )
        try:
            args = shlex.split(rest)
        except ValueError as exc:  # an unclosed quote
            raise ValueError(f"{path}:{number}: {exc}") from None
        if word == "WORKDIR" and args:
            recipe.workdir = args[0]
        elif word == "ENV" and args:
            pairs = [a.partition("=") for a in args]
            if all(sep for _, sep, _ in pairs):
                recipe.env.update({k: v for k, _, v in pairs})
            else:
                recipe.env[args[0]] = " ".join(args[1:])
        elif word == "COPY":
            paths = [a for a in args if not a.startswith("--")]
            if len(paths) < 2:
                raise ValueError(f"{path}:{number}: COPY needs a source and a target")
            recipe.copies += [(src, paths[-1]) for src in paths[:-1]]
    return recipe

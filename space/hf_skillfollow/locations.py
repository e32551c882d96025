"""Telling a local source from a Hub dataset id, decided once for every reader.

`report`, `hub.load_transitions`/`load_traces` and the Space accept the same kinds of source:
a run directory, a results-repo folder, a parquet or JSONL file, a folder of those, or a Hub
dataset repo id. They all ask `is_hub_id`, so a name means the same thing everywhere. The
file names inside a run directory are declared in `store` (which writes them).
"""

from __future__ import annotations

import re
from pathlib import Path

#: A Hub repo id: OWNER/NAME (letters, digits, '_', '.', '-').
REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
#: File endings that make a source a local file even when it does not exist.
LOCAL_SUFFIXES = (".parquet", ".jsonl", ".json", ".ndjson")


def is_hub_id(source: str | Path) -> bool:
    """True for OWNER/NAME that is not an existing local path and not a file name."""
    text = str(source)
    return (
        REPO_ID.match(text) is not None
        and not text.endswith(LOCAL_SUFFIXES)
        and not Path(text).expanduser().exists()
    )

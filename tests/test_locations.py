"""One rule tells a local source from a Hub dataset id, for the report, the hub loader and the Space."""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_skillfollow.locations import is_hub_id
from hf_skillfollow.sources import SourceError, read_transitions
from hf_skillfollow.space_app._sources import is_local


@pytest.mark.parametrize(
    "source,hub",
    [
        ("org/name", True),
        ("org/results.v2", True),
        ("./org", False),
        ("~/runs", False),
        ("/abs/path", False),
        ("org/name.parquet", False),
        ("org/rows.jsonl", False),
        ("a/b/c", False),
        ("runs", False),
        ("org/na me", False),
    ],
)
def test_hub_ids_and_local_paths(source: str, hub: bool) -> None:
    assert is_hub_id(source) is hub
    assert is_local(source) is not hub


def test_an_existing_folder_shaped_like_an_id_is_local(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "org" / "name").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert not is_hub_id("org/name")


def test_a_missing_local_file_is_named_not_looked_up_on_the_hub() -> None:
    with pytest.raises(SourceError, match="org/gone.parquet: no such file or directory"):
        read_transitions("org/gone.parquet")

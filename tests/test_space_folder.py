"""The repository's `space/` folder is the community board `space build --discover` writes.

It is checked in so that anyone can deploy the board by copying the folder (docs/space.md);
this test fails as soon as the folder differs from what the builder writes now (a changed
board module, template or pin), and says how to refresh it.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from hf_skillfollow.space_build import build_space

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "space"
REFRESH = "hf-skillfollow space build space --discover"


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_the_checked_in_space_folder_is_what_space_build_writes(tmp_path: Path) -> None:
    build_space(tmp_path / "space", discover=True)
    want, have = _files(tmp_path / "space"), _files(FOLDER)
    missing = sorted(set(want) - set(have))
    extra = sorted(set(have) - set(want))
    changed = sorted(p for p in set(want) & set(have) if want[p] != have[p])
    assert not (missing or extra or changed), (
        f"space/ is out of date with the builder (missing {missing[:5]}, extra {extra[:5]}, "
        f"changed {changed[:5]}): run `{REFRESH}` from the repository root and commit space/"
    )


def test_the_community_board_names_no_source_and_discovers_tagged_repos() -> None:
    app = (FOLDER / "app.py").read_text(encoding="utf-8")
    assert "SOURCES = []" in app and 'os.environ.setdefault("SKILLFOLLOW_DISCOVER", "1")' in app
    readme = (FOLDER / "README.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(readme.split("---\n")[1])
    assert "datasets" not in meta and meta["sdk"] == "gradio" and meta["app_file"] == "app.py"
    assert "tagged `skillfollow`" in readme and "OWNER" not in readme
    assert "a repo cannot change another repo's numbers" in readme

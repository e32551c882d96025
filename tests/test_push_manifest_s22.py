"""`push` of a run folder whose manifest.json is nested past the JSON parser's depth, or is
larger than a manifest can be: one error line naming the file, nothing written (found by the
session-22 verify attacker: a RecursionError traceback from hub/_layout and hub/_push)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_sweep_annotate_push_attacks import (
    CELL_A,
    _nothing_written,
    _push_dry,
    write_run_dir,
)


@pytest.mark.parametrize("kind", ["nested past the parser", "over the size cap"])
def test_push_of_a_hostile_manifest_is_one_line_naming_it(tmp_path: Path, kind: str) -> None:
    run = write_run_dir(tmp_path / "runs", "run-n", CELL_A)
    manifest = run / "manifest.json"
    if kind == "nested past the parser":
        manifest.write_text("[" * 200_000)
        expected = f"Error: {manifest}: invalid JSON (JSON nested too deep)"
    else:
        with manifest.open("wb") as f:  # sparse: 17 MiB of nothing on disk
            f.truncate(17 * 1024 * 1024)
        expected = f"Error: {manifest}: larger than 16 MiB, not a manifest"
    out = tmp_path / "repo"
    code, output = _push_dry(run, out)
    assert code == 1 and output.startswith(expected) and output.count("\n") == 1, output
    assert _nothing_written(out)

"""Review of session 22's import and harness commits (brief R1): attacks on the new code.

Real files and folders in the shapes the harnesses write (tests/_trial_fixtures.py); no
double of our own code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pyarrow.parquet")

from hf_skillfollow.importers import import_runs  # noqa: E402
from tests._trial_fixtures import cc_stream, write_job, write_trial  # noqa: E402

_DEEP = "[" * 100_000  # past the JSON parser's recursion limit


def _one_task_jobs(root: Path) -> tuple[Path, Path]:
    se, sd = write_job(root / "with"), write_job(root / "without")
    write_trial(se, "a__se", "task-a", stream=cc_stream())
    write_trial(sd, "a__sd", "task-a", reward=0.0, stream=cc_stream(init=False))
    return se, sd


_MANIFEST = json.dumps({"cell_id": "deadbeef", "task_ids": ["task-a"]})
_RECORD = {"task_id": "task-a", "transition": {"task_id": "task-a"}}


@pytest.mark.parametrize(
    ("manifest", "records"),
    [
        (_DEEP, None),
        (_MANIFEST, json.dumps({**_RECORD, "traces": [{"arm": "se", "scorer_details": _DEEP}]})),
        (_MANIFEST, json.dumps(_RECORD)[:-1] + ', "traces": [], "x": ' + _DEEP),
    ],
    ids=["manifest", "scorer_details", "record"],
)
def test_another_cells_folder_nested_past_the_parser_is_passed_over(
    tmp_path: Path, manifest: str, records: str | None
) -> None:
    # 9ac292d reads every other cell's run folder of the output folder; before, one whose
    # manifest, record line or a trace's scorer_details nests past json's recursion limit
    # stopped the import with a RecursionError traceback (seen: `import harbor` on the CLI)
    se, sd = _one_task_jobs(tmp_path)
    out = tmp_path / "runs"
    odd = out / "imported-deadbeef-r0"
    odd.mkdir(parents=True)
    (odd / "manifest.json").write_text(manifest)
    if records is not None:
        (odd / "records.jsonl").write_text(records + "\n")
    result = import_runs("harbor", [se], [sd], output_dir=out)
    assert result.n_written == 1
    assert not [n for n in result.notes if n.startswith("the same trials of")]

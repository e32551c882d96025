"""Fixtures shared by the board's provenance, bounds and browser tests."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from hf_skillfollow.schema import annotations_from_rows

VICTIM = {"cell_id": "cellV", "model": "org/victim", "skill_pool": "coding"}


def write_annotations(run_dir: Path, annotator: str, *, bad_column: bool = False) -> Path:
    """RUN_DIR/annotations.parquet labelling every S_call flip of the run (`bad_column`: with
    a column the schema does not know)."""
    rows = []
    for t in pq.read_table(run_dir / "transitions.parquet").to_pylist():
        if t["returned"] and t["se_correct"] != t["sd_correct"]:
            rows.append(
                {
                    "schema_version": 1, "run_id": t["run_id"], "cell_id": t["cell_id"],
                    "task_id": t["task_id"], "repeat_index": t["repeat_index"],
                    "annotator": annotator, "annotator_model": "m", "annotator_backend": "openai",
                    "prompt_hash": "h", "flip": "helpful" if t["se_correct"] else "harmful",
                    "label": "misapplied/overapplied", "rationale": "r", "failure": None,
                    "attempts": 1, "raw_output": "{}", "annotated_at": "2025-01-01T00:00:00Z",
                }
            )  # fmt: skip
    table = annotations_from_rows(rows)
    if bad_column:
        table = table.append_column("extra", pa.array(["x"] * table.num_rows))
    path = run_dir / "annotations.parquet"
    pq.write_table(table, path)
    return path

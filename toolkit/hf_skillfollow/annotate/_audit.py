"""Human audit sheets: a stratified, seeded sample of LLM-labelled units written as one CSV
per human annotator (blinded fields, empty label/confidence columns), and reading them back.

The LLM's labels stay out of the sheets; they go into a separate key file that
`annotate agreement` reads.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hf_skillfollow.annotate._labels import LABELS
from hf_skillfollow.annotate._units import Unit

KEY_FILE = "audit-key.csv"
SHEET_COLUMNS = ("unit_id", "task_prompt", "queries", "skills_returned", "tool_results",
                 "se_answer", "label", "confidence")  # fmt: skip
KEY_COLUMNS = ("unit_id", "run_id", "task_id", "repeat_index", "flip", "annotator", "llm_label")
CONFIDENCE = ("low", "medium", "high")

INSTRUCTIONS = (
    "Audit sheet for hf-skillfollow annotations. Each row is one attempt by an assistant that could "
    "search a skill library: the task, its searches, the skills it got back and its final answer. "
    "You are not told whether the answer was correct; please do not try to find out. "
    "In 'label' write exactly one of: " + " | ".join(LABELS) + ". "
    "appropriate adherence = uses a retrieved skill that fits; ignored/independent = solves it its own "
    "way, no visible trace of the skills; misapplied/overapplied = follows a skill that does not fit; "
    "format/interface failure = the answer does not have the expected form; unclear = none of these. "
    "In 'confidence' write " + ", ".join(CONFIDENCE) + ". Work alone; do not compare sheets."
)


#: Bounds on a sheet or key file read back (`-n` units, 60 by default, of at most a few KiB each
#: as the LLM saw them): a file past them is refused before it costs minutes and gigabytes.
MAX_SHEET_BYTES = 64 * 1024 * 1024
MAX_SHEET_ROWS = 100_000


class AuditError(ValueError):
    """A sheet or key file is missing, malformed or holds an unknown label."""


def stratified_sample(rows: Sequence[dict[str, Any]], n: int, seed: int) -> list[dict[str, Any]]:
    """Up to `n` labelled rows spread evenly over (label, flip) strata; a stratum smaller than
    its share gives the rest to the others. Seeded, so the same inputs give the same sample."""
    import numpy as np

    rng = np.random.default_rng(seed)
    strata: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in sorted(rows, key=lambda r: (r["run_id"], r["task_id"])):
        if row["label"] is not None:
            strata.setdefault((row["label"], row["flip"]), []).append(row)
    for members in strata.values():
        rng.shuffle(members)  # type: ignore[arg-type]
    taken = {k: 0 for k in strata}
    left = min(n, sum(len(m) for m in strata.values()))
    while left:
        open_ = [k for k in sorted(strata) if taken[k] < len(strata[k])]
        share = max(1, left // len(open_))
        for k in open_:
            step = min(share, len(strata[k]) - taken[k], left)
            taken[k] += step
            left -= step
            if not left:
                break
    return [row for k in sorted(strata) for row in strata[k][: taken[k]]]


def unit_id(row: dict[str, Any]) -> str:
    return f"{row['run_id']}|{row['task_id']}"


def sheet_rows(sample: Sequence[dict[str, Any]], units: dict[str, Unit]) -> list[dict[str, str]]:
    """The blinded fields of each sampled unit, as the LLM saw them."""
    out = []
    for row in sample:
        view = units[unit_id(row)].view
        out.append(
            {
                "unit_id": unit_id(row),
                "task_prompt": view.task_prompt,
                "queries": "\n".join(view.queries),
                "skills_returned": ", ".join(view.skill_names),
                "tool_results": "\n\n---\n\n".join(view.tool_results),
                "se_answer": view.se_answer,
                "label": "",
                "confidence": "",
            }
        )
    return out


def _cell(value: object) -> object:
    """A sheet or key cell: humans open these in a spreadsheet, and the task, the searches, the
    tool results and the answer are a third party's text (model output included), so none may
    start a formula; newlines and tabs of a multi-line answer stay (the csv writer quotes)."""
    from hf_skillfollow._escape import for_csv_cell

    return for_csv_cell(value, keep="\n\t")


def _unit(shown: str) -> str:
    """The unit id a sheet cell shows, with the apostrophe `_cell` may have added taken off
    (a spreadsheet may drop it on saving, or keep it: both read as the same unit)."""
    if shown.startswith("'") and _cell(shown[1:]) == shown:
        return shown[1:]
    return shown


def write_sheets(
    out_dir: Path, rows: list[dict[str, str]], key: list[dict[str, Any]], humans: int, seed: int
) -> list[Path]:
    """audit-<i>.csv per human (each in its own seeded order) plus the key file. Each is
    written to a new file renamed into place: a sheet name in `out_dir` that is a link (a
    folder that came back from someone) is replaced, never written through."""
    import numpy as np

    from hf_skillfollow.store import atomic_write_bytes

    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(1, humans + 1):
        order = np.random.default_rng([seed, i]).permutation(len(rows))
        path = out_dir / f"audit-{i}.csv"
        buf = io.StringIO()
        buf.write(f"# {INSTRUCTIONS}\n")
        writer = csv.DictWriter(buf, fieldnames=list(SHEET_COLUMNS))
        writer.writeheader()
        writer.writerows({k: _cell(v) for k, v in rows[j].items()} for j in order)
        atomic_write_bytes(path, buf.getvalue().encode("utf-8"))
        paths.append(path)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(KEY_COLUMNS))
    writer.writeheader()
    writer.writerows({k: _cell(v) for k, v in row.items()} for row in key)
    atomic_write_bytes(out_dir / KEY_FILE, buf.getvalue().encode("utf-8"))
    return paths


def _read_csv(path: Path, required: Sequence[str]) -> list[dict[str, str]]:
    """The rows of a sheet or key file; a file that is not UTF-8 CSV is one
    AuditError naming it (the sheets come back from other people's spreadsheets)."""
    if not path.is_file():
        raise AuditError(f"{path}: no such file")
    with path.open("rb") as f:
        raw = f.read(MAX_SHEET_BYTES + 1)
    if len(raw) > MAX_SHEET_BYTES:
        raise AuditError(f"{path}: larger than {MAX_SHEET_BYTES >> 20} MiB, not an audit sheet")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise AuditError(
            f"{path}: not UTF-8 text (byte {exc.start}); save the sheet as CSV UTF-8"
        ) from None
    lines = text.splitlines(keepends=True)
    skipped = 0
    while lines and lines[0].startswith("#"):
        lines.pop(0)
        skipped += 1
    reader = csv.DictReader(io.StringIO("".join(lines)))
    # A sheet's cells hold whole task prompts and tool results, which can pass the csv
    # module's default field limit (128 KiB); no field can be longer than the file read.
    limit = csv.field_size_limit(max(len(text), csv.field_size_limit()))
    try:
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise AuditError(f"{path}: missing column(s) {missing}")
        rows = []
        for row in reader:
            if len(rows) == MAX_SHEET_ROWS:
                raise AuditError(f"{path}: more than {MAX_SHEET_ROWS:,} rows, not an audit sheet")
            rows.append(row)
        return rows
    except csv.Error as exc:
        raise AuditError(
            f"{path}: line {skipped + reader.line_num}: not a CSV row ({exc})"
        ) from None
    finally:
        csv.field_size_limit(limit)


def _shown(text: str) -> str:
    """A sheet's cell quoted in an error line: at most 80 characters of it."""
    return repr(text if len(text) <= 80 else text[:80] + "…")


def _units_of(path: Path, rows: list[dict[str, str]]) -> list[tuple[int, str, dict[str, str]]]:
    """(row number, unit id, row) per row, numbered from 2 (after the column names); a row
    without a unit id, or a unit given twice, is refused: a sheet has one row per unit, and a second
    row would silently replace the first one's label."""
    seen: dict[str, int] = {}
    out = []
    for number, row in enumerate(rows, start=2):
        shown = row.get("unit_id")
        if not shown:
            raise AuditError(f"{path}: row {number}: no unit_id")
        unit = _unit(shown)
        if unit in seen:
            raise AuditError(
                f"{path}: row {number}: unit {_shown(unit)} is already in row {seen[unit]}"
            )
        seen[unit] = number
        out.append((number, unit, row))
    return out


def read_sheet(path: Path) -> dict[str, str]:
    """unit id -> label of one filled sheet; blank labels are left out (not yet labelled)."""
    out: dict[str, str] = {}
    for number, unit, row in _units_of(path, _read_csv(path, ("unit_id", "label"))):
        label = (row["label"] or "").strip()
        if not label:
            continue
        if label not in LABELS:
            raise AuditError(
                f"{path}: row {number} (unit {unit[:80]}): label {_shown(label)} is not one of "
                f"{list(LABELS)}"
            )
        out[unit] = label
    return out


def read_key(path: Path) -> dict[str, str]:
    """unit id -> the LLM's label, from the key file (`audit-sheet` samples labelled units
    only, so every key row holds one of the labels)."""
    out: dict[str, str] = {}
    for number, unit, row in _units_of(path, _read_csv(path, KEY_COLUMNS)):
        if row["llm_label"] not in LABELS:
            raise AuditError(
                f"{path}: row {number} (unit {unit[:80]}): llm_label "
                f"{_shown(row['llm_label'] or '')} is not one of {list(LABELS)}"
            )
        out[unit] = row["llm_label"]
    return out

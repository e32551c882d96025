"""Attacks on the commands that read files a user got from someone else: the audit sheets of
`annotate agreement`, sweep files, and the run folders `push` publishes (session 21)."""

from __future__ import annotations

import csv
from pathlib import Path

from click.testing import CliRunner

from hf_skillfollow.annotate._audit import (
    KEY_COLUMNS,
    MAX_SHEET_ROWS,
    SHEET_COLUMNS,
    read_sheet,
    write_sheets,
)
from hf_skillfollow.annotate._labels import LABELS
from hf_skillfollow.cli import cli

APPROPRIATE, IGNORED, UNCLEAR = LABELS[0], LABELS[1], LABELS[4]


def _key(folder: Path, labels: dict[str, str]) -> Path:
    path = folder / "audit-key.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(KEY_COLUMNS)
        for unit, label in labels.items():
            run, task = unit.split("|")
            writer.writerow([unit, run, task, 0, "helpful", "m@h", label])
    return path


def _sheet(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["unit_id", "label"])
        writer.writerows(rows)
    return path


def _agreement(*args: object) -> tuple[int, str]:
    res = CliRunner().invoke(cli, ["annotate", "agreement", *map(str, args)])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.output


def test_two_humans_sheets_of_one_file_name_are_two_humans(tmp_path: Path) -> None:
    """Each human sends back audit-1.csv in their own folder: two coders, not one whose labels
    the second file overwrote (before: 1 human, and the first one's labels were lost)."""
    key = _key(tmp_path, {"r|t1": APPROPRIATE, "r|t2": UNCLEAR})
    a = _sheet(tmp_path / "ann" / "audit-1.csv", [("r|t1", APPROPRIATE), ("r|t2", UNCLEAR)])
    b = _sheet(tmp_path / "bob" / "audit-1.csv", [("r|t1", IGNORED), ("r|t2", UNCLEAR)])
    code, out = _agreement(a, b, "--key", key, "--format", "json")
    assert code == 0, out
    assert '"n_humans": 2' in out and '"n_units": 2' in out
    # t1 is split 1-1 (no strict majority), t2 agreed: one unit with a majority.
    assert '"n_majority": 1' in out and '"n_no_majority": 1' in out


def test_one_sheet_given_twice_is_refused_not_counted_as_two_humans(tmp_path: Path) -> None:
    key = _key(tmp_path, {"r|t1": APPROPRIATE})
    sheet = _sheet(tmp_path / "h" / "audit-1.csv", [("r|t1", APPROPRIATE)])
    code, out = _agreement(sheet, tmp_path / "h" / ".." / "h" / "audit-1.csv", "--key", key)
    assert code == 1
    assert "audit-1.csv: the same sheet as" in out and out.count("\n") == 1


def test_a_unit_twice_in_one_sheet_is_refused_naming_the_rows(tmp_path: Path) -> None:
    """Before: the second row's label silently replaced the first one's."""
    key = _key(tmp_path, {"r|t1": APPROPRIATE})
    sheet = _sheet(tmp_path / "audit-1.csv", [("r|t1", UNCLEAR), ("r|t1", APPROPRIATE)])
    code, out = _agreement(sheet, "--key", key)
    assert code == 1
    assert out == f"Error: {sheet}: row 3: unit 'r|t1' is already in row 2\n"


def test_a_key_label_outside_the_scheme_is_refused(tmp_path: Path) -> None:
    """Before: an edited key's label was taken as the LLM's and just never agreed."""
    key = _key(tmp_path, {"r|t1": "helpful!"})
    sheet = _sheet(tmp_path / "audit-1.csv", [("r|t1", UNCLEAR)])
    code, out = _agreement(sheet, "--key", key)
    assert code == 1
    assert out.startswith(f"Error: {key}: row 2 (unit r|t1): llm_label 'helpful!' is not one of")


def test_a_sheet_that_is_not_utf8_csv_is_one_line_naming_it(tmp_path: Path) -> None:
    """A spreadsheet saved as Latin-1 (before: the codec's message without the file), a row
    short of its unit id with the columns reordered (before: AttributeError), and a broken
    quote at the end of the file."""
    key = _key(tmp_path, {"r|t1": APPROPRIATE})
    latin = tmp_path / "latin.csv"
    latin.write_bytes(b"unit_id,label\nr|t1,unclear \xe9\n")
    short = tmp_path / "short.csv"
    short.write_text("label,unit_id\nunclear\n")
    for sheet, expected in (
        (latin, f"Error: {latin}: not UTF-8 text (byte 27)"),
        (short, f"Error: {short}: row 2: no unit_id"),
    ):
        code, out = _agreement(sheet, "--key", key)
        assert code == 1 and out.startswith(expected) and out.count("\n") == 1, out


def test_a_sheet_written_with_a_long_task_prompt_reads_back(tmp_path: Path) -> None:
    """A task prompt or tool result longer than the csv module's 128 KiB field limit is written
    into the sheet whole; reading the filled sheet back raised _csv.Error before."""
    row = dict.fromkeys(SHEET_COLUMNS, "") | {"unit_id": "r|t1", "task_prompt": "x" * 200_000}
    key = [{"unit_id": "r|t1", "run_id": "r", "task_id": "t1", "repeat_index": 0,
            "flip": "helpful", "annotator": "m@h", "llm_label": UNCLEAR}]  # fmt: skip
    [sheet] = write_sheets(tmp_path, [row], key, humans=1, seed=0)
    text = sheet.read_text()
    sheet.write_text(text.replace(",,\n", f",{UNCLEAR},high\n"))
    assert read_sheet(sheet) == {"r|t1": UNCLEAR}
    code, out = _agreement(sheet)
    assert code == 0 and "1 unit(s) labelled by 1 human(s)" in out, out


def test_a_sheet_of_a_million_rows_is_refused_quickly(tmp_path: Path) -> None:
    """An audit is `-n` units (60 by default); 10^6 rows took 45 s and 1.7 GB before."""
    key = _key(tmp_path, {"r|t0": APPROPRIATE})
    big = tmp_path / "big.csv"
    big.write_text("unit_id,label\n" + "".join(f"r|t{i},unclear\n" for i in range(10**6)))
    code, out = _agreement(big, "--key", key)
    assert code == 1
    assert out == f"Error: {big}: more than {MAX_SHEET_ROWS:,} rows, not an audit sheet\n"

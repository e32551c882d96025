"""Every command's output shows a submitter's strings as text: the one payload list, through the
real CLI (tests/_payloads.py; the outputs of `report`, `verify`, the card and the board are in
tests/test_escaping.py).

File names, model and pool names, cell ids and skill names are fed in where a third party
controls them (a downloaded run folder, a shared skill pool, a published repo) and what the
command prints is checked character by character: no escape sequence or control character
raw, Rich markup as typed, Markdown with no markup of its own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from click.testing import CliRunner

from hf_skillfollow._escape import for_terminal_text
from hf_skillfollow.cli import cli
from tests._fixtures_hub import CELL_A, write_run_dir
from tests._payloads import ESCAPE_SEQUENCES, PAYLOADS, RICH, TERMINAL_FORBIDDEN
from tests._terminal import on_a_terminal

#: payloads a file name can hold (no `/`, no NUL)
FILE_NAMES = [p for p in PAYLOADS if "/" not in p and "\x00" not in p]


def _invoke(*args: object) -> tuple[int, str]:
    result = CliRunner(env={"COLUMNS": "3000"}).invoke(cli, [str(a) for a in args], color=True)
    return result.exit_code, result.output


def _terminal_safe(out: str, shown: Sequence[str] = ()) -> None:
    """Nothing in `out` acts on a terminal, and each of `shown` is printed as text, on one line
    (a line break inside a value shown as `\\n`, so it cannot print a line of its own)."""
    raw = sorted({repr(ch) for ch in TERMINAL_FORBIDDEN if ch in out})
    assert not raw, (raw, out[:2000])
    for value in shown:
        assert for_terminal_text(value, keep="") in out, (value, out[:2000])


def test_wrote_lines_show_hostile_file_names_as_text(tmp_path: Path) -> None:
    """report -o, skills export -o and push --dry-run DIR name the file they wrote."""
    run = write_run_dir(tmp_path / "runs", "run-a0", CELL_A)
    for i, payload in enumerate(FILE_NAMES):
        report, export, repo = (tmp_path / f"{kind}{i}{payload}" for kind in "rep")
        code, out = _invoke("report", run, "-o", report, "--format", "csv", "--resamples", "50")
        assert code == 0, out
        _terminal_safe(out, [report.name])
        code, out = _invoke("skills", "export", "coding", "-o", export)
        assert code == 0, out
        _terminal_safe(out, [export.name])
        code, out = _invoke("push", run, "--repo", "org/results", "--dry-run", repo)
        assert code == 0, out
        _terminal_safe(out, [repo.name])


def test_report_sections_from_traces_show_cell_ids_as_text(tmp_path: Path) -> None:
    """The cost section (cell id prefix per row) in the table and Markdown forms."""
    from tests.test_escaping import parse_html, render_markdown

    runs = [
        write_run_dir(tmp_path / "runs", f"run-{i}", CELL_A, cell_id=payload + "0" * 8)
        for i, payload in enumerate(PAYLOADS)
    ]
    code, out = _invoke("report", *runs, "--resamples", "50")
    assert code == 0, out
    section = out[out.index("Cost per task") :]
    _terminal_safe(section, [p[:8] for p in PAYLOADS if p not in ESCAPE_SEQUENCES])
    code, out = _invoke("report", *runs, "--resamples", "50", "--format", "markdown")
    assert code == 0, out
    section = out[out.index("### Cost per task") :]
    parsed = parse_html(render_markdown(section))
    assert {t for t, _ in parsed.tags} <= {"h3", "table", "thead", "tbody", "tr", "th", "td"}
    assert len(section.strip().splitlines()) == 4 + len(PAYLOADS)  # one row each, none added
    assert "| +33.3 | 160.0 |" in section  # figures read as before


def _hostile_pool(root: Path) -> Path:
    """A skill pool whose descriptions and optional fields carry every payload."""
    pool = root / "pool"
    for i, payload in enumerate(PAYLOADS):
        folder = pool / f"s{i}"
        folder.mkdir(parents=True)
        front = f"name: s{i}\ndescription: {json.dumps('sorting ' + payload)}\n"
        front += f"license: {json.dumps(payload)}\n"
        (folder / "SKILL.md").write_text(f"---\n{front}---\nbody\n", encoding="utf-8")
    return pool


def test_skills_commands_show_hostile_descriptions_as_text(tmp_path: Path) -> None:
    """list, search and validate (Rich, through the skills module's own escaping) and export
    to a real terminal (data on stdout: exact bytes to a pipe, escaped on a terminal)."""
    pool = _hostile_pool(tmp_path)
    code, out = _invoke("skills", "list", pool)
    assert code == 0, out
    _terminal_safe(out, RICH)
    for args in (("search", pool, "sorting"), ("validate", pool), ("export", pool)):
        code, out = _invoke("skills", *args)
        assert code == 0, out
        if args[0] != "export":  # export to a pipe is data: its exact JSON, checked below
            _terminal_safe(out)
        else:
            assert [json.loads(line)["id"] for line in out.splitlines()] == sorted(
                f"s{i}" for i in range(len(PAYLOADS))
            )
    shown = on_a_terminal("skills", "export", pool)
    _terminal_safe(shown)
    assert shown.count("sorting") == len(PAYLOADS)


def test_run_prints_one_escaped_notice_when_the_pool_has_warnings(
    tmp_path: Path, data_dir: Path
) -> None:
    """The notice is printed when the run is planned (before the model is reached, so the
    unreachable endpoint here ends the run after it with a clear error)."""
    name = "p\x1b]0;owned\x07[bold red]FAKE[/bold red]"
    pool = tmp_path / name
    folder = pool / "loud"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: loud\ndescription: Sorts lists.\nauthor: me\n---\nbody\n", encoding="utf-8"
    )  # `author` is not a spec field: a warning, the skill stays usable
    code, out = _invoke(
        "run", "--backend", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
        "--tasks-file", data_dir / "mbppplus-v0.1.0.jsonl", "--partition-size", "1",
        "--skills", pool, "-o", tmp_path / "runs", "--no-report", "--request-timeout", "5",
    )  # fmt: skip
    notices = [line for line in out.splitlines() if "skills validate" in line]
    assert len(notices) == 1, out
    _terminal_safe(out, [f"hf-skillfollow skills validate {pool}"])
    assert "1 warning(s)" in notices[0]


def test_audit_sheets_start_no_formula_and_read_back_by_unit(tmp_path: Path) -> None:
    """The sheets humans open in a spreadsheet hold a third party's text (the task, the tool
    results, the model's answer): no cell may start a formula, and a filled sheet still
    matches the key unit by unit (whether the spreadsheet kept the apostrophe or not)."""
    import csv

    from hf_skillfollow.annotate._audit import read_key, read_sheet, write_sheets
    from tests.test_escaping import FORMULA_START

    rows, key = [], []
    for i, payload in enumerate(PAYLOADS):
        unit = f"{payload}|t{i}" if i % 2 else f"r{i}|{payload}"
        rows.append(
            {
                "unit_id": unit,
                "task_prompt": payload,
                "queries": payload,
                "skills_returned": payload,
                "tool_results": payload,
                "se_answer": f"{payload}\n  second line",
                "label": "",
                "confidence": "",
            }
        )
        key.append({"unit_id": unit, "run_id": payload, "task_id": payload, "repeat_index": 0,
                    "flip": "helpful", "annotator": payload, "llm_label": "unclear"})  # fmt: skip
    (sheet,) = write_sheets(tmp_path, rows, key, humans=1, seed=0)
    for path in (sheet, tmp_path / "audit-key.csv"):
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        body = [line for line in lines if not line.startswith("# Audit sheet")]
        cells = [c for row in csv.reader(body) for c in row]
        assert not [c for c in cells if c.startswith(FORMULA_START)], path
    answers = [r["se_answer"] for r in csv.DictReader(sheet.read_text().splitlines(True)[1:])]
    assert all(a.endswith("\n  second line") for a in answers)  # answers stay readable
    filled = list(csv.DictReader(sheet.read_text().splitlines(True)[1:]))
    for n, row in enumerate(filled):
        row["label"] = "unclear"
        if n % 2:  # a spreadsheet that drops the apostrophe on saving
            row["unit_id"] = row["unit_id"].removeprefix("'")
    with sheet.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(filled[0]))
        writer.writeheader()
        writer.writerows(filled)
    assert set(read_sheet(sheet)) == set(read_key(tmp_path / "audit-key.csv"))
    assert len(read_sheet(sheet)) == len(PAYLOADS)


#: one file name holding every escape-sequence payload a file name can hold
HOSTILE_NAME = "n" + "".join(p for p in ESCAPE_SEQUENCES if "/" not in p and "\x00" not in p)


def test_score_line_shows_a_hostile_output_name_as_text(tmp_path: Path, data_dir: Path) -> None:
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": "Mbpp/2", "solution": "x = 1"}) + "\n")
    output = tmp_path / f"{HOSTILE_NAME}.jsonl"
    code, out = _invoke("score", "--tasks-file", data_dir / "mbppplus-v0.1.0.jsonl",
                        "--samples", samples, "-o", output, "--workers", "1")  # fmt: skip
    assert code == 0, out
    _terminal_safe(out, [output.name])


def test_annotate_lines_show_a_hostile_run_folder_and_annotator_as_text(tmp_path: Path) -> None:
    from tests._annotation_fixtures import ScriptedAnnotatorDouble, label_json, write_annotation_run

    run_dir = write_annotation_run(tmp_path / HOSTILE_NAME)
    model = "m[bold red]FAKE[/bold red]\x1b]0;t\x07"
    script = {f"Mbpp/{i}": [label_json("unclear")] for i in range(1000)}
    with ScriptedAnnotatorDouble(script) as server:
        code, out = _invoke("annotate", run_dir, "--backend", "openai", "--base-url", server.url,
                            "--model", model)  # fmt: skip
    assert code == 0, out
    _terminal_safe(out, [str(run_dir), "m[bold red]FAKE[/bold red]"])


def test_a_lone_surrogate_in_a_printed_line_is_shown_as_its_escape() -> None:
    """A JSON `\\ud800` or a file name that is not UTF-8 (read with surrogateescape: `\\udcff`)
    in a line: no terminal encodes a lone surrogate, so `echo` shows it as its escape instead of
    failing the print (the import's summary did, after its run folders were written)."""
    import contextlib
    import io

    from hf_skillfollow.cli._echo import echo

    assert for_terminal_text("task-\ud800 in run-\udcff") == "task-\\ud800 in run-\\udcff"
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # errors="strict", as a terminal's
    with contextlib.redirect_stdout(out):
        echo("note: task-\ud800 held back")
    out.flush()
    assert out.buffer.getvalue() == b"note: task-\\ud800 held back\n"

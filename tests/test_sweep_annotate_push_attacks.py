"""Attacks on the commands that read files a user got from someone else: the audit sheets of
`annotate agreement`, sweep files, and the run folders `push` publishes (session 21)."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
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
from hf_skillfollow.schema import traces_from_rows
from tests._fixtures_hub import CELL_A, outcome_rows, trace_rows, write_run_dir

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


# --- push: hostile run folders --------------------------------------------------------------

API_KEY = "sk-swp-attack-0123456789abcdef"


def _push_dry(run: Path, out: Path) -> tuple[int, str]:
    res = CliRunner().invoke(cli, ["push", str(run), "--repo", "org/r", "--dry-run", str(out)])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.output


def _nothing_written(out: Path) -> bool:
    return not out.exists() or not any(out.rglob("*.parquet"))


def _manifest(run: Path, **fields: object) -> None:
    path = run / "manifest.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | fields))


def test_push_refuses_a_run_folder_holding_the_api_key_its_manifest_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model that echoed its key, or an error text carrying it, in a trace (zstd-compressed:
    the bytes do not show it) or in a transitions column. Before: only the Hub token was
    looked for, and the key was published."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("SWP_PROVIDER_KEY", API_KEY)
    run = write_run_dir(tmp_path / "runs", "run-a0", CELL_A)
    _manifest(run, config={"api_key_env": "SWP_PROVIDER_KEY", "judge_api_key_env": None})
    rows = trace_rows(outcome_rows(CELL_A, run_id="run-a0"))
    rows[3]["final_answer"] = f"HTTP 401: invalid key {API_KEY}"
    pq.write_table(traces_from_rows(rows), run / "traces.parquet", compression="zstd")
    out = tmp_path / "repo"
    code, output = _push_dry(run, out)
    assert code == 1
    assert output == (
        "Error: refusing to upload data/traces/run-a0.parquet: it contains the value of "
        "$SWP_PROVIDER_KEY (the key variable of run run-a0)\n"
    )
    assert API_KEY not in output and _nothing_written(out)

    # The judge's key variable too, in a transitions column.
    monkeypatch.setenv("SWP_JUDGE_KEY", API_KEY + "-judge")
    other = write_run_dir(tmp_path / "runs2", "run-b0", CELL_A, model=f"org/{API_KEY}-judge")
    _manifest(other, config={"api_key_env": "OPENAI_API_KEY", "judge_api_key_env": "SWP_JUDGE_KEY"})
    code, output = _push_dry(other, tmp_path / "repo2")
    assert code == 1 and "it contains the value of $SWP_JUDGE_KEY" in output
    assert _nothing_written(tmp_path / "repo2")


def test_push_real_upload_refuses_the_api_key_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real push path, with the recording double at the HfApi boundary (huggingface.co
    writes cannot happen here): the same refusal, and nothing committed."""
    from hf_skillfollow.hub import HubError, push_runs
    from tests.test_hub_push_double import RecordingHfApiDouble

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("SWP_PROVIDER_KEY", API_KEY)
    run = write_run_dir(tmp_path / "runs", "run-a0", CELL_A, model=f"org/{API_KEY}")
    _manifest(run, config={"api_key_env": "SWP_PROVIDER_KEY"})
    api = RecordingHfApiDouble(tmp_path, token="hf_SWPtokenValue0123456789")
    with pytest.raises(
        HubError,
        match=r"data/transitions/run-a0.parquet: it contains the value of \$SWP_PROVIDER_KEY",
    ):
        push_runs([run], "org/r", token="hf_SWPtokenValue0123456789", api=api)
    assert api.commits == []


def test_push_refuses_a_symlink_out_of_the_run_folder(tmp_path: Path) -> None:
    """Before: a transitions.parquet or manifest.json linking to a file elsewhere on this
    machine was read and published under the run's name."""
    run = write_run_dir(tmp_path / "runs", "run-a0", CELL_A)
    elsewhere = tmp_path / "elsewhere.parquet"
    (run / "transitions.parquet").rename(elsewhere)
    (run / "transitions.parquet").symlink_to(elsewhere)
    out = tmp_path / "repo"
    code, output = _push_dry(run, out)
    assert code == 1 and output.count("\n") == 1
    assert f"{run / 'transitions.parquet'}: a symbolic link out of {run}" in output
    assert _nothing_written(out)


def test_push_hostile_manifest_and_annotations_are_one_line_naming_the_file(
    tmp_path: Path,
) -> None:
    """A manifest that is a JSON list (before: AttributeError), one whose cell id is not its
    rows' (before: published, the rows in a cell the run was not made for), and an
    annotations.parquet that is no parquet file (before: pyarrow's traceback)."""
    listed = write_run_dir(tmp_path / "runs", "run-l", CELL_A)
    (listed / "manifest.json").write_text("[1, 2]")
    other_cell = write_run_dir(tmp_path / "runs", "run-c", CELL_A, cell_id="cellA0000000000")
    _manifest(other_cell, cell_id="cellZ0000000000")
    broken = write_run_dir(tmp_path / "runs", "run-b", CELL_A)
    (broken / "annotations.parquet").write_bytes(b"PAR1 not a parquet file")
    for run, expected in (
        (listed, f"Error: {listed / 'manifest.json'}: not a JSON object"),
        (
            other_cell,
            f"Error: {other_cell / 'manifest.json'}: cell_id 'cellZ0000000000' differs from "
            "the rows' cell_id ['cellA0000000000']",
        ),
        (broken, f"Error: {broken / 'annotations.parquet'}: not a readable parquet file"),
    ):
        out = tmp_path / f"repo-{run.name}"
        code, output = _push_dry(run, out)
        assert code == 1 and output.startswith(expected) and output.count("\n") == 1, output
        assert _nothing_written(out)


# --- sweep: a hostile status file in the output folder -----------------------------------------


@pytest.mark.parametrize(
    "kind", ["jobs as a list", "not UTF-8", "a FIFO", "nested past the parser", "jobs of numbers"]
)
def test_a_hostile_status_file_neither_hangs_nor_breaks_the_plan_or_the_write(
    tmp_path: Path, kind: str
) -> None:
    """The output folder of a sweep (a shared one, or one handed over) holds sweep-status.json.
    Before: `{"jobs": [1]}` raised AttributeError in `--plan` and TypeError in the status
    write, a not-UTF-8 file raised UnicodeDecodeError, and a FIFO blocked `--plan` forever.
    Now such a file reads as no status (docs/sweep.md) and the next write replaces it."""
    from hf_skillfollow.sweep._plan import STATUS_FILE, read_status
    from hf_skillfollow.sweep._run import SweepResult, write_status

    sweep = tmp_path / "s.yaml"
    sweep.write_text(
        "name: s\nmodels: [{name: m, model: m, base_url: 'http://127.0.0.1:9/v1'}]\n"
        "benchmarks: [{benchmark: mbppplus}]\n"
    )
    out = tmp_path / "out"
    out.mkdir()
    status = out / STATUS_FILE
    if kind == "a FIFO":
        os.mkfifo(status)
    else:
        status.write_bytes(
            {
                "jobs as a list": b'{"jobs": [1]}',
                "not UTF-8": b'{"jobs": {"\xff": {}}}',
                "nested past the parser": b'{"jobs": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
                "jobs of numbers": b'{"jobs": {"a": 1, "b": {"status": "failed"}}}',
            }[kind]
        )
    expected = {"b": {"status": "failed"}} if kind == "jobs of numbers" else {}
    assert read_status(out) == expected
    res = CliRunner().invoke(cli, ["sweep", str(sweep), "--plan", "-o", str(out)])
    assert res.exit_code == 0 and res.exception is None, res.output
    assert "1 cells, 1 runs" in res.output and "pending" in res.output
    write_status(out, [], SweepResult())
    assert json.loads(status.read_text()) == {"jobs": expected}


@pytest.mark.parametrize("name", ["transitions", "traces"])
def test_push_refuses_a_row_given_twice(tmp_path: Path, name: str) -> None:
    """Before: a transitions row given twice was published and counted twice (n 81 for 80
    tasks on the card); a traces row twice was published too."""
    import pyarrow as pa

    run = write_run_dir(tmp_path / "runs", "run-a0", CELL_A)
    path = run / f"{name}.parquet"
    table = pq.read_table(path)
    pq.write_table(pa.concat_tables([table, table.slice(2, 1)]), path)
    task = table.column("task_id")[2].as_py()
    out = tmp_path / "repo"
    code, output = _push_dry(run, out)
    assert code == 1 and output.count("\n") == 1, output
    assert output.startswith(f"Error: {path}: 1 row(s) given more than once, the first: ")
    assert f"task_id {task!r}" in output
    assert _nothing_written(out)


# --- annotation files outside the scheme -----------------------------------------------------


def _annotated_run(root: Path, column: str, value: str) -> Path:
    """The annotation fixture run with an annotations.parquet whose row of task Mbpp/3 has
    `value` in `column` (the others valid)."""
    from hf_skillfollow.schema import annotations_from_rows
    from tests._annotation_fixtures import flips, write_annotation_run

    run = write_annotation_run(root)
    rows = [
        {"schema_version": 1, "run_id": "run-ann", "cell_id": "cellANN00000000", "task_id": task,
         "repeat_index": 0, "annotator": "m@h", "annotator_model": "m",
         "annotator_backend": "openai", "prompt_hash": "h", "flip": flip, "label": UNCLEAR,
         "rationale": "r", "failure": None, "attempts": 1, "raw_output": "{}",
         "annotated_at": "2026-12-05T00:00:00Z"}
        for task, flip in flips(run).items()
    ]  # fmt: skip
    [bad] = [r for r in rows if r["task_id"] == "Mbpp/3"]
    bad[column] = value
    pq.write_table(annotations_from_rows(rows), run / "annotations.parquet")
    return run


@pytest.mark.parametrize(
    "column,value,shown",
    [
        ("label", '=HYPERLINK("http://x")', "'=HYPERLINK(\"http://x\")' is not one of"),
        ("flip", "evil", "'evil' is not helpful, harmful or concordant"),
        ("annotator", "m\x1b[31m@h", "'m\\x1b[31m@h' is not an annotator name"),
        ("annotator", "m" * 1_000_000, "'" + "m" * 80 + "…' is not an annotator name"),
    ],
)
def test_an_annotations_file_outside_the_scheme_is_refused_by_audit_sheet_and_push(
    tmp_path: Path, column: str, value: str, shown: str
) -> None:
    """Before: a label outside the five or a made-up flip were sampled into the audit key
    (whose label `agreement` then refuses) and published by push; an annotator name with
    control characters or of 1 MB was printed whole in audit-sheet's error line (1 MB) and
    published. The board still shows a long name cut (test_published_attacks_round2)."""
    run = _annotated_run(tmp_path / "runs", column, value)
    expected = f"Error: {run / 'annotations.parquet'}: task_id 'Mbpp/3', column {column}: {shown}"
    audit = CliRunner().invoke(
        cli, ["annotate", "audit-sheet", str(run), "-n", "10", "-o", str(tmp_path / "audit")]
    )
    assert audit.exit_code in (1, 2) and len(audit.output) < 1000, audit.output[:300]
    assert not (tmp_path / "audit").exists()
    if column == "annotator":  # two annotators: the choice is asked for, the names cut
        assert "several annotators ['m" in audit.output and "\x1b" not in audit.output
    else:
        assert audit.output.startswith(expected) and audit.output.count("\n") == 1
    code, output = _push_dry(run, tmp_path / "repo")
    assert code == 1 and output.startswith(expected) and len(output) < 1000, output[:300]
    assert _nothing_written(tmp_path / "repo")


def test_an_annotations_file_linked_from_outside_the_folder_is_refused(tmp_path: Path) -> None:
    """Before: report --annotations and audit-sheet read a run folder's annotations.parquet
    that links to a file elsewhere on this machine (the rows of that folder are refused so)."""
    run = _annotated_run(tmp_path / "runs", "label", UNCLEAR)
    elsewhere = tmp_path / "elsewhere.parquet"
    (run / "annotations.parquet").rename(elsewhere)
    (run / "annotations.parquet").symlink_to(elsewhere)
    expected = f"Error: {run / 'annotations.parquet'}: a symbolic link out of {run}"
    for args in (
        ["annotate", "audit-sheet", str(run), "-n", "3", "-o", str(tmp_path / "audit")],
        ["report", str(run), "--annotations"],
    ):
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 1 and res.output.startswith(expected), res.output[:300]
        assert res.output.count("\n") == 1
    assert not (tmp_path / "audit").exists()


@pytest.mark.parametrize(
    "content,expected",
    [
        (b'{"a": 1}\n', "line 1 is not an annotation record (a JSON object with run_id, "),
        (b'[1]\n{"run_id": "r"}\n', "line 1 is not an annotation record"),
        (b"x\xff\n", "not UTF-8 text (byte 1)"),
        (b"[" * 100_000 + b"\n{}\n", "line 1 is not valid JSON"),
    ],
)
def test_a_hostile_annotation_records_file_is_one_line_before_any_model_starts(
    tmp_path: Path, content: bytes, expected: str
) -> None:
    """A run folder handed over with its annotations.jsonl. Before: KeyError 'run_id' (an
    object without the key, a list), UnicodeDecodeError, RecursionError tracebacks. The
    endpoint is a closed port: the error comes before any request."""
    from tests._annotation_fixtures import write_annotation_run

    run = write_annotation_run(tmp_path / "runs")
    (run / "annotations.jsonl").write_bytes(content)
    res = CliRunner().invoke(
        cli,
        ["annotate", str(run), "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1",
         "--model", "annotator-double"],
    )  # fmt: skip
    assert res.exit_code == 1, res.output[-300:]
    assert isinstance(res.exception, SystemExit), res.exception
    last = res.output.strip().splitlines()[-1]
    assert last.startswith(f"Error: {run / 'annotations.jsonl'}: {expected}"), res.output[-300:]


@pytest.mark.parametrize("name", ["summary.json", "card_cells.json"])
def test_a_repo_cache_file_nested_past_the_parser_is_rebuilt_not_a_failed_push(
    tmp_path: Path, name: str
) -> None:
    """The stats/ files of the repo pushed into (a shared org repo, a folder handed over) are
    a cache: an unreadable one is rebuilt (docs/hub.md). Before: one nested 200,000 deep
    raised RecursionError and the push failed."""
    run = write_run_dir(tmp_path / "runs", "run-a0", CELL_A)
    out = tmp_path / "repo"
    (out / "stats").mkdir(parents=True)
    (out / "stats" / name).write_text("[" * 200_000 + "]" * 200_000)
    code, output = _push_dry(run, out)
    assert code == 0, output[-300:]
    assert (out / "data" / "transitions" / "run-a0.parquet").is_file()
    summary = json.loads((out / "stats" / "summary.json").read_text())
    assert summary["listed"][0]["n_runs"] == 1


def test_audit_sheets_replace_a_link_in_the_output_folder_never_write_through_it(
    tmp_path: Path,
) -> None:
    """An audit folder that came back from someone with audit-1.csv (or the key) linking to a
    file of the user's. Before: write_text followed the link and overwrote that file."""
    precious = tmp_path / "precious.txt"
    precious.write_text("mine")
    out = tmp_path / "audit"
    out.mkdir()
    for name in ("audit-1.csv", "audit-key.csv"):
        (out / name).symlink_to(precious)
    row = dict.fromkeys(SHEET_COLUMNS, "") | {"unit_id": "r|t1", "task_prompt": "p"}
    key = [{"unit_id": "r|t1", "run_id": "r", "task_id": "t1", "repeat_index": 0,
            "flip": "helpful", "annotator": "m@h", "llm_label": UNCLEAR}]  # fmt: skip
    write_sheets(out, [row], key, humans=1, seed=0)
    assert precious.read_text() == "mine"
    for name in ("audit-1.csv", "audit-key.csv"):
        assert not (out / name).is_symlink() and "r|t1" in (out / name).read_text()


@pytest.mark.parametrize("schema", [{"function": [1]}, {"parameters": {"properties": {"q": 5}}}])
def test_push_refuses_a_manifest_tool_schema_it_cannot_show(tmp_path: Path, schema: dict) -> None:
    """Before: AttributeError / TypeError tracebacks from the card's tool signature."""
    run = write_run_dir(tmp_path / "runs", "run-a0", CELL_A)
    _manifest(run, tool_schema=schema)
    code, output = _push_dry(run, tmp_path / "repo")
    assert code == 1 and output.count("\n") == 1, output[-300:]
    assert output.startswith(f"Error: {run / 'manifest.json'}: field 'tool_schema' is not an")
    assert _nothing_written(tmp_path / "repo")


def test_a_manifest_cannot_replace_the_toolkits_own_tool_schema_on_the_card(
    tmp_path: Path,
) -> None:
    """Before: a manifest naming a prompts_hash of this toolkit with a made-up schema put its
    signature on the card for every cell of that protocol."""
    from hf_skillfollow.hub._numbers import known_tool_schemas

    prompts_hash, real = next(iter(known_tool_schemas().items()))
    run = write_run_dir(tmp_path / "runs", "run-a0", CELL_A, prompts_hash=prompts_hash)
    _manifest(run, prompts_hash=prompts_hash, tool_schema={"name": "forged_tool", "parameters": {}})
    out = tmp_path / "repo"
    code, output = _push_dry(run, out)
    assert code == 0, output[-300:]
    card = (out / "README.md").read_text()
    assert "forged_tool" not in card and f"`{real['function']['name']}(" in card


def test_annotate_never_appends_through_a_records_link_out_of_the_run_folder(
    tmp_path: Path,
) -> None:
    """A run folder handed over with annotations.jsonl linking to a file of the user's.
    Before: each labelled unit was appended to that file (through the link)."""
    from tests._annotation_fixtures import (
        ScriptedAnnotatorDouble,
        label_json,
        write_annotation_run,
    )

    run = write_annotation_run(tmp_path / "runs")
    precious = tmp_path / "precious.txt"
    precious.write_text("mine\n")
    (run / "annotations.jsonl").symlink_to(precious)
    tasks = ("Mbpp/2", "Mbpp/3", "Mbpp/4", "Mbpp/5", "Mbpp/6")
    with ScriptedAnnotatorDouble({t: [label_json(UNCLEAR)] for t in tasks}) as server:
        res = CliRunner().invoke(
            cli,
            ["annotate", str(run), "--backend", "openai", "--base-url", server.url,
             "--model", "annotator-double"],
        )  # fmt: skip
    assert res.exit_code == 1, res.output[-300:]
    assert (
        res.output.strip()
        .splitlines()[-1]
        .startswith(f"Error: {run / 'annotations.jsonl'}: a symbolic link out of {run}")
    )
    assert precious.read_text() == "mine\n"


@pytest.mark.parametrize("name", ["../../elsewhere", "/tmp/abs", "a\\b", "..", "x\x1b[2J"])
def test_a_sweep_name_that_is_no_folder_name_is_refused(tmp_path: Path, name: str) -> None:
    """The default output folder is runs/NAME. Before: a shared sweep file named
    ../../elsewhere (or /tmp/abs: Path('runs') / '/tmp/abs' is /tmp/abs) put its runs there."""
    sweep = tmp_path / "s.yaml"
    sweep.write_text(
        f"name: {json.dumps(name)}\n"
        "models: [{name: m, model: m, base_url: 'http://127.0.0.1:9/v1'}]\n"
        "benchmarks: [{benchmark: mbppplus}]\n"
    )
    res = CliRunner().invoke(cli, ["sweep", str(sweep), "--plan"])
    assert res.exit_code == 1, res.output
    assert res.output.startswith(f"Error: {sweep}: name: Value error, ")
    assert "is not a folder name" in res.output and res.output.count("\n") == 1

"""Attacks on what the project reads back from published repos, second round (5 Dec 2026).

Each test is a hostile publisher's file that got past the read path before its mend: the
board (`space_app`), `verify` and the Hub read path (`hub._load`, `hub._budget`). The files are
real parquet, written the way a publisher's own writer can write them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hf_skillfollow.hub import HubError, load_transitions
from hf_skillfollow.hub._budget import Budget, BudgetError, Meter
from hf_skillfollow.schema import SchemaError, transitions_from_rows
from hf_skillfollow.space_app._board import load_board
from tests._fixtures_hub import CELL_A, outcome_rows, write_run_dir

RESAMPLES = 200
_MiB = 1 << 20
#: A budget the tests' bombs pass by several times, so that a bomb the footer check lets
#: through is read (and the test fails) at a cost of tens of MB, not gigabytes.
SMALL = Budget(file_bytes=1 << 30, decoded_bytes=16 * _MiB, string_chars=4_096, rows=20_000_000)


def _rows(run_id: str, copies: int = 1) -> pa.Table:
    """CELL_A's 20 rows `copies` times over, each copy with its own task ids."""
    rows = []
    for k in range(copies):
        for row in outcome_rows(CELL_A, run_id=run_id, cell_id="cellX", model="org/bomb"):
            rows.append({**row, "task_id": f"{row['task_id']}-{k}"})
    return transitions_from_rows(rows)


def _run(root: Path, table: pa.Table, **write: object) -> Path:
    run = root / "run-bomb"
    run.mkdir(parents=True)
    pq.write_table(table, run / "transitions.parquet", **write)
    return run


def _prefix_coded_bomb(root: Path) -> Path:
    """Every row's `se_error` the same 4,000 characters, written DELTA_BYTE_ARRAY (each value
    stored as 'the previous value's 4,000 characters, then nothing'): 2,000 rows decode to
    8 MB of errors from a file of a few KB, and the footer gives the encoded size only."""
    table = _rows("run-bomb", copies=100)
    col = table.schema.get_field_index("se_error")
    table = table.set_column(col, "se_error", pa.array(["e" * 4_000] * table.num_rows))
    strings = [f.name for f in table.schema if pa.types.is_string(f.type)]
    run = _run(
        root,
        table,
        use_dictionary=False,
        write_statistics=False,
        column_encoding=dict.fromkeys(strings, "DELTA_BYTE_ARRAY"),
    )
    meta = pq.ParquetFile(run / "transitions.parquet").metadata.row_group(0).column(col)
    assert "DELTA_BYTE_ARRAY" in meta.encodings and not meta.has_dictionary_page
    assert meta.total_uncompressed_size < 100_000  # what the footer says it decodes to
    return run


def test_a_prefix_coded_string_bomb_is_bounded_from_its_footer(tmp_path):
    """On 003f482 the footer bound counted a DELTA_BYTE_ARRAY chunk at its encoded size (it
    is no dictionary), so the file passed and was decoded: 8 MB here, 2.6 GB (6 GB of RSS)
    for a 1.2 MB file of 600,000 rows against the real 2 GiB budget. A value can repeat
    every byte before it, so its chunk is bounded as a dictionary chunk is, and never read
    as a dictionary to measure it (pyarrow cannot)."""
    run = _prefix_coded_bomb(tmp_path)
    small = Budget(file_bytes=1 << 30, decoded_bytes=4 * _MiB, string_chars=4_096, rows=10**7)
    with pytest.raises(BudgetError, match="bytes once decoded"):
        Meter(small, "bomb").check(run / "transitions.parquet")
    with pytest.raises(BudgetError, match="bytes once decoded"):
        Meter(small, "bomb").read(
            run / "transitions.parquet", pq.ParquetFile(run / "transitions.parquet")
        )


def _slot_bomb(root: Path) -> Path:
    """One row whose `skills_returned` holds 8 million empty strings: no string byte to
    count, a dictionary index (or offset) of 4 bytes each once read, 32 MB from a few KB."""
    table = _rows("run-bomb")
    n = 8_000_000
    offsets = np.zeros(table.num_rows + 1, np.int32)
    offsets[1:] = n
    values = pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([""]))
    returned = pa.ListArray.from_arrays(pa.array(offsets), values.cast(pa.string()))
    col = table.schema.get_field_index("skills_returned")
    table = table.set_column(col, table.schema.field(col), returned)
    return _run(root, table, compression="zstd")


def test_value_slots_are_counted_even_where_no_byte_is_stored(tmp_path):
    """On 003f482 the measured size of a file counted the string bytes and the other chunks'
    decompressed pages, never the slots: 8 million empty strings measured 0 bytes, and the
    read allocated 32 MB of indices to measure them (2.4 GB per 600 million, still a file of
    kilobytes, since a list's values are no rows). Every value slot is counted from the
    footer (4 bytes a string, its width a number) before anything is read."""
    run = _slot_bomb(tmp_path)
    assert (run / "transitions.parquet").stat().st_size < 200_000
    with pytest.raises(BudgetError, match="bytes once decoded"):
        Meter(SMALL, "bomb").check(run / "transitions.parquet")


def test_the_board_refuses_both_bombs_and_keeps_the_other_source(tmp_path, monkeypatch):
    """End to end with the board's own read (`sources.read_transitions` with its budget) and
    `load_transitions` (what `verify` reads): each bomb is one warning naming its source."""
    from hf_skillfollow.hub import _budget

    monkeypatch.setattr(_budget, "TRANSITIONS", SMALL)
    monkeypatch.setitem(_budget.BUDGETS, "transitions", SMALL)
    good = tmp_path / "good"
    write_run_dir(good, "run-g", CELL_A, cell_id="cellG", model="org/good")
    prefix = _prefix_coded_bomb(tmp_path / "prefix").parent
    slots = _slot_bomb(tmp_path / "slots").parent
    for bomb in (prefix, slots):
        with pytest.raises(HubError, match="bytes once decoded"):
            load_transitions(bomb / "run-bomb")
    board = load_board(
        [str(prefix), str(slots), str(good)], resamples=RESAMPLES, discover=False, use_cache=False
    )
    assert board.sources == [str(good)]
    for bomb in (prefix, slots):
        assert any(str(bomb) in w and "bytes once decoded" in w for w in board.warnings)


def _hostile_columns(root: Path) -> dict[str, Path]:
    """Two run folders: one whose `model` column is there twice, one whose `model` is a
    list of strings (the footer's schema is the publisher's, not the declared one)."""
    table = _rows("run-x")
    col = table.schema.get_field_index("model")
    out = {}
    for name, hostile in {
        "twice": table.append_column("model", table["model"]),
        "nested": table.set_column(col, "model", pa.array([["org/m"]] * table.num_rows)),
    }.items():
        run = root / name / "run-x"
        run.mkdir(parents=True)
        pq.write_table(hostile, run / "transitions.parquet")
        out[name] = run / "transitions.parquet"
    return out


def test_a_column_twice_or_of_another_shape_is_one_line_naming_the_file(tmp_path):
    """On 003f482 the board skipped these sources with `KeyError: 'Field "model" exists 2
    times in schema'` and `KeyError: b'model'` (no file named: the budgeted read asked
    pyarrow for a dictionary of every identity column by name), and `load_transitions` and
    `report` printed the whole 49-line schema pyarrow puts in its message."""
    files = _hostile_columns(tmp_path)
    good = tmp_path / "good"
    write_run_dir(good, "run-g", CELL_A, cell_id="cellG", model="org/good")
    board = load_board(
        [str(files["twice"].parents[1]), str(files["nested"].parents[1]), str(good)],
        resamples=RESAMPLES,
        discover=False,
        use_cache=False,
    )
    assert board.sources == [str(good)]
    warned = {w for w in board.warnings if "skipped" in w}
    assert len(warned) == 2
    for w in warned:
        assert "\n" not in w and "KeyError" not in w and "transitions.parquet" in w
        assert "'model'" in w
    assert any("2 times" in w for w in warned)
    for path in files.values():
        with pytest.raises((HubError, SchemaError)) as caught:
            load_transitions(path.parent)
        message = str(caught.value)
        assert "\n" not in message and str(path) in message and "'model'" in message
    from hf_skillfollow.sources import SourceError, read_transitions

    with pytest.raises(SourceError) as caught:  # `report`'s read, which has no budget
        read_transitions(files["twice"])
    assert "\n" not in str(caught.value) and str(files["twice"]) in str(caught.value)


def _laughing_card(root: Path, levels: int) -> Path:
    """A results repo folder whose 500-byte card declares `data_files` as `levels` nested
    lists of ten aliases of the one below: 10**levels paths for PyYAML to build and
    `declared_patterns` to walk."""
    shards = root / "data" / "transitions"
    shards.mkdir(parents=True)
    pq.write_table(_rows("run-x"), shards / "run-x.parquet")
    lines = ['x0: &a0 "data/transitions/*.parquet"']
    for i in range(1, levels + 1):
        lines.append(f"x{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    card = "\n".join(["---", *lines, "configs:", "- config_name: transitions"])
    (root / "README.md").write_text(f"{card}\n  data_files: *a{levels}\n---\n# results\n")
    return root


def test_a_card_of_nested_aliases_is_refused_before_it_is_built(tmp_path):
    """On 782df74 a 578-byte card of 8 such levels kept `load_transitions` (what `verify`
    and the board's Hub sources read the card with) busy for over 100 s at 1 GB of RSS
    before it was killed; at 6 levels it returned after walking a million copies of one
    path. The card's front matter is read up to a bound and parsed without anchors or
    aliases (`_skill_meta.load_plain_yaml`, as a SKILL.md is)."""
    import time

    repo = _laughing_card(tmp_path / "repo", levels=6)
    start = time.monotonic()
    with pytest.raises(HubError, match=r"README\.md.*(anchor|alias)"):
        load_transitions(repo)
    assert time.monotonic() - start < 5


def test_a_card_whose_front_matter_never_ends_is_read_up_to_a_bound(tmp_path):
    """The front matter is read in bounded pieces: a card that opens `---` and never closes
    it within the bound is refused naming the card, whatever the file's size."""
    repo = _laughing_card(tmp_path / "repo", levels=0)
    (repo / "README.md").write_text("---\n" + "# x\n" * 400_000)
    with pytest.raises(HubError, match=r"README\.md.*front matter"):
        load_transitions(repo)


HEAVY_CLIENT = """
import sys
from pathlib import Path
from hf_skillfollow.hub import _budget, load_transitions
limit = int(sys.argv[2])
_budget.BUDGETS["transitions"] = _budget.Budget(
    file_bytes=limit, decoded_bytes=1 << 30, string_chars=4096, rows=10**7
)
try:
    print("rows", load_transitions(sys.argv[1]).num_rows)
except Exception as exc:
    print(type(exc).__name__, exc)
home = Path(sys.argv[3])
print("parquet downloaded", sum(1 for p in home.rglob("*.parquet")))
"""


def test_a_hub_repo_over_the_file_budget_is_refused_before_its_files_are_downloaded(tmp_path):
    """On 15acf83 the Hub path downloaded every file the card's `configs` matched
    (`snapshot_download`) and only then summed their sizes against the budget: a repo of
    100 GB of run files filled the disk of the Space before the board refused it. Served by
    the olah mirror with the real `huggingface_hub`: the sizes the Hub lists are summed
    first (a dry run) and nothing is downloaded over the budget."""
    from click.testing import CliRunner

    from hf_skillfollow.cli import cli
    from tests._fixtures_hub import two_cell_runs
    from tests._olah import client, git_commit, mirror

    pytest.importorskip("olah")
    runs = two_cell_runs(tmp_path / "runs")
    repo = tmp_path / "mirrors" / "datasets" / "org" / "heavy"
    res = CliRunner().invoke(
        cli, ["push", *map(str, runs), "--repo", "org/heavy", "--dry-run", str(repo)]
    )
    assert res.exit_code == 0, res.output
    git_commit(repo)
    size = sum(p.stat().st_size for p in (repo / "data" / "transitions").glob("*.parquet"))
    with mirror(tmp_path, "org/heavy") as endpoint:
        home = tmp_path / "client"
        home.mkdir()
        over = client(endpoint, HEAVY_CLIENT, "org/heavy", str(size - 1), str(home), tmp=home)
        assert over.returncode == 0, over.stderr[-3000:]
        assert "BudgetError" in over.stdout and "org/heavy" in over.stdout, over.stdout
        assert "parquet downloaded 0" in over.stdout, over.stdout
        under = client(endpoint, HEAVY_CLIENT, "org/heavy", str(10 * size), str(home), tmp=home)
        assert "rows 40" in under.stdout, under.stdout + under.stderr[-2000:]


def _linked_source(root: Path) -> tuple[Path, Path]:
    """A folder of runs as a publisher hands it over (a `git clone` keeps links): one honest
    run, and one whose files are relative links to a private run elsewhere on this machine."""
    private = write_run_dir(
        root / "private", "run-secret", CELL_A, cell_id="cellS", model="me/private"
    )
    source = root / "published"
    write_run_dir(source, "run-g", CELL_A, cell_id="cellG", model="org/good")
    linked = source / "run-h"
    linked.mkdir()
    for name in ("transitions.parquet", "traces.parquet"):
        (linked / name).symlink_to(Path("../../private/run-secret") / name)
    repo = root / "repo"  # the same link inside a results repo folder
    (repo / "data" / "transitions").mkdir(parents=True)
    (repo / "README.md").write_text(
        "---\nconfigs:\n- config_name: transitions\n  data_files: data/transitions/*.parquet\n---\n"
    )
    (repo / "data" / "transitions" / "run-secret.parquet").symlink_to(
        private / "transitions.parquet"
    )
    return source, repo


def test_a_link_out_of_a_local_source_is_never_followed(tmp_path):
    """On 8717022 the board showed `me/private`'s run under the published folder (its
    transitions and traces read through the links), and `load_transitions` (`verify`) read
    the private rows through a run folder's or a repo folder's link. A link that stays inside
    the source is read as before."""
    source, repo = _linked_source(tmp_path)
    board = load_board([str(source)], resamples=RESAMPLES, discover=False, use_cache=False)
    assert "me/private" not in set(board.cells()["model"])
    assert board.sources == []
    assert any("run-h" in w and "link" in w for w in board.warnings), board.warnings
    for where in (source / "run-h", repo):
        with pytest.raises(HubError, match="link"):
            load_transitions(where)
    from hf_skillfollow.space_app._traces import _load as load_traces_of

    note = load_traces_of(str(source))
    assert isinstance(note, str) and "link" in note
    inner = tmp_path / "inner"
    (inner / "store").mkdir(parents=True)
    rows = outcome_rows(CELL_A, run_id="run-l", cell_id="cellL", model="org/linked")
    pq.write_table(transitions_from_rows(rows), inner / "store" / "rows.parquet")
    (inner / "run-l").mkdir()
    (inner / "run-l" / "transitions.parquet").symlink_to(Path("../store/rows.parquet"))
    inside = load_board([str(inner)], resamples=RESAMPLES, discover=False, use_cache=False)
    assert list(inside.cells()["model"]) == ["org/linked"], inside.warnings


def test_a_repo_of_many_honest_runs_is_counted_by_what_its_rows_take(tmp_path, monkeypatch):
    """A real-file finding: the footer bound of a dictionary chunk is its size per row, so a
    run file of 80 rows counted ~336 KB against the 2 GiB budget while its rows take ~40 KB:
    on 8717022 `check_files` refused 7,000 copies of such a file, and a Hub repo (or repo
    folder) of more than ~6,400 honest runs of 80 tasks could not be loaded, a board of the
    12,500 runs the docs measure included. A file read whole is counted at what its rows
    took once read; its footer bound still admits it (so no file is decoded past the limit)
    and a bomb is refused as before. Here 40 runs under a budget between the two sums."""
    import pyarrow.parquet as pq_

    from hf_skillfollow.hub import _budget
    from hf_skillfollow.hub._layout import canonical, parquet_bytes

    shards = tmp_path / "repo" / "data" / "transitions"
    shards.mkdir(parents=True)
    (tmp_path / "repo" / "README.md").write_text(
        "---\nconfigs:\n- config_name: transitions\n  data_files: data/transitions/*.parquet\n---\n"
    )
    bounds = taken = 0
    for k in range(40):
        table = canonical(_rows(f"run-{k}", copies=4), "transitions")
        path = shards / f"run-{k}.parquet"
        path.write_bytes(parquet_bytes(table, "transitions"))
        bounds += _budget._footer_bound(pq_.ParquetFile(path).metadata)
        taken += pq_.read_table(path).nbytes
    limit = 2 * taken
    assert bounds > limit  # what the footers alone would count
    budget = Budget(file_bytes=1 << 30, decoded_bytes=limit, string_chars=4_096, rows=10**7)
    monkeypatch.setitem(_budget.BUDGETS, "transitions", budget)
    assert load_transitions(tmp_path / "repo").num_rows == 40 * 80
    bomb = _prefix_coded_bomb(tmp_path / "bomb")
    (shards / "run-bomb.parquet").write_bytes((bomb / "transitions.parquet").read_bytes())
    with pytest.raises(HubError, match="bytes once decoded"):
        load_transitions(tmp_path / "repo")


def _chatty_run(root: Path) -> Path:
    """A run whose retrieving rows each made 2,000 searches of 500-character queries and got
    2,000 500-character skill names back (ten distinct values: a file of 16 KB)."""
    rows = outcome_rows(CELL_A, run_id="run-q", cell_id="cellQ", model="org/q")
    for r in rows:
        r.update(max_calls=2_000, top_k=1)
        if r["queries"]:
            r["queries"] = [f"{k % 10}" + "q" * 500 for k in range(2_000)]
            r["skills_returned"] = [f"s{k % 10}" + "k" * 500 for k in range(2_000)]
            r["n_calls"] = 2_000
    run = root / "run-q"
    run.mkdir(parents=True)
    pq.write_table(transitions_from_rows(rows), run / "transitions.parquet", compression="zstd")
    return run


def _agreeing_record_rows(run: Path, verified_by=lambda i: "verifier", ids=lambda i: "0000000a"):
    """The rows of a verification record of `run` in which every verdict agrees; row i
    verified by `verified_by(i)` under the verification id ending in `ids(i)`."""
    tasks = pq.read_table(run / "transitions.parquet").to_pylist()
    return [
        {
            "schema_version": 1, "verification_id": f"20260101T000000-{ids(i)}",
            "verified_at": "2026-01-01T00:00:00+00:00", "verified_by": verified_by(i),
            "machine": "m", "toolkit_version": "0.1.0", "scorer_version": "1",
            "benchmark": t["benchmark"], "benchmark_version": t["benchmark_version"],
            "benchmark_release": t["benchmark_version"], "run_id": t["run_id"],
            "cell_id": t["cell_id"], "task_id": t["task_id"], "se_recorded": t["se_correct"],
            "se_rescored": t["se_correct"], "sd_recorded": t["sd_correct"],
            "sd_rescored": t["sd_correct"], "se_reason": "ok", "sd_reason": "ok",
        }
        for i, t in enumerate(tasks)
    ]  # fmt: skip


def _loud_record(run: Path) -> None:
    """A verification record of `run` (every verdict agrees) whose first row says it was
    verified by a 30-million-character name, each row under its own verification id: the
    file is 6 KB (zstd), and under the 64 MB footer bound no string length is measured."""
    from hf_skillfollow.schema import VERIFICATIONS_SCHEMA, verifications_from_rows

    rows = _agreeing_record_rows(
        run, lambda i: "B" * 30_000_000 if i == 0 else f"verifier {i}", lambda i: f"{i:08x}"
    )
    folder = run / "verifications"
    folder.mkdir()
    table = verifications_from_rows(rows).cast(VERIFICATIONS_SCHEMA)
    pq.write_table(
        table, folder / f"x--{run.name}.parquet", compression="zstd", use_dictionary=False
    )


def test_the_drill_down_sends_a_bounded_page_whatever_a_row_or_record_holds(tmp_path):
    """On e18d41a the drill-down of a 16 KB run was 12.1 MB of HTML (its flipped-task table
    joined every query and returned skill of a row) and a 6 KB verification record made its
    re-scoring section 30 MB (one line per distinct record, every name whole): both went to
    every visitor who opened the cell. Each joined list and each record string is cut to a
    prefix with its length, and the records listed are capped, with the count of the rest."""
    from hf_skillfollow.space_app._board import cell_key
    from hf_skillfollow.space_app._ui import _show_cell

    _chatty_run(tmp_path / "q")
    board = load_board([str(tmp_path / "q")], resamples=RESAMPLES, discover=False, use_cache=False)
    parts = [str(p) for p in _show_cell(board, cell_key("cellQ", board.sources[0]))]
    assert max(map(len, parts)) < 200_000, [len(p) for p in parts]
    flips = next(p for p in parts if "harmful and" in p)
    assert "2,000 queries" in flips and "2,000 skills" in flips

    run = write_run_dir(tmp_path / "v", "run-v", CELL_A, cell_id="cellV", model="org/v")
    _loud_record(run)
    board = load_board([str(tmp_path / "v")], resamples=RESAMPLES, discover=False, use_cache=False)
    parts = [str(p) for p in _show_cell(board, cell_key("cellV", board.sources[0]))]
    assert max(map(len, parts)) < 200_000, [len(p) for p in parts]
    section = next(p for p in parts if '<div class="sf-rescored">' in p)
    assert "30,000,000 characters" in section and "more records" in section
    assert "✓ 20/20" in section


def test_annotations_in_the_drill_down_are_cut_and_counted(tmp_path):
    """On 08bda25 an annotations file of 30 annotators, one of them named by 3 million
    characters, put 3 MB of Markdown and 30 blocks of tables into the drill-down of the cell
    (each annotator's name whole, every annotator listed). The name is cut as the table cuts
    names, and the newest annotators' blocks are shown with how many more there are."""
    import pyarrow.parquet as pq_

    from hf_skillfollow.schema import annotations_from_rows
    from hf_skillfollow.space_app._board import cell_key
    from hf_skillfollow.space_app._ui import _show_cell
    from tests._board_fixtures import write_annotations

    run = write_run_dir(tmp_path / "a", "run-a", CELL_A, cell_id="cellA", model="org/a")
    path = write_annotations(run, "seed")
    rows = pq_.read_table(path).to_pylist()
    names = ["N" * 3_000_000] + [f"annotator-{k}" for k in range(29)]
    table = annotations_from_rows([{**r, "annotator": name} for name in names for r in rows])
    pq_.write_table(table, path, compression="zstd")
    board = load_board([str(tmp_path / "a")], resamples=RESAMPLES, discover=False, use_cache=False)
    parts = [str(p) for p in _show_cell(board, cell_key("cellA", board.sources[0]))]
    assert max(map(len, parts)) < 200_000, [len(p) for p in parts]
    text = next(p for p in parts if "blinded LLM annotations" in p)
    assert "3,000,000 characters" in text and "more annotators" in text


def test_the_board_reads_no_jsonl_source_it_cannot_hold_to_its_budget(tmp_path):
    """On 2c29ffe the board read a `.jsonl` source with no read budget at all (the budget is
    counted on parquet footers): a 98 MB file took 715 MB of RSS, so a 20 GB one is the
    machine's memory. The board's readers (a budget given) refuse it in one line naming the
    file; `report`, which reads the analyst's own files, still reads JSONL."""
    import json

    from hf_skillfollow.hub._budget import TRANSITIONS
    from hf_skillfollow.sources import SourceError, read_transitions

    rows = outcome_rows(CELL_A, run_id="run-j", cell_id="cellJ", model="org/j")
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(SourceError, match=r"rows\.jsonl.*parquet"):
        read_transitions(path, budget=TRANSITIONS)
    assert read_transitions(path).num_rows == 20
    good = tmp_path / "good"
    write_run_dir(good, "run-g", CELL_A, cell_id="cellG", model="org/good")
    board = load_board([str(path), str(good)], resamples=RESAMPLES, discover=False, use_cache=False)
    assert board.sources == [str(good)]
    assert any("rows.jsonl" in w for w in board.warnings)


def test_the_traces_of_a_folder_of_many_runs_are_counted_by_what_they_take(tmp_path, monkeypatch):
    """As for rows: on 93bc56f the drill-down counted a local source's trace files at their
    footer bounds (~1.7 MB for a 160-row file that takes ~45 KB), so a folder of enough
    honest runs showed no traces at all. Here 30 runs under a traces budget between the two
    sums: their traces are read, and a budget under what they take still refuses them."""
    import pyarrow.parquet as pq_

    from hf_skillfollow.hub import _budget
    from hf_skillfollow.space_app._traces import _load as load_traces_of

    root = tmp_path / "runs"
    bounds = taken = 0
    for k in range(30):
        run = write_run_dir(root, f"run-{k}", CELL_A, cell_id=f"cell{k}", model="org/m")
        bounds += _budget._footer_bound(pq_.ParquetFile(run / "traces.parquet").metadata)
        taken += pq_.read_table(run / "traces.parquet").nbytes
    assert bounds > 2 * taken
    budget = Budget(file_bytes=1 << 30, decoded_bytes=2 * taken, string_chars=_MiB, rows=10**7)
    monkeypatch.setitem(_budget.BUDGETS, "traces", budget)
    traces = load_traces_of(str(root))
    assert not isinstance(traces, str), traces
    assert traces.num_rows == 30 * 40
    tight = Budget(file_bytes=1 << 30, decoded_bytes=taken // 2, string_chars=_MiB, rows=10**7)
    monkeypatch.setitem(_budget.BUDGETS, "traces", tight)
    assert "bytes once decoded" in load_traces_of(str(root))


def test_verify_follows_no_run_directory_linked_out_of_the_folder_it_was_given(tmp_path):
    """On 02de7fe `verify FOLDER` expanded FOLDER's run directories with their links
    followed: a published folder's `run-h -> ../private/run-secret` made `verify` read the
    private run (and write its record into the private run's folder). It is refused before
    anything is read, naming the link (exit 2)."""
    from hf_skillfollow.verify._inputs import VerifyInputError, read_rows

    write_run_dir(tmp_path / "private", "run-secret", CELL_A, cell_id="cellS", model="me/p")
    published = tmp_path / "published"
    write_run_dir(published, "run-g", CELL_A, cell_id="cellG", model="org/good")
    assert {r.run_id for r in read_rows([str(published)])} == {"run-g"}
    (published / "run-h").symlink_to(Path("../private/run-secret"))
    with pytest.raises(VerifyInputError, match=r"run-h.*link"):
        read_rows([str(published)])


@pytest.mark.parametrize(
    "values",
    [
        pa.array([float("nan")] * 20),
        pa.array([0.5] * 20),
        pa.array([2] * 20),
        pa.array(["true", "false"] * 10),
    ],
    ids=["nan", "half", "two", "strings"],
)
def test_a_verdict_bit_of_another_type_is_refused_not_cast(tmp_path, values):
    """On 543f6cd a `se_correct` column of doubles, ints or strings was cast to bool: NaN,
    0.5, 2 and -1 all read as True, so a publisher's "unknown" (NaN) counted as a pass on the
    board, in `report` and in `verify`. Only booleans are read as booleans."""
    from hf_skillfollow.sources import SourceError, read_transitions

    table = _rows("run-b")
    col = table.schema.get_field_index("se_correct")
    run = _run(tmp_path, table.set_column(col, "se_correct", values))
    for read in (read_transitions, load_transitions):
        with pytest.raises((SchemaError, SourceError, HubError), match="'se_correct'"):
            read(run)


def test_a_flag_no_row_set_written_as_type_null_is_still_read(tmp_path):
    """0f95be9 refused every non-boolean type for a boolean column, type null included: a
    run file written by pandas in which no row set the optional `adherence` flag (its
    column then has type null) was refused, where it had been read. A null column holds no
    value to misread; a verdict bit of type null is still refused, for its nulls."""
    from hf_skillfollow.sources import SourceError, read_transitions

    table = _rows("run-n")
    col = table.schema.get_field_index("adherence")
    run = _run(tmp_path / "a", table.set_column(col, "adherence", pa.nulls(table.num_rows)))
    for read in (read_transitions, load_transitions):
        assert read(run)["adherence"].null_count == table.num_rows
    col = table.schema.get_field_index("se_correct")
    run = _run(tmp_path / "b", table.set_column(col, "se_correct", pa.nulls(table.num_rows)))
    for read in (read_transitions, load_transitions):
        with pytest.raises((SchemaError, SourceError, HubError), match="'se_correct'"):
            read(run)


def test_the_number_of_files_of_a_source_is_bounded_before_any_is_opened(tmp_path):
    """On 0f95be9 nothing bounded how many files a source may hold: each costs a footer read
    (7,000 run files took 13.6 s to load here), and 2 GiB of files is ~1.4 million one-row
    files, most of an hour for one source. A source past `Budget.files` is refused from its
    listing, before any file is opened (a FIFO among them would block the reader)."""
    from hf_skillfollow.hub import _budget
    from hf_skillfollow.hub._load import read_parquet_files

    assert _budget.TRANSITIONS.files >= 12_500 * 4  # the 12,500-run board, with room
    shards = tmp_path / "data" / "transitions"
    shards.mkdir(parents=True)
    for k in range(6):
        pq.write_table(_rows(f"run-{k}"), shards / f"run-{k}.parquet")
    import os

    os.mkfifo(shards / "run-6.parquet")
    few = Budget(file_bytes=1 << 30, decoded_bytes=1 << 30, string_chars=4_096, rows=10**7, files=5)
    with pytest.raises(BudgetError, match=r"7 files.*5"):
        Meter(few, "many").count_files(sorted(shards.iterdir()))
    import hf_skillfollow.hub._budget as budget_module

    old = budget_module.BUDGETS["transitions"]
    budget_module.BUDGETS["transitions"] = few
    try:
        with pytest.raises(BudgetError, match="files"):
            read_parquet_files(sorted(shards.iterdir()), "transitions", "many")
    finally:
        budget_module.BUDGETS["transitions"] = old


def test_another_source_cannot_change_a_models_row_on_the_models_tab(tmp_path):
    """On 68961fb the Models tab grouped the cells by model name alone, across sources: a
    source publishing three harmful cells under `org/victim` turned that model's row from
    'hurt 0, median RAE +33.3' into 'hurt 3', its median RAE and its worst cell (a link to
    the hostile source's cell) included. Every number stays with the source that published
    it: one row per model and source, the honest one exactly as when loaded alone."""
    from hf_skillfollow.space_app._models import models_frame, models_html

    hurts = {(True, False, True): 1, (False, True, True): 3, (True, True, True): 6,
             (True, True, False): 2, (False, False, False): 8}  # fmt: skip
    honest = tmp_path / "honest"
    write_run_dir(honest, "run-v", CELL_A, cell_id="cellV", model="org/victim")
    hostile = tmp_path / "hostile"
    for k in range(3):
        write_run_dir(hostile, f"run-h{k}", hurts, cell_id=f"cellH{k}", model="org/victim")
    kw = {"resamples": RESAMPLES, "discover": False, "use_cache": False}
    alone = models_frame(load_board([str(honest)], **kw).cells())
    both = models_frame(load_board([str(honest), str(hostile)], **kw).cells())
    mine = both[both["sources"].apply(lambda s: s == [str(honest)])]
    assert len(mine) == 1 and len(both) == 2
    assert mine.reset_index(drop=True).equals(alone), (mine, alone)
    theirs = both[both["sources"].apply(lambda s: s == [str(hostile)])].iloc[0]
    assert theirs["hurt"] == 3 and theirs["model"] == "org/victim"
    assert models_html(both).count('data-model="org/victim"') == 2


def test_record_candidates_are_counted_before_their_footers_are_read(tmp_path, monkeypatch):
    """On 36d17c4 the board opened the footer of every `*.parquet` in any `verifications/`
    folder of a local source (to tell a record from another file) before the file-count
    bound applied: a folder of a million files was a million footer reads at every start.
    The candidates are counted from the listing first."""
    from hf_skillfollow.hub import _budget
    from hf_skillfollow.space_app import _verification
    from hf_skillfollow.verify import _record

    run = write_run_dir(tmp_path, "run-v", CELL_A, cell_id="cellV", model="org/v")
    (run / "verifications").mkdir()
    for k in range(6):
        (run / "verifications" / f"junk-{k}.parquet").write_bytes(b"PAR1")
    few = Budget(file_bytes=1 << 30, decoded_bytes=1 << 30, string_chars=4_096, rows=10**7, files=5)
    monkeypatch.setitem(_budget.BUDGETS, "verifications", few)

    def opened(path):
        raise AssertionError(f"footer of {path} read before the files were counted")

    monkeypatch.setattr(_record, "is_record_file", opened)
    with pytest.raises(BudgetError, match="6 files"):
        _verification._records_of(str(tmp_path))


def test_the_drill_downs_skill_tally_is_bounded_whatever_the_cell_returned(tmp_path):
    """On 923e23a the drill-down's per-skill tally listed every distinct skill name the cell's
    rows returned, each name whole twice (attribute and text): 12 rows of 2,000 distinct
    500-character names made a tally of ~24 MB. The tally shows the most harmful skills
    first up to a bound, names cut as the table cuts them, and counts the rest."""
    from hf_skillfollow.space_app._board import cell_key
    from hf_skillfollow.space_app._ui import _show_cell

    rows = outcome_rows(CELL_A, run_id="run-t", cell_id="cellT", model="org/t")
    for i, r in enumerate(rows):
        r.update(max_calls=2_000, top_k=1)
        if r["skills_returned"]:
            r["skills_returned"] = [f"{i}-{k}-" + "k" * 500 for k in range(2_000)]
            r["queries"] = ["q"] * 2_000
            r["n_calls"] = 2_000
    run = tmp_path / "t" / "run-t"
    run.mkdir(parents=True)
    pq.write_table(transitions_from_rows(rows), run / "transitions.parquet", compression="zstd")
    board = load_board([str(tmp_path / "t")], resamples=RESAMPLES, discover=False, use_cache=False)
    parts = [str(p) for p in _show_cell(board, cell_key("cellT", board.sources[0]))]
    assert max(map(len, parts)) < 300_000, [len(p) for p in parts]
    tally = next(p for p in parts if "sf-tally" in p)
    assert "more skills" in tally


def test_the_flipped_task_list_is_bounded_whatever_the_cell_holds(tmp_path):
    """A cell of 3,000 flipped tasks listed every one (~200 bytes a row, so a cell of a
    million rows is a page of 200 MB): the harmful ones come first, up to 1,000, then how
    many more there are."""
    from hf_skillfollow.space_app import _drill
    from hf_skillfollow.space_app._board import cell_key
    from hf_skillfollow.space_app._ui import _show_cell

    flips = {(False, True, True): 2_000, (True, False, True): 1_000}
    write_run_dir(tmp_path / "f", "run-f", flips, traces=False, cell_id="cellF", model="org/f")
    board = load_board([str(tmp_path / "f")], resamples=RESAMPLES, discover=False, use_cache=False)
    parts = [str(p) for p in _show_cell(board, cell_key("cellF", board.sources[0]))]
    table = next(p for p in parts if "helpful flips; click" in p)
    assert table.count('data-flip="harmful"') == _drill.SHOWN_FLIPS
    assert 'data-flip="helpful"' not in table
    assert "2,000 more flipped tasks not shown" in table


def test_a_repo_of_older_and_newer_run_files_is_counted_by_what_its_rows_take(
    tmp_path, monkeypatch
):
    """A repo that lived through a schema change holds run files without the newer columns
    (read with their backfill). The many-file reader wants one schema, so the board falls
    back to reading file by file (`Meter.read`), which on d74bb9d counted each file at its
    footer bound: such a repo of more than ~6,400 runs was refused on paper. Here 40 runs,
    half without `provenance`, `harness` and `agent`, under a budget between the two sums."""
    import pyarrow.parquet as pq_

    from hf_skillfollow.hub import _budget
    from hf_skillfollow.sources import read_transitions

    root = tmp_path / "runs"
    bounds = taken = 0
    for k in range(40):
        table = _rows(f"run-{k}", copies=4)
        if k % 2:
            table = table.drop_columns(["provenance", "harness", "agent"])
        path = root / f"run-{k}" / "transitions.parquet"
        path.parent.mkdir(parents=True)
        pq_.write_table(table, path)
        bounds += _budget._footer_bound(pq_.ParquetFile(path).metadata)
        taken += pq_.read_table(path).nbytes
    assert bounds > 2 * taken
    budget = Budget(file_bytes=1 << 30, decoded_bytes=2 * taken, string_chars=4_096, rows=10**7)
    monkeypatch.setattr(_budget, "TRANSITIONS", budget)
    monkeypatch.setitem(_budget.BUDGETS, "transitions", budget)
    table = read_transitions(root, budget=budget, dictionaries=True)
    assert table.num_rows == 40 * 80
    assert set(table["provenance"].to_pylist()) == {"run"}


def test_the_verification_records_of_a_folder_of_many_runs_are_counted_by_what_they_take(
    tmp_path, monkeypatch
):
    """As for rows and traces: the board counted a local source's record files at their
    footer bounds (~400 KB for an 80-row record that takes ~40 KB), so a folder of ~5,400 or
    more verified honest runs (the 12,500-run board verified) showed no re-scored marks; a
    Hub repo's records were already counted by what they take. Here 30 records under a
    budget between the two sums: they are read, and a budget under what they take still
    refuses them."""
    from hf_skillfollow.hub import _budget
    from hf_skillfollow.schema import VERIFICATIONS_SCHEMA, verifications_from_rows
    from hf_skillfollow.space_app._verification import _records_of
    from hf_skillfollow.verify._record import record_bytes

    root = tmp_path / "runs"
    bounds = taken = 0
    for k in range(30):
        run = write_run_dir(root, f"run-{k}", CELL_A, cell_id=f"cell{k}", model="org/m")
        rows = _agreeing_record_rows(run)
        record = run / "verifications" / f"20260101T000000-0000000a--run-{k}.parquet"
        record.parent.mkdir()
        record.write_bytes(record_bytes(verifications_from_rows(rows).cast(VERIFICATIONS_SCHEMA)))
        bounds += _budget._footer_bound(pq.ParquetFile(record).metadata)
        taken += pq.read_table(record).nbytes
    assert bounds > 2 * taken
    budget = Budget(file_bytes=1 << 30, decoded_bytes=2 * taken, string_chars=4_096, rows=10**7)
    monkeypatch.setitem(_budget.BUDGETS, "verifications", budget)
    records = _records_of(str(root))
    assert len(records) == 30
    assert sum(r.num_rows for r in records) == 30 * pq.read_table(record).num_rows
    tight = Budget(file_bytes=1 << 30, decoded_bytes=taken // 2, string_chars=4_096, rows=10**7)
    monkeypatch.setitem(_budget.BUDGETS, "verifications", tight)
    with pytest.raises(BudgetError, match="bytes once decoded"):
        _records_of(str(root))


def test_the_models_tab_rows_by_hand():
    """The Models tab's per (model, source) figures, computed by hand for a frame with tied
    worst cells, a cell not reportable at the threshold, a NaN RAE, a model with no
    reportable cell and zeros of both signs (the median of -0.0 and +0.0 is +0.0, as
    numpy's mean of the two middle values gives; a grouped median gave -0.0, "-0.0 pp")."""
    import pandas as pd

    from hf_skillfollow.space_app._models import models_frame, models_html

    nan = float("nan")
    cells = pd.DataFrame(
        [  # model, source, rae, mcnemar_p, reportable at 10, key, last_run
            ("org/b", "srcA", -0.2, 0.01, True, "k1", "2026-01-02"),
            ("org/b", "srcA", -0.2, 0.5, True, "k2", "2026-03-01"),
            ("org/b", "srcA", 0.4, 0.01, True, "k3", ""),
            ("org/b", "srcA", -0.9, 0.01, False, "k4", "2026-02-01"),
            ("org/b", "srcB", nan, 0.01, True, "k5", "2025-01-01"),
            ("org/b", "srcB", 0.1, 0.01, False, "k6", ""),
            ("org/a", "srcA", -0.0, 0.01, True, "k7", "2026-05-05"),
            ("org/a", "srcA", 0.0, 0.01, True, "k8", ""),
        ],
        columns=["model", "source", "rae", "mcnemar_p", "_rep_10", "_key", "last_run"],
    )
    cells["label"] = "task " + cells["_key"]
    got = models_frame(cells)
    assert list(got.columns) == [
        "model", "cells", "reportable", "hurt", "hurt_sig", "helped", "helped_sig",
        "median_rae", "worst_key", "worst_label", "worst_rae", "sources", "last_run",
    ]  # fmt: skip
    rows = [tuple(r) for r in got.drop(columns=["median_rae", "worst_rae"]).itertuples(index=False)]
    assert rows == [  # most cells first; among equals (model, source) order
        ("org/b", 4, 3, 2, 1, 1, 1, "k1", "task k1", ["srcA"], "2026-03-01"),
        ("org/a", 2, 2, 0, 0, 0, 0, "k7", "task k7", ["srcA"], "2026-05-05"),
        ("org/b", 2, 0, 0, 0, 0, 0, "", "", ["srcB"], "2025-01-01"),
    ]
    assert [str(v) for v in got["median_rae"]] == ["-0.2", "0.0", "nan"]
    assert [str(v) for v in got["worst_rae"]] == ["-0.2", "-0.0", "nan"]
    html = models_html(got)
    assert html.count("+0.0") == 1 and "no reportable cell" in html


def test_a_listing_checked_at_once_refuses_its_first_link_out(tmp_path):
    """`inside_all` (the root resolved once a listing) keeps `inside`'s rule: a link that
    stays inside is read, through a root that is itself a link; the first link out, in the
    listing's order, is named."""
    from hf_skillfollow._files import OutsideSource, inside_all

    real = tmp_path / "real"
    (real / "a").mkdir(parents=True)
    (real / "a" / "rows.parquet").write_bytes(b"x")
    (real / "b.parquet").symlink_to(Path("a") / "rows.parquet")
    (tmp_path / "secret.parquet").write_bytes(b"s")
    (real / "c.parquet").symlink_to(Path("..") / "secret.parquet")
    (real / "d.parquet").symlink_to(tmp_path / "secret.parquet")
    root = tmp_path / "root"
    root.symlink_to(real, target_is_directory=True)
    ok = [root / "a" / "rows.parquet", root / "b.parquet", root]
    assert inside_all(ok, root) == ok
    with pytest.raises(OutsideSource, match=r"c\.parquet: a symbolic link out of .*secret"):
        inside_all([*ok, root / "c.parquet", root / "d.parquet"], root)
    with pytest.raises(OutsideSource, match=r"d\.parquet: a symbolic link out of"):
        inside_all([root / "d.parquet", root / "c.parquet"], root)


def test_a_card_that_repeats_a_key_is_one_error_naming_the_card_and_the_key(tmp_path):
    """A card whose front matter gives `configs` twice: huggingface_hub's card reader (what
    `datasets.load_dataset` takes the configs from) keeps the last one, other/*.parquet here.
    Since eae978e the toolkit's reader refuses the repeated key, and `declared_patterns` took
    that as a card declaring nothing: the error said the repo has no 'transitions' config,
    naming neither the card nor the key. It is now one error naming both, as an anchor or
    alias is."""
    repo = tmp_path / "repo"
    (repo / "data" / "transitions").mkdir(parents=True)
    pq.write_table(_rows("run-d"), repo / "data" / "transitions" / "run-d.parquet")
    (repo / "README.md").write_text(
        "---\nconfigs:\n- config_name: transitions\n  data_files: data/transitions/*.parquet\n"
        "configs:\n- config_name: transitions\n  data_files: other/*.parquet\n---\n# results\n"
    )
    with pytest.raises(HubError) as err:
        load_transitions(repo)
    message = str(err.value)
    assert message.startswith(f"{repo / 'README.md'}: its front matter repeats a key")
    assert "'configs' given twice (line 4)" in message and "\n" not in message

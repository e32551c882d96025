"""Bounded work per source (issue 20, items 11, 13, 14): a dangling symlink, decompression
bombs, huge strings and card paths out of the repo cost one warning naming the source, and
the other sources' board stays as it is.

The bombs are real parquet files: one long string, dictionary-encoded and zstd-compressed,
referenced by every row, so a file of kilobytes decodes to hundreds of megabytes.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hf_skillfollow.hub import HubError, load_transitions
from hf_skillfollow.schema import traces_from_rows, transitions_from_rows
from hf_skillfollow.space_app import _table as T
from hf_skillfollow.space_app._board import cell_key, load_board
from hf_skillfollow.space_app._drill import trace_key
from hf_skillfollow.space_app._ui import _show_cell, _show_traces, render_view
from tests._fixtures_hub import CELL_A, outcome_rows, trace_rows, write_run_dir

RESAMPLES = 300
GOOD = {"cell_id": "cellG", "model": "org/good"}


def _load(*sources: Path, **kw):
    return load_board([str(s) for s in sources], resamples=RESAMPLES, discover=False, **kw)


def _good(root: Path) -> Path:
    write_run_dir(root, "run-g", CELL_A, **GOOD)
    return root


def _bomb_transitions(root: Path, *, mb: int = 64) -> Path:
    """A run whose every row's model is one `mb` MB string: a few KB on disk. Built as a
    dictionary column (one copy of the string in memory), written as a plain string column."""
    run = root / "run-bomb"
    run.mkdir(parents=True)
    table = transitions_from_rows(outcome_rows(CELL_A, run_id="run-bomb", cell_id="cellX"))
    indices = pa.array([0] * table.num_rows, pa.int32())
    model = pa.DictionaryArray.from_arrays(indices, pa.array(["m" * (mb << 20)]))
    table = table.set_column(table.schema.get_field_index("model"), "model", model)
    pq.write_table(table, run / "transitions.parquet", compression="zstd", store_schema=False)
    return root


def _same_view(a, b, key: str) -> None:
    state = T.ViewState(T.Filters(show_nonreportable=True))
    assert T.records(a.cells(), 10) == T.records(b.cells(), 10)
    assert render_view(a, state).table == render_view(b, state).table
    assert _show_cell(a, key) == _show_cell(b, key)


def test_a_dangling_symlink_in_a_local_source_is_not_the_end_of_the_board(tmp_path, monkeypatch):
    """Item 11: on main the start-up cache's revision walk stat()ed the link and the whole
    board exited. A stray link is ignored; a dangling run file skips its source, named."""
    monkeypatch.setenv("SKILLFOLLOW_BOARD_CACHE", str(tmp_path / "cache"))
    good = _good(tmp_path / "good")
    (good / "notes.md").symlink_to(tmp_path / "nowhere.md")
    broken = tmp_path / "broken" / "run-z"
    broken.mkdir(parents=True)
    (broken / "transitions.parquet").symlink_to(tmp_path / "gone.parquet")
    alone = _load(tmp_path / "good", use_cache=False)
    board = _load(broken.parent, good)
    assert board.sources == [str(good)]
    assert any(str(broken.parent) in w for w in board.warnings)
    _same_view(board, alone, cell_key("cellG", str(good)))
    assert _load(broken.parent, good).from_cache  # and the cache works with the link there


def test_a_decompression_bomb_is_refused_by_its_footer_not_decoded(tmp_path):
    """Item 13: a 64 MB string referenced by 20 rows (about 1.3 GB decoded) in a file of a
    few KB; on main it was decoded and accepted."""
    bomb = _bomb_transitions(tmp_path / "bomb")
    size = (bomb / "run-bomb" / "transitions.parquet").stat().st_size
    assert size < 64 << 10, size
    good = _good(tmp_path / "good")
    alone = _load(good, use_cache=False)
    board = _load(bomb, good, use_cache=False)
    assert board.sources == [str(good)]
    (warning,) = [w for w in board.warnings if str(bomb) in w]
    assert "'model' holds a value of 67,108,864 bytes" in warning and "at most 4,096" in warning
    _same_view(board, alone, cell_key("cellG", str(good)))


def test_the_bomb_is_refused_on_the_repo_folder_path_too(tmp_path):
    """`hub.load_transitions` (what `verify` and the Hub path read) checks the same budget."""
    bomb = _bomb_transitions(tmp_path / "bomb")
    with pytest.raises(HubError, match="at most"):
        load_transitions(bomb / "run-bomb")


def test_a_long_name_is_cut_on_the_page_and_whole_in_the_csv(tmp_path):
    """Item 13: a 1,000-character model name reaches every visitor as a short prefix (the CSV
    and the API keep the whole value); a 300 KB one (on main: 21 MB first pages for a 5 MB
    name) refuses its source, named, and the other sources' board is as alone."""
    name = "org/" + "x" * 996
    root = tmp_path / "long"
    write_run_dir(root, "run-l", CELL_A, cell_id="cellL", model=name)
    board = _load(root, use_cache=False)
    view = render_view(board, T.ViewState(T.Filters(show_nonreportable=True)))
    assert "1,000 characters" in view.table and name not in view.table + view.plots
    assert T.records(board.cells(), 10)[0]["model"] == name
    header, *_ = _show_cell(board, cell_key("cellL", str(root)))
    assert name not in header

    huge = tmp_path / "huge"
    write_run_dir(huge, "run-h", CELL_A, cell_id="cellH", model="org/" + "x" * 300_000)
    good = _good(tmp_path / "good")
    both = _load(huge, good, use_cache=False)
    assert both.sources == [str(good)]
    (warning,) = [w for w in both.warnings if str(huge) in w]
    assert "'model' holds a value of 300,004 characters" in warning
    _same_view(both, _load(good, use_cache=False), cell_key("cellG", str(good)))


def test_the_name_limit_counts_characters_not_utf8_bytes(tmp_path):
    """The check reads byte lengths first (no decoding) and counts characters only past the
    limit in bytes: 1,000 two-byte characters (2,000 bytes) load, 1,025 of them do not."""
    fits, over = tmp_path / "fits", tmp_path / "over"
    write_run_dir(fits, "run-f", CELL_A, cell_id="cellF", model="é" * 1_000)
    write_run_dir(over, "run-o", CELL_A, cell_id="cellO", model="é" * 1_025)
    board = _load(fits, over, use_cache=False)
    assert board.sources == [str(fits)]
    (warning,) = [w for w in board.warnings if str(over) in w]
    assert "'model' holds a value of 1,025 characters" in warning


def test_a_trace_bomb_costs_one_drill_down_a_bounded_page(tmp_path):
    """Item 13: a traces file of kilobytes whose messages repeat one 1 MB text (on main one
    drill-down returned over 100 MB of HTML)."""
    root = tmp_path / "traces"
    run = write_run_dir(root, "run-t", CELL_A, cell_id="cellT", model="org/t", traces=False)
    rows = trace_rows(pq.read_table(run / "transitions.parquet").to_pylist())
    text = "y" * (256 << 10)
    for r in rows:
        r["messages"] = [dict(r["messages"][0], content=text) for _ in range(10)]
    pq.write_table(traces_from_rows(rows), run / "traces.parquet", compression="zstd")
    assert (run / "traces.parquet").stat().st_size < 1 << 20  # 100 MB of text decoded
    board = _load(root, use_cache=False)
    html = _show_traces(board, trace_key(str(root), "run-t", "Mbpp/2"))
    assert "more characters not shown" in html
    assert len(html) < 500_000, len(html)  # 2 arms x 10 messages x 20,000 characters at most


def test_card_paths_out_of_a_repo_folder_are_refused(tmp_path):
    """Item 14 (local repo folder; the Hub path is tests/test_hub_read_path_olah.py)."""
    outside = write_run_dir(tmp_path / "outside", "run-o", CELL_A)
    for path in ("../outside/run-o/*.parquet", f"{outside}/*.parquet"):
        repo = tmp_path / f"repo{len(path)}"
        (repo / "data" / "transitions").mkdir(parents=True)
        (repo / "README.md").write_text(
            "---\nconfigs:\n- config_name: transitions\n  data_files:\n"
            f"  - split: train\n    path: '{path}'\n---\n"
        )
        with pytest.raises(HubError, match="leaves the repository"):
            load_transitions(repo)


def test_budget_counts_decoded_bytes_across_the_files_of_one_source(tmp_path, monkeypatch):
    """The per-source total: many small files that each pass add up (limit lowered here)."""
    from hf_skillfollow.hub import _budget

    root = tmp_path / "many"
    for i in range(3):
        write_run_dir(root, f"run-{i}", CELL_A, cell_id=f"c{i}", model=f"org/m{i}")
    files = sorted(root.rglob("transitions.parquet"))
    one = _budget._footer_bound(pq.ParquetFile(files[0]).metadata)
    limit = _budget.Budget(file_bytes=1 << 30, decoded_bytes=int(2.5 * one) + 1,
                           string_chars=4096, rows=10**6)  # fmt: skip
    monkeypatch.setitem(_budget.BUDGETS, "transitions", limit)
    with pytest.raises(_budget.BudgetError, match="bytes once decoded"):
        _budget.check_files(files, "transitions", str(root))
    _budget.check_files(files[:1], "transitions", str(root))
    assert os.path.getsize(files[0]) > 0 and pa is not None


def test_the_board_csv_export_never_starts_a_cell_with_a_formula(tmp_path):
    """Item 8 on the board's CSV route (the escaping itself is hf_skillfollow._escape's)."""
    import csv
    import io

    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from hf_skillfollow.space_app._ui import _csv_route

    root = tmp_path / "formula"
    write_run_dir(root, "run-f", CELL_A, cell_id="cellF", model='=HYPERLINK("http://x","y")')
    board = _load(root, use_cache=False)
    client = TestClient(Starlette(routes=[_csv_route(board)]))
    response = client.get("/export.csv?nonreportable=1")
    assert response.status_code == 200
    (row,) = list(csv.DictReader(io.StringIO(response.text)))
    assert row["model"] == '\'=HYPERLINK("http://x","y")' and row["n_pairs"] == "20"


# --- issue 38, items 6-8: source ids that cannot collide, every string type counted, FIFOs


def _old_id(name: str) -> str:
    """The source id before issue 38: 8 hex digits (32 bits) of the name's sha256."""
    import hashlib

    return hashlib.sha256(name.encode()).hexdigest()[:8]


def _colliding_names(prefix: str) -> tuple[str, str]:
    """Two names with one old-scheme id, found by a birthday search (about 80,000 names,
    well under a second): what a hostile publisher did by brute force."""
    seen: dict[str, str] = {}
    for i in range(2_000_000):
        name = f"{prefix}{i}"
        other = seen.setdefault(_old_id(name), name)
        if other != name:
            return other, name
    raise AssertionError("no collision in 2,000,000 names")


def test_sources_whose_old_ids_collide_keep_their_own_keys_links_and_traces(tmp_path):
    """Item 6: on main the hostile source (listed first) took over the honest cell's key, and
    the honest source's `?cell=` link opened the hostile drill-down."""
    honest_name, hostile_name = _colliding_names(str(tmp_path / "src"))
    assert _old_id(honest_name) == _old_id(hostile_name)
    hostile = Path(hostile_name)
    write_run_dir(hostile, "run-h", CELL_A, cell_id="cellG", model="org/hostile")
    honest = _good(Path(honest_name))
    assert cell_key("cellG", str(honest)) != cell_key("cellG", str(hostile))
    assert trace_key(str(honest), "r", "t") != trace_key(str(hostile), "r", "t")
    board = _load(hostile, honest, use_cache=False)
    assert board.sources == [str(hostile), str(honest)]
    opened = _show_cell(board, cell_key("cellG", str(honest)))
    text = " ".join(str(part) for part in opened)
    assert "org/good" in text and "org/hostile" not in text


def test_two_sources_with_one_id_are_refused_not_merged(tmp_path, monkeypatch):
    """Item 6: should two names ever share an id, the second is skipped with a warning
    naming both (here forced by putting the old 32-bit id back)."""
    from hf_skillfollow.space_app import _sources

    honest_name, hostile_name = _colliding_names(str(tmp_path / "src"))
    _good(Path(honest_name))
    write_run_dir(Path(hostile_name), "run-h", CELL_A, cell_id="cellG", model="org/hostile")
    monkeypatch.setattr(_sources, "source_id", _old_id)
    loaded = _sources.load_sources([honest_name, hostile_name])
    assert list(loaded.tables) == [honest_name]
    (warning,) = [w for w in loaded.warnings if "id equals" in w]
    assert hostile_name in warning and honest_name in warning


def _dictionary_bomb(root: Path, *, mb: int = 1) -> Path:
    """Item 7: one `mb` MB `se_error` value in every row, stored as Arrow
    `dictionary<string>` (the schema in the footer says so), a file of kilobytes."""
    run = root / "run-dict"
    run.mkdir(parents=True)
    rows = outcome_rows(CELL_A, run_id="run-dict", cell_id="cellX") * 4
    for i, row in enumerate(rows):
        row["task_id"] = f"t{i}"
    table = transitions_from_rows(rows)
    indices = pa.array([0] * table.num_rows, pa.int32())
    error = pa.DictionaryArray.from_arrays(indices, pa.array(["e" * (mb << 20)]))
    table = table.set_column(table.schema.get_field_index("se_error"), "se_error", error)
    pq.write_table(table, run / "transitions.parquet", compression="zstd")
    assert pa.types.is_dictionary(
        pq.read_schema(run / "transitions.parquet").field("se_error").type
    )
    return root


def test_a_dictionary_encoded_string_bomb_is_counted_from_the_footer(tmp_path):
    """Item 7: on main a `dictionary<string>` column was not a string leaf for the footer
    check, so the source passed the budget and the cast decoded every row's copy."""
    bomb = _dictionary_bomb(tmp_path / "bomb")
    assert (bomb / "run-dict" / "transitions.parquet").stat().st_size < 64 << 10
    with pytest.raises(HubError, match="'se_error' holds a value of 1,048,576 bytes"):
        load_transitions(bomb / "run-dict")
    good = _good(tmp_path / "good")
    board = _load(bomb, good, use_cache=False)
    assert board.sources == [str(good)]
    assert any(str(bomb) in w and "se_error" in w for w in board.warnings)


def _fifo_source(root: Path) -> Path:
    """A results-repo-like folder: one good shard and a FIFO named `*.parquet`."""
    shards = root / "data" / "transitions"
    shards.mkdir(parents=True)
    pq.write_table(transitions_from_rows(outcome_rows(CELL_A)), shards / "a.parquet")
    os.mkfifo(shards / "x.parquet")
    return root


_FIFO_READERS = {
    "report": "from hf_skillfollow.sources import read_transitions as f",
    "board": "from hf_skillfollow.space_app._sources import load_sources as f",
    "hub": "from hf_skillfollow.hub import load_transitions as f",
    "budget": "from hf_skillfollow.hub._budget import check_files as f",
}


@pytest.mark.parametrize("reader", sorted(_FIFO_READERS))
def test_a_fifo_named_parquet_never_blocks_a_reader(tmp_path, reader):
    """Item 8: on main pyarrow's open blocked on the FIFO forever (the board and `report`
    hung). Each reader runs in a child process with a deadline: it must end, refusing it."""
    import subprocess
    import sys

    source = _fifo_source(tmp_path / "fifo")
    fifo = source / "data" / "transitions" / "x.parquet"
    call = {
        "report": f"f({str(source)!r})",
        "board": f"print(f([{str(source)!r}]).warnings)",
        "hub": f"f({str(fifo)!r})",
        "budget": f"f([__import__('pathlib').Path({str(fifo)!r})], 'transitions', 's')",
    }[reader]
    try:
        done = subprocess.run(
            [sys.executable, "-c", f"{_FIFO_READERS[reader]}\n{call}"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"{reader}: blocked on a FIFO named *.parquet")
    assert "not a regular file" in done.stdout + done.stderr or (
        reader == "hub" and "not a run directory" in done.stderr
    ), done.stdout + done.stderr


def test_the_cells_of_the_boards_sources_carry_their_error_rate(tmp_path):
    """Item 2: the shared cell computation (`metrics.compute_cells`, what the board, `report`
    and the card compute cells with) carries `n_errored`, `error_rate` and `error_heavy` for
    the board's loaded sources: a source of a model that answered nothing is not a reportable
    zero effect. (The board's own table shows them once it passes the error columns on.)"""
    import pyarrow.parquet as pq

    from hf_skillfollow.metrics import compute_cells
    from hf_skillfollow.space_app._sources import load_sources

    good = _good(tmp_path / "good")
    dead = tmp_path / "dead"
    write_run_dir(dead, "run-d", CELL_A, cell_id="cellD", model="org/dead")
    path = dead / "run-d" / "transitions.parquet"
    table = pq.read_table(path)
    errors = pa.array(["HTTP 404: no endpoint"] * table.num_rows, pa.string())
    pq.write_table(
        table.set_column(table.schema.get_field_index("sd_error"), "sd_error", errors), path
    )
    loaded = load_sources([str(good), str(dead)])
    rows = {}
    for data in loaded.tables.values():
        for r in compute_cells(data, resamples=RESAMPLES).to_dict("records"):
            rows[r["model"]] = r
    assert rows["org/dead"]["n_errored"] == 20 and rows["org/dead"]["error_rate"] == 100.0
    assert rows["org/dead"]["error_heavy"] and not rows["org/dead"]["reportable"]
    assert rows["org/good"]["n_errored"] == 1 and rows["org/good"]["error_rate"] == 5.0
    assert not rows["org/good"]["error_heavy"] and rows["org/good"]["reportable"]


def test_the_name_limit_reads_the_values_rows_use_of_a_dictionary(tmp_path):
    """A source read as dictionaries (the board's cold start) is held to the name limit by
    the values its rows use: a long dictionary value no row names refuses nothing, one a row
    names refuses the source as a plain column would."""
    from hf_skillfollow.sources import read_transitions
    from hf_skillfollow.space_app._sources import _load_one

    root = tmp_path / "run"
    write_run_dir(root, "run-d", CELL_A, cell_id="cellD", model="org/short")
    table = read_transitions(root, dictionaries=True)
    at = table.schema.get_field_index("model")
    chunk = table["model"].combine_chunks()
    assert pa.types.is_dictionary(chunk.type)
    long = pa.array([*chunk.dictionary.to_pylist(), "org/" + "x" * 2_000])
    unused = pa.DictionaryArray.from_arrays(chunk.indices, long)
    loaded, warning = _load_one(str(root), lambda _: table.set_column(at, "model", unused))
    assert warning is None and loaded is not None
    used = pa.DictionaryArray.from_arrays(pa.array([len(long) - 1] * len(chunk), pa.int32()), long)
    loaded, warning = _load_one(str(root), lambda _: table.set_column(at, "model", used))
    assert loaded is None and "'model' holds a value of 2,004 characters" in warning

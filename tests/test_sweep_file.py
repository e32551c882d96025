"""Sweep files: the matrix, include/exclude, the shipped paper panel, shards, bad input.

Nothing here contacts a model or loads benchmark data: the plan is computed from the file
and the output folder only. Expected cell lists and counts are written out by hand.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from hf_skillfollow.cli import cli
from hf_skillfollow.config import RunConfig
from hf_skillfollow.sweep import (
    SweepFileError,
    expand,
    jobs_for,
    load,
    parse_shard,
    read_sweep_file,
    select_shard,
    shipped_sweeps,
)

REPO = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


SMALL = """
name: small
model_defaults: {backend: openai, base_url: "http://127.0.0.1:9/v1", concurrency: 3}
models:
  - {name: A, model: org/a}
  - {name: B, model: org/b, concurrency: 5}
benchmarks:
  - {benchmark: mbppplus, partition_seeds: [42, 43]}
  - {benchmark: math500, partition_seeds: 7, partition_size: 20}
include:
  - {models: [B], benchmarks: [mbppplus], partition_seeds: [42], conditions: [filler, random]}
exclude:
  - {models: [A], benchmarks: [math500]}
"""


def labels(path: Path) -> list[str]:
    _, _, cells = load(str(path))
    return [c.label for c in cells]


def test_matrix_include_and_exclude_give_the_cells_written_out_by_hand(tmp_path: Path) -> None:
    path = write(tmp_path, SMALL)
    assert labels(path) == [
        "A mbppplus-42", "A mbppplus-43",
        "B mbppplus-42", "B mbppplus-43", "B math500-7",
        "B mbppplus-42 filler", "B mbppplus-42 random",
    ]  # fmt: skip
    _, _, cells = load(str(path))
    b_math = cells[4].config
    assert (b_math.model, b_math.benchmark, b_math.partition_seed, b_math.partition_size) == (
        "org/b", "math500", 7, 20,
    )  # fmt: skip
    assert b_math.concurrency == 5 and cells[0].config.concurrency == 3
    assert cells[0].config.base_url == "http://127.0.0.1:9/v1"


def test_a_cell_repeated_by_an_include_block_is_one_cell(tmp_path: Path) -> None:
    text = SMALL.replace(
        "exclude:", "  - {models: [A], benchmarks: [mbppplus], conditions: [normal]}\nexclude:"
    )
    path = write(tmp_path, text)
    assert len(labels(path)) == 7


def test_each_cell_is_the_run_config_the_run_command_builds(tmp_path: Path) -> None:
    path = write(tmp_path, SMALL)
    _, _, cells = load(str(path))
    expected = RunConfig(backend="openai", model="org/b", base_url="http://127.0.0.1:9/v1",
                         concurrency=5, benchmark="mbppplus", partition_seed=42, condition="random")  # fmt: skip
    assert cells[6].config == expected


def test_generic_axes_and_the_access_axis_map_onto_run_config_fields(tmp_path: Path) -> None:
    text = SMALL.split("include:")[0] + "axes: {max_calls: [1, 2]}\n"
    _, _, cells = load(str(write(tmp_path, text)))
    assert [c.config.max_calls for c in cells[:2]] == [1, 2] and len(cells) == 12
    with_access = SMALL.split("include:")[0] + "access: [catalog]\n"
    if "access" in RunConfig.model_fields:  # issue 19's field: the axis sets it
        _, _, cells = load(str(write(tmp_path, with_access)))
        assert {c.config.access for c in cells} == {"catalog"}  # type: ignore[attr-defined]
    else:  # before it exists, the error names the setting
        with pytest.raises(SweepFileError, match=r"access: not a run setting"):
            load(str(write(tmp_path, with_access)))


@pytest.mark.parametrize(
    "text,message",
    [
        ("- a list\n", "a sweep file is a mapping"),
        ("name: x\nmodels: [\n", "not valid YAML"),
        ("name: x\nbenchmarks: [{benchmark: mbppplus}]\n", "models: Field required"),
        (SMALL.replace("models: [B], benchmarks", "models: [Z], benchmarks"),
         r"include\[0\].models: unknown \['Z'\]"),
        (SMALL.replace("partition_size: 20", "partition_size: 0"), "partition_size"),
        (SMALL.replace("concurrency: 3}", "concurrency: 3, top_k: 0}"),
         "cell A mbppplus-42: top_k: Input should be greater than or equal to 1"),
        (SMALL + "axes: {bogus_field: [1]}\n", "bogus_field: not a run setting"),
        (SMALL.replace("{benchmark: math500", "{benchmark: nope"), "unknown benchmark 'nope'"),
        (SMALL.replace("{name: B, model: org/b", "{name: A, model: org/b"), "duplicate model name 'A'"),
    ],
)  # fmt: skip
def test_bad_sweep_files_name_the_file_and_the_field(
    tmp_path: Path, text: str, message: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(SweepFileError, match=message) as info:
        load(str(path))
    assert str(path) in str(info.value)


def test_cli_reports_a_bad_sweep_file_without_a_traceback(tmp_path: Path) -> None:
    path = write(tmp_path, "name: x\n")
    out = CliRunner().invoke(cli, ["sweep", str(path), "--plan"])
    assert out.exit_code == 1 and "Traceback" not in out.output
    assert f"{path}: models: Field required" in out.output
    out = CliRunner().invoke(cli, ["sweep", "no-such-sweep", "--plan"])
    assert out.exit_code == 1 and "shipped: paper-panel" in out.output


# The paper panel, counted by hand from ../shared/notes/paper-panel.md:
#   main: 17 models x (MBPP+ 42, 43, 44 + HumanEval+ 42 + MATH-500 42, 43, 44)  = 119
#   controls: 2 models x 3 MBPP+ seeds x 4 conditions besides normal           =  24
#   sensitivity: 3 models x MBPP+ 42 x (top-k 1, top-k 5, merged library)      =   9
PAPER_CELLS = 17 * 7 + 2 * 3 * 4 + 3 * 3


def test_paper_panel_plan_lists_its_cells_and_conversations() -> None:
    out = CliRunner().invoke(
        cli, ["sweep", "paper-panel", "--plan", "--json", "-o", "/nonexistent/x"]
    )
    assert out.exit_code == 0, out.output
    plan = json.loads(out.output)
    assert PAPER_CELLS == 152
    assert plan["cells"] == plan["runs"] == PAPER_CELLS
    assert plan["pairs"] == 80 * PAPER_CELLS and plan["conversations"] == 2 * 80 * PAPER_CELLS
    assert plan["done_pairs"] == 0 and plan["estimated_tokens"] is None
    jobs = plan["jobs"]
    assert sum("filler" in j["cell"] for j in jobs) == 6  # 2 models x 3 seeds
    assert sum(j["cell"].endswith(" merged") for j in jobs) == 3
    assert sum(" math500-" in j["cell"] for j in jobs) == 17 * 3
    assert len({j["run_dir"] for j in jobs}) == PAPER_CELLS


def test_paper_panel_cells_carry_the_studys_settings() -> None:
    _, sweep, cells = load("paper-panel")
    assert sorted({c.config.model for c in cells}) == sorted(m.model for m in sweep.models)
    assert len(sweep.models) == 17
    for c in cells:
        cfg = c.config
        assert (cfg.temperature, cfg.max_tokens, cfg.max_calls, cfg.partition_size) == (
            0.7,
            8192,
            3,
            80,
        )
        assert cfg.backend == "openai" and cfg.base_url == "https://openrouter.ai/api/v1"
        assert cfg.api_key_env == "OPENROUTER_API_KEY"
    controls = {(c.model, c.config.condition) for c in cells if c.config.condition != "normal"}
    assert {m for m, _ in controls} == {"DeepSeek-V3.2", "Gemini-2.5-Flash-lite"}
    topk = {(c.model, c.config.top_k) for c in cells if c.config.top_k != 3}
    assert topk == {
        (m, k) for m in ("Gemini-2.5-Flash-lite", "DeepSeek-V3.2", "Claude-4.5-H") for k in (1, 5)
    }


def test_paper_panel_ships_in_the_package_and_the_repo_file_is_the_same() -> None:
    shipped = shipped_sweeps()["paper-panel"]
    assert (REPO / "sweeps" / "paper-panel.yaml").read_bytes() == shipped.read_bytes()
    globs = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]
    rel = shipped.relative_to(REPO / "toolkit" / "hf_skillfollow")
    assert any(rel.match(g) for g in globs["hf_skillfollow"])


def test_shards_partition_the_sweep_and_appended_cells_move_nothing(tmp_path: Path) -> None:
    _, sweep, cells = load("paper-panel")
    keys = [c.key for c in cells]
    for n in (1, 2, 3, 5):
        shards = [[c.key for c in select_shard(cells, i, n)] for i in range(1, n + 1)]
        assert sorted(k for s in shards for k in s) == sorted(keys)  # union, no overlap
        assert all(shards), "an empty shard on 152 cells"
    text = (REPO / "sweeps" / "paper-panel.yaml").read_text()
    grown = text.replace(
        "  - {name: GLM4-32B, model: z-ai/glm-4-32b}",
        "  - {name: GLM4-32B, model: z-ai/glm-4-32b}\n  - {name: New, model: new/model}",
    )
    bigger = expand(read_sweep_file(write(tmp_path, grown)), tmp_path / "s.yaml")
    assert len(bigger) == len(cells) + 7
    for i in range(1, 4):
        before = {c.key for c in select_shard(cells, i, 3)}
        after = {c.key for c in select_shard(bigger, i, 3)}
        assert before <= after
    by_model = [select_shard(cells, i, 4, "model") for i in range(1, 5)]
    owners = {}
    for i, shard in enumerate(by_model):
        for c in shard:
            assert owners.setdefault(c.model, i) == i  # each model on one machine


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0"])
def test_bad_shard_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="--shard"):
        parse_shard(text)


def test_run_dirs_are_a_function_of_the_cell(tmp_path: Path) -> None:
    path = write(tmp_path, SMALL)
    _, _, cells = load(str(path))
    first = [j.run_dir for j in jobs_for(cells, tmp_path / "out")]
    again = [j.run_dir for j in jobs_for(load(str(path))[2], tmp_path / "out")]
    assert first == again and len(set(first)) == len(first)
    # how fast a model is reached is not the cell: the folders stay
    faster = write(tmp_path, SMALL.replace("concurrency: 3}", "concurrency: 9}"), "t.yaml")
    assert [j.run_dir for j in jobs_for(load(str(faster))[2], tmp_path / "out")] == first
    # another endpoint is another cell (issue 38): one model id behind two endpoints
    elsewhere = write(tmp_path, SMALL.replace("127.0.0.1:9", "127.0.0.1:10"), "v.yaml")
    moved = [j.run_dir for j in jobs_for(load(str(elsewhere))[2], tmp_path / "out")]
    assert not set(moved) & set(first)
    # a renamed model alias finds its existing folder by the cell key
    first[0].mkdir(parents=True)
    renamed = write(
        tmp_path, SMALL.replace("{name: A,", "{name: AA,").replace("[A]", "[AA]"), "u.yaml"
    )
    assert jobs_for(load(str(renamed))[2], tmp_path / "out")[0].run_dir == first[0]


def test_importing_the_toolkit_and_the_sweep_package_never_imports_ray() -> None:
    code = ("import sys, hf_skillfollow, hf_skillfollow.sweep, hf_skillfollow.cli._sweep; "
            "from hf_skillfollow.registries import EXECUTORS; assert 'ray' in EXECUTORS; "
            "print('ray' in sys.modules)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_repeats_make_one_run_directory_per_repeat(tmp_path: Path) -> None:
    path = write(tmp_path, SMALL.split("include:")[0] + "repeats: 3\n")
    _, _, cells = load(str(path))
    jobs = jobs_for(cells, tmp_path / "out")
    assert len(cells) == 6 and len(jobs) == 18
    first = [j for j in jobs if j.cell is cells[0]]
    assert [j.repeat_index for j in first] == [0, 1, 2]
    assert [j.run_dir.name.rsplit("-", 1)[1] for j in first] == ["r0", "r1", "r2"]
    assert all(c.config.repeats == 3 for c in cells)


def test_live_view_on_a_terminal_and_plain_lines_otherwise(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from hf_skillfollow.runner import PairOutcome
    from hf_skillfollow.sweep import plan
    from hf_skillfollow.sweep._view import LiveView, LogView, Tally, make_view

    _, _, cells = load(str(write(tmp_path, SMALL)))
    jobs = jobs_for(cells, tmp_path / "out")
    tally = Tally.of(plan(jobs, tmp_path / "out").states)
    assert isinstance(make_view(tally), LogView)  # pytest's stdout is not a terminal
    screen = io.StringIO()
    view = LiveView(tally, Console(file=screen, force_terminal=True, width=120))
    with view:
        view.started(jobs[0], 1)
        view.pair_callback(jobs[0])(PairOutcome("t1", 54, error=True))
        view.retrying(jobs[1], 1, "HTTP 503", 2.0)
        view.failed(jobs[2], "cannot reach the endpoint")
        view.live.refresh()
    text = screen.getvalue()
    assert "cells 0/7 done, 1 running, 1 failed, 5 pending" in text
    assert "pairs 1/" in text and "1 errors" in text and "54 tokens" in text
    assert "A mbppplus-42" in text and "FAILED" in text
    log = io.StringIO()
    plain = LogView(Tally.of(plan(jobs, tmp_path / "out").states), log)
    plain.started(jobs[0], 2)
    assert (
        log.getvalue().endswith("start  A mbppplus-42 r0 (try 2)\n")
        and "\x1b[" not in log.getvalue()
    )


def test_a_pool_content_is_indexed_once_per_process() -> None:
    from hf_skillfollow.retrieval import make_retriever
    from hf_skillfollow.skills import load_pool

    first = make_retriever("bm25s", load_pool("coding"))
    again = make_retriever("bm25s", load_pool("coding"))  # another object, the same content
    assert again is first
    assert make_retriever("bm25s", load_pool("math")) is not first
    assert again.search("sort a list")[0].name == first.search("sort a list")[0].name


def test_reloading_an_unchanged_benchmark_file_reuses_its_tasks(
    tmp_path: Path, data_dir: Path
) -> None:
    from hf_skillfollow.tasks import load_tasks

    lines = (data_dir / "math500.jsonl").read_text().splitlines(keepends=True)[:5]
    path = tmp_path / "m.jsonl"
    path.write_text("".join(lines))
    first, v1 = load_tasks("math500", path)
    again, v2 = load_tasks("math500", path)
    assert again == first and again is not first and v1 == v2 and again[0] is first[0]
    path.write_text("".join(lines).replace('"answer": "', '"answer": "9', 1))  # new bytes
    changed, v3 = load_tasks("math500", path)
    assert v3 != v1 and [t.reference for t in changed] != [t.reference for t in first]


def test_ray_executor_problems_are_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, SMALL)
    args = ["sweep", str(path), "--executor", "ray", "-o", str(tmp_path / "o"), "--plain"]
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 1 and "no cluster address; pass --ray-address" in out.output
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    with socket.socket() as head:  # something answers at the address (it is probed first)
        head.bind(("127.0.0.1", 0))
        head.listen()
        address = f"127.0.0.1:{head.getsockname()[1]}"
        out = CliRunner().invoke(cli, [*args, "--ray-address", address])
    assert out.exit_code == 1 and "pip install 'hf-skillfollow[ray]'" in out.output
    assert "Traceback" not in out.output


def test_the_example_in_docs_sweep_md_is_a_valid_sweep(tmp_path: Path) -> None:
    doc = (REPO / "docs" / "sweep.md").read_text()
    example = doc.split("## Sweep file")[1].split("```yaml")[1].split("```")[0]
    (tmp_path / "data").mkdir()  # the example's own task file: its bytes are part of the key
    (tmp_path / "data" / "math500.jsonl").write_text("{}\n")
    _, _, cells = load(str(write(tmp_path, example)))
    # 2 models x (3 MBPP+ seeds + 1 MATH-500) x 2 max_calls, less Local-Qwen's MATH-500 (2),
    # plus Qwen3-8B x 3 MBPP+ seeds x 2 conditions x 2 max_calls
    assert len(cells) == 2 * 4 * 2 - 2 + 3 * 2 * 2 == 26
    assert "Qwen3-8B mbppplus-42 filler max_calls=3" in [c.label for c in cells]
    local = next(c for c in cells if c.model == "Local-Qwen")
    assert local.config.tool_parser == "hermes" and local.resources.num_gpus == 1


def test_cli_shards_of_the_paper_panel_add_up_to_it() -> None:
    keys: list[str] = []
    for i in (1, 2, 3):
        out = CliRunner().invoke(
            cli, ["sweep", "paper-panel", "--plan", "--json", "--shard", f"{i}/3"]
        )
        assert out.exit_code == 0, out.output
        plan = json.loads(out.output)
        assert plan["shard"] == f"{i}/3"
        keys += [j["key"] for j in plan["jobs"]]
    assert len(keys) == len(set(keys)) == PAPER_CELLS
    out = CliRunner().invoke(cli, ["sweep", "paper-panel", "--plan", "--shard", "4/3"])
    assert out.exit_code == 1 and "--shard: expected I/N with 1 <= I <= N, got '4/3'" in out.output


# Hostile sweep files (a red-team's findings): bounded work and one SweepFileError each.

HUGE = """
name: huge
models: [{name: A, model: org/a}]
benchmarks: [{benchmark: mbppplus}]
top_k: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]
axes:
  seed: [%s]
  max_calls: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
  max_tokens: [%s]
"""


def test_a_matrix_over_the_cell_cap_is_refused_before_it_is_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hf_skillfollow.sweep import _matrix

    seeds = ", ".join(str(i) for i in range(40))
    tokens = ", ".join(str(100 + i) for i in range(40))
    path = write(tmp_path, HUGE % (seeds, tokens))
    built: list[object] = []
    monkeypatch.setattr(_matrix, "_config", lambda *a: built.append(a))  # nothing is built
    with pytest.raises(SweepFileError) as info:
        load(str(path))
    assert str(info.value).startswith(f"{path}: the sweep declares 320000 runs")
    assert "more than the 10000 allowed" in str(info.value)
    assert "top_k 20 x axes.seed 40 x axes.max_calls 10 x axes.max_tokens 40" in str(info.value)
    assert built == []
    out = CliRunner().invoke(cli, ["sweep", str(path), "--plan"])
    assert out.exit_code == 1 and "320000 runs" in out.output and "Traceback" not in out.output


def test_include_blocks_and_repeats_count_towards_the_cell_cap(tmp_path: Path) -> None:
    base = "name: s\nmodels: [{name: A, model: org/a}]\nbenchmarks: [{benchmark: mbppplus}]\n"
    axis = "axes: {seed: [" + ", ".join(str(i) for i in range(5000)) + "]}\n"
    at_cap = write(tmp_path, base + axis + "repeats: 2\n", "cap.yaml")
    assert len(load(str(at_cap))[2]) == 5000  # 10,000 runs: allowed
    over = write(tmp_path, base + axis + "repeats: 3\n", "over.yaml")
    with pytest.raises(SweepFileError, match=r"15000 runs \(cells x repeats 3\)"):
        load(str(over))
    extra = "include:\n  - {top_k: [1, 2]}\n"
    with pytest.raises(SweepFileError, match=r"15000 runs .*largest block include\[0\]"):
        load(str(write(tmp_path, base + axis + extra, "inc.yaml")))


def test_deeply_nested_yaml_is_one_clear_error(tmp_path: Path) -> None:
    path = write(tmp_path, "name: x\nmodels: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(SweepFileError, match=r"not valid YAML") as info:
        read_sweep_file(path)
    assert str(info.value).startswith(str(path))


def test_yaml_anchors_and_aliases_are_refused(tmp_path: Path) -> None:
    text = (
        "name: x\nmodel_defaults: &d {backend: openai}\nsettings: *d\n"
        "models: [{name: A, model: org/a}]\nbenchmarks: [{benchmark: mbppplus}]\n"
    )
    with pytest.raises(SweepFileError, match=r"anchors and aliases .* not allowed .*line 2"):
        read_sweep_file(write(tmp_path, text))


def test_only_a_bounded_regular_file_is_read(tmp_path: Path) -> None:
    import os

    small = SMALL + "description: '" + "x" * 1000 + "'\n"
    assert read_sweep_file(write(tmp_path, small, "ok.yaml")).name == "small"
    big = write(tmp_path, SMALL + "# " + "x" * 1024 * 1024 + "\n", "big.yaml")  # 1 MiB cap
    with pytest.raises(SweepFileError, match=r"big.yaml: .*more than the 1048576 "):
        read_sweep_file(big)
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)  # opening it for reading would block without O_NONBLOCK
    with pytest.raises(SweepFileError, match=r"fifo.yaml: .*not a regular file"):
        read_sweep_file(fifo)
    with pytest.raises(SweepFileError, match=r"not a regular file"):
        read_sweep_file(Path("/dev/zero"))


def test_cells_whose_labels_differ_only_after_80_characters_get_their_own_folders(
    tmp_path: Path,
) -> None:
    long = "M" * 90
    text = (
        f"name: s\nmodels:\n  - {{name: {long}x, model: org/a}}\n  - {{name: {long}y, model: org/b}}\n"
        "benchmarks: [{benchmark: mbppplus}]\n"
    )
    _, _, cells = load(str(write(tmp_path, text)))
    assert cells[0].slug == cells[1].slug  # the readable part is cut at 80 characters
    dirs = [j.run_dir for j in jobs_for(cells, tmp_path / "out")]
    assert len(set(dirs)) == 2
    assert all(d.name.endswith(f"-{c.key}-r0") for d, c in zip(dirs, cells, strict=True))

"""The dataset card: metadata, per-cell numbers from the rows, protocol, schema, caveats."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from hf_skillfollow.hub import build_repo
from hf_skillfollow.hub._card import render_card, size_category
from hf_skillfollow.hub._stats import run_stats
from hf_skillfollow.hub._summary import MAX_CARD_CELLS
from hf_skillfollow.schema import TRACES_SCHEMA, TRANSITIONS_SCHEMA, transitions_from_rows
from tests._fixtures_hub import (
    CELL_A,
    CELL_A_EXPECTED,
    CELL_B,
    CELL_B_EXPECTED,
    outcome_rows,
    two_cell_runs,
    write_run_dir,
)

CELL_HEADER = [
    "model", "benchmark", "partition", "pool / condition", "runs", "n", "errors", "n_cond", "coverage",
    "RAE [95% CI]", "OAE [95% CI]", "Δskip", "agg lift", "sign disagreement", "reportable", "re-scored",
]  # fmt: skip
KEYS = {"n": "n", "n_cond": "n_cond", "coverage": "coverage", "rae": "RAE [95% CI]", "oae": "OAE [95% CI]",
        "delta_skip": "Δskip", "agg_lift": "agg lift", "sign_disagree": "sign disagreement"}  # fmt: skip


def _card(tmp_path: Path, runs: list[Path] | None = None) -> str:
    build_repo(runs or two_cell_runs(tmp_path / "runs"), tmp_path / "repo", repo_id="org/results")
    return (tmp_path / "repo" / "README.md").read_text()


def _meta(card: str) -> dict:
    assert card.startswith("---\n")
    return yaml.safe_load(card.split("---\n")[1])


def _table(card: str, header: list[str]) -> list[dict[str, str]]:
    """Rows of the Markdown table whose header row is exactly `header`."""
    lines = card.splitlines()
    start = next(i for i, line in enumerate(lines) if _cells(line) == header)
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(header, _cells(line), strict=True)))
    return rows


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split(" | ")]


def test_metadata_declares_both_configs_and_the_tags(tmp_path: Path) -> None:
    meta = _meta(_card(tmp_path))
    assert meta["license"] == "cc-by-4.0"
    assert meta["task_categories"] == ["text-generation"]
    assert "skillfollow" in meta["tags"]
    assert meta["size_categories"] == ["n<1K"]
    assert meta["configs"] == [
        {
            "config_name": "transitions",
            "default": True,
            "data_files": [{"split": "train", "path": "data/transitions/*.parquet"}],
        },
        {
            "config_name": "traces",
            "data_files": [{"split": "train", "path": "data/traces/*.parquet"}],
        },
    ]


def test_cells_table_shows_hand_computed_numbers(tmp_path: Path) -> None:
    rows = {r["model"]: r for r in _table(_card(tmp_path), CELL_HEADER)}
    assert sorted(rows) == ["org/model-a", "org/model-b"]
    for model, expected in (("org/model-a", CELL_A_EXPECTED), ("org/model-b", CELL_B_EXPECTED)):
        got = {k: rows[model][col].split(" [")[0] for k, col in KEYS.items()}
        assert got == expected, model
    assert rows["org/model-a"]["runs"] == "2"  # two repeats pooled into one cell
    assert rows["org/model-b"]["pool / condition"] == "coding / filler"
    assert rows["org/model-a"]["RAE [95% CI]"].count("[") == 1  # the interval is shown


def test_undefined_numbers_show_as_na(tmp_path: Path) -> None:
    only_skips = {(True, False, False): 3, (False, False, False): 2}
    run = write_run_dir(tmp_path / "runs", "run-z", only_skips, model="org/never-searches")
    (row,) = _table(_card(tmp_path, [run]), CELL_HEADER)
    assert (row["n"], row["n_cond"], row["coverage"]) == ("5", "0", "0.0")
    assert (
        row["RAE [95% CI]"] == "n/a"
        and row["agg lift"] == "n/a"
        and row["sign disagreement"] == "n/a"
    )
    assert row["OAE [95% CI]"].startswith("+60.0")
    assert row["reportable"] == "no"
    assert row["re-scored"] == "not re-scored"  # no verification record published


def test_schema_tables_list_every_column_with_its_arrow_type(tmp_path: Path) -> None:
    card = _card(tmp_path)
    header = ["column", "type", "nullable", "meaning"]
    tables = [t for t in card.split("### ")[1:] if t.startswith("`t")]
    for schema, section in zip((TRANSITIONS_SCHEMA, TRACES_SCHEMA), tables, strict=True):
        rows = _table(section, header)
        assert [(r["column"], r["type"], r["nullable"]) for r in rows] == [
            (f"`{f.name}`", f"`{f.type}`", "yes" if f.nullable else "no") for f in schema
        ]
        assert all(r["meaning"] for r in rows)


def test_protocol_section_states_settings_seeds_and_coupling(tmp_path: Path) -> None:
    card = _card(tmp_path)
    header = ["prompts_hash", "access", "tool", "tool mode", "retrieval policy", "retriever", "top k", "max calls",
              "temperature", "max tokens", "backend", "seeds", "cells", "runs"]  # fmt: skip
    (row,) = _table(card, header)
    assert row == {
        "prompts_hash": "`p`", "access": "search", "tool": "not recorded (covered by prompts_hash)", "tool mode": "native",
        "retrieval policy": "auto", "retriever": "bm25s", "top k": "3", "max calls": "3", "temperature": "0.7",
        "max tokens": "8192", "backend": "openai", "seeds": "0, 1", "cells": "2", "runs": "3",
    }  # fmt: skip
    assert "share the task prompt, temperature, max tokens and\n  seed" in card


def test_tool_schema_comes_from_the_manifest_or_the_toolkit_prompts(tmp_path: Path) -> None:
    from hf_skillfollow.prompts import prompts_hash

    run = write_run_dir(tmp_path / "runs", "run-t", CELL_B, prompts_hash="custom")
    tool = {"type": "function", "function": {"name": "search_skills", "parameters": {
        "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}  # fmt: skip
    manifest = json.loads((run / "manifest.json").read_text()) | {"tool_schema": tool}
    (run / "manifest.json").write_text(json.dumps(manifest))
    ours = write_run_dir(
        tmp_path / "runs", "run-u", CELL_B, prompts_hash=prompts_hash("coding"), cell_id="c2"
    )
    card = _card(tmp_path, [run, ours])
    assert "| `custom` | search | `search_skills(query: string)` |" in card
    assert (
        f"| `{prompts_hash('coding')}` | search | `search_skills(query: string, types?: array<utility\\|procedure\\|guard>)` |"
        in card
    )


def test_card_is_deterministic_and_regenerated_from_all_rows(tmp_path: Path) -> None:
    runs = two_cell_runs(tmp_path / "runs")
    build_repo(runs, tmp_path / "one", repo_id="org/results")
    build_repo(runs[:1], tmp_path / "two", repo_id="org/results")
    build_repo(runs[1:], tmp_path / "two", repo_id="org/results")
    assert (tmp_path / "one" / "README.md").read_text() == (
        tmp_path / "two" / "README.md"
    ).read_text()


def test_no_traces_means_no_traces_config(tmp_path: Path) -> None:
    run = write_run_dir(tmp_path / "runs", "run-n", CELL_A, traces=False)
    card = _card(tmp_path, [run])
    assert [c["config_name"] for c in _meta(card)["configs"]] == ["transitions"]
    assert "### `traces`" not in card and 'load_dataset("org/results", "traces"' not in card


def test_card_states_the_caveat_and_how_to_load_and_cite(tmp_path: Path) -> None:
    card = _card(tmp_path)
    assert "RAE is a protocol-specific paired signal on a self-selected subset" in card
    assert 'load_dataset("org/results", "transitions", split="train")' in card
    assert 'load_dataset("org/results", "traces", split="train")' in card
    assert "hf-skillfollow report org/results" in card
    assert "@software{hf_skillfollow" in card


def test_markdown_special_characters_are_escaped() -> None:
    rows = outcome_rows(CELL_B, run_id="r", model="evil|model\nname")
    card = render_card(run_stats(transitions_from_rows(rows)), repo_id="org/x", has_traces=False)
    assert "| evil\\|model name |" in card


def test_long_repos_list_a_bounded_number_of_cells() -> None:
    rows = []
    for i in range(MAX_CARD_CELLS + 3):
        rows += outcome_rows(
            {(True, False, True): 1}, run_id=f"r{i}", cell_id=f"c{i:04d}", model=f"m{i:04d}"
        )
    card = render_card(run_stats(transitions_from_rows(rows)), repo_id="org/x", has_traces=False)
    assert len(_table(card, CELL_HEADER)) == MAX_CARD_CELLS
    assert (
        "3 more cell(s) are not listed here; `hf-skillfollow report org/x` shows all of them."
        in card
    )
    assert "cells" in card and "**203** cell(s)" in card
    listed = [r["model"] for r in _table(card, CELL_HEADER)]
    assert listed == [
        f"m{i:04d}" for i in range(MAX_CARD_CELLS)
    ]  # the first cells by the card's order


def test_size_categories() -> None:
    assert [size_category(n) for n in (0, 999, 1_000, 80_000, 1_000_000, 20_000_000)] == [
        "n<1K", "n<1K", "1K<n<10K", "10K<n<100K", "1M<n<10M", "10M<n<100M",
    ]  # fmt: skip

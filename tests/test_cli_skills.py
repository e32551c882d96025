"""`hf-skillfollow skills list|show|search|export` through click's runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from hf_skillfollow.cli import cli
from hf_skillfollow.skills import load_pool

SHIPPED = Path(__file__).resolve().parents[1] / "skills"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["skills", *args])
    return result.exit_code, result.output


def test_list_shows_every_skill() -> None:
    code, out = run("list", "coding")
    assert code == 0
    for folder in (SHIPPED / "coding").iterdir():
        assert folder.name in out  # shipped folders are named after their skills


def test_show_prints_the_file() -> None:
    code, out = run("show", str(SHIPPED / "math"), "modular-arithmetic")
    assert code == 0 and out == (SHIPPED / "math" / "modular-arithmetic" / "SKILL.md").read_text(
        encoding="utf-8"
    )


def test_show_unknown_skill_is_an_error() -> None:
    code, out = run("show", "math", "nope")
    assert code == 1 and "no skill named 'nope'" in out


def test_search_json_is_ranked_name_score_list() -> None:
    code, out = run(
        "search",
        "coding",
        "longest substring without repeating characters",
        "-k",
        "4",
        "--format",
        "json",
    )
    assert code == 0
    hits = json.loads(out)
    assert len(hits) == 4 and all(set(h) == {"name", "score"} for h in hits)
    assert hits[0]["name"] == "sliding-window-longest"
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)


def test_search_types_filter_and_table() -> None:
    code, out = run(
        "search", "coding", "empty input edge case", "--types", "guard", "--format", "json"
    )
    assert code == 0
    names = [h["name"] for h in json.loads(out)]
    pool = load_pool("coding")
    assert names and all(pool.get(n).type == "guard" for n in names)
    code, out = run("search", "coding", "prefix sums of an array")
    assert code == 0 and "prefix-sum" in out and "score" in out


def test_search_with_pyserini_agrees_with_default() -> None:
    query = "remainder of a large power modulo m"
    _, ours = run("search", "math", query, "--format", "json")
    code, lucene = run("search", "math", query, "--format", "json", "--retriever", "pyserini")
    assert code == 0
    assert [h["name"] for h in json.loads(ours)] == [h["name"] for h in json.loads(lucene)]
    assert [h["score"] for h in json.loads(ours)] == pytest.approx(
        [h["score"] for h in json.loads(lucene)], rel=1e-4
    )


def test_bad_flags_name_the_flag() -> None:
    code, out = run("search", "coding", "x", "--types", "utility,recipe")
    assert code == 2 and "--types" in out and "recipe" in out
    code, out = run("search", "coding", "x", "-k", "0")
    assert code == 2 and "-k" in out


def _expected_contents(path: Path) -> str:
    # Independent of the loader: description + newline + body, from the raw file.
    _, front, body = path.read_text(encoding="utf-8").split("---\n", 2)
    return yaml.safe_load(front)["description"].strip() + "\n" + body.strip("\n")


def test_export_writes_pyserini_jsonl(tmp_path: Path) -> None:
    out_file = tmp_path / "math.jsonl"
    code, _ = run("export", "math", "-o", str(out_file))
    assert code == 0
    docs = [json.loads(line) for line in out_file.read_text(encoding="utf-8").splitlines()]
    assert [d["id"] for d in docs] == sorted(p.name for p in (SHIPPED / "math").iterdir())
    for doc in docs:
        assert set(doc) == {"id", "contents"}
        assert doc["contents"] == _expected_contents(SHIPPED / "math" / doc["id"] / "SKILL.md")
    code, stdout = run("export", "math")
    assert code == 0 and stdout == out_file.read_text(encoding="utf-8")


def test_invalid_pool_errors_name_file_and_field(tmp_path: Path) -> None:
    code, out = run("list", str(tmp_path / "missing"))
    assert code == 1 and "missing" in out and "does not exist" in out
    bad = tmp_path / "pool" / "broken" / "SKILL.md"
    bad.parent.mkdir(parents=True)
    bad.write_text("---\nname: broken\ntype: utility\n---\nbody\n")
    code, out = run("search", str(tmp_path / "pool"), "query")
    assert code == 1 and str(bad) in out and "'description'" in out and "Traceback" not in out

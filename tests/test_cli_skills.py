"""`hf-skillfollow skills list|show|search|export` through click's runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from hf_skillfollow.cli import cli
from hf_skillfollow.skills import load_pool
from tests._terminal import on_a_terminal

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


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["skills", *args], env={"COLUMNS": "400"})
    return result.exit_code, result.output


def _write(root: Path, folder: str, front: str, body: str = "Body.\n") -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front}\n---\n{body}", encoding="utf-8")
    return path


def test_validate_prints_every_finding_per_skill_and_exits_1_on_errors(tmp_path: Path) -> None:
    _write(tmp_path, "good", "name: good\ndescription: Fine.")
    _write(tmp_path, "Loud", "name: Loud\ndescription: Shouts.\nauthor: me")
    bad = _write(tmp_path, "broken", "name: broken")
    (tmp_path / "good" / "logo.png").write_bytes(b"\x89PNG\x00")
    code, out = _invoke("validate", str(tmp_path))
    assert code == 1
    lines = out.splitlines()
    assert f"unusable {bad}: 1 error(s)" in lines
    assert "  error   field 'description': missing" in lines
    assert any(
        line.startswith(f"Loud {tmp_path / 'Loud' / 'SKILL.md'}: 2 warning(s)") for line in lines
    )
    assert "  warning field 'name': Skill name 'Loud' must be lowercase" in lines
    assert any(
        line.startswith("  warning front matter: unknown field(s) 'author'") for line in lines
    )
    assert "  warning logo.png: resource: holds NUL bytes (a binary file); not served" in lines
    assert lines[-1] == "3 skill(s), 2 usable: 1 error(s), 3 warning(s)"


def test_validate_clean_pool_exits_0_and_json_lists_findings(tmp_path: Path) -> None:
    code, out = _invoke("validate", "coding")
    assert code == 0 and out.splitlines()[-1] == "9 skill(s), 9 usable: 0 error(s), 0 warning(s)"
    assert out.count(": ok") == 9
    _write(tmp_path, "other", "name: alpha\ndescription: d")
    code, out = _invoke("validate", str(tmp_path), "--format", "json")
    assert code == 0
    [finding] = json.loads(out)
    assert finding["severity"] == "warning" and finding["field"] == "field 'name'"
    assert finding["file"] == str(tmp_path / "other" / "SKILL.md")
    assert "must match skill name 'alpha'" in finding["message"]


def test_list_shows_optional_fields_files_and_untyped(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "pdf",
        "name: pdf\ndescription: Reads PDFs.\nlicense: Apache-2.0\ncompatibility: Needs poppler\n"
        "metadata:\n  author: example-org",
    )
    (tmp_path / "pdf" / "scripts").mkdir()
    (tmp_path / "pdf" / "scripts" / "a.py").write_text("print(1)")
    _write(tmp_path, "typed", "name: typed\ndescription: Typed.\ntype: guard\ntags: [t1, t2]")
    code, out = _invoke("list", str(tmp_path))
    assert code == 0
    header = next(line for line in out.splitlines() if "description" in line)
    for column in ("name", "type", "tags", "license", "compatibility", "metadata", "files"):
        assert f" {column} " in header
    assert "allowed-tools" not in header  # no skill has one
    pdf = next(line for line in out.splitlines() if " pdf " in line)
    assert " - " in pdf and "Apache-2.0" in pdf and "author=example-org" in pdf
    assert pdf.rstrip(" │").endswith("1")
    typed = next(line for line in out.splitlines() if " typed " in line)
    assert "guard" in typed and "t1, t2" in typed


def test_list_warns_on_stderr_where_validate_has_more(tmp_path: Path) -> None:
    _write(tmp_path, "x", "name: y\ndescription: d")
    result = CliRunner().invoke(cli, ["skills", "list", str(tmp_path)])
    assert result.exit_code == 0
    assert "1 warning(s): `hf-skillfollow skills validate" in result.stderr


def test_skill_text_cannot_inject_markup_or_escape_sequences(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "evil",
        'name: evil\ndescription: "[bold red]boom[/bold red] :skull: \\x1b[2J\\x1b]0;pwned\\x07 \\u202e"\n'
        'license: "[link=file:///etc]x[/link]"',
    )
    (tmp_path / "evil" / "a\x1b[31m.md").write_text("x")
    (tmp_path / "[red]odd").mkdir()
    _write(tmp_path, "[red]odd", "name: odd\ndescription: d")
    for args in (("list", str(tmp_path)), ("validate", str(tmp_path))):
        code, out = _invoke(*args)
        assert code == 0, out
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    _, listed = _invoke("list", str(tmp_path))
    assert (
        "[bold red]boom[/bold red] :skull:" in listed
        and "\\x1b[2J" in listed
        and "\\u202e" in listed
    )
    assert "[link=file:///etc]x[/link]" in listed
    _, report = _invoke("validate", str(tmp_path))
    assert "a\\x1b[31m.md: resource:" in report and "[red]odd" in report


def test_errors_naming_hostile_file_names_are_escaped(tmp_path: Path) -> None:
    bad = tmp_path / "x\x1b]0;t\x07"
    _write(tmp_path, bad.name, "name: x")
    for command in ("list", "validate"):
        code, out = _invoke(command, str(tmp_path))
        assert code == 1 and "\x1b" not in out and "\x07" not in out
        assert "x\\x1b]0;t\\x07" in out and "'description'" in out


def test_show_prints_exact_bytes_to_a_pipe(tmp_path: Path) -> None:
    path = _write(tmp_path, "raw", 'name: raw\ndescription: "a\\tb"', body="tab\there\n")
    code, out = _invoke("show", str(tmp_path), "raw")
    assert code == 0 and out == path.read_text(encoding="utf-8")


def test_show_escapes_control_characters_on_a_terminal(tmp_path: Path) -> None:
    _write(tmp_path, "esc", "name: esc\ndescription: d", body="red \x1b[31mtext\x1b[0m\tend\n")
    shown = on_a_terminal("skills", "show", tmp_path, "esc")
    assert "\x1b" not in shown and "red \\x1b[31mtext\\x1b[0m\tend" in shown

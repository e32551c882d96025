"""Skill pool loading and validation (docs/design.md, "Skills"; docs/skills.md, issues 2 and 19)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_skillfollow.skills import (
    SkillPoolError,
    collection_documents,
    index_text,
    load_pool,
    merged_pool,
)

CODING = [
    "binary-search-boundary", "counting-hash", "dfs-iterative", "edge-case-guard", "knapsack-01-dp",
    "prefix-sum", "rotate-left", "sliding-window-longest", "two-pointer-pair-sum",
]  # fmt: skip
MATH = [
    "algebraic-substitution", "case-analysis", "check-by-substitution", "coordinate-distance",
    "factor-then-solve", "modular-arithmetic", "sequence-formulae", "systematic-enumeration",
]  # fmt: skip


def write_skill(root: Path, folder: str, text: str) -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def skill_md(
    name: str = "alpha",
    description: str = "Does alpha things.",
    type_: str = "utility",
    body: str = "## Body\n\nUse alpha.\n",
    extra: str = "",
) -> str:
    return f"---\nname: {name}\ndescription: {description}\nsignature: f(x) -> int\ntype: {type_}\n{extra}---\n{body}"


def test_valid_pool_loads_fields_in_name_order(tmp_path: Path) -> None:
    write_skill(
        tmp_path,
        "z-folder",
        skill_md("beta", "Beta skill.", "guard", "Check beta.\n", "tags: [b, c]\n"),
    )
    write_skill(
        tmp_path, "a-folder", skill_md("gamma", "Gamma skill.", "procedure", "Step gamma.\n")
    )
    write_skill(tmp_path, "m-folder", skill_md("alpha"))
    (tmp_path / "not-a-skill").mkdir()  # folders without SKILL.md are not skills
    pool = load_pool(tmp_path)
    assert pool.names == ["alpha", "beta", "gamma"]
    assert pool.name == tmp_path.name
    beta = pool.get("beta")
    assert (beta.type, beta.tags, beta.signature, beta.body) == (
        "guard",
        ("b", "c"),
        "f(x) -> int",
        "Check beta.",
    )
    assert beta.path == tmp_path / "z-folder" / "SKILL.md"
    assert index_text(beta) == "Beta skill.\nCheck beta."
    assert collection_documents(pool)[1] == {"id": "beta", "contents": "Beta skill.\nCheck beta."}
    with pytest.raises(KeyError, match="no skill named 'delta'"):
        pool.get("delta")


def test_content_hash_tracks_content_not_layout(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    write_skill(a, "one", skill_md("alpha"))
    write_skill(a, "two", skill_md("beta"))
    write_skill(b, "x", skill_md("beta").replace("\n", "\r\n"))  # CRLF and other folder names
    write_skill(b, "y", skill_md("alpha"))
    h = load_pool(a).content_hash
    assert len(h) == 64 and h == load_pool(b).content_hash
    write_skill(b, "y", skill_md("alpha", body="## Body\n\nUse alpha twice.\n"))
    assert load_pool(b).content_hash != h


@pytest.mark.parametrize(
    ("text", "field", "needle"),
    [
        ("name: alpha\n\nbody\n", "front matter", "must start with a '---' line"),
        (
            "---\nname: alpha\ndescription: d\ntype: utility\nbody without end\n",
            "front matter",
            "no closing",
        ),
        ("---\nname: [alpha\n---\nbody\n", "front matter", "malformed YAML"),
        ("---\n- a\n- b\n---\nbody\n", "front matter", "expected a YAML mapping"),
        ("---\ndescription: d\ntype: utility\n---\nbody\n", "'name'", "missing"),
        ("---\nname: alpha\ntype: utility\n---\nbody\n", "'description'", "missing"),
        (
            "---\nname: alpha\ndescription: '  '\ntype: utility\n---\nbody\n",
            "'description'",
            "non-empty string",
        ),
        # `42` is the string "42" as skills-ref reads it (a valid name); a list is not a name
        ("---\nname: [42]\ndescription: d\n---\nbody\n", "'name'", "non-empty string"),
        (
            '---\nname: "al\\x1bpha"\ndescription: d\n---\nbody\n',
            "'name'",
            "control characters",
        ),
    ],
)
def test_invalid_skill_names_file_and_field(
    tmp_path: Path, text: str, field: str, needle: str
) -> None:
    write_skill(tmp_path, "good", skill_md("good"))
    bad = write_skill(tmp_path, "bad", text)
    with pytest.raises(SkillPoolError) as info:
        load_pool(tmp_path)
    message = str(info.value)
    assert str(bad) in message and field in message and needle in message


def test_duplicate_names_name_both_files(tmp_path: Path) -> None:
    first = write_skill(tmp_path, "one", skill_md("same"))
    second = write_skill(tmp_path, "two", skill_md("same"))
    with pytest.raises(SkillPoolError, match="duplicate skill name 'same'") as info:
        load_pool(tmp_path)
    assert str(first) in str(info.value) and str(second) in str(info.value)


def test_missing_and_empty_directories(tmp_path: Path) -> None:
    with pytest.raises(SkillPoolError, match="does not exist"):
        load_pool(tmp_path / "nowhere")
    with pytest.raises(SkillPoolError, match=f"{tmp_path}: skill pool is empty"):
        load_pool(tmp_path)
    file = tmp_path / "file.md"
    file.write_text("x")
    with pytest.raises(SkillPoolError, match="must be a directory"):
        load_pool(file)
    with pytest.raises(SkillPoolError, match="neither a directory nor a shipped pool"):
        load_pool("no-such-pool")


def test_non_utf8_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "bin" / "SKILL.md"
    path.parent.mkdir()
    path.write_bytes(b"---\nname: \xff\xfe\n---\n")
    with pytest.raises(SkillPoolError, match="not UTF-8"):
        load_pool(tmp_path)


@pytest.mark.parametrize(("name", "expected"), [("coding", CODING), ("math", MATH)])
def test_shipped_pools_load_by_name(name: str, expected: list[str]) -> None:
    pool = load_pool(name)
    assert pool.name == name and pool.names == expected
    assert all(s.body.strip() and s.description for s in pool.skills)


def test_merged_pool_holds_both_and_rejects_duplicates(tmp_path: Path) -> None:
    merged = merged_pool([load_pool("coding"), load_pool("math")])
    assert merged.name == "coding+math" and merged.names == sorted(CODING + MATH)
    write_skill(tmp_path, "p", skill_md("prefix-sum"))
    with pytest.raises(SkillPoolError, match="duplicate skill name 'prefix-sum'"):
        merged_pool([load_pool("coding"), load_pool(tmp_path)])
    with pytest.raises(SkillPoolError, match="no pools"):
        merged_pool([])


def _billion_laughs(levels: int = 9) -> str:
    lines = ['lol0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels + 1):
        lines.append(f"lol{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join(lines) + f"\nname: *l{levels}\n"


def test_yaml_alias_bomb_is_refused_quickly_with_a_short_message(tmp_path: Path) -> None:
    """9 levels of 9 aliases describe 9**10 strings; loading must neither expand nor print them.

    Run in a child with 1 GiB of address space and a hard timeout, so a regression fails the
    test instead of exhausting the machine.
    """
    import resource
    import subprocess
    import sys

    path = write_skill(
        tmp_path, "bomb", f"---\n{_billion_laughs()}description: d\ntype: utility\n---\nbody\n"
    )
    code = (
        "import sys\nfrom hf_skillfollow.skills import load_pool, SkillPoolError\n"
        f"try:\n    load_pool({str(tmp_path)!r})\nexcept SkillPoolError as exc:\n"
        "    print(exc)\n    sys.exit(0)\nsys.exit(3)\n"
    )

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, preexec_fn=limit
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    message = proc.stdout.strip()
    assert message.startswith(f"{path}: front matter:") and "alias" in message
    assert len(message) < 300 and "\n" not in message


def test_huge_front_matter_and_huge_values_give_bounded_messages(tmp_path: Path) -> None:
    big = write_skill(
        tmp_path / "a",
        "big",
        f"---\nname: x\ndescription: {'y' * 70_000}\ntype: utility\n---\nbody\n",
    )
    with pytest.raises(SkillPoolError) as info:
        load_pool(tmp_path / "a")
    assert str(info.value).startswith(f"{big}: front matter:") and len(str(info.value)) < 300

    items = ", ".join(str(i) for i in range(5_000))
    wide = write_skill(
        tmp_path / "b", "wide", f"---\nname: x\ndescription: [{items}]\ntype: utility\n---\nbody\n"
    )
    with pytest.raises(SkillPoolError) as info:
        load_pool(tmp_path / "b")
    assert str(info.value).startswith(f"{wide}: field 'description'") and len(str(info.value)) < 400

"""Skill folders as the Agent Skills spec defines them (issue 19 part 1; docs/skills.md).

Every fixture is built here in the spec's shapes (flat pools, repository layouts, resources);
no third-party skill is copied into the repository.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hf_skillfollow import _skill_files
from hf_skillfollow.skills import (
    MAX_RESOURCE_BYTES,
    SkillFileError,
    SkillPoolError,
    catalog_prompt,
    load_pool,
    read_resource,
    validate_pool,
)


def spec_skill(root: Path, folder: str, name: str | None = None, **fields: str) -> Path:
    """A spec-only SKILL.md (name and description, no toolkit fields) at root/folder."""
    lines = [f"name: {name or Path(folder).name}"]
    lines.append(f"description: {fields.pop('description', 'Does ' + (name or folder) + '.')}")
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in fields.items()]
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("---\n" + "\n".join(lines) + "\n---\n# Use it\n\nSteps.\n", encoding="utf-8")
    return path


def findings_of(root: Path) -> list[tuple[str, str, str, str]]:
    """(severity, file relative to root, field, message) of every finding of the pool."""
    report = validate_pool(root)
    return [
        (f.severity, f.file.relative_to(root).as_posix(), f.field, f.message)
        for f in report.all_findings
    ]


# --- the accepted format ---------------------------------------------------------------


def test_a_spec_only_skill_is_untyped_and_keeps_its_optional_fields(tmp_path: Path) -> None:
    path = tmp_path / "pdf-processing" / "SKILL.md"
    path.parent.mkdir()
    path.write_text(
        "---\nname: pdf-processing\ndescription: Extract PDF text. Use when handling PDFs.\n"
        "license: Apache-2.0\ncompatibility: Requires poppler\n"
        "metadata:\n  author: example-org\n  version: 1.0\n"
        "allowed-tools: Bash(git:*) Read\n---\n# PDF\n\nRun the script.\n",
        encoding="utf-8",
    )
    pool = load_pool(tmp_path)
    skill = pool.get("pdf-processing")
    assert (skill.type, skill.signature, skill.tags) == (None, "", ())
    assert skill.license == "Apache-2.0" and skill.compatibility == "Requires poppler"
    # skills-ref turns scalar metadata values into strings; so does this loader
    assert skill.metadata == {"author": "example-org", "version": "1.0"}
    assert skill.allowed_tools == "Bash(git:*) Read"
    assert skill.folder == path.parent and skill.body == "# PDF\n\nRun the script."
    assert pool.findings == ()


def test_toolkit_fields_stay_optional_extensions(tmp_path: Path) -> None:
    path = spec_skill(tmp_path, "alpha", type="guard", signature="f(x) -> int", tags="[a, b]")
    skill = load_pool(tmp_path).get("alpha")
    assert (skill.type, skill.signature, skill.tags) == ("guard", "f(x) -> int", ("a", "b"))
    assert validate_pool(tmp_path).all_findings == []
    assert skill.path == path


# --- discovery ---------------------------------------------------------------------------


@pytest.mark.parametrize("container", ["skills", ".claude/skills", ".agents/skills"])
def test_a_repository_root_is_scanned_through_its_skills_folder(
    tmp_path: Path, container: str
) -> None:
    spec_skill(tmp_path, f"{container}/alpha")
    spec_skill(tmp_path, f"{container}/beta")
    (tmp_path / "README.md").write_text("not a skill")
    assert load_pool(tmp_path).names == ["alpha", "beta"]


def test_a_skills_folder_wins_over_skill_folders_at_the_repository_root(tmp_path: Path) -> None:
    """A repository keeps its skills in skills/; a root-level template/SKILL.md is not one."""
    spec_skill(tmp_path, "skills/alpha")
    spec_skill(tmp_path, "template", name="template-skill")
    assert load_pool(tmp_path).names == ["alpha"]
    assert load_pool(tmp_path / "skills").names == ["alpha"]


def test_nested_categories_and_all_containers_are_found(tmp_path: Path) -> None:
    spec_skill(tmp_path, "skills/coding/alpha")
    spec_skill(tmp_path, "skills/math/algebra/beta")
    spec_skill(tmp_path, ".agents/skills/gamma")
    spec_skill(tmp_path, ".claude/skills/delta")
    pool = load_pool(tmp_path)
    assert pool.names == ["alpha", "beta", "delta", "gamma"]
    assert pool.get("beta").folder == tmp_path / "skills/math/algebra/beta"


def test_a_skill_folder_is_not_searched_for_more_skills(tmp_path: Path) -> None:
    spec_skill(tmp_path, "outer")
    spec_skill(tmp_path, "outer/examples/inner")
    pool = load_pool(tmp_path)
    assert pool.names == ["outer"]
    assert pool.get("outer").resources == ("examples/inner/SKILL.md",)


def test_one_skill_folder_is_a_pool_of_one(tmp_path: Path) -> None:
    skill_md = spec_skill(tmp_path, "solo")
    assert load_pool(tmp_path / "solo").names == ["solo"]
    assert load_pool(skill_md).names == ["solo"]  # its SKILL.md stands for the folder
    assert validate_pool(skill_md).root == tmp_path / "solo"


def test_git_node_modules_and_hidden_folders_are_skipped(tmp_path: Path) -> None:
    spec_skill(tmp_path, "alpha")
    spec_skill(tmp_path, "node_modules/pkg")
    spec_skill(tmp_path, ".git/hooks")
    spec_skill(tmp_path, ".cache/thing")
    spec_skill(tmp_path, "lib/node_modules/dep")
    assert load_pool(tmp_path).names == ["alpha"]


def test_scan_depth_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deep = "/".join(f"d{i}" for i in range(_skill_files.MAX_SCAN_DEPTH))
    spec_skill(tmp_path, f"{deep}/too-deep")
    spec_skill(tmp_path, "shallow")
    assert load_pool(tmp_path).names == ["shallow"]
    monkeypatch.setattr(_skill_files, "MAX_SCAN_DEPTH", _skill_files.MAX_SCAN_DEPTH + 1)
    assert load_pool(tmp_path).names == ["shallow", "too-deep"]


def test_scanning_too_many_folders_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_skill_files, "MAX_SCAN_DIRS", 20)
    for i in range(25):
        (tmp_path / f"empty{i:02}").mkdir()
    spec_skill(tmp_path, "zz-last")
    with pytest.raises(SkillPoolError, match=r"more than 20 folders; point POOL at the folder"):
        load_pool(tmp_path)


def test_a_lower_case_skill_md_is_a_warning_not_a_skill(tmp_path: Path) -> None:
    spec_skill(tmp_path, "alpha")
    (tmp_path / "beta").mkdir()
    (tmp_path / "beta" / "skill.md").write_text("---\nname: beta\ndescription: d\n---\nx\n")
    pool = load_pool(tmp_path)
    assert pool.names == ["alpha"]
    assert [(f.severity, f.file.name, f.field) for f in pool.findings] == [
        ("warning", "skill.md", "file")
    ]


def test_a_name_collision_across_containers_names_both_files(tmp_path: Path) -> None:
    first = spec_skill(tmp_path, ".agents/skills/review", name="code-review")
    second = spec_skill(tmp_path, "skills/review", name="code-review")
    with pytest.raises(SkillPoolError, match="duplicate skill name 'code-review'") as info:
        load_pool(tmp_path)
    message = str(info.value)
    assert str(first) in message and str(second) in message


def test_empty_repository_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "skills").mkdir()
    (tmp_path / "skills" / "README.md").write_text("nothing here")
    with pytest.raises(SkillPoolError, match="skill pool is empty"):
        load_pool(tmp_path)


# --- diagnostics: warnings ---------------------------------------------------------------

WARNINGS = [
    # (folder, front-matter lines, field, message pattern)
    ("other-folder", "name: alpha", "field 'name'", "Directory name 'other-folder' must match"),
    ("Alpha", "name: Alpha", "field 'name'", "must be lowercase"),
    # attributed to 'name' although the folder's name holds another field's
    ("description-of", "name: d-o", "field 'name'", "Directory name 'description-of'"),
    ("a" * 65, f"name: {'a' * 65}", "field 'name'", "exceeds 64 character limit"),
    ("a--b", "name: a--b", "field 'name'", "consecutive hyphens"),
    ("-ab", "name: -ab", "field 'name'", "start or end with a hyphen"),
    ("my skill", "name: my skill", "field 'name'", "invalid characters"),
    ("alpha", f"name: alpha\ndescription: {'d' * 1025}", "field 'description'", "1024"),
    ("alpha", f"name: alpha\ncompatibility: {'c' * 501}", "field 'compatibility'", "500"),
    ("alpha", "name: alpha\ncompatibility: [x]", "field 'compatibility'", "must be a string"),
    ("alpha", "name: alpha\nauthor: me\nversion: 2", "front matter", "unknown field.*'author'"),
    ("alpha", 'name: alpha\ndescription: "a\\x1b[2Jb"', "field 'description'", "control char"),
    ("alpha", "name: alpha\ntype: recipe", "field 'type'", "utility|procedure|guard"),
    ("alpha", "name: alpha\ntags: x", "field 'tags'", "list of strings"),
    ("alpha", "name: alpha\nsignature: [1]", "field 'signature'", "a string"),
    ("alpha", "name: alpha\nlicense: {a: b}", "field 'license'", "a string"),
    ("alpha", "name: alpha\nmetadata: [a]", "field 'metadata'", "mapping"),
    ("alpha", "name: alpha\nmetadata:\n  deep: {x: 1}", "field 'metadata'", "'deep'"),
    ("alpha", "name: alpha\nallowed-tools: [Read, Bash]", "field 'allowed-tools'", "joined"),
    ("alpha", "name: alpha\nallowed-tools: {a: 3}", "field 'allowed-tools'", "space-separated"),
]


@pytest.mark.parametrize(("folder", "front", "field", "pattern"), WARNINGS)
def test_a_usable_violation_is_a_warning_and_the_skill_loads(
    tmp_path: Path, folder: str, front: str, field: str, pattern: str
) -> None:
    if "description:" not in front:
        front += "\ndescription: Does things."
    path = tmp_path / folder / "SKILL.md"
    path.parent.mkdir()
    path.write_text(f"---\n{front}\n---\nBody.\n", encoding="utf-8")
    pool = load_pool(tmp_path)
    assert len(pool) == 1
    found = [(f.severity, f.file, f.field) for f in pool.findings]
    assert ("warning", path, field) in found, pool.findings
    assert any(re.search(pattern, f.message) for f in pool.findings if f.field == field)


def test_an_unquoted_colon_is_read_as_quoted_with_a_warning(tmp_path: Path) -> None:
    """The client guide's most common invalid YAML, accepted by other clients' parsers."""
    path = tmp_path / "pdf" / "SKILL.md"
    path.parent.mkdir()
    path.write_text(
        "---\nname: pdf\ndescription: Use this skill when: the user's file is a PDF\n"
        "compatibility: needs: poppler\nlicense: MIT\n---\nBody.\n"
    )
    pool = load_pool(tmp_path)
    skill = pool.get("pdf")
    assert skill.description == "Use this skill when: the user's file is a PDF"
    assert (skill.compatibility, skill.license) == ("needs: poppler", "MIT")
    assert [(f.severity, f.field, f.message) for f in pool.findings] == [
        (
            "warning",
            "front matter",
            "not valid YAML: the value of 'description', 'compatibility' holds ': ' unquoted;"
            " read as if quoted",
        )
    ]


def test_yaml_the_colon_fallback_cannot_fix_stays_an_error(tmp_path: Path) -> None:
    path = tmp_path / "pdf" / "SKILL.md"
    path.parent.mkdir()
    path.write_text("---\nname: pdf\ndescription: a: b\ntags: [x\n---\nBody.\n")
    with pytest.raises(SkillPoolError, match="front matter: malformed YAML"):
        load_pool(tmp_path)


def test_a_bad_optional_value_is_dropped_not_half_kept(tmp_path: Path) -> None:
    spec_skill(tmp_path, "alpha", type="recipe", tags="x", allowed_tools="[Read, Bash]")
    skill = load_pool(tmp_path).get("alpha")
    assert (skill.type, skill.tags, skill.allowed_tools) == (None, (), "Read Bash")


def test_an_empty_body_is_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "alpha" / "SKILL.md"
    path.parent.mkdir()
    path.write_text("---\nname: alpha\ndescription: d\n---\n\n  \n")
    assert findings_of(tmp_path) == [
        (
            "warning",
            "alpha/SKILL.md",
            "body",
            "empty (the Markdown after the front matter has no text)",
        )
    ]
    assert load_pool(tmp_path).get("alpha").body.strip() == ""


# --- diagnostics: errors, all of them collected -------------------------------------------


def test_validate_collects_every_error_and_load_names_the_first(tmp_path: Path) -> None:
    spec_skill(tmp_path, "good")
    (tmp_path / "no-front").mkdir()
    (tmp_path / "no-front" / "SKILL.md").write_text("# just markdown\n")
    (tmp_path / "no-desc").mkdir()
    (tmp_path / "no-desc" / "SKILL.md").write_text("---\nname: no-desc\n---\nbody\n")
    (tmp_path / "bad-yaml").mkdir()
    (tmp_path / "bad-yaml" / "SKILL.md").write_text("---\nname: [x\ndescription: d\n---\nb\n")
    report = validate_pool(tmp_path)
    errors = [(f.file.parent.name, f.field) for f in report.errors]
    assert errors == [
        ("bad-yaml", "front matter"),
        ("no-desc", "field 'description'"),
        ("no-front", "front matter"),
    ]
    assert [r.skill.name for r in report.skills if r.skill] == ["good"] and not report.ok
    with pytest.raises(SkillPoolError) as info:
        load_pool(tmp_path)
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'bad-yaml' / 'SKILL.md'}: front matter: malformed")
    assert "(and 2 more; `hf-skillfollow skills validate` lists them all)" in message


# --- resources -----------------------------------------------------------------------------


def _with_resources(root: Path) -> Path:
    spec_skill(root, "pdf")
    folder = root / "pdf"
    (folder / "scripts").mkdir()
    (folder / "scripts" / "extract.py").write_text("print('x')\r\n", encoding="utf-8")
    (folder / "references").mkdir()
    (folder / "references" / "REFERENCE.md").write_text("# Ref\n", encoding="utf-8")
    (folder / "assets").mkdir()
    (folder / "assets" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (folder / "notes.txt").write_text("plain", encoding="utf-8")
    (folder / ".DS_Store").write_bytes(b"\x00\x01")
    (folder / "node_modules").mkdir()
    (folder / "node_modules" / "dep.js").write_text("x")
    return folder


def test_every_other_text_file_is_a_listed_resource(tmp_path: Path) -> None:
    folder = _with_resources(tmp_path)
    skill = load_pool(tmp_path).get("pdf")
    assert skill.resources == ("notes.txt", "references/REFERENCE.md", "scripts/extract.py")
    assert read_resource(skill, "scripts/extract.py") == "print('x')\n"  # CRLF normalised
    assert read_resource(skill, "references/REFERENCE.md") == "# Ref\n"
    logo = [f for f in load_pool(tmp_path).findings if f.file == folder / "assets" / "logo.png"]
    assert [(f.severity, f.field) for f in logo] == [("warning", "resource")]
    assert "NUL bytes" in logo[0].message


@pytest.mark.parametrize(
    ("relpath", "reason"),
    [
        ("../pdf/notes.txt", "outside the skill folder"),
        ("/etc/passwd", "outside the skill folder"),
        ("..", "outside the skill folder"),
        ("SKILL.md", "the SKILL.md itself"),
        ("scripts", "not a file of this skill"),
        ("scripts/missing.py", "not a file of this skill"),
        ("./notes.txt", "not a file of this skill"),
        ("assets/logo.png", "NUL bytes"),
        (".DS_Store", "not a file of this skill"),
        ("node_modules/dep.js", "not a file of this skill"),
    ],
)
def test_read_resource_refuses_anything_not_listed(
    tmp_path: Path, relpath: str, reason: str
) -> None:
    _with_resources(tmp_path)
    skill = load_pool(tmp_path).get("pdf")
    with pytest.raises(SkillFileError, match=re.escape(reason)) as info:
        read_resource(skill, relpath)
    assert "'pdf'" in str(info.value) and isinstance(info.value, SkillPoolError)


def test_resources_are_read_at_load_time_not_when_served(tmp_path: Path) -> None:
    folder = _with_resources(tmp_path)
    skill = load_pool(tmp_path).get("pdf")
    (folder / "notes.txt").write_text("changed after loading")
    assert read_resource(skill, "notes.txt") == "plain"  # what was hashed is what is served


def test_a_file_over_the_cap_is_not_served(tmp_path: Path) -> None:
    spec_skill(tmp_path, "big")
    (tmp_path / "big" / "exact.md").write_text("x" * MAX_RESOURCE_BYTES)
    (tmp_path / "big" / "over.md").write_text("x" * (MAX_RESOURCE_BYTES + 1))
    skill = load_pool(tmp_path).get("big")
    assert skill.resources == ("exact.md",)
    with pytest.raises(SkillFileError, match=f"more than the {MAX_RESOURCE_BYTES} allowed"):
        read_resource(skill, "over.md")


def test_symlinks_inside_the_folder_are_served_and_escapes_are_not(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("TOKEN=hunter2")
    spec_skill(tmp_path / "pool", "alpha")
    folder = tmp_path / "pool" / "alpha"
    (folder / "real.md").write_text("real")
    (folder / "alias.md").symlink_to("real.md")
    (folder / "escape.md").symlink_to(outside)
    (folder / "dotdot.md").symlink_to("../../secret.txt")
    (folder / "dangling.md").symlink_to("nowhere.md")
    (folder / "loop").symlink_to(folder)
    skill = load_pool(tmp_path / "pool").get("alpha")
    assert skill.resources == ("alias.md", "real.md")
    assert read_resource(skill, "alias.md") == "real"
    for rel, reason in [
        ("escape.md", "outside the skill folder"),
        ("dotdot.md", "outside the skill folder"),
        ("dangling.md", "dangling"),
        ("loop", "symlinked folder"),
    ]:
        with pytest.raises(SkillFileError, match=reason):
            read_resource(skill, rel)
    assert "hunter2" not in "".join(skill.resource_texts)


def test_resources_deeper_than_the_bound_are_not_listed(tmp_path: Path) -> None:
    spec_skill(tmp_path, "alpha")
    folder = tmp_path / "alpha"
    ok = folder.joinpath(*[f"l{i}" for i in range(_skill_files.MAX_RESOURCE_DEPTH - 1)])
    ok.mkdir(parents=True)
    (ok / "ok.md").write_text("ok")
    (ok / "deeper").mkdir()
    (ok / "deeper" / "no.md").write_text("no")
    pool = load_pool(tmp_path)
    assert pool.get("alpha").resources == ((ok / "ok.md").relative_to(folder).as_posix(),)
    assert [f.file.name for f in pool.findings] == ["deeper"]


# --- the content hash --------------------------------------------------------------------


def test_the_hash_covers_every_served_file(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for root in (a, b):
        _with_resources(root)
    assert load_pool(a).content_hash == load_pool(b).content_hash
    (b / "pdf" / "references" / "REFERENCE.md").write_text("# Ref, edited\n")
    assert load_pool(a).content_hash != load_pool(b).content_hash
    (b / "pdf" / "references" / "REFERENCE.md").write_text("# Ref\n")
    (b / "pdf" / "references" / "EXTRA.md").write_text("")  # an empty file is still a file
    assert load_pool(a).content_hash != load_pool(b).content_hash


def test_files_that_are_not_served_do_not_enter_the_hash(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for root in (a, b):
        _with_resources(root)
    (b / "pdf" / "assets" / "logo.png").write_bytes(b"\x00other binary")
    (b / "pdf" / ".hidden").write_text("hidden")
    assert load_pool(a).content_hash == load_pool(b).content_hash


def test_renaming_a_resource_changes_the_hash(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for root in (a, b):
        _with_resources(root)
    (b / "pdf" / "notes.txt").rename(b / "pdf" / "notes2.txt")
    assert load_pool(a).content_hash != load_pool(b).content_hash


def test_shipped_pool_hashes_are_unchanged_by_resource_hashing() -> None:
    """Pinned to the values the loader gave before resources counted (commit 10a1102).

    The shipped pools hold no resource files, so their hash, and every published cell id built
    on it, must not move.
    """
    assert load_pool("coding").content_hash == (
        "af950ee4022bb336508776210ba483e9e4ce162d7894e32efe5771a276bcb49d"
    )
    assert load_pool("math").content_hash == (
        "9cf2e54cf75196240d8b680aa7ac2d92773c0541a6bd89b1323aec81f3896f96"
    )
    for name in ("coding", "math"):
        pool = load_pool(name)
        assert all(not s.resources for s in pool) and pool.findings == (), name


# --- the catalog -------------------------------------------------------------------------


def test_catalog_is_skills_ref_to_prompt_without_location(tmp_path: Path) -> None:
    from skills_ref import to_prompt

    spec_skill(tmp_path, "beta", description="Quotes \"x\" & 'y' <tag>.")
    spec_skill(tmp_path, "alpha", description="Plain.")
    dirs = [tmp_path / "alpha", tmp_path / "beta"]
    reference = to_prompt(dirs)
    assert "<location>" in reference
    without = re.sub(r"<location>\n[^\n]*\n</location>\n", "", reference)
    catalog = catalog_prompt(load_pool(tmp_path))
    assert catalog == without
    assert str(tmp_path) not in catalog and "location" not in catalog
    assert "&quot;x&quot; &amp; &#x27;y&#x27; &lt;tag&gt;." in catalog


def test_catalog_depends_on_names_and_descriptions_only(tmp_path: Path) -> None:
    a, b = tmp_path / "one" / "a", tmp_path / "two" / "b"
    spec_skill(a, "x", description="X.")
    spec_skill(b, "x", description="X.")
    (b / "x" / "extra.md").write_text("more")
    assert (
        catalog_prompt(load_pool(a))
        == catalog_prompt(load_pool(b))
        == (
            "<available_skills>\n<skill>\n<name>\nx\n</name>\n<description>\nX.\n</description>\n"
            "</skill>\n</available_skills>"
        )
    )


# --- untyped skills in search ----------------------------------------------------------


@pytest.mark.parametrize("backend", ["bm25s", "pyserini"])
def test_a_types_filter_never_returns_an_untyped_skill(tmp_path: Path, backend: str) -> None:
    from hf_skillfollow.retrieval import make_retriever

    spec_skill(tmp_path, "typed", description="Sliding window over arrays.", type="utility")
    spec_skill(tmp_path, "untyped", description="Sliding window over strings.")
    retriever = make_retriever(backend, load_pool(tmp_path))
    assert {h.name for h in retriever.search("sliding window", k=5)} == {"typed", "untyped"}
    assert [h.name for h in retriever.search("sliding window", k=5, types=["utility"])] == ["typed"]
    assert retriever.search("sliding window", k=5, types=["guard", "procedure"]) == []

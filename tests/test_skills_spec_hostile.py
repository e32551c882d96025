"""Hostile skill folders: bounded work and one clear error (docs/skills.md, "Hostile input").

Each attack runs in a child process with a memory cap and a hard timeout where a regression
could otherwise exhaust the machine or hang (a FIFO, /dev/zero, a sparse 16 GiB file).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from hf_skillfollow import _skill_files
from hf_skillfollow.skills import SkillPoolError, load_pool, read_resource, validate_pool

SPEC_FRONT = "---\nname: {name}\ndescription: Does {name}.\n---\nBody.\n"


def skill(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(SPEC_FRONT.format(name=name), encoding="utf-8")
    return folder


def load_in_child(root: Path, timeout: float = 60) -> tuple[int, str]:
    """Run `load_pool(root)` in a child with 1 GiB of address space; (exit code, message)."""
    code = (
        "import sys\nfrom hf_skillfollow.skills import load_pool, SkillPoolError\n"
        f"try:\n    pool = load_pool({str(root)!r})\nexcept SkillPoolError as exc:\n"
        "    print(exc)\n    sys.exit(3)\n"
        "print(' '.join(pool.names))\nfor s in pool.skills: print(s.name, *s.resources)\n"
        "for f in pool.findings: print(f)\n"
    )

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=limit,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    return proc.returncode, proc.stdout


def test_skill_md_symlinked_to_dev_zero_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "zero").mkdir()
    (tmp_path / "zero" / "SKILL.md").symlink_to("/dev/zero")
    code, out = load_in_child(tmp_path)
    assert code == 3 and out.startswith(f"{tmp_path / 'zero' / 'SKILL.md'}: file: a symlink")
    assert len(out) < 300


def test_a_resource_symlinked_to_dev_zero_is_never_read(tmp_path: Path) -> None:
    folder = skill(tmp_path, "alpha")
    (folder / "zero.bin").symlink_to("/dev/zero")
    (folder / "urandom").symlink_to("/dev/urandom")
    code, out = load_in_child(tmp_path)
    assert code == 0 and out.splitlines()[1] == "alpha"  # no resources
    assert "zero.bin: resource: a symlink leading outside the skill folder" in out


def test_a_fifo_does_not_block_the_loader(tmp_path: Path) -> None:
    folder = skill(tmp_path, "alpha")
    os.mkfifo(folder / "pipe")
    os.mkfifo(tmp_path / "beta-fifo")
    (tmp_path / "beta").mkdir()
    os.mkfifo(tmp_path / "beta" / "SKILL.md")
    code, out = load_in_child(tmp_path, timeout=30)
    assert code == 3 and f"{tmp_path / 'beta' / 'SKILL.md'}: file: is not a regular file" in out
    report = validate_pool(tmp_path)
    pipe = [f for f in report.all_findings if f.file == folder / "pipe"]
    assert [(f.severity, f.message) for f in pipe] == [
        ("warning", "is not a regular file; not served")
    ]


@pytest.mark.parametrize("where", ["SKILL.md", "resource"])
def test_a_sparse_16_gib_file_is_refused_from_its_size(tmp_path: Path, where: str) -> None:
    folder = skill(tmp_path, "alpha")
    target = folder / ("SKILL.md" if where == "SKILL.md" else "huge.md")
    with open(target, "r+b" if target.exists() else "wb") as fh:
        fh.truncate(16 << 30)
    code, out = load_in_child(tmp_path)
    if where == "SKILL.md":
        assert code == 3
        assert out.startswith(f"{target}: file: {16 << 30} bytes, more than the 1048576 allowed")
    else:
        assert code == 0 and f"{target}: resource: {16 << 30} bytes, more than the" in out


def test_a_skill_md_just_over_the_cap_is_refused(tmp_path: Path) -> None:
    folder = skill(tmp_path, "alpha")
    body = SPEC_FRONT.format(name="alpha")
    (folder / "SKILL.md").write_text(body + "x" * (_skill_files.MAX_SKILL_BYTES - len(body) + 1))
    with pytest.raises(SkillPoolError, match=r"SKILL.md: file: \d+ bytes, more than the 1048576"):
        load_pool(tmp_path)
    (folder / "SKILL.md").write_text(body + "x" * (_skill_files.MAX_SKILL_BYTES - len(body)))
    assert load_pool(tmp_path).names == ["alpha"]


def test_too_many_files_in_one_skill_is_one_error(tmp_path: Path) -> None:
    folder = skill(tmp_path, "alpha")
    many = folder / "many"
    many.mkdir()
    for i in range(_skill_files.MAX_SKILL_ENTRIES):
        (many / f"f{i:04}.md").write_text("x")
    with pytest.raises(SkillPoolError) as info:
        load_pool(tmp_path)
    assert str(info.value) == (
        f"{folder}: resources: more than {_skill_files.MAX_SKILL_ENTRIES} files and folders"
    )


def test_hidden_files_count_against_the_entry_budget(tmp_path: Path) -> None:
    """Skipping hidden names must not let a folder of a million dot-files cost unbounded work."""
    folder = skill(tmp_path, "alpha")
    for i in range(_skill_files.MAX_SKILL_ENTRIES + 1):
        (folder / f".h{i}").write_text("")
    with pytest.raises(SkillPoolError, match="more than 1000 files and folders"):
        load_pool(tmp_path)


def test_deeply_nested_folders_cost_bounded_work(tmp_path: Path) -> None:
    folder = skill(tmp_path, "alpha")
    deep = folder
    for _ in range(200):
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / "buried.md").write_text("x")
    pool = load_pool(tmp_path)
    assert pool.get("alpha").resources == ()
    assert len(pool.findings) == 1 and "deeper than 6 levels" in pool.findings[0].message


def test_many_empty_folders_during_discovery_are_one_error(tmp_path: Path) -> None:
    for i in range(_skill_files.MAX_SCAN_DIRS + 1):
        (tmp_path / f"e{i:04}").mkdir()
    with pytest.raises(SkillPoolError, match="more than 2000 folders"):
        load_pool(tmp_path)


def test_a_symlinked_skill_folder_is_not_followed(tmp_path: Path) -> None:
    elsewhere = skill(tmp_path / "elsewhere", "outside")
    skill(tmp_path / "pool", "inside")
    (tmp_path / "pool" / "outside").symlink_to(elsewhere)
    (tmp_path / "pool" / "cycle").symlink_to(tmp_path / "pool")
    pool = load_pool(tmp_path / "pool")
    assert pool.names == ["inside"]
    assert sorted(f.file.name for f in pool.findings) == ["cycle", "outside"]
    assert all("symlinked folder; not followed" in f.message for f in pool.findings)


def test_a_symlinked_skills_container_leaving_the_root_is_ignored(tmp_path: Path) -> None:
    skill(tmp_path / "other" / "skills", "foreign")
    repo = tmp_path / "repo"
    skill(repo / ".agents" / "skills", "local")
    (repo / "skills").symlink_to(tmp_path / "other" / "skills")
    assert load_pool(repo).names == ["local"]


def test_skill_md_symlinked_to_a_file_outside_is_an_error(tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text(SPEC_FRONT.format(name="leak"))
    (tmp_path / "pool" / "leak").mkdir(parents=True)
    (tmp_path / "pool" / "leak" / "SKILL.md").symlink_to(secret)
    with pytest.raises(SkillPoolError, match="a symlink leading outside the skill folder"):
        load_pool(tmp_path / "pool")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"---\nname: a\ndescription: d\n---\nbo\x00dy\n", "SKILL.md: file: holds NUL bytes"),
        (b"---\nname: a\ndescription: \xff\xfe\n---\nbody\n", "SKILL.md: file: is not UTF-8 text"),
        (
            b"---\nname: a\ndescription: " + b"[" * 5000 + b"]" * 5000 + b"\n---\nb\n",
            "SKILL.md: front matter: malformed YAML",
        ),
        (
            b"---\nname: a\ndescription: !!python/object/apply:os.system ['echo pwned']\n---\nb\n",
            "SKILL.md: front matter: malformed YAML",
        ),
    ],
    ids=["nul", "not-utf8", "nesting-bomb", "python-tag"],
)
def test_hostile_skill_md_is_one_bounded_error(
    tmp_path: Path, content: bytes, message: str
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "SKILL.md").write_bytes(content)
    with pytest.raises(SkillPoolError) as info:
        load_pool(tmp_path)
    text = str(info.value)
    assert text.startswith(str(tmp_path / "a")) and message in text
    assert len(text) < 500 and "\n" not in text


def test_binary_and_non_utf8_resources_are_not_served(tmp_path: Path) -> None:
    folder = skill(tmp_path, "alpha")
    (folder / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (folder / "nul.txt").write_bytes(b"text\x00more")
    (folder / "ok.txt").write_text("caf\u00e9", encoding="utf-8")
    pool = load_pool(tmp_path)
    assert pool.get("alpha").resources == ("ok.txt",)
    reasons = sorted(f.message for f in pool.findings)
    assert reasons == [
        "holds NUL bytes (a binary file); not served",
        "is not UTF-8 text (byte 3); not served",
    ]


def test_file_names_with_control_characters_are_not_served(tmp_path: Path) -> None:
    folder = skill(tmp_path, "alpha")
    (folder / "evil\x1b[31mname.md").write_text("x")
    (folder / "line\nbreak.md").write_text("x")
    pool = load_pool(tmp_path)
    assert pool.get("alpha").resources == ()
    assert len(pool.findings) == 2
    assert all("control characters" in f.message for f in pool.findings)
    with pytest.raises(SkillPoolError, match="control characters"):
        read_resource(pool.get("alpha"), "evil\x1b[31mname.md")


def test_a_pool_holding_too_much_text_is_refused_as_soon_as_it_is_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hf_skillfollow.skills as skills_module

    built: list[Path] = []
    real_build = skills_module._build

    def counting_build(path: Path):  # type: ignore[no-untyped-def]
        built.append(path)
        return real_build(path)

    monkeypatch.setattr(skills_module, "_build", counting_build)
    monkeypatch.setattr(skills_module, "MAX_POOL_CHARS", 2 * len(SPEC_FRONT.format(name="a")))
    folder = skill(tmp_path, "a")
    (folder / "a.md").write_text("x" * 11)
    for name in ("b", "c", "d"):
        skill(tmp_path, name)
    with pytest.raises(SkillPoolError, match=r"skill pool: more than \d+ characters of skill text"):
        load_pool(tmp_path)
    assert [p.parent.name for p in built] == ["a", "b"]  # c and d were never read


def test_aliases_are_refused_without_libyaml_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    monkeypatch.delattr(yaml, "CSafeLoader")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "SKILL.md").write_text("---\nname: &n a\ndescription: *n\n---\nb\n")
    with pytest.raises(SkillPoolError, match="anchors and aliases"):
        load_pool(tmp_path)
    skill(tmp_path / "ok", "fine")
    assert load_pool(tmp_path / "ok").names == ["fine"]

"""What the Harbor job(s) read, copied into the run's work folder before anything runs.

The skill pool is written from what the loader accepted (each SKILL.md and its servable
resources: exactly the content the pool hash names, no links, bounded by the loader). The
tasks are copied once when both arms share one job (`stage_tasks` without `sd_dest`), which
is sound only when no task ships its own skills (`StagedTasks.own_skills` says which do).
Otherwise each arm gets its own copy of every task: the with-skills arm the task as it is,
the without-skills arm the same task without its own ``environment/skills/`` (and the
Dockerfile lines that copy them, and ``[environment] skills_dir``), so a task that ships
skills cannot hand them to the arm that must not have them. Task folders are untrusted:
regular files only, no links followed, bounded in count, size and depth.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from hf_skillfollow.skills import SkillPool

MAX_TASKS = 2000
_MAX_FILES = 5000
_MAX_BYTES = 256 * 1024 * 1024
_MAX_DEPTH = 24
_COPY_SKILLS = re.compile(r"^\s*(COPY|ADD)\s+(\S+\s+)*\.?/?skills/?(\s|$)", re.IGNORECASE)
#: `[ \t]`, not `\s`: `\s*` from each line start ran across every blank line after it
#: (quadratic in a task.toml of blank lines)
_SKILLS_DIR_LINE = re.compile(r"^[ \t]*skills_dir[ \t]*=.*$", re.MULTILINE)


class StageError(ValueError):
    """A task folder or the pool cannot be staged; one line naming the path."""


@dataclass
class StagedTasks:
    names: list[str]
    #: tasks that ship their own skills: removed from the without-skills copy where there is
    #: one; a copy both arms share would hand them to both
    own_skills: list[str] = field(default_factory=list)


def stage_pool(pool: SkillPool, dest: Path) -> list[Path]:
    """Write the pool's skills under `dest`; return each skill's folder."""
    for skill in pool.skills:
        _check_folder_name(skill.name, skill.folder / "SKILL.md")
    folders = []
    for skill in pool.skills:
        folder = dest / skill.name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "SKILL.md").write_text(skill.text, encoding="utf-8")
        for rel, text in zip(skill.resources, skill.resource_texts, strict=True):
            target = folder / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            # A skill's script is run by the agent: keep it runnable as the original was.
            source = skill.folder / rel
            if source.is_file() and not source.is_symlink() and os.access(source, os.X_OK):
                target.chmod(0o755)
        folders.append(folder)
    return folders


def _check_folder_name(name: str, where: Path) -> None:
    """Each skill is staged as the folder `<name>/`, the name agents know it by, and the loader
    accepts any name with a warning: refuse one that is no single folder name (`..`,
    ``../../x``, ``a/b``), which would write outside the pool's folder."""
    if (
        name in ("", ".", "..")
        or any(ch in name for ch in "/\\\0")
        or len(name.encode("utf-8", "surrogateescape")) > 255
    ):
        raise StageError(
            f"{where}: field 'name' {ascii(name)[:80]} is not a folder name (no '/', '\\', "
            "'.' or '..', at most 255 bytes); the harness stages each skill as <name>/"
        )


def find_tasks(root: Path) -> list[Path]:
    """The Harbor task folders under `root` (itself one, or its direct children)."""
    if not root.is_dir():
        raise StageError(f"--tasks {root}: not a folder (a registry dataset is name@version)")
    if _is_task(root):
        return [root]
    tasks = []
    with os.scandir(root) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and _is_task(Path(entry.path)):
                tasks.append(Path(entry.path))
                if len(tasks) > MAX_TASKS:
                    raise StageError(f"--tasks {root}: more than {MAX_TASKS} tasks")
    if not tasks:
        raise StageError(f"--tasks {root}: no task folder (task.toml and instruction.md) in it")
    return sorted(tasks, key=lambda p: p.name)


def _is_task(path: Path) -> bool:
    return (path / "task.toml").is_file() and (path / "instruction.md").is_file()


def stage_tasks(tasks: Iterable[Path], se_dest: Path, sd_dest: Path | None = None) -> StagedTasks:
    """Copy each task for both arms; the without-skills copy (`sd_dest`) loses the task's own
    skills. Without `sd_dest` the one copy in `se_dest` serves both arms, as it is: the
    caller must not share it when `own_skills` names a task."""
    staged = StagedTasks(names=[])
    for task in tasks:
        copies = [se_dest / task.name] + ([sd_dest / task.name] if sd_dest else [])
        for dest in copies:
            if dest.exists():
                shutil.rmtree(dest)
            _copy_tree(task, dest)
        if _own_skills(copies[-1], strip=sd_dest is not None):
            staged.own_skills.append(task.name)
        staged.names.append(task.name)
    return staged


def _copy_tree(source: Path, dest: Path) -> None:
    budget = {"files": _MAX_FILES, "bytes": _MAX_BYTES}

    def walk(src: Path, dst: Path, depth: int) -> None:
        if depth > _MAX_DEPTH:
            raise StageError(f"{src}: folders nested deeper than {_MAX_DEPTH}")
        dst.mkdir(parents=True, exist_ok=True)
        with os.scandir(src) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.is_symlink():
                    continue  # a link could lead anywhere on this machine; tasks get files only
                if entry.is_dir(follow_symlinks=False):
                    walk(Path(entry.path), dst / entry.name, depth + 1)
                elif entry.is_file(follow_symlinks=False):
                    size = entry.stat(follow_symlinks=False).st_size
                    budget["files"] -= 1
                    budget["bytes"] -= size
                    if budget["files"] < 0 or budget["bytes"] < 0:
                        raise StageError(f"{source}: over {_MAX_FILES} files or {_MAX_BYTES} bytes")
                    shutil.copy2(entry.path, dst / entry.name, follow_symlinks=False)

    walk(source, dest, 0)


def _own_skills(task: Path, *, strip: bool) -> bool:
    """Whether a task copy ships its own skills; `strip`: remove them from it."""
    found = False
    skills = task / "environment" / "skills"
    if skills.is_dir():
        found = True
        if strip:
            shutil.rmtree(skills)
    dockerfile = task / "environment" / "Dockerfile"
    if dockerfile.is_file():
        lines = dockerfile.read_text(errors="replace").splitlines(keepends=True)
        kept = [line for line in lines if not _COPY_SKILLS.match(line)]
        if len(kept) != len(lines):
            found = True
            if strip:
                dockerfile.write_text("".join(kept))
    toml = task / "task.toml"
    text = toml.read_text(errors="replace")
    without = _SKILLS_DIR_LINE.sub("", text)
    if without != text:
        found = True
        if strip:
            toml.write_text(without)
    return found

"""What the Harbor job(s) read, copied into the run's work folder before anything runs.

The skill pool is written from what the loader accepted (each SKILL.md and its servable
resources: exactly the content the pool hash names, no links, bounded by the loader). The
tasks are copied once when both arms share one job (`stage_tasks` without `sd_dest`), which
is sound only when no task ships its own skills (`StagedTasks.own_skills` says which do).
Otherwise each arm gets its own copy of every task: the with-skills arm the task as it is,
the without-skills arm the same task without its own ``environment/skills/`` (and the
Dockerfile instructions that copy skills, and ``[environment] skills_dir`` in any TOML form),
so a task that ships skills cannot hand them to the arm that must not have them (`_own_skills`
says every way it is detected). Task folders are untrusted: regular files only, no links
followed nor FIFOs opened, no set-uid bit kept, bounded in count, size and depth per task
and in size all together; a task.toml's timeouts and resources are checked as Harbor would
misread them.
"""

from __future__ import annotations

import itertools
import math
import os
import re
import shutil
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_skillfollow.skills import SkillPool

MAX_TASKS = 2000
_MAX_FILES = 5000
_MAX_BYTES = 256 * 1024 * 1024
_MAX_DEPTH = 24
#: all the tasks of one run together, as their sizes say (a sparse file is copied in full)
MAX_TOTAL_BYTES = 4 * 1024 * 1024 * 1024
#: a task.toml is a few KB; Harbor's own reader has no bound
MAX_TOML_BYTES = 1024 * 1024
#: an instruction is a prompt: Harbor hands it whole to the agent in every trial
MAX_INSTRUCTION_BYTES = 1024 * 1024
#: `[ \t]`, not `\s`: `\s*` from each line start ran across every blank line after it
#: (quadratic in a task.toml of blank lines). The key bare, quoted or dotted from the top
#: (`environment.skills_dir`); what a strip leaves is checked by parsing (`_skills_dir`)
_SKILLS_DIR_LINE = re.compile(
    r"""^[ \t]*(?:(?:environment|"environment"|'environment')[ \t]*\.[ \t]*)?"""
    r"""(?:skills_dir|"skills_dir"|'skills_dir')[ \t]*=.*$""",
    re.MULTILINE,
)


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
    """The Harbor task folders under `root` (itself one, or its direct children not hidden)."""
    if not root.is_dir():
        raise StageError(f"--tasks {root}: not a folder (a registry dataset is name@version)")
    if _is_task(root):
        return [root]
    tasks = []
    with os.scandir(root) as entries:
        for entry in entries:
            # a hidden folder is no task: `tasks export-harbor` builds each in `.NAME.XXXX/`,
            # which one killed mid-way leaves half-written
            if entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False) and _is_task(Path(entry.path)):
                tasks.append(Path(entry.path))
                if len(tasks) > MAX_TASKS:
                    raise StageError(f"--tasks {root}: more than {MAX_TASKS} tasks")
    if not tasks:
        raise StageError(f"--tasks {root}: no task folder (task.toml and instruction.md) in it")
    return sorted(tasks, key=lambda p: p.name)


def _is_task(path: Path) -> bool:
    """Whether `path` holds a task.toml and an instruction.md; either as a link or a special
    file is one error naming it (the copy holds regular files only, so the task could not
    run, and the run stopped on its copy's path)."""
    for name in ("task.toml", "instruction.md"):
        try:
            mode = os.lstat(path / name).st_mode
        except FileNotFoundError:
            return False
        if not stat.S_ISREG(mode):
            kind = "a link" if stat.S_ISLNK(mode) else "not a regular file"
            raise StageError(f"{path / name}: {kind}; a task's files are copied as regular "
                             "files only, links never followed")  # fmt: skip
    return True


def stage_tasks(
    tasks: Iterable[Path],
    se_dest: Path,
    sd_dest: Path | None = None,
    pool_names: Iterable[str] = (),
) -> StagedTasks:
    """Copy each task for both arms; the without-skills copy (`sd_dest`) loses the task's own
    skills. Without `sd_dest` the one copy in `se_dest` serves both arms, as it is: the
    caller must not share it when `own_skills` names a task. Every task is measured before
    any is copied: together they hold at most `MAX_TOTAL_BYTES`. A skill the task ships under
    a name of the pool's (`pool_names`) is refused (`_refuse_shadowed`)."""
    tasks = list(tasks)
    total = 0
    for task in tasks:
        total += sum(size for _, _, size in _entries(task))
        if total > MAX_TOTAL_BYTES:
            raise StageError(
                f"{task.parent}: the tasks hold over {MAX_TOTAL_BYTES} bytes together (their "
                "file sizes as the file system gives them, sparse files included)"
            )
    staged = StagedTasks(names=[])
    for task in tasks:
        copies = [se_dest / task.name] + ([sd_dest / task.name] if sd_dest else [])
        for dest in copies:
            if dest.exists():
                shutil.rmtree(dest)
            _copy_tree(task, dest)
        _check_instruction(copies[0] / "instruction.md", task / "instruction.md")
        _refuse_shadowed(copies[0], task, pool_names)
        if _own_skills(copies[-1], task, strip=sd_dest is not None):
            staged.own_skills.append(task.name)
        staged.names.append(task.name)
    return staged


def _check_instruction(copy: Path, source: Path) -> None:
    """The instruction as Harbor hands it to the agent (`read_text`): UTF-8, no NUL, at most
    `MAX_INSTRUCTION_BYTES`; read from the copy (a regular file, measured)."""
    if copy.stat().st_size > MAX_INSTRUCTION_BYTES:
        raise StageError(f"{source}: over {MAX_INSTRUCTION_BYTES} bytes")
    data = copy.read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StageError(f"{source}: not UTF-8 (byte {exc.start})") from None
    nul = data.find(b"\0")
    if nul >= 0:
        raise StageError(f"{source}: holds a NUL byte (at byte {nul})")


def _entries(source: Path) -> Iterator[tuple[Path, os.DirEntry[str], int]]:
    """What of the task `source` is copied, as (path relative to it, entry, size; -1 for a
    folder), a folder before what it holds: folders and regular files only (links, FIFOs,
    sockets and devices are left out, never followed or opened), bounded: every entry counts
    against `_MAX_FILES` (100,000 empty folders were copied uncounted before, 17 s here),
    a folder is read no further than that, and the files hold at most `_MAX_BYTES`."""
    budget = {"entries": _MAX_FILES, "bytes": _MAX_BYTES}
    over = f"{source}: over {_MAX_FILES} files and folders or {_MAX_BYTES} bytes"

    def walk(src: Path, rel: Path, depth: int) -> Iterator[tuple[Path, os.DirEntry[str], int]]:
        if depth > _MAX_DEPTH:
            raise StageError(f"{src}: folders nested deeper than {_MAX_DEPTH}")
        with os.scandir(src) as listing:
            entries = list(itertools.islice(listing, budget["entries"] + 1))
        budget["entries"] -= len(entries)
        if budget["entries"] < 0:
            raise StageError(over)
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.is_symlink():
                continue  # a link could lead anywhere on this machine; tasks get files only
            if entry.is_dir(follow_symlinks=False):
                yield rel / entry.name, entry, -1
                yield from walk(Path(entry.path), rel / entry.name, depth + 1)
            elif entry.is_file(follow_symlinks=False):
                size = entry.stat(follow_symlinks=False).st_size
                budget["bytes"] -= size
                if budget["bytes"] < 0:
                    raise StageError(over)
                yield rel / entry.name, entry, size

    yield from walk(source, Path(), 0)


def _copy_tree(source: Path, dest: Path) -> None:
    dest.mkdir(parents=True)
    for rel, entry, size in _entries(source):
        if size < 0:
            (dest / rel).mkdir()
        else:
            _copy_file(Path(entry.path), dest / rel, size)


def _copy_file(source: Path, dest: Path, size: int) -> None:
    """`size` bytes of the regular file `source`, as measured; opened without following a
    link and without blocking on a FIFO, so a file swapped for either since is left out, and
    one grown since is an error rather than a copy past the bound."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(source, flags)
    except OSError:
        return  # a link or gone since it was listed: left out as links are
    with os.fdopen(fd, "rb") as src:
        info = os.fstat(src.fileno())
        if not stat.S_ISREG(info.st_mode):
            return
        with dest.open("xb") as out:
            left = size
            while left > 0:
                chunk = src.read(min(left, 1 << 20))
                if not chunk:
                    break
                out.write(chunk)
                left -= len(chunk)
            if left != 0 or src.read(1):
                raise StageError(f"{source}: changed while it was copied")
        # a test script stays runnable; never set-uid, set-gid or sticky (this may run as root)
        os.chmod(dest, stat.S_IMODE(info.st_mode) & 0o777)
        os.utime(dest, ns=(info.st_atime_ns, info.st_mtime_ns))


def _own_skills(task: Path, source: Path, *, strip: bool) -> bool:
    """Whether a task copy ships its own skills; `strip`: remove them from it (`source`: the
    task folder it was copied from, named in errors). A task ships
    skills by its ``environment/skills/``, a Dockerfile line that copies into or from a
    ``skills`` folder, ``[environment] skills_dir`` (in any TOML form: Harbor reads the file
    with a TOML parser, so `environment.skills_dir = ...` or an inline table counts), or a
    ``SKILL.md`` in a hidden folder of ``environment/`` (``.claude/skills/``, where agents
    discover skills in the workdir it may be copied into)."""
    found = False
    environment = task / "environment"
    skills = environment / "skills"
    if skills.is_dir():
        found = True
        if strip:
            shutil.rmtree(skills)
    hidden = _hidden_skill(environment)
    if hidden is not None:
        found = True
        if strip:
            raise StageError(
                f"{source / 'environment' / hidden}: a SKILL.md in a hidden folder is a skill "
                "the without-skills arm would have too; ship a task's own skills in "
                "environment/skills/ (removed from that arm's copy)"
            )
    dockerfile = environment / "Dockerfile"
    if dockerfile.is_file():
        lines = _instructions(dockerfile.read_text("utf-8", "surrogateescape"))
        into = _declared_skills_dir(task / "task.toml")  # read before `_skills_dir` strips it
        kept = [line for line in lines if not _copies_skills(line, into)]
        if len(kept) != len(lines):
            found = True
            if strip:
                dockerfile.write_text("".join(kept), "utf-8", "surrogateescape")
    return _skills_dir(task, source, strip=strip) or found


def _refuse_shadowed(task: Path, source: Path, pool_names: Iterable[str]) -> None:
    """Refuse a skill the task ships (`_shipped_skills`) under the name of a pool skill (by its
    folder or its `name`, compared as the pool loader compares names: NFKC, case folded). The
    with-skills arm would hold one skill of that name made of two: Harbor installs the pool's
    under the task's `skills_dir` (replacing the task's, or merging into it, as each Harbor
    version and agent copies), and an agent's own copy of its skills folder (`cp -r`) merges the
    pool's files into the task's. The rows would then say the pool's skill was used where the
    agent read the task's, or a mix. The without-skills arm has neither (the task's is
    removed from its copy), so renaming one of the two keeps the arms apart by skills alone."""
    pool = {_name_key(name): name for name in pool_names}
    if not pool:
        return
    for rel, names in _shipped_skills(task / "environment", task / "task.toml"):
        for name in names:
            if _name_key(name) in pool:
                raise StageError(
                    f"{source / 'environment' / rel}: the task ships a skill named "
                    f"{ascii(name)[:80]}, as the pool does ({ascii(pool[_name_key(name)])[:80]}): "
                    "the with-skills arm would get one skill of that name made of the two, and "
                    "its rows could not say which it used; rename the task's skill or the pool's"
                )


def _name_key(name: str) -> str:
    import unicodedata

    return unicodedata.normalize("NFKC", name).casefold()


def _shipped_skills(environment: Path, task_toml: Path) -> Iterator[tuple[Path, list[str]]]:
    """Each SKILL.md the task hands the agent as a skill, relative to `environment`, with its
    names (its folder's, the folder a Dockerfile COPY puts it in, and its `name` field): under
    a ``skills`` folder (`environment/skills/` and any other), a hidden folder
    (``.claude/skills/``), or a source a Dockerfile COPY or ADD puts in a skills folder
    (`_copies_skills`, the task's own `skills_dir` counting as one). A task copy, so bounded
    (`_entries`)."""
    from hf_skillfollow._skill_meta import parse_skill

    if not environment.is_dir() or environment.is_symlink():
        return
    copies = _skill_copies(environment / "Dockerfile", _declared_skills_dir(task_toml))
    for folder, dirs, files in os.walk(environment):
        dirs.sort()
        rel = Path(folder).relative_to(environment)
        for file in sorted(files):
            if file.casefold() != "skill.md":
                continue
            parts = rel.parts
            placed = [_placed_folder((*parts, file), src, dest) for src, dest in copies]
            as_skill = any(p.casefold() == "skills" or p.startswith(".") for p in parts)
            if not (as_skill and parts) and not any(name is not None for name in placed):
                continue
            path = Path(folder) / file
            with path.open("rb") as f:  # a regular file of the copy
                text = f.read(256 * 1024).decode("utf-8", "replace")
            fields, _ = parse_skill(text, path)
            names = [*parts[-1:], *(n for n in placed if n), *([fields.name] if fields else [])]
            yield rel / file, names


def _placed_folder(path: tuple[str, ...], src: tuple[str, ...], dest: str) -> str | None:
    """The name of the folder that a COPY of `src` to `dest` puts the file `path` (both
    relative to `environment/`, as parts) in, as Docker copies: a folder's contents go into
    `dest`, a file into `dest` when it ends with ``/``, else to `dest` itself; '' when the file
    keeps a folder of the source above it (its own name is then `path`'s), None when `src`
    does not hold `path`. ``COPY mine /root/.agents/skills/pdf`` installs mine/SKILL.md as
    the skill ``pdf`` (before 5 Dec only ``mine`` and its `name` were compared)."""
    if path[: len(src)] != src:
        return None
    inside = path[len(src) :]
    if len(inside) > 1:
        return ""
    folders = [p for p in dest.replace("\\", "/").split("/") if p not in ("", ".")]
    if not inside and not dest.endswith("/"):
        folders = folders[:-1]  # the file itself, renamed: its folder is dest's parent
    return folders[-1] if folders else ""


def _skill_copies(
    dockerfile: Path, skills_dir: str | None = None
) -> list[tuple[tuple[str, ...], str]]:
    """(source as path parts relative to `environment/`, ``.`` as the empty tuple;
    destination as written) of each Dockerfile COPY or ADD that puts files in or takes them
    from a skills folder, or puts them in the task's `skills_dir`."""
    if not dockerfile.is_file() or dockerfile.is_symlink():
        return []
    copies = []
    for line in _instructions(dockerfile.read_text("utf-8", "surrogateescape")):
        if not _copies_skills(line, skills_dir):
            continue
        words = [w for w in line.replace("\\\n", " ").split()[1:] if not w.startswith("--")]
        words = [w.strip('[]",') for w in words]
        for word in words[:-1]:  # the last is the destination
            parts = word.replace("\\", "/").split("/")
            copies.append((tuple(p for p in parts if p not in ("", ".")), words[-1]))
    return copies


def _hidden_skill(environment: Path) -> str | None:
    """The first ``SKILL.md`` (any case) under a hidden folder of `environment`, relative to it
    (the copy holds regular files only, bounded by `_copy_tree`)."""
    if not environment.is_dir():
        return None
    for folder, dirs, files in os.walk(environment):
        dirs.sort()
        rel = Path(folder).relative_to(environment)
        if any(part.startswith(".") for part in rel.parts):
            for name in sorted(files):
                if name.casefold() == "skill.md":
                    return str(rel / name)
    return None


def _instructions(text: str) -> list[str]:
    """A Dockerfile's instructions, each with its continuation lines (``\\`` at a line's
    end) and line ends, so that dropping one drops all its lines."""
    out: list[str] = []
    pending = ""
    for line in text.splitlines(keepends=True):
        pending += line
        if not line.rstrip("\r\n").endswith("\\"):
            out.append(pending)
            pending = ""
    return out + ([pending] if pending else [])


def _copies_skills(instruction: str, skills_dir: str | None = None) -> bool:
    """A COPY or ADD with a source or destination in a ``skills`` folder (`skills/`,
    ``/root/.claude/skills``), or a destination in the task's own `skills_dir` (which Harbor
    hands the agent whatever its name: ``/opt/tools``): how a task hands its own skills to
    the agent."""
    words = instruction.replace("\\\n", " ").split()
    if not words or words[0].upper() not in ("COPY", "ADD"):
        return False
    dest = [w for w in words[1:] if not w.startswith("--")][-1:]
    if skills_dir and dest and _under(dest[0].strip('[]",'), skills_dir):
        return True
    for word in words[1:]:
        if word.startswith("--"):
            continue
        parts = word.strip('[]",').replace("\\", "/").split("/")
        if any(part.casefold() == "skills" for part in parts):
            return True
    return False


def _under(path: str, folder: str) -> bool:
    """Whether the absolute container path `path` is `folder` or in it (a relative one is
    the WORKDIR's: not compared)."""
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    top = [p for p in folder.replace("\\", "/").split("/") if p not in ("", ".")]
    return path.startswith("/") and folder.startswith("/") and parts[: len(top)] == top


def _declared_skills_dir(toml: Path) -> str | None:
    """The task's ``[environment] skills_dir``, where Harbor installs the pool and whose
    contents agents copy as skills; None when unset or unreadable (`_skills_dir` says why)."""
    import tomllib

    try:
        if toml.stat().st_size > MAX_TOML_BYTES:
            return None
        data = tomllib.loads(toml.read_text("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    environment = data.get("environment")
    place = environment.get("skills_dir") if isinstance(environment, dict) else None
    return place if isinstance(place, str) and place.strip("/") else None


def _skills_dir(task: Path, source: Path, *, strip: bool) -> bool:
    """Whether the copy's task.toml sets ``[environment] skills_dir``; `strip`: remove it,
    and refuse when what is left is not the same TOML less that key alone."""
    import tomllib

    toml = task / "task.toml"
    if toml.stat().st_size > MAX_TOML_BYTES:
        raise StageError(f"{source / 'task.toml'}: over {MAX_TOML_BYTES} bytes")
    text = toml.read_text("utf-8", "surrogateescape")
    without = _SKILLS_DIR_LINE.sub("", text)
    try:
        data = tomllib.loads(text)
    except (ValueError, RecursionError):  # a TOMLDecodeError, or an int past 4,300 digits
        data = None  # Harbor cannot read it either and fails the task; strip as written
    if data is None:
        if strip and without != text:
            toml.write_text(without, "utf-8", "surrogateescape")
        return without != text
    _check_numbers(data, source / "task.toml")
    environment = data.get("environment")
    if not isinstance(environment, dict) or "skills_dir" not in environment:
        return False
    if strip:
        del environment["skills_dir"]
        try:
            left = tomllib.loads(without)
        except (ValueError, RecursionError):  # a TOMLDecodeError, or an int past 4,300 digits
            left = None
        if _without_empty_environment(left) != _without_empty_environment(data):
            raise StageError(
                f"{source / 'task.toml'}: [environment] skills_dir is written in a form the "
                "without-skills arm's copy cannot lose alone; write it as one line "
                '`skills_dir = "..."` in the [environment] table'
            )
        toml.write_text(without, "utf-8", "surrogateescape")
    return True


def _check_numbers(data: dict[str, Any], toml: Path) -> None:
    """Refuse a timeout or resource of the task Harbor would take as it is: it reads NaN, 0 and
    negative timeouts (every trial of both arms times out at once), `inf` and 1e18 (a hung
    agent is never stopped) and `true` (as 1) without a word."""
    for table, key, low, high in _NUMBERS:
        section = data.get(table)
        if not isinstance(section, dict) or key not in section:
            continue
        value = section[key]
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or (isinstance(value, float) and not math.isfinite(value))
            or not low <= value <= high
            or (low == 0 and value == 0 and key.endswith("timeout_sec"))
        ):
            raise StageError(
                f"{toml}: [{table}] {key} = {ascii(value)[:40]}: a number from {low} to "
                f"{high}{' (over 0)' if key.endswith('timeout_sec') else ''}"
            )
    for table, environment in _environment_tables(data):
        _check_deprecated_sizes(environment, table, toml)


def _environment_tables(data: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each table Harbor 0.26 reads as an `EnvironmentConfig` (the task's, its verifier's own,
    and each step's verifier's), with its name as task.toml writes it."""
    found = [("environment", data.get("environment"))]
    verifier = data.get("verifier")
    if isinstance(verifier, dict):
        found.append(("verifier.environment", verifier.get("environment")))
    steps = data.get("steps")
    for i, step in enumerate(steps if isinstance(steps, list) else []):
        inner = step.get("verifier") if isinstance(step, dict) else None
        if isinstance(inner, dict):
            found.append((f"steps[{i}].verifier.environment", inner.get("environment")))
    for table, environment in found:
        if isinstance(environment, dict):
            yield table, environment


def _check_deprecated_sizes(environment: dict[str, Any], table: str, toml: Path) -> None:
    """Refuse a deprecated size string (`memory = "8G"`, `storage`) that Harbor 0.26 cannot
    read as a size from 0 to `_MAX_MB`: it crashes on one past a float (``"infG"``,
    ``"1e999M"``, 400 digits: an OverflowError traceback that pydantic does not catch),
    refuses ``"nanG"`` or ``"8"``, and takes ``"-1G"`` or ``"1e300G"`` as they are. Harbor
    reads only strings there (another type is dropped), so only strings are checked."""
    for old in ("memory", "storage"):
        value = environment.get(old)
        if not isinstance(value, str):
            continue
        mb = _harbor_size_mb(value)
        if mb is None or not 0 <= mb <= _MAX_MB:
            raise StageError(
                f"{toml}: [{table}] {old} = {ascii(value)[:40]}: not a size Harbor 0.26 reads "
                f"as 0 to {_MAX_MB} MB (a finite number and G, M or K: '8G', '512M')"
            )


#: the most MB a task's memory or storage may name here, however it is written
_MAX_MB = 1 << 40
_MAX_CPUS = 1_000_000
#: (table, key, least, most) of task.toml's numbers Harbor 0.26 reads (`TaskConfig`); a
#: timeout of at most a day, resources only finite and not negative (each environment
#: has its own ceiling: the sandbox's is its own, docs/harness.md)
_NUMBERS = (
    ("agent", "timeout_sec", 0, 86_400),
    ("verifier", "timeout_sec", 0, 86_400),
    ("environment", "build_timeout_sec", 0, 86_400),
    ("environment", "cpus", 0, _MAX_CPUS),
    ("environment", "memory_mb", 0, _MAX_MB),
    ("environment", "storage_mb", 0, _MAX_MB),
    ("environment", "gpus", 0, 1_000_000),
)


def check_sandbox_sizes(tasks: Iterable[Path]) -> None:
    """Refuse, before Harbor starts, a task the sandbox would refuse when each of its trials
    starts (`_nsinit.check_sizes` and `check_cpus`, the same line): `[environment]
    memory_mb` or `storage_mb` over the host's ceiling or under 0, `cpus` over the cores this
    host lets Harbor run on or not above 0; and a deprecated size string Harbor cannot read
    (`_check_deprecated_sizes`, as staging says it for every environment). Inside Harbor the
    refusal comes once per trial, each after a job start; the in-trial check stays for
    Harbor run by hand. A task.toml that cannot be read here is left to staging and Harbor,
    which refuse it in their own words."""
    from hf_skillfollow.harness._nsinit import check_cpus, check_sizes, host_cpus, size_ceiling_mb

    try:
        ceiling: int | None = size_ceiling_mb()
    except (OSError, ValueError):
        ceiling = None  # no /proc/meminfo: no sandbox on this host either (it needs Linux)
    try:
        host: int | None = host_cpus()
    except (AttributeError, OSError):
        host = None  # no sched_getaffinity: not Linux, no sandbox either
    for task in tasks:
        toml = task / "task.toml"
        environment = _environment(toml)
        _check_deprecated_sizes(environment, "environment", toml)
        try:
            if ceiling is not None:
                check_sizes(str(toml), _sizes(environment), ceiling)
            if host is not None:
                check_cpus(str(toml), _cpus(environment), host)
        except ValueError as exc:
            raise StageError(str(exc)) from None


def _environment(toml: Path) -> dict[str, Any]:
    """The task's `[environment]` table; empty where task.toml cannot be read here (over its
    bound, not UTF-8, not TOML: staging or Harbor refuses it, naming why)."""
    import tomllib

    try:
        with toml.open("rb") as f:
            raw = f.read(MAX_TOML_BYTES + 1)
        if len(raw) > MAX_TOML_BYTES:
            return {}  # refused by staging, naming its size
        data = tomllib.loads(raw.decode("utf-8"))
    except (OSError, ValueError, RecursionError):  # a TOMLDecodeError or UnicodeDecodeError too
        return {}
    environment = data.get("environment")
    return environment if isinstance(environment, dict) else {}


def _number(value: Any, most: float) -> int | float | None:
    """`value` as Harbor takes a resource number (a whole float as an int, `normalize_cpus`);
    None where it is no finite number up to `most` (`_check_numbers` says why in its line)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        value = int(value) if value.is_integer() else value
    return value if value <= most else None


def _sizes(environment: dict[str, Any]) -> dict[str, Any]:
    """`[environment] memory_mb` and `storage_mb` as Harbor reads them, its deprecated spelling
    (`memory = "8G"`) included: Harbor 0.26 converts it (`EnvironmentConfig._parse_size_to_mb`)
    and refuses a task giving both spellings with other values, so here the string is read
    alone (one Harbor cannot read is refused before: `_check_deprecated_sizes`)."""
    sizes: dict[str, Any] = {}
    for key, old in (("memory_mb", "memory"), ("storage_mb", "storage")):
        value, label = environment.get(key), key
        if isinstance(environment.get(old), str):
            value = _harbor_size_mb(environment[old])
            label = f"{key} (written {old} = {ascii(environment[old])[:24]})"
        number = _number(value, _MAX_MB)
        if number is not None:
            sizes[label] = number
    return sizes


def _cpus(environment: dict[str, Any]) -> int | float | None:
    """`[environment] cpus` as Harbor 0.26 reads it (``2.0`` as 2), so the line is the one each
    trial says; None when unset or no number `_check_numbers` lets by."""
    return _number(environment.get("cpus"), _MAX_CPUS)


def _harbor_size_mb(text: str) -> int | None:
    """Harbor 0.26's reading of its deprecated size strings ("512M", "8G", "1024K") in MB,
    step for step (`EnvironmentConfig._parse_size_to_mb`: strip, upper-case, a last G, M or
    K, float() of the rest); None where it raises: ValueError (refused) or OverflowError (a
    traceback: ``"infG"``, ``"1e999M"``)."""
    text = text.strip().upper()
    try:
        if text.endswith("G"):
            return int(float(text[:-1]) * 1024)
        if text.endswith("M"):
            return int(float(text[:-1]))
        if text.endswith("K"):
            return int(float(text[:-1]) / 1024)
    except (ValueError, OverflowError):
        return None
    return None


def _without_empty_environment(data: dict | None) -> dict | None:
    """`data` less an empty `environment` table (`[environment]` with skills_dir alone and
    `environment.skills_dir = ...` leave one and none: the same task for Harbor)."""
    if data is None or data.get("environment") != {}:
        return data
    return {key: value for key, value in data.items() if key != "environment"}

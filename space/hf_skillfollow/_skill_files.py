"""Bounded, read-only access to untrusted skill folders: discovery, SKILL.md and resource files.

Everything here treats the folder as hostile (docs/skills.md, "Hostile input"): every read has a
size cap, every walk a depth and count cap, symlinks never lead outside the skill folder (nor
into a loop: symlinked directories are not followed, nor to a hidden file), only regular files
are opened (a FIFO or a device is never opened), a clone's version control data (`.git`) is
never read, and nothing is ever executed.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from hf_skillfollow._skill_findings import (
    Finding,
    SkillFileError,
    SkillPoolError,
    error,
    short,
    warning,
)
from hf_skillfollow._text import utf8_encodable

SKILL_FILE = "SKILL.md"
#: A SKILL.md larger than this is refused (the spec recommends under 500 lines).
MAX_SKILL_BYTES = 1024 * 1024
#: A resource file larger than this is not served (nor hashed): one read fills at most ~16k tokens.
MAX_RESOURCE_BYTES = 64 * 1024
#: Entries (files and folders) walked inside one skill folder before it is refused.
MAX_SKILL_ENTRIES = 1000
#: Folder levels below a skill folder that are listed; deeper files are not served.
MAX_RESOURCE_DEPTH = 6
#: Characters of text (SKILL.md files and resources) one pool may hold before it is refused.
MAX_POOL_CHARS = 64 * 1024 * 1024
#: Discovery: folder levels searched below each start folder, folders visited, skills found.
MAX_SCAN_DEPTH = 6
MAX_SCAN_DIRS = 2000
MAX_SKILLS = 1000
MAX_SCAN_ENTRIES = 20000
#: Folders a repository root keeps skills in (the client guide's scan locations).
SKILL_CONTAINERS: tuple[str, ...] = ("skills", ".claude/skills", ".agents/skills")
#: Never scanned, at any level (version control, dependencies, caches).
_SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__"})
#: Version control data: what a clone adds (its remote URL with a token, a `.git` file naming
#: a local path) belongs to whoever cloned the skill; no reader of a skill folder reads it.
_VCS_DIRS = frozenset({".git", ".hg", ".svn"})


class ReadRefused(Exception):
    """One file the reader will not read; the message says why."""


def normalise(raw: str) -> str:
    """The same text on every platform: no BOM, LF line endings."""
    return raw.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def has_control_chars(text: str) -> bool:
    """True if `text` holds a character that is neither printable nor a plain space."""
    return any(not ch.isprintable() and ch != " " for ch in text)


def _read_regular(path: Path, limit: int, links: _Links | None = None) -> bytes:
    """The bytes of `path`, which must be a regular file of at most `limit` bytes.

    Anything but a regular file is refused before it is opened (`lstat`); `O_NOFOLLOW` refuses a
    symlink put in place after the caller resolved the path,
    `O_NONBLOCK` keeps a FIFO from blocking the open, and the read stops at `limit + 1` bytes
    whatever the file system reports as the size. With `links` (the names a folder holds), a
    file with more hard links than the folder holds is refused: its other name is outside the
    folder (a hard link, unlike a symlink, does not say where it points).
    """
    try:
        mode = os.lstat(path).st_mode
    except OSError as exc:
        raise ReadRefused(f"cannot be opened ({exc.strerror})") from None
    # what it is before opening it: opening a device can have effects (a watchdog arms, a tape
    # rewinds); a symlink is left to O_NOFOLLOW, and `fstat` re-checks what was opened
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise ReadRefused("is not a regular file")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ReadRefused("is a symlink") from None
        raise ReadRefused(f"cannot be opened ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ReadRefused("is not a regular file")
        if info.st_size > limit:
            raise ReadRefused(f"{info.st_size} bytes, more than the {limit} allowed")
        if links is not None and info.st_nlink > 1 and not links.all_inside(info):
            raise ReadRefused("a hard link to a file outside the skill folder")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 16, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:
        raise ReadRefused(f"more than the {limit} bytes allowed")
    return b"".join(chunks)


class _Links:
    """How many names each file has inside one folder, counted on the first hard-linked file.

    One walk per folder, however many of its files are hard-linked (a walk per file made a
    folder of 1,000 linked files cost 1,000 walks). Counted over the folder (hidden names
    included, symlinks not followed) up to `MAX_SKILL_ENTRIES` entries; past that budget no
    link counts as inside."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._names: Counter[tuple[int, int]] | None = None

    def _count(self) -> Counter[tuple[int, int]]:
        names: Counter[tuple[int, int]] = Counter()
        seen = 0
        for current, dirs, files in os.walk(self.folder, followlinks=False):
            for name in files:
                seen += 1
                if seen > MAX_SKILL_ENTRIES:
                    return Counter()
                try:
                    other = os.lstat(os.path.join(current, name))
                except OSError:
                    continue
                names[(other.st_dev, other.st_ino)] += 1
            seen += len(dirs)
        return names

    def all_inside(self, info: os.stat_result) -> bool:
        """Whether every hard link of the file `info` describes is a name inside the folder."""
        if self._names is None:
            self._names = self._count()
        return self._names[(info.st_dev, info.st_ino)] >= info.st_nlink


#: How a Git LFS pointer file starts (git-lfs spec v1): a clone without `git lfs` (or a Hub
#: repository's) leaves these few lines in place of the file.
_LFS_POINTER = b"version https://git-lfs.github.com/spec/v1\n"
_LFS_POINTER_MAX = 1024


def _skill_bytes(path: Path, limit: int, links: _Links) -> bytes:
    """`_read_regular` for a file of a skill folder, refusing a Git LFS pointer: it stands for
    content that was not fetched (a font, a PDF, a large reference), which would otherwise be
    served and hashed as three lines of text."""
    data = _read_regular(path, limit, links)
    if len(data) < _LFS_POINTER_MAX and data.startswith(_LFS_POINTER):
        raise ReadRefused("a Git LFS pointer, not the file's content (fetch it: `git lfs pull`)")
    return data


def _decode(data: bytes) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        # what Windows PowerShell 5.1's `>`, Out-File and Set-Content write by default
        raise ReadRefused(
            "is UTF-16 text (it starts with a UTF-16 byte-order mark); save it as UTF-8"
        )
    if b"\x00" in data:
        raise ReadRefused("holds NUL bytes (a binary file)")
    try:
        return normalise(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ReadRefused(f"is not UTF-8 text (byte {exc.start})") from None


def read_text(path: Path, limit: int) -> str:
    """The normalised UTF-8 text of the regular file `path`, at most `limit` bytes.

    Also used for other untrusted files (sweep files); raises `ReadRefused` saying why not.
    """
    return _decode(_read_regular(path, limit))


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def read_inside(path: Path, folder: Path, limit: int) -> bytes:
    """The bytes of `path`, a regular file inside `folder` of at most `limit` bytes.

    For the other readers of a skill folder (an eval's `evals.json` and attached files): a
    symlink may point anywhere inside the folder, never outside it, and a FIFO, a device or
    /proc is refused as for resources. Raises `SkillFileError` with the reason (no path in it).
    """
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):
        raise SkillFileError("missing (or a dangling or looping symlink)") from None
    real_folder = folder.resolve()
    if not _inside(target, real_folder):
        raise SkillFileError("outside the skill folder (a symlink or '..' leading out of it)")
    if _VCS_DIRS.intersection(target.relative_to(real_folder).parts):
        raise SkillFileError(
            "in the folder's version control data (.git, .hg, .svn: the clone's remote URL and "
            "credentials are its user's, never the skill's)"
        )
    try:
        return _skill_bytes(target, limit, _Links(real_folder))
    except ReadRefused as exc:
        raise SkillFileError(str(exc)) from None


def _hub_cache(target: Path) -> str:
    """The way out when `target` is a blob of a Hugging Face cache: its `snapshots/<rev>/`
    folders link every file to `blobs/`, outside any skill folder."""
    if target.parent.name != "blobs" or not (target.parent.parent / "snapshots").is_dir():
        return ""
    return (
        " (a Hugging Face cache snapshot: download the repository into a folder of its own, "
        "`hf download REPO --local-dir DIR`, and point POOL at DIR)"
    )


def read_skill_md(path: Path) -> str | Finding:
    """The normalised text of a SKILL.md, or the error naming why it is refused."""
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        return error(path, "file", f"cannot be read ({exc})")
    if not _inside(target, path.parent.resolve()):
        return error(
            path, "file", f"a symlink leading outside the skill folder{_hub_cache(target)}"
        )
    try:
        return _decode(_skill_bytes(target, MAX_SKILL_BYTES, _Links(path.parent.resolve())))
    except ReadRefused as exc:
        return error(path, "file", str(exc))


@dataclass(frozen=True)
class Resources:
    """The servable files of one skill folder and the reasons the others are not served."""

    #: relative POSIX path -> text, for every servable file
    texts: dict[str, str]
    #: relative POSIX path -> why it is not served, for every other file or folder listed
    unserved: dict[str, str]
    findings: list[Finding]


def _skipped(name: str) -> bool:
    return name.startswith(".") or name in _SKIP_DIRS


class _Lister:
    """`os.scandir` with one budget of entries for a whole walk (hidden ones count too)."""

    def __init__(self, budget: int) -> None:
        self.left = budget

    def list(self, folder: Path, hidden: bool = False) -> list[os.DirEntry[str]]:
        entries = []
        with os.scandir(folder) as it:
            for entry in it:
                self.left -= 1
                if self.left < 0:
                    raise ReadRefused("too many")
                if hidden or not _skipped(entry.name):
                    entries.append(entry)
        return sorted(entries, key=lambda e: e.name)


def _entries(folder: Path, lister: _Lister) -> Iterator[tuple[Path, int]]:
    """Every non-hidden entry below `folder` (depth-first, sorted), with its depth (1 = top)."""
    stack = [(folder, 0)]
    while stack:
        current, depth = stack.pop()
        children = lister.list(current)
        for child in reversed(children):
            if child.is_dir(follow_symlinks=False) and depth + 1 < MAX_RESOURCE_DEPTH:
                stack.append((Path(child.path), depth + 1))
        yield from ((Path(c.path), depth + 1) for c in children)


def scan_resources(skill_md: Path) -> Resources:
    """Read every servable file of the skill folder of `skill_md` (all but SKILL.md itself).

    Servable: a regular file (or a symlink to one inside the folder) of at most
    `MAX_RESOURCE_BYTES` of UTF-8 text, with a printable name. Anything else is a finding and is
    neither served nor hashed. More than `MAX_SKILL_ENTRIES` entries is an error.
    """
    folder = skill_md.parent
    real_folder = folder.resolve()
    links = _Links(real_folder)
    texts: dict[str, str] = {}
    unserved: dict[str, str] = {}
    findings: list[Finding] = []
    try:
        for path, depth in _entries(folder, _Lister(MAX_SKILL_ENTRIES)):
            rel = path.relative_to(folder).as_posix()
            if rel == SKILL_FILE:
                continue
            reason = None
            if path.is_dir() and not path.is_symlink():
                if depth < MAX_RESOURCE_DEPTH:
                    continue
                reason = f"deeper than {MAX_RESOURCE_DEPTH} levels"
            else:
                reason = _unservable_name(rel)
            if reason is None:
                try:
                    texts[rel] = _read_resource(path, links)
                    continue
                except ReadRefused as exc:
                    reason = str(exc)
            unserved[rel] = reason
            findings.append(warning(path, "resource", f"{reason}; not served"))
    except ReadRefused:
        findings.append(
            error(folder, "resources", f"more than {MAX_SKILL_ENTRIES} files and folders")
        )
    except OSError as exc:
        findings.append(error(folder, "resources", f"cannot be listed ({exc.strerror})"))
    return Resources(texts, unserved, findings)


#: Characters an activation's file list escapes (`html.escape`): a name holding one would be
#: listed as `a&amp;b.md`, a path no read could name.
_LISTING_ESCAPED = frozenset("&<>\"'")


def _unservable_name(rel: str) -> str | None:
    """Why the file at `rel` cannot be served, if it cannot: served paths are listed to the
    model verbatim and read back by exactly the listed string (docs/skills.md)."""
    if not utf8_encodable(rel):
        return "file name is not UTF-8"
    if has_control_chars(rel):
        return f"file name {short(rel)} holds control characters"
    if _LISTING_ESCAPED.intersection(rel):
        return f"file name {short(rel)} holds one of & < > \" ', which the file list escapes"
    if rel != rel.strip():
        return f"file name {short(rel)} starts or ends with a space"
    return None


def _read_resource(path: Path, links: _Links) -> str:
    real_folder = links.folder
    if path.is_symlink():
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):
            raise ReadRefused("a dangling or looping symlink") from None
        if not _inside(target, real_folder):
            raise ReadRefused(f"a symlink leading outside the skill folder{_hub_cache(target)}")
        if any(_skipped(part) for part in target.relative_to(real_folder).parts):
            # hidden files are not served, nor reached through a link (`notes.md -> .git/config`)
            raise ReadRefused(
                "a symlink to a file not served (hidden, in node_modules or __pycache__)"
            )
        if target.is_dir():
            raise ReadRefused("a symlinked folder (not followed)")
        path = target
    return _decode(_skill_bytes(path, MAX_RESOURCE_BYTES, links))


def _containers(root: Path) -> list[Path]:
    """The client guide's skill folders present in `root`, each once, none leaving `root`."""
    real_root = root.resolve()
    found: dict[Path, Path] = {}
    for name in SKILL_CONTAINERS:
        path = root / name
        if not path.is_dir():
            continue
        real = path.resolve()
        if _inside(real, real_root):
            found.setdefault(real, path)
    return list(found.values())


def discover(root: Path) -> tuple[list[Path], list[Finding]]:
    """The SKILL.md files of the pool at `root`, sorted, and what discovery noticed.

    `root` itself holding SKILL.md is a pool of one skill. Otherwise the scan starts at the
    repository folders `skills/`, `.claude/skills/`, `.agents/skills/` when `root` has any,
    else at `root`, and finds every folder holding SKILL.md up to `MAX_SCAN_DEPTH` levels down
    (a skill folder is not searched further; hidden folders, `node_modules` and symlinked folders
    are skipped). Past `MAX_SCAN_DIRS` folders, `MAX_SCAN_ENTRIES` entries or `MAX_SKILLS`
    skills it is one `SkillPoolError`.
    """
    if _is_skill(root):
        return [root / SKILL_FILE], []
    found: list[Path] = []
    findings: list[Finding] = []
    lister = _Lister(MAX_SCAN_ENTRIES)
    visited = 0
    containers = _containers(root)
    if containers:
        findings += _beside(root, containers)
    for start in containers or [root]:
        if start != root and _is_skill(start):
            # the client guide's skills live in <skills>/<name>/: one here has no folder
            findings.append(warning(start / SKILL_FILE, "file", _IN_CONTAINER))
        queue = deque([(start, 0)])
        while queue:
            folder, depth = queue.popleft()
            visited += 1
            if visited > MAX_SCAN_DIRS:
                raise SkillPoolError(
                    f"{root}: skill pool: more than {MAX_SCAN_DIRS} folders{_NARROW}"
                )
            if folder != start and _is_skill(folder):
                found.append(folder / SKILL_FILE)
                if len(found) > MAX_SKILLS:
                    raise SkillPoolError(
                        f"{root}: skill pool: more than {MAX_SKILLS} skills; point POOL at a "
                        "folder holding fewer (a part of the library, or a folder with copies "
                        "of the skills to measure)"
                    )
                continue
            subs = _subfolders(folder, lister, findings, root)
            if depth < MAX_SCAN_DEPTH:
                queue.extend((sub, depth + 1) for sub in subs)
            else:
                deeper = f"deeper than the {MAX_SCAN_DEPTH} folder levels searched; not loaded"
                findings += [
                    warning(skill_md, "file", deeper) for sub in subs for skill_md in _passed(sub)
                ]
    return sorted(found), findings


#: Below a folder the scan does not enter (hidden, or past the depth), folders and entries
#: looked at, only to report the SKILL.md files skipped there.
_PASSED_DEPTH = 3
_PASSED_ENTRIES = 500


def _passed(folder: Path) -> list[Path]:
    """The SKILL.md files within `_PASSED_DEPTH` levels of `folder`, a folder the scan skips
    (a budget of its own, never an error: a large hidden `.venv` costs at most 500 entries)."""
    found, left = [], _PASSED_ENTRIES
    stack = [(folder, 0)]
    while stack and left > 0:
        current, depth = stack.pop()
        if _is_skill(current):
            found.append(current / SKILL_FILE)
            continue
        try:
            with os.scandir(current) as it:
                entries = [e for _, e in zip(range(left), it, strict=False)]
        except OSError:
            continue
        left -= len(entries)
        if depth < _PASSED_DEPTH:
            stack += [
                (Path(e.path), depth + 1)
                for e in entries
                if e.name not in _SKIP_DIRS and e.is_dir(follow_symlinks=False)
            ]
    return sorted(found)


#: Root folders looked into, only to report, beside a repository's skills folders.
_BESIDE_FOLDERS = 20


def _beside(root: Path, containers: list[Path]) -> list[Finding]:
    """Warnings for the SKILL.md files beside a repository's skills folders (`template/`,
    `preview/x/`), which the scan leaves out: not loaded, but said (the first `_BESIDE_FOLDERS`
    non-hidden folders of the root, each looked into as `_passed` does)."""
    try:
        with os.scandir(root) as it:
            entries = [e for _, e in zip(range(_PASSED_ENTRIES), it, strict=False)]
    except OSError:
        return []
    kept = {c.relative_to(root).parts[0] for c in containers}
    folders = sorted(
        Path(e.path)
        for e in entries
        if e.name not in kept and not _skipped(e.name) and e.is_dir(follow_symlinks=False)
    )
    names = ", ".join(f"{c.relative_to(root).as_posix()}/" for c in containers)
    why = f"outside the repository's skills folders ({names}), the only ones scanned; not loaded"
    return [warning(f, "file", why) for sub in folders[:_BESIDE_FOLDERS] for f in _passed(sub)]


_NARROW = "; point POOL at the folder that holds the skills"
_IN_CONTAINER = (
    "directly in the skills folder, not in a skill folder of its own "
    "(<skills>/<name>/SKILL.md); not loaded"
)


def _is_skill(folder: Path) -> bool:
    # a SKILL.md that is a symlink still marks a skill: reading it then refuses an escape
    skill_md = folder / SKILL_FILE
    return skill_md.is_symlink() or skill_md.exists()


def _misnamed(name: str) -> bool:
    return name != SKILL_FILE and name.casefold() == SKILL_FILE.casefold()


def _subfolders(folder: Path, lister: _Lister, findings: list[Finding], root: Path) -> list[Path]:
    """The folders below `folder` to search; a finding for each candidate skill file skipped
    here (`skill.md`, `Skill.md`; a SKILL.md in a hidden folder)."""
    try:
        entries = lister.list(folder, hidden=True)
    except ReadRefused:
        raise SkillPoolError(
            f"{root}: skill pool: more than {MAX_SCAN_ENTRIES} entries{_NARROW}"
        ) from None
    except OSError as exc:
        findings.append(warning(folder, "folder", f"cannot be listed ({exc.strerror})"))
        return []
    subs = []
    for entry in entries:
        path = Path(entry.path)
        if _misnamed(entry.name) and entry.is_file():
            message = f"the spec's file name is {SKILL_FILE} (upper case); not loaded"
            findings.append(warning(path, "file", message))
        elif entry.is_symlink() and entry.is_dir():
            findings.append(warning(path, "folder", "a symlinked folder; not followed"))
        elif not entry.is_dir(follow_symlinks=False):
            continue
        elif not _skipped(entry.name):
            subs.append(path)
        elif entry.name not in _SKIP_DIRS:
            hidden = "in a hidden folder (a name starting with '.'), which is not searched"
            findings += [warning(f, "file", f"{hidden}; not loaded") for f in _passed(path)]
    return subs

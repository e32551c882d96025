"""Which pool skill a file path or a shell command touches, and how.

A skill's files are recognised by their path, never by content: ``<...>/<name>/SKILL.md``
loads the skill's instructions; any other file under ``<...>/skills/<name>/`` is one of its
resources (a script run, a reference read). ``<name>`` must be in the pool; an empty pool
accepts any name (the caller then learns the offered skills from the harness's listing).

Shell commands are split into simple commands (also where a command substitution opens)
without running anything: a command whose program only lists, tests, checksums or moves
files (``ls``, ``[``, ``sha256sum``, ``cp``..., ``grep -l``) never counts, since a directory
listing that happens to show skill paths is not activation; a redirect target
(``> SKILL.md``) is a write, not a read. Every regular expression here matches in linear time (single
character classes, literal alternatives, no nested repetition), and the scan is iterative.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection, Iterator

from hf_skillfollow.transcripts._base import TriggerKind

#: Longest command text scanned; the rest of a longer command is ignored.
MAX_COMMAND_CHARS = 100_000
#: Most simple commands scanned in one command text.
MAX_SEGMENTS = 2_000
#: Longest working folder followed through `cd`s.
MAX_CWD_CHARS = 4_096

SkillRef = tuple[str, TriggerKind]

# `$(`, `<(` and backquotes open a command run inside another (`echo "$(cat f)"`): split
# there too, so the inner program is read as its own simple command.
_SEGMENTS = re.compile(r"&&|\|\||\$\(|<\(|[;|\r`]")
_HEREDOC = re.compile(r"<<-?[ \t]*['\"]?([A-Za-z_][A-Za-z0-9_]*)")
# Programs that only print or write a here-document's body (text, not code).
_TEXT_SINKS = frozenset(["cat", "tee"])
# What follows a here-document's opening on its line pipes it on to another program.
_PIPED_ON = re.compile(r"[^;&|]*\|(?!\|)")
_WORDS = re.compile(r"[^\s'\"`]+")
_TRAILING = "),;:]}>"
# A skill name when the pool is empty: no glob, variable or path characters.
_ANY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# Programs whose arguments are only listed, searched by name, moved or written.
_NOT_READING = frozenset(
    [
        "ls",
        "find",
        "tree",
        "du",
        "stat",
        "file",
        "realpath",
        "readlink",
        "dirname",
        "basename",
        "test",
        "[",
        "fd",
        "locate",
        "wc",
        "cp",
        "mv",
        "rm",
        "rmdir",
        "mkdir",
        "chmod",
        "chown",
        "ln",
        "touch",
        "echo",
        "printf",
        "tee",
        "rsync",
        "tar",
        "zip",
        "unzip",
        "cd",
        "pushd",
        "popd",
        "export",
        "which",
        "type",
        "[[",
        # `for f in <words>`: the words are only assigned, not read.
        "for",
        # Checksums print a digest, not the file's text.
        "md5sum",
        "sha1sum",
        "sha256sum",
        "sha512sum",
        "b2sum",
        "cksum",
    ]
)
# Shell words that open a compound command: the program is the word after them
# (`if [ -f x ]; then cat x; fi` runs `[` and `cat`; `( ls x )` runs `ls`).
_KEYWORDS = frozenset(["if", "then", "elif", "else", "while", "until", "do", "!", "{", "("])
# Searches whose flags make them print only file names, counts or nothing (`grep -l`,
# `grep -c`, `grep -q`): a search by name, like `wc`, not a read of the lines.
_SEARCHES = frozenset(["grep", "egrep", "fgrep", "rg"])
_QUIET_LETTERS = frozenset("lLcq")
_QUIET_LONG = frozenset(
    ["--files-with-matches", "--files-without-match", "--count", "--quiet", "--silent", "--files"]
)
# Words that run the next word as the program.
_WRAPPERS = frozenset(["sudo", "env", "nohup", "time", "exec", "command", "builtin", "nice"])
_SHELLS = frozenset(["bash", "sh", "zsh", "dash", "ksh"])
_REDIRECTS = frozenset([">", ">>", "1>", "2>", "&>", "&>>", "1>>", "2>>", ">|"])


def in_pool(name: object, pool: Collection[str]) -> str | None:
    """`name` as a pool skill name (a ``plugin:name`` qualifier and a leading ``/`` dropped),
    else None."""
    if not isinstance(name, str) or not name or len(name) > 200:
        return None
    name = name.strip().lstrip("/")  # `/pdf` as typed as a slash command
    for candidate in (name, name.rsplit(":", 1)[-1]):
        if candidate in pool or (not pool and _ANY_NAME.fullmatch(candidate)):
            return candidate
    return None


def path_ref(path: object, pool: Collection[str]) -> SkillRef | None:
    """The skill and kind a file at `path` belongs to, or None."""
    if not isinstance(path, str) or len(path) > 4096:
        return None
    # `skills/pdf/../../other/SKILL.md` is other's file, not pdf's: `..` is resolved first.
    parts = [
        p for p in posixpath.normpath(path.replace("\\", "/")).split("/") if p not in ("", ".")
    ]
    if len(parts) >= 2 and parts[-1].lower() == "skill.md":
        name = in_pool(parts[-2], pool)
        if name:
            return name, "instructions"
    for i in range(len(parts) - 2):
        if parts[i] == "skills":
            name = in_pool(parts[i + 1], pool)
            if name:
                return name, "resource"
    return None


def command_refs(command: object, pool: Collection[str], cwd: str = "") -> list[SkillRef]:
    """The skill files a shell command reads or runs, in order (repeats kept once); `cwd` is
    the folder it runs in where the call names one (a relative path is read from there)."""
    return scan_command(command, pool, cwd)[0]


def scan_command(
    command: object, pool: Collection[str], cwd: str = "", *, find_refs: bool = True
) -> tuple[list[SkillRef], str]:
    """`command_refs`, and the folder the shell is left in (its last `cd`), for a harness
    whose shell persists from one call to the next; `find_refs=False` follows the `cd`s only."""
    if isinstance(command, list | tuple):
        command = " ".join(c for c in command[:1000] if isinstance(c, str))
    cwd = cwd if isinstance(cwd, str) and len(cwd) <= MAX_CWD_CHARS else ""
    if not isinstance(command, str):
        return [], cwd
    # An ordered set: one command can name thousands of skill files (any name counts with an
    # empty pool), and a list's `in` made that quadratic (8,000 files: a second per command).
    refs: dict[SkillRef, None] = {}
    for n, segment in enumerate(_segments(command[:MAX_COMMAND_CHARS])):
        if n >= MAX_SEGMENTS:
            break
        # `(ls x)`, `{ cat x; }`: a grouping bracket is not part of the word it touches.
        words = [w.lstrip("({") or w for w in _WORDS.findall(segment)]
        at = _program_index(words)
        if at is None:
            continue
        program, args = words[at].rsplit("/", 1)[-1], words[at + 1 :]
        if program == "cd":
            cwd = _cd(cwd, args[0] if args else "~")
            continue
        if not find_refs or program in _NOT_READING:
            continue
        if program in _SEARCHES and _names_only(args):
            continue
        # The program word names a skill file only when it is a path (a script run directly).
        head = [words[at]] if "/" in words[at] else []
        for word in _reads(head + args):
            path = word.rstrip(_TRAILING)
            if cwd and not path.startswith(("/", "~")):
                path = f"{cwd}/{path}"
            ref = path_ref(path, pool)
            if ref:
                refs[ref] = None
    return list(refs), cwd


def _cd(cwd: str, target: str) -> str:
    """The folder after `cd target` from `cwd` ("" where unknown: `cd -`, a path too long)."""
    if target == "-":
        return ""
    path = target if target.startswith(("/", "~")) or not cwd else f"{cwd}/{target}"
    path = posixpath.normpath(path)
    return path if len(path) <= MAX_CWD_CHARS else ""


def _segments(command: str) -> Iterator[str]:
    """The simple commands of `command`, without the bodies of here-documents that are text:
    fed to ``cat`` or ``tee`` (``cat > f <<EOF``, ``tee f <<EOF``, ``cat <<EOF`` printing a
    note) and not piped on. A here-document fed to any other program (``python3 - <<EOF
    2>&1``, ``bash <<EOF``, ``cat <<EOF | python3``) is code that runs: its lines are
    scanned."""
    terminator = None
    for line in command.split("\n"):
        if terminator is not None:
            if line.strip() == terminator:
                terminator = None
            continue
        heredoc = _HEREDOC.search(line)
        if heredoc and _heredoc_is_text(line, heredoc.start(), heredoc.end()):
            terminator = heredoc.group(1)
        yield from _SEGMENTS.split(line)


def _heredoc_is_text(line: str, start: int, end: int) -> bool:
    """Whether the here-document opened at `line[start:end]` goes to `cat`/`tee` (text
    printed or written) rather than to a program that runs it."""
    opened = _SEGMENTS.split(line[:start])[-1]
    words = [w.lstrip("({") or w for w in _WORDS.findall(opened)]
    at = _program_index(words)
    program = words[at].rsplit("/", 1)[-1] if at is not None else ""
    return program in _TEXT_SINKS and _PIPED_ON.match(line, end) is None


def _program_index(words: list[str]) -> int | None:
    """Where the program of a simple command is, past wrappers (`sudo`, `env`, `timeout N`,
    `VAR=value`) and shells running a string (`bash -lc 'cat x'` runs `cat`)."""
    i = 0
    while i < len(words):
        word = words[i]
        if word in _WRAPPERS or word in _KEYWORDS or _is_assignment(word):
            i += 1
        elif word == "timeout":
            i += 2  # `timeout DURATION program ...`
        elif (
            word.rsplit("/", 1)[-1] in _SHELLS and i + 2 < len(words) and _runs_string(words[i + 1])
        ):
            i += 2
        else:
            return i
    return None


def _names_only(args: list[str]) -> bool:
    """Whether a search's flags make it print only names or counts (`grep -rl`, `rg -c`)."""
    for word in args:
        if word == "--":
            return False
        if word in _QUIET_LONG:
            return True
        if word.startswith("-") and not word.startswith("--") and _QUIET_LETTERS & set(word):
            return True
    return False


def _runs_string(flag: str) -> bool:
    return flag.startswith("-") and not flag.startswith("--") and "c" in flag


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and name.isidentifier()


def _reads(words: list[str]) -> Iterator[str]:
    """The words of a simple command that name something read or run (not a write target)."""
    after_redirect = False
    for word in words:
        if word in _REDIRECTS:
            after_redirect = True
            continue
        if after_redirect or word.startswith((">", "1>", "2>", "&>")):
            after_redirect = False
            continue
        # `f>out`: what stands before the `>` is read, what follows is written.
        yield word.split(">", 1)[0].rstrip("&") if ">" in word else word

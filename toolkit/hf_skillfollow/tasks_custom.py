"""A maintainer's own tasks: a JSONL task file (`custom`) or the pool's `evals/evals.json` (`skill-evals`).

Both are untrusted input: sizes and counts are bounded before anything is parsed further, and
every problem is one `TaskLoadError` line naming the file, the line (or eval) and the field.
The format, the graders and their limits are documented in docs/tasks.md.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import stat
import sys
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_skillfollow._task import Task, TaskLoadError
from hf_skillfollow._text import unique_keys, utf8_encodable

GRADERS = ("tests", "answer", "expectations")
KNOWN_KEYS = frozenset({"id", "prompt", "domain", "entry_point", "expected_output", *GRADERS})

#: bounds on untrusted task input (docs/tasks.md, "Limits")
MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_LINE_BYTES = 1024 * 1024
MAX_TASKS = 10_000
MAX_ID_CHARS = 200
MAX_PROMPT_CHARS = 64 * 1024
MAX_FIELD_CHARS = 256 * 1024
MAX_EXPECTATIONS = 50
MAX_EXPECTATION_CHARS = 2_000
#: files an eval names: each at most this many bytes, all of one eval together at most
MAX_ATTACHED_BYTES = 64 * 1024
MAX_ATTACHED_TOTAL = 256 * 1024
MAX_ATTACHED_FILES = 8
#: files an eval names, copied into an agent's workspace (`load_skill_evals(workspace=True)`,
#: docs/harness.md): any bytes (a PDF too), each at most this many, all together at most
MAX_WORKSPACE_FILE_BYTES = 8 * 1024 * 1024
MAX_WORKSPACE_TOTAL = 32 * 1024 * 1024
#: ... and all evals of a pool together (10,000 evals may name the same 8 MiB file)
MAX_WORKSPACE_POOL_TOTAL = 256 * 1024 * 1024
#: the workspace folder whose files are judged as what the agent produced
OUTPUTS_FOLDER = "outputs"


def warn(message: str) -> None:
    """A problem that loses nothing (an unknown key): one line on stderr, the load goes on."""
    print(f"warning: {message}", file=sys.stderr)


# --- the JSONL task file -----------------------------------------------------------------------


def load_custom(path: str | Path) -> tuple[list[Task], str]:
    """Every task of the JSONL file `path`, and a version naming its content hash and graders."""
    path = Path(path)
    blob = _task_file_bytes(path)
    tasks: list[Task] = []
    seen: dict[str, tuple[str, int]] = {}
    for number, line in _lines(path, blob):
        task = _custom_task(path, number, line)
        spelling = id_spelling(task.task_id)
        if spelling in seen:
            first, line_no = seen[spelling]
            also = "" if first == task.task_id else f" as {first!r}, another spelling"
            raise TaskLoadError(
                f"{path}:{number}: field 'id': duplicate id {task.task_id!r} "
                f"(first on line {line_no}{also})"
            )
        seen[spelling] = (task.task_id, number)
        tasks.append(task)
        if len(tasks) > MAX_TASKS:
            raise TaskLoadError(f"{path}:{number}: more than {MAX_TASKS} tasks")
    if not tasks:
        raise TaskLoadError(f"{path}: no tasks (one JSON object per line)")
    digest = hashlib.sha256(blob).hexdigest()[:16]
    graders = ",".join(sorted({str(t.grader) for t in tasks}))
    # the file is its content: renamed or moved, it is the same benchmark (and cell)
    return tasks, f"custom@sha256.{digest}+graders.{graders}"


def _task_file_bytes(path: Path) -> bytes:
    """The file's bytes, read only if it is a regular file and at most `MAX_FILE_BYTES` long.

    `stat().st_size` is 0 for /dev/zero or a FIFO (a `tasks.jsonl` symlinked to one in a
    downloaded repository): such files are refused before any read (a FIFO is opened without
    blocking), and the read itself is bounded."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise TaskLoadError(f"{path}: task file does not exist") from None
    except OSError as exc:
        raise TaskLoadError(f"{path}: cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TaskLoadError(f"{path}: not a regular file")
        try:
            blob = fh.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise TaskLoadError(f"{path}: cannot be read ({exc.strerror})") from None
    if len(blob) > MAX_FILE_BYTES:
        raise TaskLoadError(f"{path}: a task file is at most {MAX_FILE_BYTES} bytes")
    return blob


def _lines(path: Path, blob: bytes) -> Iterator[tuple[int, dict[str, Any]]]:
    # a BOM (editors on Windows write one) is not part of the first line's JSON
    for number, raw in enumerate(blob.removeprefix(b"\xef\xbb\xbf").split(b"\n"), start=1):
        if not raw.strip():
            continue
        where = f"{path}:{number}"
        if len(raw) > MAX_LINE_BYTES:
            raise TaskLoadError(f"{where}: line of {len(raw)} bytes (at most {MAX_LINE_BYTES})")
        data = _json(raw, where)
        if not isinstance(data, dict):
            raise TaskLoadError(f"{where}: expected a JSON object, got {type(data).__name__}")
        _text_only(data, where)
        yield number, data


#: unknown keys named in one warning line; the rest are counted (a line may hold 80,000)
MAX_NAMED_KEYS = 5


def _warn_unknown(where: str, keys: list[str], note: str = "ignored") -> None:
    """One warning line for the unknown `keys` of one line or eval: a few named, the rest
    counted, so that a hostile file cannot flood stderr."""
    if not keys:
        return
    names = ", ".join(repr(k[:60]) for k in keys[:MAX_NAMED_KEYS])
    more = f" and {len(keys) - MAX_NAMED_KEYS:,} more" if len(keys) > MAX_NAMED_KEYS else ""
    warn(f"{where}: unknown key{'s' if len(keys) > 1 else ''} {names}{more} ({note})")


def _text_only(row: dict[str, Any], where: str) -> None:
    """Refuse a string anywhere in `row` that is not text: JSON's `"\\ud800"` escape decodes to
    a lone surrogate, which no UTF-8 file, prompt or published row can hold (it would stop the
    run after the model was called). The message names the field."""
    for key, value in row.items():
        stack = [key, value]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                stack.extend(x for pair in item.items() for x in pair)
            elif isinstance(item, list):
                stack.extend(item)
            elif isinstance(item, str) and not utf8_encodable(item):
                raise TaskLoadError(
                    f"{where}: field {ascii(key)[:62]}: holds a lone surrogate escape "
                    "(\\ud800-\\udfff), which is not text"
                )


def _json(blob: bytes, where: str) -> Any:
    try:
        return json.loads(blob.decode("utf-8"), object_pairs_hook=unique_keys)
    except UnicodeDecodeError as exc:
        raise TaskLoadError(f"{where}: not UTF-8 (byte {exc.start})") from None
    except (ValueError, RecursionError) as exc:  # deep nesting is refused, never expanded
        raise TaskLoadError(f"{where}: invalid JSON ({str(exc)[:120]})") from None


def _custom_task(path: Path, number: int, row: dict[str, Any]) -> Task:
    where = f"{path}:{number}"
    _warn_unknown(where, sorted(set(row) - KNOWN_KEYS))
    task_id = _text(row, "id", where, MAX_ID_CHARS)
    prompt = _text(row, "prompt", where, MAX_PROMPT_CHARS)
    domain = row.get("domain")
    if domain is not None and not (isinstance(domain, str) and 0 < len(domain) <= 100):
        raise TaskLoadError(f"{where}: field 'domain': a short string when given")
    graders = [g for g in GRADERS if g in row]
    if not graders:
        raise TaskLoadError(f"{where}: no grader: give exactly one of {', '.join(GRADERS)}")
    if len(graders) > 1:
        raise TaskLoadError(
            f"{where}: two graders ({', '.join(graders)}): give exactly one of {', '.join(GRADERS)}"
        )
    grader = graders[0]
    problem: dict[str, Any] = {"domain_tag": domain}
    entry_point = reference = None
    if grader == "tests":
        from hf_skillfollow.scoring._custom import UnsupportedTests, problem_from_tests

        tests = _text(row, "tests", where, MAX_FIELD_CHARS)
        entry = row.get("entry_point")
        if entry is not None and not isinstance(entry, str):
            raise TaskLoadError(f"{where}: field 'entry_point': must be a string")
        try:
            problem.update(problem_from_tests(tests, entry))
        except UnsupportedTests as exc:
            raise TaskLoadError(f"{where}: field 'tests': {exc}") from None
        except (ValueError, RecursionError, MemoryError) as exc:  # Python's own limits
            reason = str(exc)[:120] or type(exc).__name__
            raise TaskLoadError(f"{where}: field 'tests': cannot be read ({reason})") from None
        entry_point = problem["entry_point"]
    elif grader == "answer":
        from hf_skillfollow.scoring._math import reference_problem

        reference = _text(row, "answer", where, MAX_FIELD_CHARS)
        problem_text = reference_problem(reference)
        if problem_text is not None:  # refused once here, not paid for at every answer
            raise TaskLoadError(
                f"{where}: field 'answer' of task {ascii(task_id)[:80]}: {problem_text}"
            )
    else:
        problem["expectations"] = expectations(
            row.get("expectations"), f"{where}: field 'expectations'"
        )
        problem["expected_output"] = _optional_text(row, "expected_output", where)
    return Task(
        "custom",
        task_id,
        prompt,
        entry_point=entry_point,
        reference=reference,
        problem=problem,
        grader=grader,
    )


def _text(row: dict[str, Any], key: str, where: str, limit: int) -> str:
    value = row.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and key == "id":
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        what = (
            "missing" if key not in row else "empty" if isinstance(value, str) else "not a string"
        )
        raise TaskLoadError(f"{where}: field {key!r}: {what} (a non-empty string is required)")
    if len(value) > limit:
        raise TaskLoadError(f"{where}: field {key!r}: {len(value)} characters (at most {limit})")
    if key == "id" and value != value.strip():
        # "a" and "a " would be two tasks that print alike in every table
        raise TaskLoadError(f"{where}: field 'id': {value!r} has leading or trailing whitespace")
    return value


def id_spelling(task_id: str) -> str:
    """The form two ids are compared in for duplicates: NFKC, so that an id in another Unicode
    spelling (``cafe\u0301`` beside ``café``, a fullwidth ``１``), which prints alike, is the
    same id."""
    return unicodedata.normalize("NFKC", task_id)


def _optional_text(row: dict[str, Any], key: str, where: str) -> str | None:
    if row.get(key) is None:
        return None
    return _text(row, key, where, MAX_FIELD_CHARS)


def expectations(value: Any, where: str) -> tuple[str, ...]:
    """The checkable statements of one task, bounded."""
    if not isinstance(value, list) or not value:
        raise TaskLoadError(f"{where}: a non-empty list of statements is required")
    if len(value) > MAX_EXPECTATIONS:
        raise TaskLoadError(f"{where}: {len(value)} statements (at most {MAX_EXPECTATIONS})")
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise TaskLoadError(f"{where}[{i}]: a non-empty string is required")
        if len(item) > MAX_EXPECTATION_CHARS:
            raise TaskLoadError(
                f"{where}[{i}]: {len(item)} characters (at most {MAX_EXPECTATION_CHARS})"
            )
        if len(item.strip().splitlines()) > 1:
            # the judge reads the statements as a numbered list, one per line: a second line
            # would be read as another item, and one starting "e2." forges the next number
            raise TaskLoadError(
                f"{where}[{i}]: holds a line break (one statement per expectation, on one line)"
            )
    return tuple(s.strip() for s in value)


# --- the pool's evals/evals.json -------------------------------------------------------------


EVALS_FILE = Path("evals") / "evals.json"
_EVAL_KEYS = frozenset({"id", "prompt", "expected_output", "files", "expectations"})


def skill_folders(pool: Any) -> list[tuple[str, Path]]:
    """(skill name, skill folder) of every skill of `pool`."""
    return [(s.name, Path(getattr(s, "folder", None) or s.path.parent)) for s in pool.skills]


def _normal(text: str) -> str | None:
    """A text as compared for copies: JSON re-serialised canonically (so minified, pretty-printed
    or re-ordered JSON is the same), anything else with its whitespace runs collapsed; None for
    a text too short to tell a copy from a coincidence (`_arm_integrity.MIN_CHARS`, `[]`)."""
    from hf_skillfollow._arm_integrity import MIN_CHARS

    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        normal = " ".join(text.split())
    else:
        normal = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return normal if len(normal) >= MIN_CHARS else None


@dataclass(frozen=True)
class AnswerKeys:
    """Where the `skill-evals` loader reads each skill's evals from, resolved, and what they say.

    `folders` are the resolved `evals/` folders (a symlinked `evals -> data` resolves to
    `data`), `files` the resolved `evals.json` files, `texts` the normalised (`_normal`) texts
    of each file, of its `evals` list and of each eval in it."""

    folders: frozenset[Path]
    files: frozenset[Path]
    texts: frozenset[str]

    def is_key(self, path: Path, text: str) -> bool:
        """Whether the file at `path` with `text` is an evals.json (resolved) or a copy of one."""
        return path.resolve() in self.files or (_normal(text) or "") in self.texts

    def holds(self, path: Path, text: str) -> bool:
        """Whether the file at `path` is in an evals folder (resolved) or is an answer key:
        what is not served to the agent (an eval's input files live in its evals folder)."""
        real = path.resolve()
        return any(f in real.parents for f in self.folders) or self.is_key(path, text)


def answer_keys(pool: Any) -> AnswerKeys:
    """The answer keys of every skill of `pool` (see `AnswerKeys`); a file the loader would
    refuse is skipped here (`load_skill_evals` says why)."""
    folders: set[Path] = set()
    files: set[Path] = set()
    texts: set[str | None] = set()
    for _, folder in skill_folders(pool):
        path = folder / EVALS_FILE
        if not os.path.lexists(path):
            continue
        try:
            blob = _bounded_read(path, folder, MAX_FILE_BYTES, str(path))
            text = blob.decode("utf-8")
        except (TaskLoadError, UnicodeDecodeError):
            continue
        folders.add((folder / EVALS_FILE.parent).resolve())
        files.add(path.resolve())
        texts.add(_normal(text))
        try:
            evals = json.loads(text).get("evals")
        except (ValueError, RecursionError, AttributeError):
            continue
        if isinstance(evals, list):
            texts.add(_normal(json.dumps(evals)))
            texts.update(_normal(json.dumps(item)) for item in evals if isinstance(item, dict))
    texts.discard(None)
    return AnswerKeys(frozenset(folders), frozenset(files), frozenset(texts))


def without_evals(pool: Any, keys: AnswerKeys | None = None) -> Any:
    """`pool` with every answer key withdrawn from what the agent may read.

    A skill's evals hold the expected outputs and expectations its eval tasks are graded on;
    served to the SE arm (the catalog protocol's `read_skill_file`), they would hand it the
    answer key. Withdrawn, from every skill of the pool: each file whose resolved path is in
    a resolved `evals/` folder or is an `evals.json` the loader reads (a symlink, a symlinked
    folder), and each file whose text is a copy of an answer key after JSON normalisation
    (another skill's verbatim copy, a minified or pretty-printed one). The pool's content hash
    changes accordingly (it hashes served files)."""
    import dataclasses

    keys = keys or answer_keys(pool)
    if not keys.files:
        return pool
    skills = []
    for skill in pool.skills:
        resources, texts = tuple(skill.resources), tuple(skill.resource_texts)
        keep = [
            i for i, rel in enumerate(resources) if not keys.holds(skill.folder / rel, texts[i])
        ]
        skills.append(
            dataclasses.replace(
                skill,
                resources=tuple(resources[i] for i in keep),
                resource_texts=tuple(texts[i] for i in keep),
            )
        )
    return dataclasses.replace(pool, skills=tuple(skills))


@dataclass(frozen=True)
class _PoolContent:
    """What of the pool reaches the SE arm only: each SKILL.md and each served file, by resolved
    path and by text. An eval's attached file goes to both arms, so it may be none of these."""

    paths: dict[Path, str]
    texts: dict[str, str]

    @classmethod
    def of(cls, served: Any) -> _PoolContent:
        paths: dict[Path, str] = {}
        texts: dict[str, str] = {}
        for skill in served.skills:
            paths[skill.path.resolve()] = f"skill {skill.name!r}'s SKILL.md"
            named = [(f"skill {skill.name!r}'s SKILL.md", t) for t in (skill.text, skill.body)]
            for rel, text in zip(skill.resources, skill.resource_texts, strict=True):
                named.append((f"skill {skill.name!r}'s file {rel!r}", text))
                paths[(skill.folder / rel).resolve()] = named[-1][0]
            for what, text in named:
                normal = _normal(text)
                if normal is not None:
                    texts.setdefault(normal, what)
        return cls(paths, texts)

    def match(self, path: Path, text: str) -> str | None:
        return self.paths.get(path.resolve()) or self.texts.get(_normal(text) or "")


def load_skill_evals(pool: Any, *, workspace: bool = False) -> tuple[list[Task], str]:
    """Every eval of every skill of `pool` that has `evals/evals.json`, as tasks `<skill>/<id>`.

    An eval's attached `files` go into the prompt of both arms: one that is an answer key
    (`AnswerKeys`), a SKILL.md or a file the SE arm is served is refused (docs/tasks.md).
    `workspace`: the files are not attached but kept as bytes in the task's
    ``problem["workspace_files"]`` (relative name, content), for an agent's workspace
    (docs/harness.md): the same guards, any bytes, larger bounds, the prompt the eval's own."""
    tasks: list[Task] = []
    digest = hashlib.sha256()
    keys = answer_keys(pool)
    served = without_evals(pool, keys)
    guard = _AttachGuard(keys, _PoolContent.of(served), served)
    copied = 0
    for name, folder in skill_folders(pool):
        path = folder / EVALS_FILE
        if not os.path.lexists(path):
            continue
        if (folder / EVALS_FILE.parent).resolve() == folder.resolve():
            # `evals -> .`: every file of the skill is in its evals folder, so every one would
            # be withheld from the skill-enabled arm as an answer key (`without_evals`)
            raise TaskLoadError(
                f"{folder / EVALS_FILE.parent}: resolves to the skill folder itself, so every "
                f"file of skill {name!r} would be withheld from the skill-enabled arm as an "
                "answer key; keep the evals in a folder of their own"
            )
        blob = _bounded_read(path, folder, MAX_FILE_BYTES, str(path))
        digest.update(name.encode() + b"\x00" + blob + b"\x00")
        if "/" in name:
            # the task id `<skill>/<eval id>` is read back up to its first '/': skill `a/b`
            # would be reported as skill `a`, and its eval `c` be the task of skill `a`'s `b/c`
            raise TaskLoadError(
                f"{folder / 'SKILL.md'}: field 'name': skill {name!r} holds '/'; a skill with "
                "evals needs a name without it (the spec allows letters, digits and hyphens)"
            )
        room = MAX_TASKS - len(tasks)
        for task in _skill_tasks(name, folder, path, blob, room, guard, workspace):
            digest.update(task.prompt.encode() + b"\x00")  # attached files' content included
            for rel, content in task.problem.get("workspace_files", ()):
                digest.update(rel.encode() + b"\x00" + content + b"\x00")
                copied += len(content)
            if copied > MAX_WORKSPACE_POOL_TOTAL:
                raise TaskLoadError(
                    f"{path}: eval {task.task_id.partition('/')[2]!r}: the pool's evals' files "
                    f"exceed {MAX_WORKSPACE_POOL_TOTAL} bytes together (each eval's files are "
                    "copied into its own workspace)"
                )
            tasks.append(task)
        if len(tasks) > MAX_TASKS:
            raise TaskLoadError(f"{path}: the pool's evals exceed {MAX_TASKS} tasks")
    if not tasks:
        raise TaskLoadError(
            f"skill pool {pool.name}: no skill has {EVALS_FILE} (see docs/tasks.md, 'Skill evals')"
        )
    form = "+workspace" if workspace else ""
    return tasks, f"skill-evals@pool:{pool.name}{form}+sha256.{digest.hexdigest()[:16]}"


def _skill_tasks(
    skill: str, folder: Path, path: Path, blob: bytes, room: int, guard: _AttachGuard,
    workspace: bool = False,
) -> list[Task]:  # fmt: skip
    """The tasks of one `evals.json`; `room` is how many more tasks the pool may have."""
    data = _json(blob, str(path))
    evals = data.get("evals") if isinstance(data, dict) else None
    if not isinstance(evals, list):
        raise TaskLoadError(f"{path}: field 'evals': a list of evals is required")
    if len(evals) > room:
        # refused before any eval is built: 400,000 evals fit the 32 MiB a file may hold
        raise TaskLoadError(
            f"{path}: {len(evals)} evals; the pool's evals exceed {MAX_TASKS} tasks"
        )
    unknown: set[str] = set()
    tasks: list[Task] = []
    seen: set[str] = set()
    for i, item in enumerate(evals):
        where = f"{path}: evals[{i}]"
        if not isinstance(item, dict):
            raise TaskLoadError(f"{where}: expected an object")
        _text_only(item, where)
        new_keys = sorted(set(item) - _EVAL_KEYS - unknown)  # each key once per file
        _warn_unknown(where, new_keys, "ignored; not repeated for later evals")
        unknown.update(new_keys)
        eval_id = _text(item, "id", where, MAX_ID_CHARS)
        where = f"{path}: eval {eval_id!r}"
        if id_spelling(eval_id) in seen:
            raise TaskLoadError(f"{where}: field 'id': duplicate id (in this or another spelling)")
        seen.add(id_spelling(eval_id))
        prompt = _text(item, "prompt", where, MAX_PROMPT_CHARS)
        copied: dict[str, Any] = {}
        if workspace:
            copied["workspace_files"] = workspace_files(item.get("files"), folder, where, guard)
        else:
            prompt += attachments(item.get("files"), folder, where, guard)
        problem = {
            **copied,
            "domain_tag": None,
            "expectations": expectations(
                item.get("expectations"), f"{where}: field 'expectations'"
            ),
            "expected_output": _optional_text(item, "expected_output", where),
        }
        tasks.append(
            Task("skill-evals", f"{skill}/{eval_id}", prompt, problem=problem,
                 grader="expectations", skill=skill)
        )  # fmt: skip
    return tasks


@dataclass(frozen=True)
class _AttachGuard:
    """Refuses an attached file that would put an answer key or the skills in the prompts."""

    keys: AnswerKeys
    content: _PoolContent
    served: Any = None
    """The pool the skill-enabled arm is served (`holds` looks for its texts)."""

    def holds(self, blob: bytes, label: str) -> None:
        """Refuse a workspace file that holds a pool skill's text anywhere in it. An attachment
        needs no such check: it is in the SD request, whose arm-integrity check finds pool text
        in it (`_arm_integrity.sd_request_integrity`); a file in a workspace is in no request,
        and a harness trial's check sees only skills listed or loaded by name."""
        from hf_skillfollow._arm_integrity import pool_texts

        if self.served is None:
            return
        # whitespace runs collapsed, as `pool_texts` gives the texts (NUL counts as one)
        text = " ".join(blob.decode("utf-8", "replace").replace("\x00", " ").split())
        what = next((what for what, skill in pool_texts(self.served) if skill in text), None)
        if what is not None:
            raise TaskLoadError(
                f"{label}: holds {what}, which only the skill-enabled arm may read; copied into "
                "both arms' workspace, it would reach the skill-disabled arm too"
            )

    def check(self, path: Path, text: str, label: str) -> None:
        if self.keys.is_key(path, text):
            raise TaskLoadError(
                f"{label}: an answer key (an evals.json or a copy of one); an eval may not "
                "attach the evals it is graded on"
            )
        what = self.content.match(path, text)
        if what is not None:
            raise TaskLoadError(
                f"{label}: is {what}, which only the skill-enabled arm may read; attached, it "
                "would reach the skill-disabled arm too"
            )


def attachments(files: Any, folder: Path, where: str, guard: _AttachGuard | None = None) -> str:
    """The text of the files an eval names, to append to its prompt (the same in both arms).

    Only small UTF-8 text files inside the skill's folder are attached, none of them an answer
    key or pool content (`guard`); anything else is an error naming the eval and the file,
    never silently dropped."""

    def refuse(name: str, label: str) -> None:
        if Path(name).is_absolute():
            raise TaskLoadError(f"{label}: outside the skill folder {folder}")

    parts: list[str] = []
    named = _named_files(files, folder, where, MAX_ATTACHED_BYTES, MAX_ATTACHED_TOTAL, refuse)
    for name, label, path, blob in named:
        if b"\x00" in blob:
            raise TaskLoadError(f"{label}: binary file (only text files are attached)")
        try:
            text = blob.decode("utf-8")
        except UnicodeDecodeError:
            raise TaskLoadError(f"{label}: not UTF-8 text (only text files are attached)") from None
        if guard is not None:
            guard.check(path, text, label)
        # a file name may hold quotes, '<' or newlines: escaped, it cannot leave the attribute
        parts.append(f'\n\n<file name="{html.escape(name)}">\n{text}\n</file>')
    return "".join(parts)


def workspace_files(
    files: Any, folder: Path, where: str, guard: _AttachGuard
) -> tuple[tuple[str, bytes], ...]:
    """The files an eval names, as (relative name, bytes), to copy into an agent's workspace
    (the same in both arms). `attachments`' guards: inside the skill folder (no absolute
    path, no `..` or symlink out, no FIFO), none an answer key or pool content; any bytes
    (a PDF is what a workspace task is for), bounded by `MAX_WORKSPACE_FILE_BYTES` each and
    `MAX_WORKSPACE_TOTAL` together. A name is kept as a relative POSIX path without `.` or
    `..` parts, since it becomes a path in the workspace."""

    def refuse(name: str, label: str) -> None:
        if Path(name).is_absolute() or ".." in Path(name).parts or "\\" in name:
            raise TaskLoadError(
                f"{label}: not a relative path inside the skill folder {folder} (no '..')"
            )

    out: dict[str, bytes] = {}
    named = _named_files(
        files, folder, where, MAX_WORKSPACE_FILE_BYTES, MAX_WORKSPACE_TOTAL, refuse
    )
    for name, label, path, blob in named:
        guard.check(path, blob.decode("utf-8", "replace"), label)
        guard.holds(blob, label)
        place = Path(*[p for p in Path(name).parts if p != "."])
        _workspace_place(place, label)
        rel = place.as_posix()
        if rel in out:
            raise TaskLoadError(f"{label}: named twice")
        out[rel] = blob
    return tuple(out.items())


def _workspace_place(rel: Path, label: str) -> None:
    """Refuse a workspace path that would change what is judged or what the arms have: one in
    `OUTPUTS_FOLDER` (the judge would read it as the agent's output; compared without case,
    as a case-insensitive checkout of the task folder would), or a ``SKILL.md`` where agents
    discover skills in their working folder (a hidden folder, ``.claude/skills/``,
    ``.agents/skills/``, ..., or a top ``skills/``), which the skill-disabled arm would have
    too. A ``SKILL.md`` elsewhere (``evals/files/draft/SKILL.md``, the input of a
    skill-authoring eval) is a plain file no agent loads as a skill."""
    folders = [p.casefold() for p in rel.parts[:-1]]
    if rel.parts and rel.parts[0].casefold() == OUTPUTS_FOLDER:
        raise TaskLoadError(
            f"{label}: would be copied into the workspace's {OUTPUTS_FOLDER}/, where the judge "
            "reads what the agent produced; keep an eval's files elsewhere"
        )
    if rel.name.casefold() == "skill.md" and (
        any(p.startswith(".") for p in folders) or folders[:1] == ["skills"]
    ):
        raise TaskLoadError(
            f"{label}: a SKILL.md where agents discover skills (a hidden folder such as "
            ".claude/skills/, or skills/) is a skill in both arms' workspace, so the "
            "skill-disabled arm would have a skill; give skills through the pool"
        )


def _named_files(
    files: Any, folder: Path, where: str, each: int, together: int,
    refuse: Callable[[str, str], None],
) -> Iterator[tuple[str, str, Path, bytes]]:  # fmt: skip
    """(name, label, path, bytes) of each file an eval's `files` names, in order: at most
    `MAX_ATTACHED_FILES` names, each refused by `refuse(name, label)` or read inside `folder`
    (`_bounded_read`, at most `each` bytes), `together` bytes in all."""
    if files is None:
        return
    if not isinstance(files, list) or len(files) > MAX_ATTACHED_FILES:
        raise TaskLoadError(
            f"{where}: field 'files': a list of at most {MAX_ATTACHED_FILES} relative paths"
        )
    root = folder.resolve()
    total = 0
    for name in files:
        if not isinstance(name, str) or not name.strip():
            raise TaskLoadError(f"{where}: field 'files': {name!r} is not a path")
        label = f"{where}: file {name[:200]!r}"
        refuse(name, label)
        blob = _bounded_read(root / name, root, each, label)
        total += len(blob)
        if total > together:
            raise TaskLoadError(f"{label}: the eval's files exceed {together} bytes")
        yield name, label, root / name, blob


def _bounded_read(path: Path, folder: Path, limit: int, label: str) -> bytes:
    """`path`'s bytes by the skill-folder reader: no symlink out of `folder`, no FIFO, bounded."""
    from hf_skillfollow._skill_files import read_inside
    from hf_skillfollow.skills import SkillFileError

    if "\x00" in str(path):  # the OS takes no NUL in a path (Python raises ValueError)
        raise TaskLoadError(f"{label}: a name holding a NUL character is no file name")
    try:
        return read_inside(path, folder, limit)
    except SkillFileError as exc:
        raise TaskLoadError(f"{label}: {exc}") from None

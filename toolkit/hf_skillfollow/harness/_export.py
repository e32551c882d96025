"""`tasks export-harbor`: a `--benchmark custom` task file's `tests` tasks as Harbor tasks.

One task set serves the chat loop and the agents (docs/harness.md, "One task set for both").
Each `tests` task becomes ``OUT/<folder>/``: ``instruction.md`` (a fixed sentence naming the
file to write, then the task's prompt verbatim), ``task.toml``, ``environment/Dockerfile``
(only what the sandbox environment understands: ``FROM``, ``WORKDIR``) and ``tests/``: a
fixed ``test.sh``, the fixed verifier ``verify.py`` (``_tests_verifier``, copied verbatim)
and the task's data, ``inputs.json`` and ``expected.json``. The task file is untrusted: it
is loaded by `tasks_custom.load_custom` (bounded, validated), its text reaches the exported
task only as JSON data, TOML strings escaped here, and the instruction's prompt; never a
shell script or code. Tasks graded by `answer` or `expectations` are skipped, each with why.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hf_skillfollow._task import Task, TaskLoadError

#: where the agent must leave its solution (in the task's workdir)
WORKDIR = "/app"
SOLUTION = f"{WORKDIR}/solution.py"
#: the instruction: the fixed part, then the task's own prompt verbatim (protocol text)
INSTRUCTION = (
    "Write your solution as a Python file at `{solution}`. It must define the function "
    "`{entry}`: the checks load that file and call `{entry}` with the inputs of the task's "
    "tests, so the file must run with the Python standard library alone, without network "
    "and without asking for input.\n\nThe task:\n\n"
)
TEST_SH = f"""#!/bin/bash
# Written by `hf-skillfollow tasks export-harbor`, the same for every task: the task's data
# are in inputs.json and expected.json, read by the fixed verifier verify.py.
mkdir -p /logs/verifier
python3 /tests/verify.py /tests {SOLUTION} /logs/verifier || echo 0 > /logs/verifier/reward.txt
"""
DOCKERFILE = f"""# Any image with python3; the sandbox environment ignores FROM and uses the host's /usr.
FROM python:3.12-slim
WORKDIR {WORKDIR}
"""
_VERIFIER = Path(__file__).with_name("_tests_verifier.py")
#: a folder name: lower-case letters, digits, `-` and `_`, at most this long
MAX_FOLDER_CHARS = 64
_UNSAFE = re.compile(r"[^a-z0-9_-]+")
SKIP_REASON = {
    "answer": "graded by 'answer' (a reference answer in the reply), which needs the chat "
    "loop's answer text; only 'tests' tasks are exported",
    "expectations": "graded by 'expectations' (the judge reads the reply), which needs the "
    "chat loop's answer text; only 'tests' tasks are exported",
}


class ExportError(ValueError):
    """The export cannot be made; the message names the file, task or folder."""


@dataclass
class Exported:
    """What an export did: folders written (task id -> folder), tasks skipped with why."""

    written: dict[str, Path] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def folder_name(task_id: str) -> str:
    """A filesystem- and Docker-safe folder name for `task_id` (not necessarily unique)."""
    name = _UNSAFE.sub("-", task_id.lower()).strip("-_")[:MAX_FOLDER_CHARS].strip("-_")
    return name or "task"


def export_harbor(tasks_file: str | Path, out_dir: str | Path, overwrite: bool = False) -> Exported:
    """Write every `tests` task of `tasks_file` as a Harbor task under `out_dir`."""
    from hf_skillfollow.tasks_custom import load_custom

    tasks, version = load_custom(tasks_file)
    result = Exported()
    folders: dict[str, str] = {}
    chosen: list[tuple[Task, str]] = []
    for task in tasks:
        if task.grader != "tests":
            result.skipped.append((task.task_id, SKIP_REASON[str(task.grader)]))
            continue
        name = folder_name(task.task_id)
        if name in folders:
            raise ExportError(
                f"{tasks_file}: tasks {folders[name]!r} and {task.task_id!r} both become the "
                f"folder {name!r}: rename one (a folder keeps only a-z, 0-9, '-' and '_')"
            )
        folders[name] = task.task_id
        chosen.append((task, name))
    out = Path(out_dir)
    for _, name in chosen:
        target = out / name
        if target.is_symlink() or (target.exists() and not target.is_dir()):
            raise ExportError(f"{target}: exists and is not a folder; not replaced")
        if target.exists() and not overwrite:
            raise ExportError(f"{target}: exists (give --overwrite to replace it)")
    out.mkdir(parents=True, exist_ok=True)
    for task, name in chosen:
        result.written[task.task_id] = _write(task, out, name, version)
    return result


def _write(task: Task, out: Path, name: str, version: str) -> Path:
    """Build the task in a fresh folder beside its target, then move it into place."""
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=out))
    try:
        _fill(task, staging, version)
        target = out / name
        if target.is_dir():
            old = Path(tempfile.mkdtemp(prefix=f".{name}.old.", dir=out))
            os.replace(target, old / name)
            os.replace(staging, target)
            shutil.rmtree(old)
        else:
            os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _fill(task: Task, folder: Path, version: str) -> None:
    entry = str(task.entry_point)
    (folder / "instruction.md").write_text(
        INSTRUCTION.format(solution=SOLUTION, entry=entry) + task.prompt.rstrip("\n") + "\n",
        encoding="utf-8",
    )
    (folder / "task.toml").write_text(_task_toml(task, version), encoding="utf-8")
    (folder / "environment").mkdir()
    (folder / "environment" / "Dockerfile").write_text(DOCKERFILE, encoding="utf-8")
    tests = folder / "tests"
    tests.mkdir()
    (tests / "test.sh").write_text(TEST_SH, encoding="utf-8")
    (tests / "test.sh").chmod(0o755)
    shutil.copyfile(_VERIFIER, tests / "verify.py")
    inputs, expected = cases(task)
    (tests / "inputs.json").write_text(
        json.dumps({"entry_point": entry, "inputs": inputs}), encoding="utf-8"
    )
    (tests / "expected.json").write_text(json.dumps(expected, indent=1), encoding="utf-8")


def cases(task: Task) -> tuple[list[str], list[dict]]:
    """The asserts of a `tests` task as the verifier's data: each call's arguments (a literal's
    `repr`, read back with `ast.literal_eval`), and per assert its line, comparison,
    tolerance and expected result. Parsed by the `tests` grader's own reader, so an exported
    task means what the chat loop's grader means."""
    from hf_skillfollow.scoring._custom import _statement

    found: list = []
    tree = ast.parse(task.problem["tests"])
    for node in tree.body:
        _statement(node, found, candidate=None)
    if len(found) != len(task.problem["base_input"]):
        raise TaskLoadError(f"task {task.task_id!r}: its asserts could not be read back")
    lines = [n.lineno for n in _asserts(tree)]
    inputs = [repr(list(args)) for _, args, _, _ in found]
    expected = [
        {"line": line, "op": op, "tol": repr(tol), "flipped": flipped, "expected": repr(value)}
        for line, (_, _, value, (op, tol, flipped)) in zip(lines, found, strict=True)
    ]
    return inputs, expected


def _asserts(tree: ast.Module) -> list[ast.Assert]:
    """The asserts of a parsed `tests` in order, those inside `def check(...)` included."""
    found: list[ast.Assert] = []
    for node in tree.body:
        body = node.body if isinstance(node, ast.FunctionDef) else [node]
        found += [n for n in body if isinstance(n, ast.Assert)]
    return found


def _task_toml(task: Task, version: str) -> str:
    domain = task.problem.get("domain_tag")
    meta = {
        "description": f"hf-skillfollow custom task {task.task_id}"[:300],
        "hf_skillfollow_task_id": task.task_id,
        "hf_skillfollow_source": version,
        "entry_point": str(task.entry_point),
        "solution_file": SOLUTION,
        **({"domain": domain} if domain else {}),
    }
    return task_toml(meta, verifier_timeout=120.0)


def task_toml(meta: dict[str, str], *, verifier_timeout: float) -> str:
    """A written task's `task.toml`: `meta` as `[metadata]` strings (escaped), the verifier's
    timeout, the agent's 600 s, no network, the workdir `/app`."""
    lines = ['schema_version = "1.4"', "", "[metadata]"]
    lines += [f"{key} = {toml_string(value)}" for key, value in meta.items()]
    lines += [
        "",
        "[verifier]",
        f"timeout_sec = {float(verifier_timeout)}",
        'environment_mode = "shared"',
        "",
        "[agent]",
        "timeout_sec = 600.0",
        "",
        "[environment]",
        'network_mode = "no-network"',
        "build_timeout_sec = 600.0",
        f"workdir = {toml_string(WORKDIR)}",
    ]
    return "\n".join(lines) + "\n"


def toml_string(text: str) -> str:
    """`text` as a TOML basic string: quotes and backslashes escaped, every control character
    (newlines, DEL, ...) as a `\\uXXXX` escape, the rest as is (TOML files are UTF-8)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'

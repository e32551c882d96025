"""A skill pool's evals (`evals/evals.json`) as Harbor workspace tasks, judged after the run.

`run --harness harbor --benchmark skill-evals` (docs/harness.md, "Skill evals as workspace
tasks"). The evals are read by the chat loop's loader in its workspace form
(`tasks_custom.load_skill_evals(pool, workspace=True)`): the same validation, the same guards
on the files an eval names (inside the skill folder, no symlink out, no answer key, nothing
only the skill-enabled arm may read), but the files are copied into the workspace instead of
attached to the prompt. Each eval becomes ``<folder>/``:

- ``instruction.md``: the eval's prompt verbatim, then `WORKSPACE` (where its files are and
  that what it produces goes in ``/app/outputs/``), the same in both arms;
- ``environment/files/<path>``: each file the eval names, at the path it names, copied to
  ``/app/<path>`` by ``environment/Dockerfile`` (``COPY files/ /app/``), with an empty
  ``outputs/``;
- ``tests/test.sh`` and ``tests/collect.py`` (`_outputs_collector`, the same bytes for every
  task): the "verifier" grades nothing, it collects the files left in ``/app/outputs/``,
  bounded, into ``/logs/verifier/outputs.json``.

The expectations and expected output (the answer key) are never written into a task folder:
they stay with the run (`EvalTasks.tasks`) for the blinded judge (`_judged`), and the skill
pool installed in the skill-enabled arm is `tasks_custom.without_evals` of it.
"""

from __future__ import annotations

import dataclasses
import html
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_skillfollow._task import Task, TaskLoadError
from hf_skillfollow.harness._errors import HarnessError
from hf_skillfollow.harness._export import WORKDIR

OUTPUTS = f"{WORKDIR}/outputs"
#: the instruction's fixed part after the eval's prompt (protocol text, both arms alike)
WORKSPACE = (
    "\n\n---\nYou work in `{workdir}`.{files} Save every file you produce for this task in "
    "`{outputs}/`: those files and your final message are what is evaluated."
)
FILES_LINE = " The files of this task are there: {names}."
TEST_SH = f"""#!/bin/bash
# Written by hf-skillfollow for a skill eval, the same for every task: it grades nothing. It
# collects the files left in {OUTPUTS}/ (bounded) for the judge, which grades afterwards.
mkdir -p /logs/verifier
python3 /tests/collect.py {OUTPUTS} /logs/verifier || echo 0 > /logs/verifier/reward.txt
"""
DOCKERFILE = f"""# Any image with python3; the sandbox environment ignores FROM and uses the host's /usr.
FROM python:3.12-slim
WORKDIR {WORKDIR}
COPY files/ {WORKDIR}/
"""
_COLLECTOR = Path(__file__).with_name("_outputs_collector.py")


class EvalTaskError(HarnessError):
    """The evals cannot become tasks; one line naming the eval or folder."""


def load(pool: Any) -> EvalTasks:
    """The pool's evals as workspace tasks; a bad eval is one `EvalTaskError` line naming
    its evals.json, the eval and the field or file (the loader's own message)."""
    try:
        return EvalTasks.of(pool)
    except TaskLoadError as exc:
        raise EvalTaskError(str(exc)) from None


@dataclass(frozen=True)
class EvalTasks:
    """The pool's evals as workspace tasks: `tasks` by task folder name (each task's prompt is
    what the judge is shown as the task), `version` (hashes every evals.json and every file)
    and `served`, the pool installed in the skill-enabled arm (its answer keys withdrawn)."""

    tasks: dict[str, Task]
    version: str
    served: Any

    @classmethod
    def of(cls, pool: Any) -> EvalTasks:
        from hf_skillfollow.harness._export import folder_name
        from hf_skillfollow.tasks_custom import (
            EVALS_FILE,
            load_skill_evals,
            skill_folders,
            without_evals,
        )

        loaded, version = load_skill_evals(pool, workspace=True)
        where = {skill: folder / EVALS_FILE for skill, folder in skill_folders(pool)}
        tasks: dict[str, Task] = {}
        for task in loaded:
            name = folder_name(task.task_id.replace("/", "-"))
            if name in tasks:
                raise EvalTaskError(
                    f"evals {tasks[name].task_id!r} and {task.task_id!r} both become the task "
                    f"folder {name!r}: rename one (a folder keeps only a-z, 0-9, '-' and '_')"
                )
            # the prompt becomes the judge's view of the task; the eval's own stays for the
            # agent's instruction
            problem = {**task.problem, "eval_prompt": task.prompt}
            task = dataclasses.replace(task, prompt=judge_prompt(task), problem=problem)
            tasks[name] = _judgeable(task, where[str(task.skill)])
        return cls(tasks, version, without_evals(pool))

    def write(self, dest: Path) -> Path:
        """Write every task under `dest` (replaced: it is the run's own staging folder)."""
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        for name, task in self.tasks.items():
            _write_task(task, dest / name, self.version)
        return dest


def _judgeable(task: Task, evals_file: Path) -> Task:
    """`task`, refused when the judge could grade no answer to it: its view of the task alone
    (the instruction, the workspace's text files, the expected output and the expectations)
    is as long as the judge reads (`INPUT_MAX_CHARS`), so every trial of both arms would be a
    `truncated` grading failure, found only after the agents ran."""
    from hf_skillfollow.judge._request import INPUT_MAX_CHARS, input_chars
    from hf_skillfollow.scoring._custom import blinded_view

    size = input_chars(blinded_view(task, ""))
    if size >= INPUT_MAX_CHARS:
        raise EvalTaskError(
            f"{evals_file}: eval {task.task_id.partition('/')[2]!r}: the judge would read "
            f"{size} characters of the task alone "
            "(its prompt, its text files, expected output and expectations), and it reads at "
            f"most {INPUT_MAX_CHARS} with the answer: no trial could be judged; give the eval "
            "smaller text files"
        )
    return task


def refuse_judged(tasks: list[Path]) -> None:
    """Refuse a task folder written here for a skill eval given with ``--tasks``: its verifier
    grades nothing (a placeholder reward of 0), so only ``--benchmark skill-evals``, which
    judges the trials, gives it a result. Read bounded, never through a link out."""
    import tomllib

    from hf_skillfollow.harness._stage import MAX_TOML_BYTES
    from hf_skillfollow.importers import ImportInputError
    from hf_skillfollow.importers._walk import read_bytes

    for task in tasks:
        try:
            # as much as staging takes (`_stage` refuses more): a larger cap here let a
            # padded skill eval pass unread
            text = read_bytes(task / "task.toml", MAX_TOML_BYTES, task).decode("utf-8", "replace")
            meta = tomllib.loads(text).get("metadata")
        except (ImportInputError, ValueError, RecursionError):  # an int past 4,300 digits too
            continue  # Harbor reads the task itself and says what is wrong with it
        if isinstance(meta, dict) and meta.get("hf_skillfollow_grader") == "judge":
            raise EvalTaskError(
                f"--tasks: {task} is a skill eval written by hf-skillfollow: its verifier "
                "grades nothing (the judge grades after the trials); run the evals with "
                "--benchmark skill-evals --skills POOL"
            )


def instruction(task: Task) -> str:
    """The agent's instruction: the eval's prompt verbatim, then `WORKSPACE`."""
    names = [rel for rel, _ in task.problem.get("workspace_files", ())]
    files = FILES_LINE.format(names=", ".join(f"`{n}`" for n in names)) if names else ""
    prompt = task.problem.get("eval_prompt", task.prompt)
    return prompt.rstrip("\n") + WORKSPACE.format(workdir=WORKDIR, files=files, outputs=OUTPUTS)


def judge_prompt(task: Task) -> str:
    """The task as the judge is shown it: the agent's instruction, then each text file of the
    workspace as the chat loop attaches files (`<file name="...">`); a binary one by its name
    and size."""
    parts = [instruction(task)]
    for rel, blob in task.problem.get("workspace_files", ()):
        name = html.escape(rel)
        try:
            text = None if b"\x00" in blob else blob.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is None:
            parts.append(f'<file name="{name}" bytes="{len(blob)}">(binary file)</file>')
        else:
            parts.append(f'<file name="{name}">\n{text}\n</file>')
    return "\n\n".join(parts)


def _write_task(task: Task, folder: Path, version: str) -> None:
    from hf_skillfollow.harness._export import task_toml

    folder.mkdir()
    (folder / "instruction.md").write_text(instruction(task) + "\n", encoding="utf-8")
    meta = {
        "description": f"hf-skillfollow skill eval {task.task_id}"[:300],
        "hf_skillfollow_task_id": task.task_id,
        "hf_skillfollow_source": version,
        "hf_skillfollow_grader": "judge",
        "skill": str(task.skill),
    }
    toml = task_toml(meta, verifier_timeout=60.0)
    (folder / "task.toml").write_text(toml, encoding="utf-8")
    files = folder / "environment" / "files"
    (files / "outputs").mkdir(parents=True)
    (folder / "environment" / "Dockerfile").write_text(DOCKERFILE, encoding="utf-8")
    root = files.resolve()
    for rel, blob in task.problem.get("workspace_files", ()):
        target = files / rel
        if not target.resolve().is_relative_to(root):  # the loader refuses '..'; kept safe
            raise EvalTaskError(f"eval {task.task_id!r}: file {rel!r} leaves the workspace")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blob)
    tests = folder / "tests"
    tests.mkdir()
    (tests / "test.sh").write_text(TEST_SH, encoding="utf-8")
    (tests / "test.sh").chmod(0o755)
    shutil.copyfile(_COLLECTOR, tests / "collect.py")

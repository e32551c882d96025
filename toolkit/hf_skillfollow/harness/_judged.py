"""The blinded judge over a harness run's skill-eval trials (docs/harness.md).

After the Harbor job(s) have run, each finished trial is graded by the chat loop's judge, the
same mechanism and the same protocol strings (`scoring._custom.judged_verdict`: the blinded
request, K repeats, majority, ties, an empty answer never judged). What the judge reads as
the answer is what skill-creator's grader reads of an eval run: the agent's final message
(the last agent step of the trial's ATIF ``agent/trajectory.json``) and the files it left in
``/app/outputs/`` (collected by the task's verifier into ``verifier/outputs.json``), each file
as ``<file name="outputs/...">`` after the message. The request holds nothing of the arm:
two trials that left the same message and files give byte-identical requests.

A trial that ended in an exception is not judged (its error makes it incorrect, as an arm that
ended in an error in the chat loop). Each verdict is kept in the work folder
(``judged/<judge key>/<job>/<trial>.json``; trial names are Harbor's, unique), so running the same command again judges only
the trials it has not judged yet; another judge judges again into its own folder and cell.

Trial folders are untrusted: every file is read bounded, without following a link out of the
trial folder, and a malformed ``outputs.json`` is said in the answer, never trusted.
"""

from __future__ import annotations

import asyncio
import dataclasses
import html
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_skillfollow.harness._errors import HarnessError
from hf_skillfollow.harness._outputs_collector import MAX_FILES, MAX_TOTAL
from hf_skillfollow.importers import Graded, Judging

#: bounds on what is read back from a trial folder
MAX_TRAJECTORY_BYTES = 32 * 1024 * 1024
MAX_OUTPUTS_JSON_BYTES = 4 * 1024 * 1024
_MAX_FILE_CHARS = 64 * 1024
_MAX_NAME = 300
#: the judge flags of `run` that a harness run on skill evals reads
JUDGE_FLAGS = ("judge_model", "judge_backend", "judge_base_url", "judge_api_key_env",
               "judge_repeats", "judge_max_tokens")  # fmt: skip


class JudgeRunError(HarnessError):
    """The judge cannot be set up or a trial cannot be judged; one line naming why."""


@dataclass(frozen=True)
class Outputs:
    """The files a trial left in its outputs folder, as the verifier collected them."""

    files: tuple[tuple[str, str | None, int], ...] = ()
    """(name, text or None for a binary file, bytes) per collected file."""
    left_out: tuple[tuple[str, str], ...] = ()
    """(name, why) per file the collector left out (too large, a link, ...)."""
    problem: str | None = None
    """Why the collected files could not be read, else None."""


@dataclass(frozen=True)
class JudgeChoice:
    """The judge of a run's trials: `config` (a `RunConfig` whose `judge_config()` reaches
    it) and `settings` (`JudgeSettings`: what the rows record, the cell's judge)."""

    config: Any
    settings: Any


def judge_config(
    agent_model: str | None,
    base_url: str | None,
    api_key_env: str | None,
    judge: dict[str, Any],
    embedded: bool,
) -> JudgeChoice:
    """The judge of the trials: `--judge-*` as given, else the agent's own model at its own
    endpoint (a LiteLLM ``openai/NAME`` is ``NAME`` at the OpenAI-compatible endpoint), or the
    embedded model when the agent ran on it. A judge that is the agent's model is recorded
    under the agent's model name (the rows' `model`), so the board calls it self-judged."""
    from pydantic import ValidationError

    from hf_skillfollow.config import RunConfig
    from hf_skillfollow.runner import judge_settings

    base: dict[str, Any] = {"backend": "local"}
    if not embedded:
        model = str(agent_model)
        provider, _, _ = model.rpartition("/")
        if provider not in ("", "openai") and not judge.get("judge_model"):
            # the judge speaks OpenAI-compatible chat (the chat loop's backends); an agent on
            # an Anthropic or other endpoint gives it no model to default to
            raise JudgeRunError(
                f"--judge-model: the agent's model {model!r} is not an OpenAI-compatible "
                "name (openai/NAME); name the judge with --judge-model (and --judge-base-url, "
                "--judge-api-key-env)"
            )
        base = {
            "backend": "openai",
            "model": model.removeprefix("openai/"),
            "base_url": base_url,
            "api_key_env": api_key_env,
        }
    values = {k: v for k, v in judge.items() if k in JUDGE_FLAGS and v is not None}
    values.update({k: v for k, v in base.items() if v is not None})
    try:
        config = RunConfig(benchmark="skill-evals", **values)
    except ValidationError as exc:
        err = exc.errors()[0]
        flag = "--" + "-".join(str(p) for p in err["loc"]).replace("_", "-")
        raise JudgeRunError(f"{flag}: {err['msg']}") from None
    settings = judge_settings(config)
    if not judge.get("judge_model"):
        settings = dataclasses.replace(settings, model=str(agent_model))
    return JudgeChoice(config, settings)


def final_message(trial: Path) -> str:
    """The agent's last message in the trial's ATIF trajectory ('' when there is none): a
    string, or ATIF's content parts (text, and a medium by its path). Longer than the judge
    reads (`INPUT_MAX_CHARS`), it is cut there and marked, so the judge still refuses it as
    too long (a `truncated` grading failure) while the verdict and the traces keep a bounded
    answer."""
    from hf_skillfollow.judge._request import INPUT_MAX_CHARS

    message = _last_message(trial)
    if len(message) > INPUT_MAX_CHARS:
        return (f"{message[:INPUT_MAX_CHARS]}\n(the final message is cut here: "
                f"{len(message)} characters in all)")  # fmt: skip
    return message


def _last_message(trial: Path) -> str:
    from hf_skillfollow.importers import ImportInputError
    from hf_skillfollow.importers._walk import read_bytes

    path = trial / "agent" / "trajectory.json"
    if not path.is_file() or path.is_symlink():
        return ""
    try:
        document = json.loads(read_bytes(path, MAX_TRAJECTORY_BYTES, trial).decode("utf-8"))
    except (ImportInputError, UnicodeDecodeError, ValueError, RecursionError):
        return ""
    steps = document.get("steps") if isinstance(document, dict) else None
    for step in reversed(steps if isinstance(steps, list) else []):
        if isinstance(step, dict) and step.get("source") == "agent":
            message = _message_text(step.get("message"))
            if message.strip():
                return message.strip()
    return ""


def _message_text(message: Any) -> str:
    """An ATIF message as text: a string as is; content parts (ATIF 1.6+) joined by lines,
    a text part's text, an image or audio part as ``[image: PATH]``."""
    if isinstance(message, str):
        return message
    if not isinstance(message, list):
        return ""
    lines = []
    for part in message:
        if not isinstance(part, dict):
            continue
        kind, text, source = part.get("type"), part.get("text"), part.get("source")
        if kind == "text" and isinstance(text, str):
            lines.append(text)
        elif isinstance(kind, str) and isinstance(source, dict):
            lines.append(f"[{kind[:20]}: {str(source.get('path'))[:200]}]")
    return "\n".join(lines)


def read_outputs(trial: Path) -> Outputs:
    """The trial's ``verifier/outputs.json`` (`_outputs_collector`), checked and bounded."""
    from hf_skillfollow.importers import ImportInputError
    from hf_skillfollow.importers._walk import read_bytes

    path = trial / "verifier" / "outputs.json"
    if not path.is_file() or path.is_symlink():
        return Outputs(problem="the verifier collected no outputs.json")
    try:
        blob = read_bytes(path, MAX_OUTPUTS_JSON_BYTES, trial)
    except ImportInputError as exc:
        return Outputs(problem=f"outputs.json cannot be read ({_unread(exc)})")
    try:
        data = json.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return Outputs(problem=f"outputs.json cannot be read ({str(exc)[:200]})")
    try:
        files = tuple(_file(f) for f in _items(data, "files"))
        left = tuple((_name(f["name"]), str(f["why"])[:200]) for f in _items(data, "left_out"))
        if sum(len(text or "") for _, text, _ in files) > MAX_TOTAL:
            # the collector never writes more: a forged file, which would crowd the answer
            raise ValueError(f"the files' text is over the collector's {MAX_TOTAL} characters")
    except (KeyError, TypeError, ValueError) as exc:
        return Outputs(problem=f"outputs.json is not the collector's ({str(exc)[:200]})")
    return Outputs(files, left)


def _unread(exc: Exception) -> str:
    """Why the reader refused a trial file, in words of ours: its message holds the host
    path, ``.../jobs/<job>/<trial>/...``, which would tell the judge the trial (and, of two
    jobs, the arm)."""
    text = str(exc)
    if "leads out of" in text:
        return "a link leading out of the trial folder"
    if "not a regular file" in text:
        return "not a regular file"
    if "bytes" in text:
        return f"over {MAX_OUTPUTS_JSON_BYTES} bytes"
    return "the file system refused it"


def _items(data: Any, key: str) -> list[dict[str, Any]]:
    items = data.get(key) if isinstance(data, dict) else None
    if not isinstance(items, list) or len(items) > MAX_FILES:
        raise ValueError(f"'{key}' is not a list of at most {MAX_FILES}")
    if not all(isinstance(i, dict) for i in items):
        raise ValueError(f"'{key}' holds a non-object")
    return items


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value or len(value) > _MAX_NAME:
        raise ValueError("a file name is not a short string")
    return value


def _file(entry: dict[str, Any]) -> tuple[str, str | None, int]:
    text, size = entry.get("text"), entry.get("bytes")
    if text is not None and (not isinstance(text, str) or len(text) > _MAX_FILE_CHARS):
        raise ValueError("a file's text is not a bounded string")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise ValueError("a file's size is not a count")
    return _name(entry["name"]), text, size


def answer_text(message: str, outputs: Outputs) -> str:
    """What the judge reads as the answer: the final message, then each output file as the
    chat loop shows a file (`<file name="...">`, the name escaped), a binary one and one left
    out by its name and why, so the judge is told what it does not see. With no message and
    no collected file the answer is empty (never judged, as in the chat loop), not our notes."""
    if not message.strip() and not outputs.files:
        return ""
    parts = [message]
    for name, text, size in outputs.files:
        label = html.escape(f"outputs/{name}")
        if text is None:
            parts.append(f'<file name="{label}" bytes="{size}">(binary file, not shown)</file>')
        else:
            parts.append(f'<file name="{label}">\n{text}\n</file>')
    for name, why in outputs.left_out:
        parts.append(f'<file name="{html.escape(f"outputs/{name}")}">(not collected: '
                     f"{html.escape(why)})</file>")  # fmt: skip
    if outputs.problem is not None:
        parts.append(f"(output files not read: {html.escape(outputs.problem)})")
    return "\n\n".join(p for p in parts if p.strip())


def _trials(job: Path) -> list[tuple[Path, dict[str, Any]]]:
    """(trial folder, result) of every finished trial of one Harbor job folder."""
    from hf_skillfollow.importers import ImportInputError
    from hf_skillfollow.importers._walk import read_json

    found = []
    for result in sorted(job.glob("*/result.json")):
        if result.is_symlink() or result.parent.is_symlink():
            continue
        try:
            data = read_json(result, job)
        except ImportInputError:
            continue  # the importer names it
        if isinstance(data, dict) and "trial_name" in data:
            found.append((result.parent, data))
    return found


def judge_trials(
    work: Path,
    tasks: dict[str, Any],
    judge: JudgeChoice,
    concurrency: int,
    echo: Callable[[str], None],
) -> Judging:
    """Judge every finished, error-free trial of the job(s) under ``work/jobs``, one job of
    both arms or one per arm (those judged before are read back); the `Judging` the importer
    records."""
    from hf_skillfollow.config import stable_hash

    settings = judge.settings
    identity = settings.identity()
    store = work / "judged" / stable_hash(identity)[:12]
    verdicts: dict[Path, Graded] = {}
    todo: list[tuple[Path, Path, Any, str]] = []
    jobs = sorted(p for p in (work / "jobs").iterdir() if p.is_dir() and not p.is_symlink())
    for job in jobs:
        for folder, result in _trials(job):
            if result.get("exception_info") is not None:
                continue  # an errored trial is incorrect, not judged (the importer keeps why)
            task = tasks.get(str(result.get("task_name")))
            if task is None:
                raise JudgeRunError(f"{folder}: task {result.get('task_name')!r} is no eval")
            cached = store / job.name / f"{folder.name}.json"
            if cached.is_file():
                verdicts[folder.resolve()] = Graded(**json.loads(cached.read_text()))
            else:
                todo.append((folder, cached, task, answer_text(final_message(folder),
                                                               read_outputs(folder))))  # fmt: skip
    if todo:
        echo(f"judge: {len(todo)} trial(s) to grade with {settings.judge}")
        graded = asyncio.run(_judge_all(judge.config, settings, todo, concurrency))
        unanswered = [(f, g) for (f, *_), g in zip(todo, graded, strict=True) if unreached(g)]
        if unanswered:
            folder, first = unanswered[0]
            raise JudgeRunError(
                f"the judge {settings.judge} could not be reached for {len(unanswered)} "
                f"trial(s) (e.g. {folder.name}: {first.reason[:300]}); nothing imported: the "
                f"same command again judges them ({len(todo) - len(unanswered)} verdict(s) "
                "given are kept)"
            )
        for (folder, *_), one in zip(todo, graded, strict=True):
            verdicts[folder.resolve()] = one
    # the rows carry the evals' own ids (`<skill>/<id>`), as the chat loop's skill-evals rows
    return Judging(identity, verdicts, {name: task.task_id for name, task in tasks.items()})


async def _judge_all(
    config: Any, settings: Any, todo: list[tuple[Path, Path, Any, str]], concurrency: int
) -> list[Graded]:
    from hf_skillfollow.backends import open_backend
    from hf_skillfollow.scoring._custom import judged_verdict
    from hf_skillfollow.store import atomic_write_bytes

    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(cached: Path, task: Any, answer: str, backend: Any) -> Graded:
        async with gate:
            verdict = await judged_verdict(backend, task, answer, settings)
        graded = Graded(bool(verdict.passed), answer, verdict.reason,
                        verdict.details["judge_record"])  # fmt: skip
        if not unreached(graded):
            # kept at once: an interrupted run keeps every verdict given before it stopped
            blob = json.dumps(dataclasses.asdict(graded), sort_keys=True).encode("utf-8")
            atomic_write_bytes(cached, blob)
        return graded

    async with open_backend(config.judge_config()) as backend:
        return list(await asyncio.gather(*(one(c, t, a, backend) for _, c, t, a in todo)))


_ATTEMPT = re.compile(r"(?:^|; )attempt \d+: ")


def unreached(graded: Graded) -> bool:
    """Whether the judge gave no verdict only because it could not be reached: a grading
    failure whose every attempt of every repeat was a transport error (`_errors.error_kind`:
    a timeout, a connection error, HTTP 408/409/429/5xx). Such a verdict is not kept, and the
    run stops before the import, so an outage never becomes a recorded grading failure; a
    judge that answered badly, or refused the request (its context), is a grading failure as
    in the chat loop."""
    from hf_skillfollow._errors import error_kind

    record = graded.record
    if not record.get("grading_failure") or record.get("truncated") or not record["repeats"]:
        return False
    for repeat in record["repeats"]:
        parts = [p for p in _ATTEMPT.split(repeat.get("failure") or "") if p]
        if not parts or not all(
            p.startswith("backend error: ")
            and error_kind(p.removeprefix("backend error: ")) == "transport"
            for p in parts
        ):
            return False
    return True

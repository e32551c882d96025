"""Re-grading `expectations` answers with the judge recorded in their traces (docs/tasks.md).

A judged verdict is re-checked only with the judge that produced it: the same model, the same
instructions (prompt hash), repeats, seeds and limits, read from the trace's `judge_verdicts`.
Where that judge is not reachable from here (no endpoint given, a server that does not answer)
`verify` says so plainly and checks nothing, rather than turning an absent judge into a
disagreement.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from hf_skillfollow.verify._inputs import ARMS, Row
from hf_skillfollow.verify._releases import Releases, UnavailableError

if TYPE_CHECKING:
    from hf_skillfollow.judge import JudgeSettings
    from hf_skillfollow.scoring import Verdict

#: re-grades (task, answer, judge settings) items, calling `on_verdict(i, verdict)` as each
#: verdict arrives (so a judge that stops part-way loses none); verdicts in input order
OnVerdict = Callable[[int, "Verdict"], None]
Regrade = Callable[[list[tuple[Any, str, "JudgeSettings"]], OnVerdict | None], list["Verdict"]]


#: a recorded judge's name is the publisher's, of any length: messages quote this much of it
_NAME_CHARS = 200


def _name(text: str) -> str:
    return text if len(text) <= _NAME_CHARS else f"{text[:_NAME_CHARS]}… ({len(text):,} characters)"


def is_judged(task: Any) -> bool:
    return getattr(task, "grader", None) == "expectations"


def recorded_judge(row: Row, arm: str) -> JudgeSettings:
    """The judge settings recorded for one arm's verdict; UnavailableError when there are none
    or when this toolkit's judge instructions differ from the recorded ones."""
    from hf_skillfollow.judge import JudgeSettings

    record = row.traces[arm].judge_record
    where = f"run {_name(row.run_id)}: task {row.task_id} ({arm})"
    if not record or "settings" not in record:
        raise UnavailableError(
            f"{where} is graded by a judge, but its trace records no judge verdicts to re-grade with"
        )
    try:  # the record is the publisher's: a setting out of bounds names the row it is in
        settings = JudgeSettings.from_record(record)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    recorded = record.get("judge")
    if not isinstance(recorded, str):
        raise ValueError(f"{where}: its judge record names no judge ('judge' is not a string)")
    if settings.judge != recorded:
        raise UnavailableError(
            f"run {_name(row.run_id)}: graded by the judge {_name(recorded)}; this toolkit's judge "
            f"instructions are {settings.prompt_hash}: install the toolkit that graded it"
        )
    return settings


def judges_needed(rows: Sequence[Row], releases: Releases) -> list[JudgeSettings]:
    """Every distinct recorded judge of the judged rows (checked before anything runs)."""
    out: list[JudgeSettings] = []
    for row in rows:
        if not row.has_traces or not is_judged(releases.tasks[row.benchmark_version][row.task_id]):
            continue
        for arm in ARMS:
            settings = recorded_judge(row, arm)
            if settings not in out:
                out.append(settings)
    return out


def regrader(
    judges: Sequence[JudgeSettings],
    *,
    base_url: str | None,
    api_key_env: str | None,
    backend: str | None,
) -> Regrade:
    """A `Regrade` reaching the recorded judge at `base_url` (or, for the embedded `local`
    backend, the embedded server); UnavailableError, plainly, when it cannot be reached."""
    for judge in judges:
        _check_started_here(judge, backend)
        if (backend or judge.backend) != "local" and not base_url:
            raise UnavailableError(
                f"the rows are graded by the judge {_name(judge.judge)} (backend {_name(judge.backend)}); "
                "pass --judge-base-url URL (and --judge-api-key-env) where that model is served "
                "to re-grade them"
            )

    def regrade(
        items: list[tuple[Any, str, JudgeSettings]], on_verdict: OnVerdict | None = None
    ) -> list[Verdict]:
        import asyncio

        return asyncio.run(_regrade(items, base_url, api_key_env, backend, on_verdict))

    return regrade


#: backends that load the judge's model on this machine (the embedded `local` is held apart)
_LOADS_HERE = ("vllm", "vllm-server")


def _check_started_here(judge: JudgeSettings, backend: str | None) -> None:
    """UnavailableError when re-grading would load a model the published record names: a
    `local` judge's model is a GGUF shipped with the toolkit (a plain file name), never a path
    from the record; a recorded vLLM judge is started here only on --judge-backend; a backend
    this toolkit does not have is named, not handed on."""
    from hf_skillfollow.registries import BACKENDS

    name = backend or judge.backend
    model = judge.model
    if name not in BACKENDS:  # the record's word; RunConfig would end verify in a traceback
        raise UnavailableError(
            f"the rows are graded by the judge {_name(judge.judge)} on backend {name[:100]!r}, "
            f"which this toolkit does not have ({', '.join(BACKENDS)}); serve that model and "
            "pass --judge-backend openai --judge-base-url URL"
        )
    if name == "local" and (model in ("", ".", "..") or "/" in model or "\\" in model):
        raise UnavailableError(
            f"the rows are graded by the local judge model {_name(model)!r}, a path: verify "
            "starts the embedded judge only with a GGUF shipped with the toolkit, never a file "
            "a published record names; serve that model yourself and pass --judge-backend "
            "openai --judge-base-url URL"
        )
    if name in _LOADS_HERE and not _names_a_hub_model(model):
        raise UnavailableError(
            f"the rows are graded by the judge model {_name(model)!r} on backend {name}, which "
            "is no Hub model id but a path or a file here: verify loads a recorded vLLM judge "
            "only by its Hub id, never a file a published record names; serve that model "
            "yourself and pass --judge-backend openai --judge-base-url URL"
        )
    if backend is None and name in _LOADS_HERE:
        raise UnavailableError(
            f"the rows are graded by the judge {_name(judge.judge)} on backend {name}, which "
            f"would load the model the published record names on this machine; serve it and "
            f"pass --judge-backend openai --judge-base-url URL, or pass --judge-backend {name} "
            "to load it here"
        )


def _names_a_hub_model(model: str) -> bool:
    """OWNER/NAME (or a bare NAME) that is no path and no file or folder on this machine: what
    vLLM would otherwise load from the verifier's disk, wherever the record points."""
    import re
    from pathlib import Path

    from hf_skillfollow.locations import is_hub_id

    if is_hub_id(model):
        return True
    bare = re.fullmatch(r"[A-Za-z0-9][\w.-]{0,95}", model) is not None
    return bare and ".." not in model and not Path(model).exists()


async def _regrade(
    items: list[tuple[Any, str, JudgeSettings]],
    base_url: str | None,
    api_key_env: str | None,
    backend: str | None,
    on_verdict: OnVerdict | None = None,
) -> list[Verdict]:
    from hf_skillfollow.backends import open_backend
    from hf_skillfollow.backends._base import BackendStartupError
    from hf_skillfollow.config import RunConfig

    verdicts: list[Verdict | None] = [None] * len(items)
    by_judge: dict[JudgeSettings, list[int]] = {}
    for i, (_, _, settings) in enumerate(items):
        by_judge.setdefault(settings, []).append(i)
    for settings, indices in by_judge.items():
        name = backend or settings.backend
        config = RunConfig(
            model=settings.model,
            backend=name,
            base_url=base_url,
            **({"api_key_env": api_key_env} if api_key_env else {}),
        )
        try:
            async with open_backend(config) as judge:
                await _grade_all(judge, items, indices, verdicts, base_url or name, on_verdict)
        except BackendStartupError as exc:
            raise UnavailableError(
                f"the judge {_name(settings.judge)} is not reachable at {base_url or name}: {exc}"
            ) from None
    return [v for v in verdicts if v is not None]


async def _grade_all(
    judge: Any,
    items: list,
    indices: list[int],
    verdicts: list,
    where: str,
    on_verdict: OnVerdict | None = None,
) -> None:
    from hf_skillfollow.scoring._custom import judged_verdict

    for i in indices:
        task, text, settings = items[i]
        verdict = await judged_verdict(judge, task, text, settings)
        if "backend error" in verdict.reason:
            raise UnavailableError(
                f"the judge {_name(settings.judge)} is not reachable at {where}: {verdict.reason[:300]}"
            )
        verdicts[i] = verdict
        if on_verdict is not None:
            on_verdict(i, verdict)

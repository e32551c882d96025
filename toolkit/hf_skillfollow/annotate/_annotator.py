"""Ask a chat backend for one label per unit: forced structured call, validated, retried.

The label arrives as the arguments of a forced `record_annotation` call, asked through the
shared structured-output path (`hf_skillfollow._structured`, which the expectations judge uses
too): validated, retried with the next seed, and after the last attempt recorded as a failure
with its reason. No label is ever inferred from invalid output.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hf_skillfollow import _structured
from hf_skillfollow.annotate._labels import parse_label
from hf_skillfollow.annotate._request import build_request, prompt_hash
from hf_skillfollow.schema import SCHEMA_VERSION

if TYPE_CHECKING:
    from hf_skillfollow.annotate._store import AnnotationStore
    from hf_skillfollow.annotate._units import Unit
    from hf_skillfollow.backends._base import ChatBackend


@dataclass(frozen=True)
class AnnotatorSettings(_structured.AskSettings):
    """How the annotator model is asked."""

    @property
    def prompt_hash(self) -> str:
        return prompt_hash()

    @property
    def annotator(self) -> str:
        """The annotator part of the key: model plus the hash of the instructions."""
        return f"{self.model}@{self.prompt_hash}"


async def annotate_unit(
    backend: ChatBackend, unit: Unit, settings: AnnotatorSettings
) -> dict[str, Any]:
    """One annotations row for `unit` (a label, or a recorded failure)."""
    reply = await _structured.ask(
        backend,
        build_request(unit.view),
        parse_label,
        seed=settings.seed,
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        max_attempts=settings.max_attempts,
    )
    label, rationale = reply.value if reply.value is not None else (None, None)
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": unit.run_id,
        "cell_id": unit.cell_id,
        "task_id": unit.task_id,
        "repeat_index": unit.repeat_index,
        "annotator": settings.annotator,
        "annotator_model": settings.model,
        "annotator_backend": settings.backend,
        "prompt_hash": settings.prompt_hash,
        "flip": unit.flip,
        "label": label,
        "rationale": rationale,
        "failure": reply.failure,
        "attempts": reply.attempts,
        "raw_output": reply.raw,
        "annotated_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }


async def annotate_all(
    units: Sequence[Unit],
    backend: ChatBackend,
    settings: AnnotatorSettings,
    store_of: Callable[[Unit], AnnotationStore],
    *,
    concurrency: int,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> None:
    """Annotate `units` with bounded concurrency; each row is stored as soon as it exists."""
    # A batching backend (in-process vLLM) advances every open request in one step.
    gate = asyncio.Semaphore(
        max(1, len(units)) if getattr(backend, "batched", False) else concurrency
    )

    async def one(unit: Unit) -> None:
        async with gate:
            row = await annotate_unit(backend, unit, settings)
        store_of(unit).append(row)
        if on_row:
            on_row(row)

    await asyncio.gather(*(one(u) for u in units))

"""The harness's own record of skill use, where it writes one (not a transcript).

Two shapes are read from a trial's result dict: a list of skill names under
``agent_result.metadata.skills_loaded`` (or ``skills_loaded`` at the top), as some Harbor
agents record; and BenchFlow's count ``n_skill_invocations`` (top level or inside
``agent_result``). Names become `instructions` events at index 0; a count names no skill, so
it goes to `Detection.record_invocations`. A record is the harness's word, not evidence of
what the agent read: BenchFlow users report the count staying 0 on runs whose trajectory
shows skill reads, so a transcript detector should decide when a transcript exists.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from hf_skillfollow.transcripts._base import Detection
from hf_skillfollow.transcripts._common import Collector
from hf_skillfollow.transcripts._reader import as_transcript, field
from hf_skillfollow.transcripts._skillpaths import in_pool

NAME = "harness-record"


def detect_harness_record(record: object, pool: Collection[str]) -> Detection:
    """What a harness's result record (a Harbor or BenchFlow result.json dict) says."""
    transcript = as_transcript(record)
    doc = transcript.document
    if not isinstance(doc, Mapping):
        return Detection(NAME, transcript_found=False, notes=("no result record",))
    out = Collector(NAME, pool)
    names = field(doc, "agent_result", "metadata", "skills_loaded")
    where = "agent_result.metadata.skills_loaded"
    if names is None:
        names, where = doc.get("skills_loaded"), "skills_loaded"
    for name in names[:1000] if isinstance(names, list) else ():
        skill = in_pool(name, pool)
        if skill:
            out.add(skill, "instructions", 0, f"{where}: {name}", True)
    count = doc.get("n_skill_invocations")
    if count is None:
        count = field(doc, "agent_result", "n_skill_invocations")
    valid = isinstance(count, int) and not isinstance(count, bool) and count >= 0
    found = out.result(transcript)
    if names is None and not valid:
        return Detection(NAME, transcript_found=False, notes=("no skill record in result",))
    return Detection(
        NAME,
        transcript_found=True,
        events=found.events,
        notes=found.notes,
        record_invocations=count if valid else None,
    )

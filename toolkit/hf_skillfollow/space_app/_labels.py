"""What a row measured, in words: its task set, its protocol and its judge.

Two cells that differ only in what they measured (search vs catalog, one task file vs
another, another judge) must not look alike, on a 1440 px screen or on a phone. These labels
are derived once per load (`_board._decorate`) from the cells' identity columns, so a filter
stays a mask.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

#: Hex digits of a content hash shown in a label (the drill-down header has the whole version).
SHORT_HASH = 8
#: `custom@sha256.<hex>+graders.<...>` (a task file is its content: no name; before,
#: `custom@file:<name>+sha256...`) and `skill-evals@pool:<name>+sha256.<hex>`
#: (tasks_custom.load_custom / load_skill_evals).
_OWN = re.compile(r"^(?P<kind>[\w-]+)@(?:(?:file|pool):(?P<name>.*)\+)?sha256\.(?P<hash>[0-9a-f]+)")
#: Access values the board describes in words; another value (a loading mode a later toolkit
#: or importer adds) is shown as published.
_ACCESS_WORDS = {
    "search": "search_skills tool",
    "catalog": "skill catalog in the prompt, activated by name",
}
#: Identity columns that change what a cell measured only under the search protocol.
SEARCH_ONLY = ("retriever", "top_k")


def task_set(benchmark: object, version: object) -> str:
    """`mbppplus v0.2`, or for a maintainer's own tasks `custom tasks.jsonl #1a2b3c4d`."""
    name, text = str(benchmark), "" if version is None else str(version)
    own = _OWN.match(text)
    if own:
        named = f" {own['name']}" if own["name"] else ""
        return f"{name}{named} #{own['hash'][:SHORT_HASH]}"
    if not text or text == name:
        return name
    return f"{name} {text[:40]}"


_PROTOCOL_COLUMNS = ("access", "retriever", "top_k", "max_calls", "retrieval_policy",
                     "provenance", "harness", "agent")  # fmt: skip


def protocol(row: dict) -> str:
    """The access protocol in words with only the settings that had an effect: a catalog
    cell has no retriever and no top_k (nothing was searched); an imported cell's chat-loop
    settings are placeholders (docs/import.md), so it names its harness, agent and loading
    mode instead."""
    access = str(row.get("access") or "search")
    if str(row.get("provenance") or "run") != "run":
        agent = f", agent {row['agent']}" if _given(row.get("agent")) else ""
        return f"{access} loading, imported from {row.get('harness') or 'another harness'}{agent}"
    words = _ACCESS_WORDS.get(access, access)
    settings = []
    if access == "search":
        if _given(row.get("retriever")):
            settings.append(str(row["retriever"]))
        if _given(row.get("top_k")):
            settings.append(f"top {int(row['top_k'])}")
    if _given(row.get("max_calls")):
        settings.append(f"≤{int(row['max_calls'])} calls")
    if str(row.get("retrieval_policy") or "auto") == "forced":
        settings.append("first turn must search")
    return words + (f" ({', '.join(settings)})" if settings else "")


def judge_model(judge: object) -> str:
    """The judge's model from its identity `<judge_model>@<prompt_hash>` ('' when unjudged)."""
    if not _given(judge):
        return ""
    return str(judge).rsplit("@", 1)[0]


def add_labels(out: pd.DataFrame) -> None:
    """`task_set`, `protocol`, `judge_model` (from `judged_by`) and `_self_judged`, in place."""
    if out.empty:
        for name in ("task_set", "protocol", "judge_model"):
            out[name] = pd.Series([], dtype=object)
        out["_self_judged"] = pd.Series([], dtype=bool)
        return
    versions = out["benchmark_version"] if "benchmark_version" in out else [None] * len(out)
    out["task_set"] = [task_set(b, v) for b, v in zip(out["benchmark"], versions, strict=True)]
    columns = [c for c in _PROTOCOL_COLUMNS if c in out]
    records = out[columns].to_dict("records") if columns else [{}] * len(out)
    # a few distinct protocols over thousands of cells: word each once
    words: dict[tuple, str] = {}
    for r in records:
        key = tuple(r.values())
        if key not in words:
            words[key] = protocol(r)
    out["protocol"] = [words[tuple(r.values())] for r in records]
    judges = (
        out["judged_by"] if "judged_by" in out else pd.Series([None] * len(out), index=out.index)
    )
    out["judge_model"] = [judge_model(j) for j in judges]
    out["_self_judged"] = (
        (out["judge_model"] != "") & (out["judge_model"] == out["model"].astype(str))
    ).to_numpy(dtype=bool)


def _given(value: object) -> bool:
    if value is None:
        return False
    if isinstance(value, float) and np.isnan(value):
        return False
    return str(value) != ""


#: A Hub model id: `owner/name`, the characters the Hub allows (huggingface_hub's rule).
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}$")


def card_url(model: object) -> str:
    """The model's card on the Hub when its name is a Hub model id, else ''."""
    text = str(model)
    if not _HUB_ID.match(text) or ".." in text or text.endswith((".", "-")):
        return ""
    return f"https://huggingface.co/{text}"

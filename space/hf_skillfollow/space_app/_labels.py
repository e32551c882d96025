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

from hf_skillfollow.columns import agent_ran
from hf_skillfollow.formatting import is_undefined

#: Hex digits of a content hash shown in a label (the drill-down header has the whole version).
SHORT_HASH = 8
#: `custom@sha256.<hex>+graders.<...>` (a task file is its content: no name; before,
#: `custom@file:<name>+sha256...`) and `skill-evals@pool:<name>+sha256.<hex>`
#: (tasks_custom.load_custom / load_skill_evals).
_OWN = re.compile(r"^(?P<kind>[\w-]+)@(?:(?:file|pool):(?P<name>.*)\+)?sha256\.(?P<hash>[0-9a-f]+)")
#: A content digest inside a release name (`+md5.<hex>`, `+sha256.<hex>`).
_DIGEST = re.compile(r"\+(?:md5|sha1|sha256)\.(?P<hash>[0-9a-f]+)")
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
    name, text = str(benchmark), str(version) if _given(version) else ""
    own = _OWN.match(text)
    if own:
        named = f" {own['name']}" if own["name"] else ""
        return f"{name}{named} #{own['hash'][:SHORT_HASH]}"
    if not text or text == name:
        return name
    if text.startswith(f"{name}@"):  # `mbppplus@v0.2.0+md5.<hex>`: the name once
        text = text[len(name) + 1 :]
    text = _DIGEST.sub(lambda m: f" #{m['hash'][:SHORT_HASH]}", text)
    return f"{name} {text[:40]}"


_PROTOCOL_COLUMNS = ("access", "retriever", "top_k", "max_calls", "retrieval_policy",
                     "provenance", "harness", "agent")  # fmt: skip


def protocol(row: dict) -> str:
    """The access protocol in words with only the settings that had an effect: a catalog
    cell has no retriever and no top_k (nothing was searched); an imported cell's chat-loop
    settings are placeholders (docs/import.md), so it names its harness, agent and loading
    mode instead; so does a cell the toolkit ran through a harness (`run:<harness>`,
    docs/harness.md), which is not imported."""
    access = str(row.get("access") or "search")
    if agent_ran(row.get("provenance")):
        agent = f", agent {row['agent']}" if _given(row.get("agent")) else ""
        harness = row.get("harness") or "another harness"
        how = "run through" if str(row["provenance"]).startswith("run:") else "imported from"
        return f"{access} loading, {how} {harness}{agent}"
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
    """`task_set`, `protocol`, `judge_model` (from `judged_by`) and `_self_judged`, in place.

    A board has thousands of cells but a few task sets, protocols and judges: each distinct
    value is worded once and mapped back (a row-by-row pass cost ~0.5 s at 12,500 cells)."""
    if out.empty:
        for name in ("task_set", "protocol", "judge_model"):
            out[name] = pd.Series([], dtype=object)
        out["_self_judged"] = pd.Series([], dtype=bool)
        return
    if "benchmark_version" not in out:
        out["task_set"] = out["benchmark"].astype(str)
    else:
        out["task_set"] = _worded(out, ["benchmark", "benchmark_version"], lambda r: task_set(*r))
    columns = [c for c in _PROTOCOL_COLUMNS if c in out]
    out["protocol"] = _worded(out, columns, lambda r: protocol(dict(zip(columns, r, strict=True))))
    if "judged_by" in out:
        out["judge_model"] = _worded(out, ["judged_by"], lambda r: judge_model(r[0]))
    else:
        out["judge_model"] = ""
    out["_self_judged"] = (
        (out["judge_model"] != "") & (out["judge_model"] == out["model"].astype(str))
    ).to_numpy(dtype=bool)


def _worded(out: pd.DataFrame, columns: list[str], word) -> np.ndarray:
    """`word(values)` for each row's `columns`, computed once per distinct combination."""
    if not columns:
        return np.full(len(out), word(()), dtype=object)
    codes = out.groupby(columns, dropna=False, sort=False).ngroup().to_numpy()
    _, first = np.unique(codes, return_index=True)  # a row of each combination, by code
    rows = out[columns].iloc[first].itertuples(index=False, name=None)
    texts = np.array([word(tuple(r)) for r in rows], dtype=object)
    return texts[codes]


def _given(value: object) -> bool:
    return not is_undefined(value) and str(value) != ""


#: A Hub model id: `owner/name`, the characters the Hub allows (huggingface_hub's rule),
#: ASCII only: Python's `\w` also matches Cyrillic and other letters, so `org/vіctim` (a
#: Cyrillic і) got a ↗ card link that looked like `org/victim`'s.
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}$", re.ASCII)


def card_url(model: object) -> str:
    """The model's card on the Hub when its name is a Hub model id, else ''."""
    text = str(model)
    # fullmatch: `$` also matches before a final newline, and `org/victim<LF>` is not a Hub id
    if not _HUB_ID.fullmatch(text) or ".." in text or text.endswith((".", "-")):
        return ""
    return f"https://huggingface.co/{text}"

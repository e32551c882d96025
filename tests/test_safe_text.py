"""Strings from a model or a program are safe to store and publish, whatever they hold.

A lone surrogate (``"\\ud800"``) is a valid Python string that UTF-8 cannot encode: a model
server's JSON can carry one (``"\\ud800"`` escapes), and a program that writes its own wire
message can put one in the judge's reason. ``RunStore.append_record`` raised
``UnicodeEncodeError`` on such a record, and so did building the parquet tables. Every such
string is now written with the surrogate escaped (``_text.safe_text``), at the boundaries
where strings enter records and tables; the sandbox attack is in tests/test_judge_attacks.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from hf_skillfollow._text import safe_data, safe_text
from hf_skillfollow.schema import traces_from_rows
from hf_skillfollow.store import RunStore
from tests._fixtures_hub import trace_rows
from tests._rows import transition_row

LONE = "\ud800"
ESCAPED = "\\ud800"


def test_safe_text_escapes_only_what_utf8_cannot_encode() -> None:
    assert safe_text(f"a{LONE}b") == f"a{ESCAPED}b"
    assert safe_text("\udfff\ud83d") == "\\udfff\\ud83d"
    text = "plain, ünïcødé, 😀, NUL\x00, and a literal \\ud800"
    assert safe_text(text) is text  # nothing that encodes is touched
    value = {"k": [text, 1, None]}
    assert safe_data(value) is value
    assert safe_data({LONE: (LONE, [LONE])}) == {ESCAPED: (ESCAPED, [ESCAPED])}


def _hostile_record() -> dict:
    """One finished pair whose model answer, tool arguments, messages and scorer reason each
    hold a lone surrogate, as a model server's JSON or a program's message can make them."""
    transition = transition_row(task_id="Mbpp/2", invoked=True, n_calls=1, queries=[f"q{LONE}"])
    traces = trace_rows([transition])
    for trace in traces:
        trace["final_answer"] = f"```python\nprint('{LONE}')\n```"
        trace["extracted"] = f"print('{LONE}')"
        trace["error"] = f"model said {LONE}"
        for message in trace["messages"]:
            message["content"] = f"{message['content']} {LONE}"
        if trace["arm"] == "se":
            call = [{"id": "c1", "type": "function", "function": {"name": "search_skills"}}]
            call[0]["function"]["arguments"] = json.dumps({"query": LONE}, ensure_ascii=False)
            trace["messages"][2]["tool_calls"] = json.dumps(call, ensure_ascii=False)
    return {"task_id": "Mbpp/2", "transition": transition, "traces": traces}


def test_a_record_with_lone_surrogates_is_stored_and_published(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.append_record(_hostile_record())  # raised UnicodeEncodeError
    raw = store.records_path.read_bytes().decode("utf-8")  # valid UTF-8 on disk
    assert LONE not in raw and ESCAPED in raw
    (record,) = store.read_records()
    se = next(t for t in record["traces"] if t["arm"] == "se")
    assert se["final_answer"] == f"```python\nprint('{ESCAPED}')\n```"
    assert record["transition"]["queries"] == [f"q{ESCAPED}"]
    assert ESCAPED in se["messages"][2]["tool_calls"]
    assert store.write_tables() == (1, 2)
    traces = pq.read_table(tmp_path / "traces.parquet").to_pylist()
    assert {t["error"] for t in traces} == {f"model said {ESCAPED}"}


def test_tables_built_from_rows_with_lone_surrogates_do_not_crash() -> None:
    # a records file written elsewhere (or before this fix) can hold "\ud800" as a JSON
    # escape, which json.loads turns back into a lone surrogate
    rows = _hostile_record()["traces"]
    table = traces_from_rows(rows)  # raised UnicodeEncodeError in pyarrow
    assert table.column("extracted").to_pylist() == [f"print('{ESCAPED}')"] * 2


def test_an_annotation_and_a_verify_verdict_with_lone_surrogates_are_stored(
    tmp_path: Path,
) -> None:
    from hf_skillfollow.annotate._store import AnnotationStore
    from hf_skillfollow.schema import ANNOTATION_KEY
    from hf_skillfollow.verify._state import VerifyState

    store = AnnotationStore(tmp_path / "annotations")
    row = {**{k: f"{k}-{LONE}" for k in ANNOTATION_KEY}, "rationale": f"judge said {LONE}"}
    store.append(row)  # a judge model's text: raised UnicodeEncodeError
    (stored,) = store.rows()
    assert stored["rationale"] == f"judge said {ESCAPED}"
    state_path = tmp_path / "verify.jsonl"
    with VerifyState(state_path) as state:
        state.add("k", False, f"base input #0: malformed output message: {LONE}.x")
    assert ESCAPED in state_path.read_bytes().decode("utf-8")

"""A run directory for annotation tests, and a scripted annotator behind a real HTTP server.

`ScriptedAnnotatorDouble` is a test double: it stands in for an annotator model, because no
real model can be made to return a chosen label, invalid JSON or an unknown label on demand.
It is a real OpenAI-compatible HTTP server on 127.0.0.1, reached through the toolkit's real
`openai` backend, and it records every request body it receives.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from hf_skillfollow.schema import traces_from_rows, transitions_from_rows
from tests._fixtures_hub import outcome_rows, trace_rows
from tests._http_double import ChatServerDouble, Reply

# (se_correct, sd_correct, returned) -> tasks. S_call: b=3, c=2, a=1, d=1; skip: b=1, c=1.
COUNTS = {
    (True, False, True): 3, (False, True, True): 2, (True, True, True): 1, (False, False, True): 1,
    (True, False, False): 1, (False, True, False): 1,
}  # fmt: skip
SD_SECRET = "SD-SECRET-ANSWER"


def se_answer(task_id: str) -> str:
    return f"def solve():  # SE answer for {task_id}\n    return 42"


def write_annotation_run(root: Path, run_id: str = "run-ann") -> Path:
    """A finished run directory whose SE and SD answers differ and whose scorer details say
    passed/failed, so that a leak of either into a request is visible in its bytes."""
    run_dir = root / run_id
    run_dir.mkdir(parents=True)
    rows = outcome_rows(COUNTS, run_id=run_id, cell_id="cellANN00000000")
    traces = trace_rows(rows)
    for trace in traces:
        if trace["arm"] == "se":
            trace["final_answer"] = se_answer(trace["task_id"])
            for message in trace["messages"]:
                if message["role"] == "tool":
                    message["content"] = f"## prefix-sum\nUse prefix sums for {trace['task_id']}."
        else:
            trace["final_answer"] = f"{SD_SECRET} for {trace['task_id']}"
        trace["scorer_details"] = json.dumps({"reason": "VERDICT-" + str(trace["correct"])})
    pq.write_table(transitions_from_rows(rows), run_dir / "transitions.parquet")
    pq.write_table(traces_from_rows(traces), run_dir / "traces.parquet")
    (run_dir / "manifest.json").write_text(json.dumps({"run_id": run_id}))
    return run_dir


def flips(run_dir: Path) -> dict[str, str]:
    """task id -> helpful/harmful for the S_call flips (read from the fixture, by hand rule)."""
    out = {}
    for r in pq.read_table(run_dir / "transitions.parquet").to_pylist():
        if r["returned"] and r["se_correct"] != r["sd_correct"]:
            out[r["task_id"]] = "helpful" if r["se_correct"] else "harmful"
    return out


def tool_reply(arguments: str) -> dict[str, Any]:
    call = {
        "id": "call_0",
        "type": "function",
        "function": {"name": "record_annotation", "arguments": arguments},
    }
    return {
        "id": "chatcmpl-annotator-double",
        "object": "chat.completion",
        "created": 0,
        "model": "annotator-double",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
    }


class ScriptedAnnotatorDouble(ChatServerDouble):
    """Scripted annotator model double (see the module docstring).

    `script` maps a task id (found in the request's "Solve <task id>" prompt) to the list of
    `arguments` strings to return, one per request; the last one repeats.
    """

    model_id = "annotator-double"

    def __init__(self, script: dict[str, list[str]]) -> None:
        super().__init__()
        self.script = {k: list(v) for k, v in script.items()}
        self.bodies: list[dict[str, Any]] = []
        self.raw: list[bytes] = []
        self._lock = threading.Lock()

    def answer(self, raw: bytes) -> Reply:
        body = json.loads(raw)
        with self._lock:
            self.raw.append(raw)
            self.bodies.append(body)
            user = next(m["content"] for m in body["messages"] if m["role"] == "user")
            task = re.search(r"Solve (\S+)", user).group(1)
            replies = self.script[task]
            arguments = replies.pop(0) if len(replies) > 1 else replies[0]
        return Reply(body=tool_reply(arguments))


def label_json(label: str, rationale: str = "because") -> str:
    return json.dumps({"label": label, "rationale": rationale})

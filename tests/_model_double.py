"""A scripted OpenAI-compatible chat server: a *model provider double* for end-to-end runs.

It stands in for a real model because a test needs answers it controls (some right, some
wrong, on both arms) to check what `verify` finds; a real model's answers are unknown in
advance. Everything else is real: `hf-skillfollow run` talks to it over HTTP through the
openai backend, searches the skill pool, scores in the sandbox and records the run.

The SE arm first calls `search_skills` once, then answers; the SD arm answers at once.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

from hf_skillfollow.tasks import Task
from tests._http_double import ChatServerDouble, Reply

#: (task, arm) -> the final answer text the double sends
Answerer = Callable[[Task, str], str]


def bucket(task_id: str, arm: str) -> int:
    return int(hashlib.sha256(f"{arm}:{task_id}".encode()).hexdigest(), 16) % 4


def scripted_answer(task: Task, arm: str) -> str:
    """Right on 3 of 4 (task, arm) pairs, wrong on the others, fixed by a hash of both."""
    right = bucket(task.task_id, arm) != 0
    if task.domain == "math":
        return f"The final answer is $\\boxed{{{task.reference if right else '-987654321'}}}$."
    program = (
        task.problem["canonical_solution"]
        if right
        else f"def {task.entry_point}(*a):\n    return None\n"
    )
    if task.benchmark == "humanevalplus" and right:
        program = task.problem["prompt"] + program
    return f"Here is the solution.\n```python\n{program}\n```\n"


class ScriptedModelServerDouble(ChatServerDouble):
    """Answers chat completions from `answerer(task, arm)`, looking the task up by its prompt."""

    def __init__(
        self, tasks: list[Task], answer: Answerer = scripted_answer, latency_s: float = 0.0
    ) -> None:
        super().__init__()
        self.by_prompt = {t.prompt: t for t in tasks}
        self.answerer = answer
        self.requests = 0
        #: a fixed wait before every chat answer (a provider's latency, for throughput checks)
        self.latency_s = latency_s

    def answer(self, raw: bytes) -> Reply:
        return Reply(body=self.reply(json.loads(raw or b"{}")), delay_s=self.latency_s)

    def reply(self, body: dict) -> dict:
        self.requests += 1
        messages = body.get("messages", [])
        prompt = next((m["content"] for m in messages if m.get("role") == "user"), "")
        task = self.by_prompt[prompt]
        se = bool(body.get("tools"))
        searched = any(m.get("role") == "tool" for m in messages)
        message: dict = {"role": "assistant", "content": ""}
        if se and not searched and body.get("tool_choice") != "none":
            call = {"id": "call_1", "type": "function",
                    "function": {"name": "search_skills", "arguments": json.dumps({"query": task.task_id})}}  # fmt: skip
            message["tool_calls"] = [call]
        else:
            message["content"] = self.answerer(task, "se" if se else "sd")
        return {
            "id": "chatcmpl-double", "object": "chat.completion", "created": 0, "model": body.get("model", "double"),
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if "tool_calls" in message else "stop"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        }  # fmt: skip

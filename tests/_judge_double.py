"""A scripted OpenAI-compatible server that plays both the model under test and the judge: a
*model provider double* for own-task runs (a frontier judge cannot be reached from here, and a
test needs verdicts it knows in advance).

Everything else is real: `hf-skillfollow run` reaches it over HTTP through the openai backend,
the tests grader scores in the sandbox, the judge requests go through the shared
structured-output path. A request with the forced `record_verdicts` tool is a judge request;
any other is an arm's turn.

As the judge it follows its instructions: it reads only the text between the answer
delimiters, grades an expectation `mentions WORD` by whether WORD occurs there, and ignores
anything else. It is deliberately noisy on one expectation (`NOISY`): repeat 0 of each answer
(seed < 1000) says met, repeat 1 says not met, so with two repeats that expectation is a
disagreement and a tie on every answer, a figure the tests compute by hand.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable

from tests._http_double import ChatServerDouble, Reply

#: the expectation on which the judge double disagrees with itself
NOISY = "is written politely"
#: (user prompt, arm) -> the final answer text the double sends as the model under test
Answerer = Callable[[str, str], str]

_ANSWER = re.compile(r"<(answer-[0-9a-f]{16})>\n(.*)\n</\1>\Z", re.S)
_EXPECTATIONS = re.compile(r"^(e\d+)\. (.*)$", re.M)


class AgentAndJudgeDouble(ChatServerDouble):
    """Arms are answered by `answerer(prompt, arm)`; judge requests by the rules above.

    `judge_requests` keeps every judge request body (bytes) for the blinding tests;
    `invalid_first` makes the first judge reply of each answer invalid JSON (a retry)."""

    def __init__(
        self, answerer: Answerer, *, invalid_first: bool = False, search: bool = True
    ) -> None:
        super().__init__()
        self.answerer = answerer
        self.invalid_first = invalid_first
        self.search = search
        self.judge_requests: list[bytes] = []
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def answer(self, raw: bytes) -> Reply:
        body = json.loads(raw or b"{}")
        choice = body.get("tool_choice")
        if isinstance(choice, dict) and choice.get("function", {}).get("name") == "record_verdicts":
            with self._lock:
                self.judge_requests.append(raw)
            return Reply(body=_completion(body, self.judge(body)))
        return Reply(body=_completion(body, self.arm(body)))

    def arm(self, body: dict) -> dict:
        messages = body.get("messages", [])
        prompt = next((m["content"] for m in messages if m.get("role") == "user"), "")
        se = bool(body.get("tools"))
        searched = any(m.get("role") == "tool" for m in messages)
        if self.search and se and not searched and body.get("tool_choice") != "none":
            call = {"id": "call_1", "type": "function",
                    "function": {"name": "search_skills", "arguments": json.dumps({"query": prompt[:60]})}}  # fmt: skip
            return {"role": "assistant", "content": "", "tool_calls": [call]}
        return {"role": "assistant", "content": self.answerer(prompt, "se" if se else "sd")}

    def judge(self, body: dict) -> dict:
        user = body["messages"][1]["content"]
        match = _ANSWER.search(user)
        assert match, "the answer is not between its delimiters at the end of the request"
        answer = match.group(2)
        key = hashlib.sha256(user.encode()).hexdigest()
        with self._lock:
            first = key not in self._seen
            self._seen.add(key)
        if self.invalid_first and first:
            content = "not json at all"
        else:
            repeat = int(body.get("seed", 0)) // 1000
            verdicts = {}
            for k, text in _EXPECTATIONS.findall(user.split("## Answer to grade")[0]):
                if text == NOISY:
                    passed = repeat % 2 == 0
                else:
                    word = text.removeprefix("mentions ").strip()
                    passed = word.lower() in answer.lower()
                verdicts[k] = {"passed": passed, "evidence": f"looked for {text!r}"}
            content = json.dumps(verdicts)
        call = {"id": "call_j", "type": "function",
                "function": {"name": "record_verdicts", "arguments": content}}  # fmt: skip
        return {"role": "assistant", "content": "", "tool_calls": [call]}


def _completion(body: dict, message: dict) -> dict:
    return {
        "id": "chatcmpl-double", "object": "chat.completion", "created": 0, "model": body.get("model", "double"),
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }  # fmt: skip

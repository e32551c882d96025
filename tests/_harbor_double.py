"""A scripted model for Harbor's Terminus agent: a *model provider double* over HTTP.

It stands in for a frontier model, which the tests cannot reach and whose moves are unknown
in advance: the paired counts of a run are only checkable when the test fixes what the agent
does in each arm. Everything else is real: Harbor runs Terminus-2 unmodified, Terminus calls
this server through LiteLLM over 127.0.0.1, its keystrokes run in tmux inside the sandbox
environment, the skill's script runs there, the tasks' verifiers grade the files left, and
activation is decided from Terminus's own ATIF trajectory.

The double knows the shipped example tasks (`_data/harbor_tasks`) by their instructions and
tells the arms apart the way a model would: the skill-enabled arm's first prompt carries
Terminus's ``<available_skills>`` block (Harbor installed the pool), the other does not.
Each reply is Terminus's JSON answer format; once a script is done it answers
``task_complete`` (Terminus asks for confirmation, so twice).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path

from tests._http_double import ChatServerDouble, Reply

SKILLS = "/runtime/skills"
#: How long Terminus waits after each keystroke batch before it reads the screen: the
#: `duration` its prompt asks the model for ("On immediate tasks (e.g., cd, ls, echo, cat) set
#: a duration of 0.1 seconds. On commands (e.g., gcc, find, rustc) set a duration of 1.0
#: seconds"): reading or echoing, and `wc`, are immediate; running a program (python3, awk,
#: a sed pipeline) is a command.
IMMEDIATE, COMMAND = 0.1, 1.0
# (task, arm) -> keystroke batches, one per model turn, each (keystrokes, duration). By hand:
#   sum-sales     SE reads ledger-totals and runs its script -> 1,234.50 (pass);
#                 SD sums with awk -> 1234.5 (fail)                        helpful flip, S_call
#   write-report  SE reads status-report -> the team format (pass);
#                 SD writes another JSON (fail)                            helpful flip, S_call
#   count-lines   both count with wc, no skill read (pass, pass)          concordant, S_skip
#   make-slug     SE reads house-slugs and follows it (pass);
#                 SD gets it right its own way (pass)                     concordant, S_call
SCRIPTS: dict[tuple[str, str], list[list[tuple[str, float]]]] = {
    ("sum-sales", "se"): [
        [(f"cat {SKILLS}/ledger-totals/SKILL.md\n", IMMEDIATE)],
        [(f"python3 {SKILLS}/ledger-totals/scripts/ledger_total.py /app/sales.csv amount > /app/total.txt\n", COMMAND)],
    ],
    ("sum-sales", "sd"): [[("awk -F, 'NR>1{s+=$2} END{print s}' /app/sales.csv > /app/total.txt\n", COMMAND)]],
    ("write-report", "se"): [
        [(f"cat {SKILLS}/status-report/SKILL.md\n", IMMEDIATE)],
        [("python3 -c \"import json,os; f=sorted(os.listdir('/app/inbox')); "
          "json.dump({'kind':'status','count':len(f),'files':f}, open('/app/report.json','w'))\"\n", COMMAND)],
    ],
    ("write-report", "sd"): [[("echo '{\"status\": \"ok\", \"files\": 3}' > /app/report.json\n", IMMEDIATE)]],
    ("count-lines", "se"): [[("wc -l < /app/notes.txt > /app/count.txt\n", IMMEDIATE)]],
    ("count-lines", "sd"): [[("wc -l < /app/notes.txt > /app/count.txt\n", IMMEDIATE)]],
    ("make-slug", "se"): [
        [(f"cat {SKILLS}/house-slugs/SKILL.md\n", IMMEDIATE)],
        [("sed -e 's/&/and/g' /app/title.txt | tr 'A-Z' 'a-z' | sed -e 's/[^a-z0-9]\\+/-/g' "
          "-e 's/^-//' -e 's/-$//' > /app/slug.txt\n", COMMAND)],
    ],
    ("make-slug", "sd"): [
        [("python3 -c \"import re; t=open('/app/title.txt').read().replace('&','and').lower(); "
          "print(re.sub('[^a-z0-9]+','-',t).strip('-'))\" > /app/slug.txt\n", COMMAND)],
    ],
}  # fmt: skip


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def terminus_move(messages: list, script: list[list[tuple[str, float]]], final: str) -> dict:
    """Terminus-2's JSON answer to ``messages``: the script's keystroke batch for this turn
    (one per assistant message so far), else ``task_complete`` with ``final`` as its analysis."""
    turn = sum(1 for m in messages if m.get("role") == "assistant")
    if turn < len(script):
        return {"analysis": "Working on it.", "plan": "Run the next command.",
                "commands": [{"keystrokes": k, "duration": d} for k, d in script[turn]],
                "task_complete": False}  # fmt: skip
    return {"analysis": final, "plan": "Finish.", "commands": [], "task_complete": True}


class TerminusModelDouble(ChatServerDouble):
    """Answers Terminus-2's chat completions from `SCRIPTS`; counts requests per (task, arm)."""

    model_id = "double-model"

    def __init__(self, tasks_dir: Path) -> None:
        super().__init__()
        self.instructions = {
            d.name: " ".join((d / "instruction.md").read_text().split())
            for d in sorted(tasks_dir.iterdir())
            if (d / "instruction.md").is_file()
        }
        self.requests: Counter[tuple[str, str]] = Counter()
        self.unknown = 0
        self._lock = threading.Lock()

    def answer(self, raw: bytes) -> Reply:
        body = json.loads(raw or b"{}")
        messages = body.get("messages", [])
        first = " ".join(_text(messages[0].get("content")).split()) if messages else ""
        task = next((t for t, text in self.instructions.items() if text in first), None)
        arm = "se" if "<available_skills>" in first else "sd"
        with self._lock:
            if task is None:
                self.unknown += 1
            else:
                self.requests[(task, arm)] += 1
        move = terminus_move(messages, SCRIPTS.get((task or "", arm), []), "Done.")
        return Reply(body={
            "id": "chatcmpl-double", "object": "chat.completion", "created": 0,
            "model": body.get("model", self.model_id),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": json.dumps(move)},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        })  # fmt: skip


# Claude Code through Harbor: tool calls per (task, arm), one per model turn (by hand):
#   sum-sales    SE reads ledger-totals' SKILL.md (Read), runs its script (Bash) -> pass;
#                SD sums with awk -> 1234.5 -> fail                          helpful flip, S_call
#   count-lines  both count with wc, no skill read -> pass, pass           concordant, S_skip
CLAUDE_SKILLS = "/logs/agent/sessions/skills"  # where Harbor's claude-code agent puts them
CLAUDE_SCRIPTS: dict[tuple[str, str], list[tuple[str, dict]]] = {
    ("sum-sales", "se"): [
        ("Read", {"file_path": f"{CLAUDE_SKILLS}/ledger-totals/SKILL.md"}),
        ("Bash", {"command": f"python3 {CLAUDE_SKILLS}/ledger-totals/scripts/ledger_total.py "
                             "/app/sales.csv amount > /app/total.txt", "description": "total"}),
    ],
    ("sum-sales", "sd"): [
        ("Bash", {"command": "awk -F, 'NR>1{s+=$2} END{print s}' /app/sales.csv > /app/total.txt",
                  "description": "total"}),
    ],
    ("count-lines", "se"): [("Bash", {"command": "wc -l < /app/notes.txt > /app/count.txt", "description": "count"})],
    ("count-lines", "sd"): [("Bash", {"command": "wc -l < /app/notes.txt > /app/count.txt", "description": "count"})],
}  # fmt: skip


def _sse(blocks: list[dict], stop: str) -> bytes:
    """One Anthropic Messages streaming answer (the event sequence of the Messages API)."""
    events: list[tuple[str, dict]] = [("message_start", {"type": "message_start", "message": {
        "id": "msg_double", "type": "message", "role": "assistant", "model": "claude-double",
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 1}}})]  # fmt: skip
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [("content_block_start", {"type": "content_block_start", "index": i, "content_block": start}),
                   ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}),
                   ("content_block_stop", {"type": "content_block_stop", "index": i})]  # fmt: skip
    events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                  "usage": {"output_tokens": 20}}),
               ("message_stop", {"type": "message_stop"})]  # fmt: skip
    return "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events).encode()


class ClaudeModelDouble:
    """A scripted Anthropic Messages endpoint for Claude Code on 127.0.0.1 (a model provider
    double, as `TerminusModelDouble`). It tells the arms apart as a model would: the
    skill-enabled arm's request lists the pool's skills (Claude Code's skill catalogue), the
    other does not. Requests it cannot place (Claude Code's own side requests) get "Done."."""

    def __init__(self, tasks_dir: Path, skills: list[str]) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.instructions = {
            d.name: " ".join((d / "instruction.md").read_text().split())
            for d in sorted(tasks_dir.iterdir()) if (d / "instruction.md").is_file()
        }  # fmt: skip
        self.skills = skills
        self.requests: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()
        double = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                data, kind = double.answer(self.path, json.loads(raw or b"{}"))
                self.send_response(200)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, path: str, body: dict) -> tuple[bytes, str]:
        if "count_tokens" in path:
            return json.dumps({"input_tokens": 100}).encode(), "application/json"
        messages = body.get("messages", [])
        text = " ".join(json.dumps(messages[:1]).replace("\\n", " ").split())
        task = next((t for t, ins in self.instructions.items() if ins in text), None)
        catalogue = json.dumps(body)  # wherever Claude Code lists its skills in the request
        arm = "se" if any(s in catalogue for s in self.skills) else "sd"
        # Claude Code merges and rewrites its history between requests: the number of tool
        # results it sends back is the number of scripted moves already made.
        turn = sum(
            1
            for m in messages
            if isinstance(m.get("content"), list)
            for part in m["content"]
            if isinstance(part, dict) and part.get("type") == "tool_result"
        )
        script = CLAUDE_SCRIPTS.get((task or "", arm), []) if body.get("tools") else []
        if task is not None and body.get("tools"):
            with self._lock:
                self.requests[(task, arm)] += 1
        if turn < len(script):
            name, args = script[turn]
            blocks, stop = (
                [{"type": "tool_use", "id": f"toolu_{turn}", "name": name, "input": args}],
                "tool_use",
            )
        else:
            blocks, stop = [{"type": "text", "text": "Done."}], "end_turn"
        if not body.get("stream"):
            message = {"id": "msg_double", "type": "message", "role": "assistant", "model": "claude-double",
                       "content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn",
                       "stop_sequence": None, "usage": {"input_tokens": 100, "output_tokens": 5}}  # fmt: skip
            return json.dumps(message).encode(), "application/json"
        return _sse(blocks, stop), "text/event-stream"

    def __enter__(self) -> ClaudeModelDouble:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

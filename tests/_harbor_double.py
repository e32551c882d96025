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
# (task, arm) -> keystroke batches, one per model turn. By hand, per trial:
#   sum-sales     SE reads ledger-totals and runs its script -> 1,234.50 (pass);
#                 SD sums with awk -> 1234.5 (fail)                        helpful flip, S_call
#   write-report  SE reads status-report -> the team format (pass);
#                 SD writes another JSON (fail)                            helpful flip, S_call
#   count-lines   both count with wc, no skill read (pass, pass)          concordant, S_skip
#   make-slug     SE reads house-slugs and follows it (pass);
#                 SD gets it right its own way (pass)                     concordant, S_call
SCRIPTS: dict[tuple[str, str], list[list[str]]] = {
    ("sum-sales", "se"): [
        [f"cat {SKILLS}/ledger-totals/SKILL.md\n"],
        [f"python3 {SKILLS}/ledger-totals/scripts/ledger_total.py /app/sales.csv amount > /app/total.txt\n"],
    ],
    ("sum-sales", "sd"): [["awk -F, 'NR>1{s+=$2} END{print s}' /app/sales.csv > /app/total.txt\n"]],
    ("write-report", "se"): [
        [f"cat {SKILLS}/status-report/SKILL.md\n"],
        ["python3 -c \"import json,os; f=sorted(os.listdir('/app/inbox')); "
         "json.dump({'kind':'status','count':len(f),'files':f}, open('/app/report.json','w'))\"\n"],
    ],
    ("write-report", "sd"): [["echo '{\"status\": \"ok\", \"files\": 3}' > /app/report.json\n"]],
    ("count-lines", "se"): [["wc -l < /app/notes.txt > /app/count.txt\n"]],
    ("count-lines", "sd"): [["wc -l < /app/notes.txt > /app/count.txt\n"]],
    ("make-slug", "se"): [
        [f"cat {SKILLS}/house-slugs/SKILL.md\n"],
        ["sed -e 's/&/and/g' /app/title.txt | tr 'A-Z' 'a-z' | sed -e 's/[^a-z0-9]\\+/-/g' "
         "-e 's/^-//' -e 's/-$//' > /app/slug.txt\n"],
    ],
    ("make-slug", "sd"): [
        ["python3 -c \"import re; t=open('/app/title.txt').read().replace('&','and').lower(); "
         "print(re.sub('[^a-z0-9]+','-',t).strip('-'))\" > /app/slug.txt\n"],
    ],
}  # fmt: skip


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


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
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        script = SCRIPTS.get((task or "", arm), [])
        if turn < len(script):
            move = {"analysis": "Working on it.", "plan": "Run the next command.",
                    "commands": [{"keystrokes": k, "duration": 0.3} for k in script[turn]],
                    "task_complete": False}  # fmt: skip
        else:
            move = {"analysis": "Done.", "plan": "Finish.", "commands": [], "task_complete": True}
        return Reply(body={
            "id": "chatcmpl-double", "object": "chat.completion", "created": 0,
            "model": body.get("model", self.model_id),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": json.dumps(move)},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        })  # fmt: skip

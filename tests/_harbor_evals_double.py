"""A scripted model for a skill-evals run through Harbor: Terminus's model and the judge.

Both are *model provider doubles* over 127.0.0.1: a frontier agent model and a frontier judge
cannot be reached from here, and the paired verdicts are only checkable when the test fixes
what the agent does in each arm and how the judge grades. Everything else is real: Harbor
runs Terminus-2 unmodified in the sandbox environment, the eval's file is copied into the
workspace, the agent's keystrokes run there, the task's collector gathers ``/app/outputs``,
and the toolkit's judge path (`scoring._custom.judged_verdict`, the blinded request, the
forced `record_verdicts` tool) asks this server over HTTP.

As the judge it is `tests._judge_double.AgentAndJudgeDouble`'s: it reads only the text
between the answer delimiters and grades `mentions WORD` by whether WORD occurs there. As
Terminus's model it answers from `SCRIPTS` by the eval (told apart by its prompt) and the arm
(the skill-enabled arm's first prompt carries Terminus's ``<available_skills>``), in
Terminus's JSON format; once its commands are done it answers ``task_complete`` with the
eval's final `MESSAGES` line as its analysis (Terminus asks for confirmation, so twice).
"""

from __future__ import annotations

import json
import threading
from collections import Counter

from tests._harbor_double import terminus_move
from tests._judge_double import AgentAndJudgeDouble

SKILLS = "/runtime/skills"
#: eval -> a phrase of its prompt that tells it apart
PROMPTS = {"largest": "has the most people", "distance": "from Paris to Lyon"}
# (eval, arm) -> keystroke batches, one per model turn. By hand, per trial:
#   largest   SE reads city-facts and sorts by population -> outputs/answer.txt "Tokyo" (pass);
#             SD takes the first data row -> "Delhi" (fail)          helpful flip, S_call
#   distance  both answer in the final message, no skill read, no file (pass, pass)  S_skip
SCRIPTS: dict[tuple[str, str], list[list[str]]] = {
    ("largest", "se"): [
        [f"cat {SKILLS}/city-facts/SKILL.md\n"],
        ["mkdir -p /app/outputs && sort -t, -k2 -n /app/evals/files/cities.csv | tail -1 "
         "| cut -d, -f1 > /app/outputs/answer.txt\n"],
    ],
    ("largest", "sd"): [
        ["mkdir -p /app/outputs && sed -n 2p /app/evals/files/cities.csv | cut -d, -f1 "
         "> /app/outputs/answer.txt\n"],
    ],
    ("distance", "se"): [],
    ("distance", "sd"): [],
}  # fmt: skip
#: eval -> the analysis of its final answer (the trial's final message)
MESSAGES = {"largest": "The answer is in the file.", "distance": "About 465 kilometres by road."}


class TerminusAndJudgeDouble(AgentAndJudgeDouble):
    """Terminus-2's model from `SCRIPTS` and the judge; counts agent requests per (eval, arm)."""

    def __init__(self) -> None:
        super().__init__(lambda prompt, arm: "", search=False)
        self.agent_requests: Counter[tuple[str, str]] = Counter()
        self.unknown = 0
        self._count = threading.Lock()

    def arm(self, body: dict) -> dict:
        messages = body.get("messages", [])
        first = json.dumps(messages[:1]) if messages else ""
        task = next((t for t, phrase in PROMPTS.items() if phrase in first), None)
        arm = "se" if "<available_skills>" in first else "sd"
        with self._count:
            if task is None:
                self.unknown += 1
            else:
                self.agent_requests[(task, arm)] += 1
        script = [[(k, 0.3) for k in batch] for batch in SCRIPTS.get((task or "", arm), [])]
        move = terminus_move(messages, script, MESSAGES.get(task or "", "Done."))
        return {"role": "assistant", "content": json.dumps(move)}

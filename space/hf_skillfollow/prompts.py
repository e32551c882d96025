"""System prompts and the `search_skills` tool schema (docs/design.md, "Protocol").

SE and SD prompts differ only by the two tool sentences; everything here is hashed into the
cell id so that a prompt change starts a new cell.
"""

from __future__ import annotations

from typing import Any

from hf_skillfollow.config import stable_hash

TOOL_NAME = "search_skills"
SKILL_TYPES = ("utility", "procedure", "guard")

_BASE = "You are a helpful assistant."
_TOOL_SENTENCES = (
    "You have a `search_skills` tool that searches a skill library. "
    "Use it if you think it could help solve the task."
)
_TASK_INSTRUCTIONS = {
    "coding": (
        "Implement the requested function with the exact signature. "
        "Reply inside a ```python block — only the function, no test code."
    ),
    "math": "Solve the problem. Put the final answer in \\boxed{}.",
}

FINAL_ANSWER_REQUEST = "You have used all skill searches available. Now give your final answer."


def system_prompt(domain: str, *, skill_enabled: bool) -> str:
    """The system prompt of one arm; SE adds exactly the two tool sentences."""
    parts = (
        [_BASE, _TOOL_SENTENCES, _TASK_INSTRUCTIONS[domain]]
        if skill_enabled
        else [_BASE, _TASK_INSTRUCTIONS[domain]]
    )
    return " ".join(parts)


def tool_schema() -> dict[str, Any]:
    """The OpenAI function-tool definition of `search_skills`."""
    return {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": (
                "Search a library of reusable problem-solving artifacts: utility functions, "
                "procedure templates and guard checklists. Returns the full text of the best "
                "matching skills."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "What you need help with, in a few words.",
                    },
                    "types": {
                        "type": "array",
                        "items": {"type": "string", "enum": list(SKILL_TYPES)},
                        "description": "Optional: only return skills of these types.",
                    },
                },
                "required": ["query"],
            },
        },
    }


def prompts_hash(domain: str) -> str:
    """Hash of both arms' prompts, the tool schema and the final-answer request."""
    return stable_hash(
        {
            "se": system_prompt(domain, skill_enabled=True),
            "sd": system_prompt(domain, skill_enabled=False),
            "tool": tool_schema(),
            "final": FINAL_ANSWER_REQUEST,
        }
    )

"""System prompts and tool schemas of both access protocols (docs/skills.md, "Access protocols").

Every string a model reads is data here. SE and SD prompts differ only by what the protocol
adds (search: the two tool sentences; catalog: the skills instruction and the catalog); all
of it, the tool schemas and the final-answer request are hashed into the cell id, so a prompt
change starts a new cell.

`search` is the paper's protocol: its `search_skills` schema carries the strings of the
paper's Appendix L, Listing 1 verbatim. `catalog` is the Agent Skills specification's
progressive disclosure (its client guide, "integrating skills"): the catalog of names and
descriptions in the system prompt, `activate_skill` and `read_skill_file`.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from hf_skillfollow.config import stable_hash

TOOL_NAME = "search_skills"
SKILL_TYPES = ("utility", "procedure", "guard")
ACTIVATE_TOOL = "activate_skill"
READ_TOOL = "read_skill_file"

_BASE = "You are a helpful assistant."
_TOOL_SENTENCES = (
    "You have a `search_skills` tool that searches a skill library. "
    "Use it if you think it could help solve the task."
)
#: The catalog protocol's behavioural instruction: the client guide's sentence for a dedicated
#: activation tool, and one sentence on reading a skill's other files.
CATALOG_INSTRUCTIONS = (
    "The following skills provide specialized instructions for specific tasks. "
    "When a task matches a skill's description, call the activate_skill tool with the skill's "
    "name to load its full instructions. "
    "To read one of the files an activated skill lists, call the read_skill_file tool."
)
#: Where the pool's catalog goes in the catalog SE prompt (hashed as this placeholder: the
#: catalog itself is pool content, covered by the pool hash).
CATALOG_SLOT = "{catalog}"
_TASK_INSTRUCTIONS = {
    "coding": (
        "Implement the requested function with the exact signature. "
        "Reply inside a ```python block — only the function, no test code."
    ),
    "math": "Solve the problem. Put the final answer in \\boxed{}.",
    # a maintainer's own tasks graded by expectations (docs/tasks.md): no form is imposed
    "general": "Complete the task. Give your complete final answer in your reply.",
}
#: the prompt domain of each grader of a maintainer's own tasks (docs/tasks.md)
GRADER_DOMAIN = {"tests": "coding", "answer": "math", "expectations": "general"}

FINAL_ANSWER_REQUEST = "You have used all skill searches available. Now give your final answer."
CATALOG_FINAL_ANSWER_REQUEST = (
    "You have used all skill tool calls available. Now give your final answer."
)

#: `search_skills` exactly as printed in the paper (Appendix L, Listing 1).
SEARCH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": (
            "Search the skill library for reusable problem-solving artifacts. Returns utility "
            "functions (callable helpers you can use directly), procedure templates (algorithm "
            "skeletons you can specialize), and guard checklists (defensive checks to add at "
            "function entry)."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": (
                        "Natural-language query describing the subproblem or pattern you need."
                    ),
                },
                "types": {
                    "type": "array",
                    "items": {"type": "string", "enum": list(SKILL_TYPES)},
                    "description": (
                        "Optional filter. Omit for all types. Use ['utility', 'procedure'] to "
                        "skip defensive-only skills."
                    ),
                },
            },
            "required": ["query"],
        },
    },
}

#: Stands for the pool's skill names in the hashed and published form of the catalog tools.
NAMES_SLOT = "<skill names of the pool>"
_NAME_PARAM = {
    "type": "string",
    "enum": [NAMES_SLOT],
    "description": "Name of the skill, exactly as listed in <available_skills>.",
}
#: The catalog protocol's two tools; `name` is an enum of the pool's names (`catalog_tools`).
CATALOG_TOOLS: tuple[dict[str, Any], ...] = (
    {
        "type": "function",
        "function": {
            "name": ACTIVATE_TOOL,
            "description": (
                "Activate a skill from <available_skills>: returns its full instructions "
                "(the SKILL.md body) and the list of its other files."
            ),
            "parameters": {
                "type": "object",
                "properties": {"name": _NAME_PARAM},
                "required": ["name"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": READ_TOOL,
            "description": (
                "Read one file of an activated skill, by a path listed in its <skill_resources>."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "name": _NAME_PARAM,
                    "path": {
                        "type": "string",
                        "description": (
                            "Relative path of the file inside the skill, exactly as listed in "
                            "<skill_resources>."
                        ),
                    },
                },
                "required": ["name", "path"],
            },
        },
    },
)

#: What an activation returns (the client guide's structured wrapping, without the skill's
#: local directory: no local path enters a prompt, a hash or a published trace).
ACTIVATION_TEMPLATE = '<skill_content name="{name}">\n{body}\n{resources}</skill_content>'
RESOURCES_TEMPLATE = "\n<skill_resources>\n{files}\n</skill_resources>\n"
RESOURCE_LINE = "  <file>{path}</file>"
FILE_TEMPLATE = '<skill_file name="{name}" path="{path}">\n{content}\n</skill_file>'
INVALID_CALL = "Invalid call: {problem}. Nothing returned."


def system_prompt(
    domain: str, *, skill_enabled: bool, access: str = "search", catalog: str = ""
) -> str:
    """The system prompt of one arm. SD is the same for every protocol; SE adds the search
    protocol's two tool sentences, or the catalog protocol's instruction and `catalog`."""
    if not skill_enabled:
        return " ".join([_BASE, _TASK_INSTRUCTIONS[domain]])
    if access == "catalog":
        return f"{_BASE} {CATALOG_INSTRUCTIONS}\n\n{catalog}\n\n{_TASK_INSTRUCTIONS[domain]}"
    return " ".join([_BASE, _TOOL_SENTENCES, _TASK_INSTRUCTIONS[domain]])


def tool_schema() -> dict[str, Any]:
    """The OpenAI function-tool definition of `search_skills` (a copy of `SEARCH_TOOL`)."""
    return copy.deepcopy(SEARCH_TOOL)


def catalog_tools(names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """`activate_skill` and `read_skill_file` with `name` an enum of `names` (None: the
    pool-independent form, with `NAMES_SLOT`, that is hashed and recorded in manifests)."""
    tools = copy.deepcopy(list(CATALOG_TOOLS))
    if names is not None:
        for tool in tools:
            tool["function"]["parameters"]["properties"]["name"]["enum"] = list(names)
    return tools


def protocol_tools(access: str) -> list[dict[str, Any]]:
    """The pool-independent tool schemas of a protocol, as recorded in a run manifest."""
    return catalog_tools() if access == "catalog" else [tool_schema()]


def prompts_hash(domain: str, access: str = "search") -> str:
    """Hash of both arms' prompts, the protocol's tool schemas and the final-answer request
    (with the catalog protocol: also its result formats, the catalog and names as slots).

    A `general` benchmark's tasks (own tasks) use the prompts of their graders' domains: all
    three are hashed."""
    if domain == "general":
        return stable_hash({d: _arms_hash(d, access) for d in sorted(set(GRADER_DOMAIN.values()))})
    return _arms_hash(domain, access)


def _arms_hash(domain: str, access: str) -> str:
    if access == "catalog":
        return stable_hash(
            {
                "access": "catalog",
                "se": system_prompt(domain, skill_enabled=True, access=access, catalog=CATALOG_SLOT),
                "sd": system_prompt(domain, skill_enabled=False),
                "tools": catalog_tools(),
                "final": CATALOG_FINAL_ANSWER_REQUEST,
                "results": [
                    ACTIVATION_TEMPLATE, RESOURCES_TEMPLATE, RESOURCE_LINE, FILE_TEMPLATE,
                    INVALID_CALL,
                ],
            }
        )  # fmt: skip
    return stable_hash(
        {
            "se": system_prompt(domain, skill_enabled=True),
            "sd": system_prompt(domain, skill_enabled=False),
            "tool": tool_schema(),
            "final": FINAL_ANSWER_REQUEST,
        }
    )

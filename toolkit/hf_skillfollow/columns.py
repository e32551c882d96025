"""Every published column, declared once: name, type, meaning, role and where its value comes from.

The pyarrow schemas (`schema`), the cell key (`CELL_COLUMNS`), the identity columns a run
writes on each row (`runner.identity_columns`), the dataset card's column docs and the
metrics' required inputs are all derived from `TRANSITIONS` and `TRACES` below. This module
imports nothing heavy (no pyarrow), so the metrics, the config and the CLI can read it freely.

Roles (docs/design.md, "Published data"):
- ``run``: the run's own identity, repeated on each of its rows; config-identical reruns
  differ here, so these columns are not part of the cell.
- ``cell``: what defines a cell; rows that agree on every cell column are pooled.
- ``pair``: one task's paired SE/SD outcome (transitions).
- ``arm``: one arm's trace (traces).
- ``annotation``: one annotator's label of one SE execution (annotations, docs/diagnostics.md).
- ``verification``: one re-scored transitions row of a verification record (docs/verify.md).

A column taken from a `RunConfig` field has the role of that field: a field the config marks
as the run's own (`config.RUN_IDENTITY_FIELDS`, e.g. ``seed``) gives a ``run`` column, any other
a ``cell`` column, so "is this part of the cell" is written once, on the config field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Role = Literal["run", "cell", "pair", "arm", "annotation", "verification"]
#: Column types by name; `schema` maps each to its pyarrow type.
ColumnType = Literal["bool", "int32", "int64", "float64", "string", "list<string>", "list<message>"]


@dataclass(frozen=True)
class Column:
    """One published column.

    `source` (identity columns only) is the dotted path of the value in a run manifest:
    ``config.<field>`` for a `RunConfig` field, else a manifest key (``versions.<package>``).
    `metric_input` marks the outcome columns every metrics input must carry. `backfill` is the
    value of a column added after data was first published, for rows written before it
    existed (readers fill it in; docs/design.md, "Published data").
    """

    name: str
    type: ColumnType
    doc: str
    role: Role
    nullable: bool = False
    source: str | None = None
    metric_input: bool = False
    backfill: str | None = None


def _config_role(field: str) -> Role:
    from hf_skillfollow.config import RUN_IDENTITY_FIELDS

    return "run" if field in RUN_IDENTITY_FIELDS else "cell"


def _identity(name: str, type_: ColumnType, doc: str, role: Role | None = None) -> Column:
    """An identity column. Without `role`, it is a RunConfig field and takes that field's role."""
    if role is None:
        return Column(name, type_, doc, _config_role(name), source=f"config.{name}")
    return Column(name, type_, doc, role, source=name)


def _pair(
    name: str, type_: ColumnType, doc: str, *, nullable: bool = False, metric: bool = False
) -> Column:
    return Column(name, type_, doc, "pair", nullable=nullable, metric_input=metric)


_SCHEMA_VERSION = _identity(
    "schema_version", "int32", "skillfollow schema version of the row (readers check it)", "run"
)
_RUN_ID = _identity(
    "run_id", "string", "the run (one repeat of one cell); names the parquet file", "run"
)
_CELL_ID = _identity(
    "cell_id",
    "string",
    "stable hash of every protocol setting except the run's own identity; repeats share it",
    "cell",
)
_TASK_ID = _pair("task_id", "string", "benchmark task id")
_REPEAT_INDEX = _identity(
    "repeat_index", "int32", "index of the repeat within the cell (its seed is `seed`)", "run"
)
_N_CALLS = _pair(
    "n_calls",
    "int32",
    "number of skill tool calls: `search_skills`, or activations and reads (traces: this arm)",
)

#: Transitions: one row per task of a run, identity columns first, in published order.
TRANSITIONS: tuple[Column, ...] = (
    _SCHEMA_VERSION,
    _RUN_ID,
    _CELL_ID,
    _REPEAT_INDEX,
    _identity("created_at", "string", "UTC start time of the run", "run"),
    _identity("model", "string", "model name sent to the backend"),
    _identity("backend", "string", "how the model was reached (local, openai, vllm, vllm-server)"),
    _identity("tool_mode", "string", "native API tool calls, or the emulated text protocol"),
    _identity(
        "retrieval_policy",
        "string",
        "auto (the model decides) or forced (first SE turn must search)",
    ),
    _identity("benchmark", "string", "benchmark name"),
    _identity("benchmark_version", "string", "version of the benchmark data", "cell"),
    _identity("partition_seed", "int64", "seed of the documented task sampler"),
    _identity("partition_size", "int64", "tasks in the partition"),
    _identity("skill_pool", "string", "skill pool name", "cell"),
    _identity("skill_pool_hash", "string", "content hash of the skill pool", "cell"),
    _identity(
        "condition",
        "string",
        "skill-content control (normal, schema-empty, filler, random, corrupted, metadata-only)",
    ),
    Column(
        "access",
        "string",
        "how the skills reach the agent: search (the paper's search_skills tool) or catalog "
        "(catalog in the SE prompt, activate_skill, read_skill_file) in runs; for imported "
        "harness runs the loading mode on-demand, nudge or inject (docs/import.md); rows "
        "before the column: search",
        _config_role("access"),
        source="config.access",
        backfill="search",
    ),
    _identity("retriever", "string", "retrieval backend (bm25s or pyserini)"),
    _identity("top_k", "int32", "skills returned per search"),
    _identity("max_calls", "int32", "maximum skill tool calls per task"),
    _identity("temperature", "float64", "sampling temperature, same for both arms"),
    _identity("max_tokens", "int32", "maximum output tokens per model turn"),
    _identity("seed", "int64", "seed of this run, shared by the SE and SD arm of every task"),
    _identity(
        "prompts_hash",
        "string",
        "hash of both arms' system prompts, the tool schema and the final-answer request",
        "cell",
    ),
    Column(
        "toolkit_version",
        "string",
        "hf-skillfollow version that produced the run",
        "cell",
        source="versions.hf-skillfollow",
    ),
    # Added with `hf-skillfollow import` (docs/import.md): rows written before them are runs
    # of the chat loop, which is what their backfill says.
    Column("provenance", "string", "`run` (the toolkit ran both arms in its chat loop), "
           "`run:<harness>` (the toolkit ran both arms through that harness, `run --harness "
           "harbor`) or `imported:<format>` (trials another harness ran, read by "
           "`hf-skillfollow import`); rows before the column: run", "cell",
           source="provenance", backfill="run"),
    Column("harness", "string", "the program that ran the arms: `hf-skillfollow` (the chat "
           "loop) or the imported format (harbor, skill-creator, benchflow); rows before the "
           "column: hf-skillfollow", "cell", source="harness", backfill="hf-skillfollow"),
    Column("agent", "string", "the agent and its version, `<name>@<version>` (claude-code@2.0.1, "
           "terminus-2@2.0.0); `hf-skillfollow` for the chat loop and rows before the column",
           "cell", source="agent", backfill="hf-skillfollow"),
    # Added with the board's judge column (issue 39): the judge is part of the cell id only
    # where it grades, so cells with another judge are other cells; empty elsewhere.
    Column("judged_by", "string", "the judge of the run's `expectations` tasks, "
           "`<judge_model>@<prompt_hash>` (the traces' `judge`); empty when no task of the run "
           "is judged, and on rows before the column", "cell", source="judge.judge",
           backfill=""),
    _TASK_ID,
    _pair("se_correct", "bool", "skill-enabled (SE) answer passed", metric=True),
    _pair("sd_correct", "bool", "skill-disabled (SD) answer passed", metric=True),
    _pair("invoked", "bool", "the SE run called a skill tool at least once", metric=True),
    _pair(
        "returned",
        "bool",
        "at least one skill came back, by a search or an activation (defines the "
        "retrieval-invoked subset S_call)",
        metric=True,
    ),
    _N_CALLS,
    _pair(
        "queries",
        "list<string>",
        "the SE run's valid calls, in order: search queries, or `activate_skill(name)` and "
        "`read_skill_file(name, path)`",
    ),
    _pair(
        "skills_returned",
        "list<string>",
        "names of the skills returned (searched or activated) to the SE run, in order",
    ),
    _pair(
        "se_error",
        "string",
        "unrecoverable SE error (the answer was scored incorrect), else null",
        nullable=True,
    ),
    _pair(
        "sd_error",
        "string",
        "unrecoverable SD error (the answer was scored incorrect), else null",
        nullable=True,
    ),
    _pair(
        "adherence",
        "bool",
        "lexical/structural proxy: a returned skill's identifier appears in the SE answer "
        "(null when nothing was returned)",
        nullable=True,
    ),
    # Imported rows only (docs/import.md), but `arm_integrity`, which chat-loop rows carry too;
    # null on rows before the columns.
    _pair("detector", "string", "imported: the transcript detector that decided activation "
          "(`none` when the SE trial has no transcript: activation unknown; `inject` for an "
          "inject cell, whose SE trials all received the skills in the instruction), else null",
          nullable=True),
    _pair("trigger_kind", "string", "imported, in S_call: `instructions` when an activated skill's "
          "instructions were loaded (Skill tool, SKILL.md read), `resource` when only a resource "
          "of it was used, `record` when only the harness's count of unnamed invocations says so "
          "(BenchFlow); else null (a chat-loop trigger hands over the instructions)",
          nullable=True),
    _pair("arm_integrity", "string", "`ok`, `unchecked` (imported: no SD transcript; `unchecked: <why>`) or "
          "`violation: <what>`: pool skills listed or read in the skill-disabled trial "
          "(imported), or a pool skill's body or file text in the recorded skill-disabled "
          "request (chat loop, every pair); null before the column", nullable=True),
    _pair("intended_skills", "list<string>", "imported: the skills the task names as its own "
          "(SkillsBench: `environment/skills/`), for trigger precision; else null",
          nullable=True),
)  # fmt: skip

#: The `provenance` of the chat loop's rows (and its backfill, for rows from before the column).
CHAT_LOOP = "run"


def agent_ran(provenance: object) -> bool:
    """An agent ran the arms (`imported:<format>`, `run:<harness>`), so its transcripts decided
    the activation; not the chat loop (`run`, or null in rows from before the column)."""
    return str(provenance or CHAT_LOOP) != CHAT_LOOP


def agent_ran_mask(provenance: Any) -> Any:
    """`agent_ran` of each row of a pyarrow `provenance` column, as a boolean array (pyarrow is
    imported here only, so this module stays light)."""
    import pyarrow.compute as pc

    return pc.not_equal(pc.fill_null(provenance, CHAT_LOOP), CHAT_LOOP)


def _arm(name: str, type_: ColumnType, doc: str, *, nullable: bool = False) -> Column:
    return Column(name, type_, doc, "arm", nullable=nullable)


#: Traces: one row per arm of each task, in published order.
TRACES: tuple[Column, ...] = (
    _SCHEMA_VERSION,
    _RUN_ID,
    _CELL_ID,
    _TASK_ID,
    _arm("arm", "string", "`se` (skill-enabled) or `sd` (skill-disabled)"),
    _arm(
        "messages",
        "list<message>",
        "the full message list (role, content, tool_calls as JSON text, tool_call_id, name)",
    ),
    _arm("final_answer", "string", "the model's final answer text"),
    _arm("extracted", "string", "the program or answer the scorer evaluated"),
    _arm("correct", "bool", "the scorer's verdict for this arm"),
    _arm("scorer_details", "string", "scorer details as JSON text (reason, failing input, ...)"),
    _arm("error", "string", "unrecoverable error of this arm, else null", nullable=True),
    _N_CALLS,
    _arm("latency_s", "float64", "wall time of the arm in seconds"),
    _arm("prompt_tokens", "int64", "prompt tokens reported by the backend"),
    _arm("completion_tokens", "int64", "completion tokens reported by the backend"),
    # A maintainer's own tasks (`custom`, `skill-evals`; docs/tasks.md); null for the benchmarks.
    _arm("grader", "string", "own tasks: the task's grader (tests, answer or expectations), else null", nullable=True),
    _arm("judge", "string", "expectations: the judge's identity `<judge_model>@<prompt_hash>`, else null", nullable=True),
    _arm("judge_verdicts", "string", "expectations: JSON of every judge repeat (passed and evidence per "
         "expectation, failures), the majority, ties and unanimity, else null", nullable=True),
    _arm("addresses_grader", "bool", "own tasks: the answer carries text addressed to a grader "
         "(the documented detector), else null", nullable=True),
)  # fmt: skip


def _note(name: str, type_: ColumnType, doc: str, *, nullable: bool = False) -> Column:
    return Column(name, type_, doc, "annotation", nullable=nullable)


#: Columns added to schema v1 after files were published without them: all nullable, and a
#: file that lacks them reads as if they were null (`schema.validate_table`).
ADDED_NULLABLE: frozenset[str] = frozenset(
    {"grader", "judge", "judge_verdicts", "addresses_grader"}
    | {"detector", "trigger_kind", "arm_integrity", "intended_skills"}
)

#: Annotations: one blinded LLM label per annotated SE execution and annotator, keyed by
#: (run_id, task_id, repeat_index, annotator); `label` is null exactly when the annotator
#: failed, and `failure` then says why (docs/diagnostics.md).
ANNOTATIONS: tuple[Column, ...] = (
    _SCHEMA_VERSION,
    _RUN_ID,
    _CELL_ID,
    _TASK_ID,
    _REPEAT_INDEX,
    _note("annotator", "string", "annotator identity `<annotator_model>@<prompt_hash>` (part of the key)"),
    _note("annotator_model", "string", "model that produced the label"),
    _note("annotator_backend", "string", "how the annotator model was reached (local, openai, vllm, vllm-server)"),
    _note("prompt_hash", "string", "hash of the annotation instructions, labelling tool and field caps"),
    _note("flip", "string", "the task's paired outcome: helpful (SE right, SD wrong), harmful (SE wrong, SD right) or concordant"),
    _note("label", "string", "appropriate adherence, ignored/independent, misapplied/overapplied, "
          "format/interface failure or unclear; null when the annotator failed", nullable=True),
    _note("rationale", "string", "the annotator's short reason for the label", nullable=True),
    _note("failure", "string", "why no label was recorded (invalid output or backend error on "
          "every attempt), else null", nullable=True),
    _note("attempts", "int32", "requests made for this unit (retries on invalid output included)"),
    _note("raw_output", "string", "the annotator's last reply, as produced (kept for audits)", nullable=True),
    _note("annotated_at", "string", "UTC time the row was recorded"),
)  # fmt: skip
#: The key of an annotations row.
ANNOTATION_KEY: tuple[str, ...] = ("run_id", "task_id", "repeat_index", "annotator")


def _check(name: str, type_: ColumnType, doc: str) -> Column:
    return Column(name, type_, doc, "verification")


#: Verifications: one row per re-scored transitions row of one `hf-skillfollow verify`, with
#: who produced it, with what, and when; keyed by (verification_id, run_id, task_id).
VERIFICATIONS: tuple[Column, ...] = (
    _SCHEMA_VERSION,
    _check("verification_id", "string", "the verification (one `hf-skillfollow verify`); names the record file"),
    _check("verified_at", "string", "UTC time the verification ran"),
    _check("verified_by", "string", "who ran it (`user@host`, or the name given with `--by`)"),
    _check("machine", "string", "host, platform and Python version it ran on"),
    _check("toolkit_version", "string", "hf-skillfollow version that re-scored"),
    _check("scorer_version", "string", "scorer version used to re-score (equal to the one recorded in the traces)"),
    _check("benchmark", "string", "benchmark name"),
    _check("benchmark_version", "string", "the benchmark release recorded in the verified row"),
    _check("benchmark_release", "string", "the benchmark release actually loaded to re-score (same data)"),
    _RUN_ID,
    _CELL_ID,
    _TASK_ID,
    _check("se_recorded", "bool", "`se_correct` as published when verified"),
    _check("se_rescored", "bool", "verdict of re-scoring the SE final answer re-extracted from its trace"),
    _check("sd_recorded", "bool", "`sd_correct` as published when verified"),
    _check("sd_rescored", "bool", "verdict of re-scoring the SD final answer re-extracted from its trace"),
    _check("se_reason", "string", "the re-scorer's reason for the SE verdict, and what else differs in the trace"),
    _check("sd_reason", "string", "the re-scorer's reason for the SD verdict, and what else differs in the trace"),
)  # fmt: skip

#: Columns that identify a run and its cell; repeated on every transitions row of that run.
IDENTITY_COLUMNS: tuple[str, ...] = tuple(c.name for c in TRANSITIONS if c.role in ("run", "cell"))
#: Identity columns that define a cell (the run's own identity excluded): the pooling key.
CELL_COLUMNS: tuple[str, ...] = tuple(c.name for c in TRANSITIONS if c.role == "cell")
#: Outcome columns every transitions input of the metrics must carry.
METRIC_INPUTS: tuple[str, ...] = tuple(c.name for c in TRANSITIONS if c.metric_input)
#: One-line meaning of every published column (the card's schema tables).
COLUMN_DOCS: dict[str, str] = {
    c.name: c.doc for c in (*TRANSITIONS, *TRACES, *ANNOTATIONS, *VERIFICATIONS)
}


def identity_values(manifest: dict[str, Any]) -> dict[str, Any]:
    """The identity column values of a run, read from its manifest by each column's `source`."""
    values = {}
    for column in TRANSITIONS:
        if column.source is None:
            continue
        value: Any = manifest
        for key in column.source.split("."):
            if key not in value and column.backfill is not None:
                # a manifest from before the column (or a chat-loop run, for the import's
                # columns) holds what the backfill says
                value = column.backfill
                break
            value = value[key]
        values[column.name] = value
    return values

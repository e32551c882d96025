"""One-line meaning of every published column, for the card's schema tables."""

from __future__ import annotations

import pyarrow as pa

COLUMN_DOCS: dict[str, str] = {
    "schema_version": "skillfollow schema version of the row (readers check it)",
    "run_id": "the run (one repeat of one cell); names the parquet file",
    "cell_id": "stable hash of every protocol setting except the run's own identity; repeats share it",
    "repeat_index": "index of the repeat within the cell (its seed is `seed`)",
    "created_at": "UTC start time of the run",
    "model": "model name sent to the backend",
    "backend": "how the model was reached (local, openai, vllm, vllm-server)",
    "tool_mode": "native API tool calls, or the emulated text protocol",
    "retrieval_policy": "auto (the model decides) or forced (first SE turn must search)",
    "benchmark": "benchmark name",
    "benchmark_version": "version of the benchmark data",
    "partition_seed": "seed of the documented task sampler",
    "partition_size": "tasks in the partition",
    "skill_pool": "skill pool name",
    "skill_pool_hash": "content hash of the skill pool",
    "condition": "skill-content control (normal, schema-empty, filler, random, corrupted, metadata-only)",
    "retriever": "retrieval backend (bm25s or pyserini)",
    "top_k": "skills returned per search",
    "max_calls": "maximum `search_skills` calls per task",
    "temperature": "sampling temperature, same for both arms",
    "max_tokens": "maximum output tokens per model turn",
    "seed": "seed of this run, shared by the SE and SD arm of every task",
    "prompts_hash": "hash of both arms' system prompts, the tool schema and the final-answer request",
    "toolkit_version": "hf-skillfollow version that produced the run",
    "task_id": "benchmark task id",
    "se_correct": "skill-enabled (SE) answer passed",
    "sd_correct": "skill-disabled (SD) answer passed",
    "invoked": "the SE run called `search_skills` at least once",
    "returned": "at least one skill came back (defines the retrieval-invoked subset)",
    "n_calls": "number of `search_skills` calls (traces: calls in this arm)",
    "queries": "the SE run's search queries, in order",
    "skills_returned": "names of the skills returned to the SE run, in order",
    "se_error": "unrecoverable SE error (the answer was scored incorrect), else null",
    "sd_error": "unrecoverable SD error (the answer was scored incorrect), else null",
    "adherence": "lexical/structural proxy: a returned skill's identifier appears in the SE answer (null when nothing was returned)",
    "arm": "`se` (skill-enabled) or `sd` (skill-disabled)",
    "messages": "the full message list (role, content, tool_calls as JSON text, tool_call_id, name)",
    "final_answer": "the model's final answer text",
    "extracted": "the program or answer the scorer evaluated",
    "correct": "the scorer's verdict for this arm",
    "scorer_details": "scorer details as JSON text (reason, failing input, ...)",
    "error": "unrecoverable error of this arm, else null",
    "latency_s": "wall time of the arm in seconds",
    "prompt_tokens": "prompt tokens reported by the backend",
    "completion_tokens": "completion tokens reported by the backend",
    "annotator": "annotator identity: `<annotator_model>@<prompt_hash>` (part of the key)",
    "annotator_model": "model that produced the label",
    "annotator_backend": "how the annotator model was reached (local, openai, vllm, vllm-server)",
    "prompt_hash": "hash of the annotation instructions, labelling tool and field caps",
    "flip": "the task's paired outcome: helpful (SE right, SD wrong), harmful (SE wrong, SD right) or concordant",
    "label": "appropriate adherence, ignored/independent, misapplied/overapplied, format/interface failure or unclear; null when the annotator failed",
    "rationale": "the annotator's short reason for the label",
    "failure": "why no label was recorded (invalid output or backend error on every attempt), else null",
    "attempts": "requests made for this unit (retries on invalid output included)",
    "raw_output": "the annotator's last reply, as produced",
    "annotated_at": "UTC time the row was recorded",
}


def schema_rows(schema: pa.Schema) -> list[dict[str, str]]:
    """Rows of a Markdown schema table, straight from the pyarrow schema."""
    return [
        {
            "name": field.name,
            "type": str(field.type),
            "nullable": "yes" if field.nullable else "no",
            "doc": COLUMN_DOCS.get(field.name, ""),
        }
        for field in schema
    ]

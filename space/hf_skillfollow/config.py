"""Typed, validated run configuration and the stable cell id.

See docs/design.md, "Protocol" and "Published data".
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hf_skillfollow.benchmarks import benchmark_spec
from hf_skillfollow.registries import BACKENDS, RETRIEVERS

Condition = Literal["normal", "schema-empty", "filler", "random", "corrupted", "metadata-only"]
ToolMode = Literal["native", "emulated"]
RetrievalPolicy = Literal["auto", "forced"]
Access = Literal["search", "catalog"]

DEFAULT_LOCAL_MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: Tasks sampled from a benchmark when no --partition-size is given (own tasks: every task).
DEFAULT_PARTITION_SIZE = 80


def _run_field(default: Any, **kwargs: Any) -> Any:
    """A setting of the run itself (seed, plumbing), not of the protocol: outside the cell id.

    `limit` is not one: a smoke run on the first N tasks is a different task set and must not
    pool with the full partition.
    """
    return Field(default, json_schema_extra={"role": "run"}, **kwargs)


class RunConfig(BaseModel):
    """Everything that defines one paired SE/SD run. Recorded verbatim in the run manifest."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(
        DEFAULT_LOCAL_MODEL,
        description="Model name sent to the backend (or GGUF file name for `local`).",
    )
    backend: str = Field(
        "local", description="Backend registry name: local, openai, vllm, vllm-server."
    )
    base_url: str | None = _run_field(
        None, description="OpenAI-compatible endpoint for the `openai` backend."
    )
    api_key_env: str = _run_field(
        "OPENAI_API_KEY", description="Environment variable holding the API key (never stored)."
    )
    tool_mode: ToolMode = Field(
        "native",
        description="`native`: API `tools`; `emulated`: tool described in the system prompt, `<tool_call>` parsed from text.",
    )
    retrieval_policy: RetrievalPolicy = Field(
        "auto",
        description="`forced` makes the SE arm's first turn a skill tool call (`search_skills`; with `catalog`, `activate_skill`): the explicit-fetch variant, not for published comparisons.",
    )
    tool_parser: str | None = Field(
        None, description="vLLM tool parser (e.g. hermes) for the vllm backends."
    )
    engine_options: dict[str, object] = Field(
        default_factory=dict, description="Extra engine options passed through to vLLM."
    )

    benchmark: str = Field(
        "mbppplus", description="Benchmark name (declared in `hf_skillfollow.benchmarks`)."
    )
    tasks_file: Path | None = _run_field(
        None, description="Local benchmark file overriding the official source."
    )
    partition_seed: int = Field(42, description="Seed of the documented partition sampler.")
    partition_size: int | None = Field(
        None,
        ge=1,
        description="Number of tasks in the partition [80]; unset for a maintainer's own tasks "
        "(custom, skill-evals): every task, recorded as their count when the run is planned.",
    )
    limit: int | None = Field(
        None, ge=1, description="Evaluate only the first N tasks of the partition (smoke runs)."
    )

    skills_dir: Path | None = Field(
        None,
        description="Skill pool directory; default: the shipped pool for the benchmark's domain.",
    )
    skill_pool: str = Field(
        "", description="Pool name recorded in the data (default: folder name)."
    )
    merged_library: bool = Field(
        False, description="Use the merged single library of all shipped pools."
    )
    condition: Condition = Field("normal", description="Skill-content control.")
    access: Access = Field(
        "search",
        description="Skill access protocol: `search` (the paper's `search_skills` BM25 tool) or "
        "`catalog` (the Agent Skills catalog in the SE prompt, `activate_skill` and "
        "`read_skill_file`); docs/skills.md.",
    )
    retriever: str = Field(
        "bm25s", description="Retriever registry name: bm25s or pyserini (`search` only)."
    )
    top_k: int = Field(
        3, ge=1, le=20, description="Skills returned per search (`search` only; recorded as given)."
    )
    max_calls: int = Field(
        3,
        ge=1,
        le=10,
        description="Maximum skill tool calls per task (`search_skills` calls; with `catalog`, "
        "activations and reads together).",
    )

    temperature: float = Field(
        0.7, ge=0.0, le=2.0, description="Sampling temperature, same for both arms."
    )
    max_tokens: int = Field(8192, ge=1, description="Maximum output tokens per model turn.")
    seed: int = _run_field(0, description="Seed of this run (shared by SE and SD of every task).")
    repeats: int = _run_field(
        1, ge=1, description="Independent reruns of the cell; repeat r uses seed + r."
    )

    # The judge of `expectations` tasks (docs/tasks.md). Left out of `protocol_dict`: the
    # runner adds the resolved judge identity to the cell id only when a task is judged.
    judge_model: str | None = Field(
        None, description="Judge model for expectation grading (default: the run's model)."
    )
    judge_backend: str | None = Field(
        None, description="Judge backend registry name (default: the run's backend)."
    )
    judge_base_url: str | None = _run_field(
        None, description="Judge endpoint (default: the run's --base-url)."
    )
    judge_api_key_env: str | None = _run_field(
        None, description="Environment variable of the judge's API key (default: the run's)."
    )
    judge_repeats: int = Field(
        2, ge=1, le=9, description="Times each answer is judged; the verdict is the majority."
    )
    judge_max_tokens: int = Field(1024, ge=16, description="Judge output tokens per request.")

    concurrency: int = _run_field(4, ge=1, description="Concurrent pairs in flight.")
    request_timeout: float = _run_field(600.0, gt=0, description="Per-request timeout in seconds.")
    n_threads: int | None = _run_field(
        None, description="CPU threads for the embedded llama.cpp server."
    )
    server_port: int | None = _run_field(
        None, description="Port for a server the toolkit launches (default: a free port)."
    )

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, v: str) -> str:
        return BACKENDS.check(v)

    @field_validator("judge_backend")
    @classmethod
    def _known_judge_backend(cls, v: str | None) -> str | None:
        return None if v is None else BACKENDS.check(v)

    @field_validator("benchmark")
    @classmethod
    def _known_benchmark(cls, v: str) -> str:
        return benchmark_spec(v).name

    @field_validator("retriever")
    @classmethod
    def _known_retriever(cls, v: str) -> str:
        return RETRIEVERS.check(v)

    @model_validator(mode="after")
    def _default_partition(self) -> RunConfig:
        # the benchmarks are sampled (80 tasks); a maintainer's own tasks all run unless a
        # partition is asked for (`runner.select_tasks`)
        if self.partition_size is None and not self.own_tasks:
            object.__setattr__(self, "partition_size", DEFAULT_PARTITION_SIZE)
        return self

    @property
    def own_tasks(self) -> bool:
        """Whether the benchmark is a maintainer's own tasks (`custom`, `skill-evals`)."""
        return benchmark_spec(self.benchmark).loader in ("custom", "skill-evals")

    @model_validator(mode="after")
    def _catalog_searches_nothing(self) -> RunConfig:
        # top_k and retriever mean nothing when no search happens: left at their defaults so
        # that catalog runs differing only there are one cell, not several
        if self.access == "catalog":
            for name in ("top_k", "retriever"):
                object.__setattr__(self, name, type(self).model_fields[name].default)
        return self

    @model_validator(mode="after")
    def _openai_needs_url(self) -> RunConfig:
        if self.backend == "openai" and not self.base_url:
            object.__setattr__(self, "base_url", "https://api.openai.com/v1")
        return self

    @property
    def domain(self) -> str:
        return benchmark_spec(self.benchmark).domain

    def protocol_dict(self) -> dict[str, object]:
        """The settings that define the cell (everything except the run's own identity)."""
        data = self.model_dump(mode="json")
        return {
            k: v
            for k, v in sorted(data.items())
            if k not in RUN_IDENTITY_FIELDS and k not in JUDGE_FIELDS
        }

    def judge_config(self) -> RunConfig:
        """The settings that reach the judge model: the run's, with the judge's own in place."""
        same_backend = (self.judge_backend or self.backend) == self.backend
        return RunConfig(
            **{
                **self.model_dump(),
                "model": self.judge_model or self.model,
                "backend": self.judge_backend or self.backend,
                # another backend does not inherit the run's endpoint
                "base_url": self.judge_base_url or (self.base_url if same_backend else None),
                "api_key_env": self.judge_api_key_env or self.api_key_env,
            }
        )

    def judge_is_run_model(self) -> bool:
        """Whether the judge is the run's own model at the run's own endpoint (one backend)."""
        j = self.judge_config()
        return (j.model, j.backend, j.base_url, j.api_key_env) == (
            self.model,
            self.backend,
            self.base_url,
            self.api_key_env,
        )


#: Settings that are a run's own identity, not part of the protocol: excluded from `cell_id`.
RUN_IDENTITY_FIELDS = frozenset(
    name
    for name, info in RunConfig.model_fields.items()
    if isinstance(info.json_schema_extra, dict) and info.json_schema_extra.get("role") == "run"
)


#: The judge's settings: part of the cell id only through the runner's judge identity.
JUDGE_FIELDS = frozenset(name for name in RunConfig.model_fields if name.startswith("judge_"))


def stable_hash(obj: object, length: int = 16) -> str:
    """sha256 of canonical JSON, truncated; stable across platforms and Python versions."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def cell_id(
    protocol: dict[str, object], *, skill_pool_hash: str, prompts_hash: str, benchmark_version: str
) -> str:
    """Cell id: hash of every protocol setting plus the content hashes that define the cell."""
    return stable_hash(
        {
            **protocol,
            "skill_pool_hash": skill_pool_hash,
            "prompts_hash": prompts_hash,
            "benchmark_version": benchmark_version,
        }
    )

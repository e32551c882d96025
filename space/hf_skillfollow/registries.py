"""The pluggable parts by name: model backends, retrievers and skill access protocols,
imported only when used.

`config` validates names against these tables without importing any backend (openai, vLLM,
llama.cpp) or retriever (a JVM for pyserini); `backends.open_backend` and
`retrieval.make_retriever` resolve them.
"""

from __future__ import annotations

from hf_skillfollow._lazy import LazyRegistry

#: name -> factory taking a RunConfig and returning an async context manager of a ChatBackend.
BACKENDS = LazyRegistry(
    "backend",
    {
        "local": "hf_skillfollow.backends._local:open_local_backend",
        "openai": "hf_skillfollow.backends._openai:open_openai_backend",
        "vllm": "hf_skillfollow.backends._vllm:open_vllm_backend",
        "vllm-server": "hf_skillfollow.backends._vllm_server:open_vllm_server_backend",
    },
)

#: name -> sweep executor class (an async context manager running one job attempt at a time).
EXECUTORS = LazyRegistry(
    "executor",
    {
        "local": "hf_skillfollow.sweep._executors._local:LocalExecutor",
        "ray": "hf_skillfollow.sweep._executors._ray:RayExecutor",
    },
)

#: name -> factory taking a SkillPool and returning a Retriever.
RETRIEVERS = LazyRegistry(
    "retriever",
    {
        "bm25s": "hf_skillfollow.retrieval._bm25s:Bm25sRetriever",
        "pyserini": "hf_skillfollow.retrieval._pyserini:PyseriniRetriever",
    },
)

#: name -> skill access protocol class, built as ``cls(pool, config)`` (`access.make_access`).
ACCESS = LazyRegistry(
    "access protocol",
    {
        "search": "hf_skillfollow.access._search:SearchAccess",
        "catalog": "hf_skillfollow.access._catalog:CatalogAccess",
    },
)

#: name -> transcript detector, a pure function ``(transcript, pool) -> Detection``
#: (`transcripts.detect`); ``harness-record`` reads a harness's own result record instead.
DETECTORS = LazyRegistry(
    "transcript detector",
    {
        "claude-code": "hf_skillfollow.transcripts._claude_code:detect_claude_code",
        "codex": "hf_skillfollow.transcripts._codex:detect_codex",
        "opencode": "hf_skillfollow.transcripts._opencode:detect_opencode",
        "gemini-cli": "hf_skillfollow.transcripts._gemini_cli:detect_gemini_cli",
        "openhands": "hf_skillfollow.transcripts._openhands:detect_openhands",
        "atif": "hf_skillfollow.transcripts._atif:detect_atif",
        "acp": "hf_skillfollow.transcripts._acp:detect_acp",
        "generic": "hf_skillfollow.transcripts._generic:detect_generic",
        "harness-record": "hf_skillfollow.transcripts._harness_record:detect_harness_record",
    },
)

#: name -> importer of one format of another harness's runs, ``(ImportRequest) -> Collected``
#: (`hf_skillfollow.importers`, docs/import.md).
IMPORTERS = LazyRegistry(
    "import format",
    {
        "harbor": "hf_skillfollow.importers._harbor:collect_harbor",
        "benchflow": "hf_skillfollow.importers._benchflow:collect_benchflow",
        "skill-creator": "hf_skillfollow.importers._skill_creator:collect_skill_creator",
    },
)

#: name -> a harness that runs both arms with another program's agent and imports the trials,
#: ``(HarborOptions-like options, output_dir, echo) -> outcome with run_dirs and notes``
#: (`run --harness NAME`, docs/harness.md).
HARNESSES = LazyRegistry(
    "harness",
    {
        "harbor": "hf_skillfollow.harness._harbor:run_harbor",
    },
)

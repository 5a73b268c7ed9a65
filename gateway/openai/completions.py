"""`/v1/completions`: plain-text (or token-id) prompts to OpenAI text completions.

Owns: prompt normalisation (text, token ids, or a batch of either), `n` choices per
prompt, legacy `logprobs`, `response_format` (the chat route's constrained decoding,
`gateway.openai.structured`), SSE chunk streams, recording into the episode, and reporting
each answered request's timing to a `ServingObserver`. Raises `GatewayError`s only; knows
nothing about routes, auth, or torch.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

from gateway.errors import InvalidRequest, stream_error_event
from gateway.openai.common import (
    DONE_EVENT,
    new_request_id,
    now_s,
    record_calls,
    top_alternatives,
    usage_of,
)
from gateway.openai.fanout import collect, generate_all, merge_streams
from gateway.openai.sampling import (
    check_limits,
    completion_budget,
    log_unknown_fields,
    reject_unsupported,
    sampling_params_per_choice,
)
from gateway.openai.structured import completion_grammar
from gateway.openai.timing import NoObserver, RequestClock, ServingObserver
from gateway.openai.wire import (
    CompletionChoice,
    CompletionRequest,
    CompletionResponse,
    LegacyLogprobs,
)
from gateway.recording.recorder import CallRecord, EpisodeRecorder
from gateway.registry import ModelRegistry
from gateway.settings import RequestLimits
from trainer.types import ChatTokenizer, Completion, SamplingParams, ServedModel, StreamEnd


@dataclass
class CompletionJob:
    """One engine request: choice `index` of prompt `prompt_index`."""

    index: int
    prompt_index: int
    prompt_token_ids: list[int]
    prompt_text: str | None
    params: SamplingParams


@dataclass
class PreparedCompletion:
    served: ServedModel
    jobs: list[CompletionJob]
    prompt_tokens: int  # summed over distinct prompts
    logprobs: int | None
    include_usage: bool
    clock: RequestClock = field(default_factory=RequestClock)  # from the start of prepare


def _check_completion_semantics(request: CompletionRequest) -> None:
    reject_unsupported(request)
    if request.echo:
        raise InvalidRequest("echo: not supported by this server.", param="echo")
    if request.suffix:
        raise InvalidRequest("suffix: not supported by this server.", param="suffix")
    if request.best_of is not None and request.best_of != request.n:
        raise InvalidRequest("best_of: only best_of == n is supported.", param="best_of")


def _prompts(
    prompt: str | list[str] | list[int] | list[list[int]], tokenizer: ChatTokenizer
) -> list[tuple[list[int], str | None]]:
    """(token ids, text if given as text) per prompt."""
    if isinstance(prompt, str):
        items: list[str | list[int]] = [prompt]
    elif all(isinstance(p, int) for p in prompt):
        items = [list(prompt)]  # type: ignore[arg-type]
    else:
        items = list(prompt)  # type: ignore[arg-type]
    prompts = []
    for item in items:
        ids = tokenizer.encode(item) if isinstance(item, str) else list(item)
        if not ids:
            raise InvalidRequest("prompt: must not be empty.", param="prompt")
        if any(not 0 <= t < tokenizer.vocab_size for t in ids):
            raise InvalidRequest(
                f"prompt: token ids must lie in [0, {tokenizer.vocab_size}).", param="prompt"
            )
        prompts.append((ids, item if isinstance(item, str) else None))
    return prompts


class CompletionsService:
    def __init__(
        self,
        models: ModelRegistry,
        recorder: EpisodeRecorder,
        limits: RequestLimits | None = None,
        observer: ServingObserver | None = None,
    ):
        self._limits = limits or RequestLimits()
        self._models = models
        self._recorder = recorder
        self._observer = observer or NoObserver()

    async def prepare(self, request: CompletionRequest) -> PreparedCompletion:
        clock = RequestClock()
        log_unknown_fields(request)
        check_limits(request, self._limits)
        served = self._models.get(request.model)
        _check_completion_semantics(request)
        grammar = completion_grammar(request)
        prompts = _prompts(request.prompt, served.tokenizer)
        jobs = []
        for prompt_index, (ids, text) in enumerate(prompts):
            max_tokens = completion_budget(
                prompt_len=len(ids),
                max_context=served.engine.max_context,
                requested=request.max_tokens or 16,  # the OpenAI default for completions
                param="prompt",
            )
            first = prompt_index * request.n
            params = sampling_params_per_choice(
                request,
                max_tokens=max_tokens,
                top_logprobs=request.logprobs or 0,
                choice_indices=range(first, first + request.n),
                grammar=grammar,
            )
            jobs += [
                CompletionJob(first + j, prompt_index, ids, text, p) for j, p in enumerate(params)
            ]
        return PreparedCompletion(
            served=served,
            jobs=jobs,
            prompt_tokens=sum(len(ids) for ids, _ in prompts),
            logprobs=request.logprobs,
            include_usage=bool(request.stream_options and request.stream_options.include_usage),
            clock=clock,
        )

    async def complete(
        self, prepared: PreparedCompletion, episode_id: str | None
    ) -> CompletionResponse:
        engine = prepared.served.engine
        first_token = prepared.clock.first_token
        completions = await generate_all(
            [
                collect(engine.stream(job.prompt_token_ids, job.params), first_token)
                for job in prepared.jobs
            ]
        )
        request_id = new_request_id("cmpl")
        await self._record(prepared, request_id, completions, episode_id)
        choices = [
            CompletionChoice(
                index=job.index,
                text=completion.text,
                logprobs=self._logprobs(prepared, completion),
                finish_reason=completion.finish_reason,
            )
            for job, completion in zip(prepared.jobs, completions, strict=True)
        ]
        usage = _usage(prepared, completions)
        self._observe(prepared, usage.completion_tokens)
        return CompletionResponse(
            id=request_id,
            created=now_s(),
            model=prepared.served.name,
            choices=choices,
            usage=usage,
        )

    def _observe(self, prepared: PreparedCompletion, completion_tokens: int) -> None:
        self._observer.observe(prepared.clock.served(prepared.served.name, completion_tokens))

    def _logprobs(
        self, prepared: PreparedCompletion, completion: Completion
    ) -> LegacyLogprobs | None:
        if prepared.logprobs is None:
            return None
        tokenizer = prepared.served.tokenizer
        tokens = [tokenizer.token_text(token_id) for token_id in completion.token_ids]
        offsets, offset = [], 0
        for piece in completion.token_texts or tokens:
            offsets.append(offset)
            offset += len(piece)
        top = None
        if prepared.logprobs > 0:
            top = [
                dict(top_alternatives(tokenizer, alts, prepared.logprobs))
                for alts in completion.top_logprobs
            ]
        return LegacyLogprobs(
            tokens=tokens,
            token_logprobs=list(completion.logprobs),
            top_logprobs=top,
            text_offset=offsets,
        )

    async def _record(
        self,
        prepared: PreparedCompletion,
        request_id: str,
        completions: Sequence[Completion],
        episode_id: str | None,
    ) -> None:
        if episode_id is None:
            return
        calls = [
            CallRecord.from_completion(
                completion,
                request_id=request_id,
                choice_index=job.index,
                kind="completions",
                model=prepared.served.name,
                finish_reason=completion.finish_reason,
                prompt_text=job.prompt_text,
            )
            for job, completion in zip(prepared.jobs, completions, strict=True)
        ]
        await record_calls(self._recorder, episode_id, calls)

    async def stream(
        self, prepared: PreparedCompletion, episode_id: str | None
    ) -> AsyncIterator[str]:
        """SSE `data` payloads: text chunks, an optional usage chunk, then `[DONE]`."""
        request_id = new_request_id("cmpl")
        created = now_s()

        def chunk(choices: list[CompletionChoice], usage=None) -> str:
            return CompletionResponse(
                id=request_id,
                created=created,
                model=prepared.served.name,
                choices=choices,
                usage=usage,
            ).model_dump_json(exclude_none=False)

        engine = prepared.served.engine
        streams = [engine.stream(job.prompt_token_ids, job.params) for job in prepared.jobs]
        completions: list[Completion | None] = [None] * len(prepared.jobs)
        try:
            async for position, item in merge_streams(streams):
                job = prepared.jobs[position]
                if isinstance(item, StreamEnd):
                    completions[position] = item.completion
                    choice = CompletionChoice(
                        index=job.index,
                        text="",
                        logprobs=self._logprobs(prepared, item.completion),
                        finish_reason=item.completion.finish_reason,
                    )
                    yield chunk([choice])
                    continue
                prepared.clock.first_token()
                if item.text:
                    yield chunk(
                        [CompletionChoice(index=job.index, text=item.text, finish_reason=None)]
                    )
        except Exception as error:  # the stream has started: end it with an error event
            yield stream_error_event(error)
            return

        done = [c for c in completions if c is not None]
        usage = _usage(prepared, done)
        if prepared.include_usage:
            yield chunk([], usage=usage)
        try:
            await self._record(prepared, request_id, done, episode_id)
        except Exception as error:  # e.g. the episode finished meanwhile: say so, don't [DONE]
            yield stream_error_event(error)
            return
        self._observe(prepared, usage.completion_tokens)
        yield DONE_EVENT


def _usage(prepared: PreparedCompletion, completions: Sequence[Completion]):
    return usage_of(prepared.prompt_tokens, completions)

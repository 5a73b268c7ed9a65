"""`/v1/chat/completions`: render the chat, run `n` engine requests, answer OpenAI-shaped.

Owns: the request → prompt → engine → response path, for whole responses and for SSE
chunk streams, and recording the call into its episode before the answer goes out.
A chat bound to an episode is rendered with the episode's earlier chat calls
(`gateway.recording.drift`), so replies the agent sends back keep the token ids the model sampled;
each such call's drift status is recorded, tallied, and logged when it is "unrepaired".
Streamed tool calls are buffered and sent at the end: the turn's content, then one
`tool_calls` delta. A call `max_tokens` cut off is text with finish reason `length`. Each
answered request's latency, time to first token and tokens go to a `ServingObserver`
(`gateway.openai.timing`). Raises `GatewayError`s only; knows nothing about routes, auth,
or torch.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import anyio

from gateway.errors import InvalidRequest, stream_error_event
from gateway.openai.common import (
    DONE_EVENT,
    new_request_id,
    now_s,
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
from gateway.openai.structured import chat_grammar
from gateway.openai.timing import NoObserver, RequestClock, ServingObserver
from gateway.openai.wire import (
    AssistantMessage,
    ChatChoice,
    ChatChunkChoice,
    ChatCompletionChunk,
    ChatCompletionRequest,
    ChatCompletionResponse,
    ChatDelta,
    ChoiceLogprobs,
    FunctionCallWire,
    NamedToolChoice,
    TokenLogprobWire,
    ToolCallDelta,
    ToolCallWire,
    TopLogprob,
)
from gateway.recording.drift import DriftTracker
from gateway.recording.recorder import CallRecord, EpisodeRecorder
from gateway.registry import ModelRegistry
from gateway.settings import RequestLimits
from trainer.chat_format import parse_reply
from trainer.types import (
    Completion,
    GeneratedToken,
    ParsedAssistant,
    RenderedPrompt,
    SamplingParams,
    ServedModel,
    StreamEnd,
)

log = logging.getLogger(__name__)

ChunkEncoder = Callable[[ChatChunkChoice], str]
CHUNK = "chat.completion.chunk"
# Chats up to this size are rendered and tokenized on the event loop (tens of µs with a
# fast tokenizer); bigger ones go to a worker thread so they never stall other requests.
RENDER_INLINE_MAX_CHARS = 4096


@dataclass
class PreparedChat:
    """A validated chat request, rendered and ready for the engine."""

    served: ServedModel
    prompt: RenderedPrompt
    params: list[SamplingParams]  # one per choice
    tools_offered: bool
    top_logprobs: int | None  # None: no logprobs asked
    include_usage: bool
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    clock: RequestClock = field(default_factory=RequestClock)  # from the start of prepare


def _message_dicts(request: ChatCompletionRequest) -> list[dict[str, Any]]:
    messages = []
    for message in request.messages:
        as_dict = message.model_dump(exclude_none=True)
        if isinstance(message.content, list):
            as_dict["content"] = message.text()
        messages.append(as_dict)
    return messages


def _render_on_the_loop(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> bool:
    """Small chats without tool schemas: rendering costs less than a thread hop."""
    if tools:
        return False
    size = sum(len(m["content"]) for m in messages if isinstance(m.get("content"), str))
    return size <= RENDER_INLINE_MAX_CHARS


def _check_tool_choice(request: ChatCompletionRequest) -> None:
    choice = request.tool_choice
    if choice in (None, "none", "auto"):
        return
    if not request.tools:
        raise InvalidRequest(
            "tool_choice: 'required' or a named function needs `tools`.", param="tool_choice"
        )
    if isinstance(choice, NamedToolChoice):
        names = {tool.function.name for tool in request.tools}
        if choice.function.name not in names:
            raise InvalidRequest(
                f"tool_choice: no tool named {choice.function.name!r} in `tools`.",
                param="tool_choice",
            )


def _check_chat_semantics(request: ChatCompletionRequest) -> None:
    reject_unsupported(request)
    _check_tool_choice(request)
    if request.top_logprobs and not request.logprobs:
        raise InvalidRequest("top_logprobs: requires logprobs=true.", param="top_logprobs")


def _finish_reason(completion: Completion, parsed: ParsedAssistant) -> str:
    """OpenAI's: `length` whenever `max_tokens` cut the turn, even after whole calls."""
    if parsed.tool_calls and completion.finish_reason != "length":
        return "tool_calls"
    return completion.finish_reason


def _tool_calls_delta(parsed: ParsedAssistant) -> ChatDelta:
    return ChatDelta(
        tool_calls=[
            ToolCallDelta(
                index=k,
                id=call.id,
                type="function",  # set, so that exclude_unset keeps it
                function=FunctionCallWire(name=call.name, arguments=call.arguments),
            )
            for k, call in enumerate(parsed.tool_calls)
        ]
    )


class ChatService:
    def __init__(
        self,
        models: ModelRegistry,
        recorder: EpisodeRecorder,
        drift: DriftTracker | None = None,
        limits: RequestLimits | None = None,
        observer: ServingObserver | None = None,
    ):
        self._limits = limits or RequestLimits()
        self._models = models
        self._recorder = recorder
        self._drift = drift or DriftTracker(recorder, models)
        self._observer = observer or NoObserver()

    async def prepare(
        self, request: ChatCompletionRequest, episode_id: str | None = None
    ) -> PreparedChat:
        """Validate and render the chat; `episode_id`: the episode it is recorded into,
        whose earlier calls may be continued (drift repair)."""
        clock = RequestClock()
        log_unknown_fields(request)
        check_limits(request, self._limits)
        served = self._models.get(request.model)
        _check_chat_semantics(request)
        grammar = chat_grammar(request)
        messages = _message_dicts(request)
        tools = [tool.model_dump(exclude_none=True) for tool in request.tools or []] or None
        tool_choice = request.tool_choice
        if isinstance(tool_choice, NamedToolChoice):
            tool_choice = tool_choice.model_dump()
        render = partial(served.tokenizer.render_chat, messages, tools, tool_choice)
        if episode_id is not None:
            history = self._drift.cached(episode_id)
            if history is None:
                history = await anyio.to_thread.run_sync(self._drift.load, episode_id)
            render = partial(render, history=history, model=served.name)
        if _render_on_the_loop(messages, tools):
            prompt = render()
        else:
            prompt = await anyio.to_thread.run_sync(render)
        max_tokens = completion_budget(
            prompt_len=len(prompt.token_ids),
            max_context=served.engine.max_context,
            requested=request.max_completion_tokens or request.max_tokens,
            param="messages",
        )
        top_logprobs = (request.top_logprobs or 0) if request.logprobs else None
        return PreparedChat(
            served=served,
            prompt=prompt,
            params=sampling_params_per_choice(
                request,
                max_tokens=max_tokens,
                top_logprobs=top_logprobs or 0,
                choice_indices=range(request.n),
                grammar=grammar,
            ),
            tools_offered=bool(tools) and request.tool_choice != "none",
            top_logprobs=top_logprobs,
            include_usage=bool(request.stream_options and request.stream_options.include_usage),
            messages=messages,
            tools=tools,
            clock=clock,
        )

    # ---- whole responses ----------------------------------------------------------------

    async def complete(
        self, chat: PreparedChat, episode_id: str | None, request_id: str | None = None
    ) -> ChatCompletionResponse:
        """The whole answer; `request_id`: what the call is recorded and answered under (a
        translated API's own `resp-`/`msg-` id, so a trace names what its client saw)."""
        engine = chat.served.engine
        ids = chat.prompt.token_ids
        first_token = chat.clock.first_token
        completions = await generate_all(
            [collect(engine.stream(ids, p), first_token) for p in chat.params]
        )
        request_id = request_id or new_request_id("chatcmpl")
        choices = [self._choice(chat, i, c) for i, c in enumerate(completions)]
        await self._record(chat, request_id, completions, episode_id)
        usage = usage_of(len(ids), completions)
        self._observer.observe(chat.clock.served(chat.served.name, usage.completion_tokens))
        return ChatCompletionResponse(
            id=request_id,
            created=now_s(),
            model=chat.served.name,
            choices=choices,
            usage=usage,
        )

    def _parse(self, chat: PreparedChat, completion: Completion) -> ParsedAssistant:
        text = chat.prompt.completion_prefix + completion.text
        return parse_reply(
            chat.served.tokenizer,
            text,
            tools_offered=chat.tools_offered,
            finish_reason=completion.finish_reason,
        )

    def _choice(self, chat: PreparedChat, index: int, completion: Completion) -> ChatChoice:
        parsed = self._parse(chat, completion)
        tool_calls = [
            ToolCallWire(
                id=call.id, function=FunctionCallWire(name=call.name, arguments=call.arguments)
            )
            for call in parsed.tool_calls
        ]
        return ChatChoice(
            index=index,
            message=AssistantMessage(content=parsed.content, tool_calls=tool_calls or None),
            logprobs=self._logprobs(
                chat, completion.token_ids, completion.logprobs, completion.top_logprobs
            ),
            finish_reason=_finish_reason(completion, parsed),
        )

    def _logprobs(
        self,
        chat: PreparedChat,
        token_ids: Sequence[int],
        logprobs: Sequence[float],
        top_logprobs: Sequence[Sequence[Any]],
    ) -> ChoiceLogprobs | None:
        if chat.top_logprobs is None:
            return None
        tokenizer = chat.served.tokenizer
        content = []
        for position, (token_id, logprob) in enumerate(zip(token_ids, logprobs, strict=True)):
            token = tokenizer.token_text(token_id)
            alternatives = top_logprobs[position] if position < len(top_logprobs) else []
            content.append(
                TokenLogprobWire(
                    token=token,
                    logprob=logprob,
                    bytes=list(token.encode()),
                    top_logprobs=[
                        TopLogprob(token=text, logprob=lp, bytes=list(text.encode()))
                        for text, lp in top_alternatives(tokenizer, alternatives, chat.top_logprobs)
                    ],
                )
            )
        return ChoiceLogprobs(content=content)

    async def _record(
        self,
        chat: PreparedChat,
        request_id: str,
        completions: Sequence[Completion],
        episode_id: str | None,
    ) -> None:
        if episode_id is None or not completions:
            return
        prompt = chat.prompt
        calls = [
            CallRecord.from_completion(
                completion,
                request_id=request_id,
                choice_index=i,
                kind="chat",
                model=chat.served.name,
                finish_reason=completion.finish_reason,  # the engine's: stop/length/abort
                prompt_text=prompt.text or None,
                messages=chat.messages,
                tools=chat.tools,
                drift=prompt.drift,
                continues=prompt.continues,
                completion_prefix=prompt.completion_prefix,
            )
            for i, completion in enumerate(completions)
        ]
        replies = [self._parse(chat, completion) for completion in completions]

        def persist() -> None:  # the answer goes out only once later calls can continue it
            self._recorder.record_calls(episode_id, calls)
            self._drift.remember(episode_id, calls, replies)

        await anyio.to_thread.run_sync(persist)
        self._drift.count(chat.served.name, prompt.drift)
        if prompt.drift == "unrepaired":
            log.info(
                "episode %s call %d: token drift unrepaired; it continues call %s, but the "
                "chat template rewrote that turn or the agent changed it, so it opens a new "
                "timeline",
                episode_id,
                calls[0].index,
                prompt.continues,
            )

    # ---- SSE streams --------------------------------------------------------------------

    async def stream(
        self, chat: PreparedChat, episode_id: str | None, request_id: str | None = None
    ) -> AsyncIterator[str]:
        """SSE `data` payloads: chunks, an optional usage chunk, then `[DONE]`; `request_id`
        as in `complete`.

        Closing this iterator early (client disconnect) closes the engine streams.
        """
        request_id = request_id or new_request_id("chatcmpl")
        created = now_s()
        model = chat.served.name

        def chunk(choice: ChatChunkChoice) -> str:
            return ChatCompletionChunk(
                id=request_id, object=CHUNK, created=created, model=model, choices=[choice]
            ).model_dump_json(exclude_unset=True)

        n = len(chat.params)
        prefix = "" if chat.tools_offered else chat.prompt.completion_prefix
        for i in range(n):
            yield chunk(
                ChatChunkChoice(
                    index=i, delta=ChatDelta(role="assistant", content=prefix), finish_reason=None
                )
            )

        completions: list[Completion | None] = [None] * n
        engine = chat.served.engine
        streams = [engine.stream(chat.prompt.token_ids, params) for params in chat.params]
        try:
            async for i, item in merge_streams(streams):
                if isinstance(item, StreamEnd):
                    completions[i] = item.completion
                    for text in self._final_chunks(chat, i, item.completion, chunk):
                        yield text
                    continue
                chat.clock.first_token()
                if not chat.tools_offered:
                    text = self._token_chunk(chat, i, item, chunk)
                    if text is not None:
                        yield text
        except Exception as error:  # the stream has started: end it with an error event
            yield stream_error_event(error)
            return

        done = [c for c in completions if c is not None]
        usage = usage_of(len(chat.prompt.token_ids), done)
        if chat.include_usage:
            yield ChatCompletionChunk(
                id=request_id, object=CHUNK, created=created, model=model, choices=[], usage=usage
            ).model_dump_json(exclude_unset=True)
        try:
            await self._record(chat, request_id, done, episode_id)
        except Exception as error:  # e.g. the episode finished meanwhile: say so, don't [DONE]
            yield stream_error_event(error)
            return
        self._observer.observe(chat.clock.served(model, usage.completion_tokens))
        yield DONE_EVENT

    def _token_chunk(
        self, chat: PreparedChat, index: int, token: GeneratedToken, chunk: ChunkEncoder
    ) -> str | None:
        logprobs = self._logprobs(chat, [token.token_id], [token.logprob], [token.top_logprobs])
        if not token.text and logprobs is None:
            return None
        delta = ChatDelta(content=token.text)
        if logprobs is None:
            return chunk(ChatChunkChoice(index=index, delta=delta, finish_reason=None))
        return chunk(
            ChatChunkChoice(index=index, delta=delta, logprobs=logprobs, finish_reason=None)
        )

    def _final_chunks(
        self,
        chat: PreparedChat,
        index: int,
        completion: Completion,
        chunk: ChunkEncoder,
    ) -> Iterator[str]:
        """The buffered content and tool calls (with tools: a content chunk, then one
        `tool_calls` chunk, as the whole response holds both), then the finish_reason chunk."""
        finish_reason = completion.finish_reason
        if chat.tools_offered:
            parsed = self._parse(chat, completion)
            deltas = []
            if parsed.content is not None or not parsed.tool_calls:
                deltas.append(ChatDelta(content=parsed.content))
            if parsed.tool_calls:
                finish_reason = _finish_reason(completion, parsed)
                deltas.append(_tool_calls_delta(parsed))
            logprobs = self._logprobs(
                chat, completion.token_ids, completion.logprobs, completion.top_logprobs
            )
            for k, delta in enumerate(deltas):
                if logprobs is None or k > 0:
                    yield chunk(ChatChunkChoice(index=index, delta=delta, finish_reason=None))
                else:
                    yield chunk(
                        ChatChunkChoice(
                            index=index, delta=delta, logprobs=logprobs, finish_reason=None
                        )
                    )
        yield chunk(ChatChunkChoice(index=index, delta=ChatDelta(), finish_reason=finish_reason))

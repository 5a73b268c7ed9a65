"""`/v1/responses`: the OpenAI Responses API as a thin translator over the chat core.

Owns: turning a Responses request into a chat request (`instructions` → a system message,
`input` items → chat messages: an assistant `message` and the `function_call` items after
it → one assistant message with `tool_calls`, `function_call_output` → a `tool` message;
function tools; `previous_response_id` → the conversation that response ended with), and
the chat result back into a `response` object or its streaming events. The chat core
(`gateway.openai.chat.ChatService`) renders, generates and records, so a Responses call is
recorded into its episode exactly as the same chat call would be (token ids, logprobs,
drift repair, timeline merging).

`ConversationStore` keeps, per episode (and for plain inference), the conversations of the
latest responses so `previous_response_id` can continue them; it is bounded, in memory,
dropped when the episode closes, and skipped for `store: false`. Raises `GatewayError`s
only; knows nothing about routes or torch.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

from gateway.errors import GatewayError, InvalidRequest
from gateway.openai.assistant_turn import (
    AssistantTurn,
    StreamFailed,
    read_chat_stream,
    translated_chat_request,
)
from gateway.openai.chat import ChatService, PreparedChat
from gateway.openai.common import new_request_id, now_s
from gateway.openai.responses_wire import (
    ContentPartEvent,
    ErrorEvent,
    FunctionCallArgumentsDeltaEvent,
    FunctionCallArgumentsDoneEvent,
    FunctionCallItem,
    FunctionCallOutputItem,
    FunctionToolChoice,
    IncompleteDetails,
    InputContentPart,
    MessageItem,
    OutputFunctionCall,
    OutputItem,
    OutputItemEvent,
    OutputMessage,
    OutputText,
    OutputTextDeltaEvent,
    OutputTextDoneEvent,
    ResponseCreateRequest,
    ResponseError,
    ResponseLifecycleEvent,
    ResponseObject,
    ResponseStreamEvent,
    ResponseUsage,
)
from gateway.openai.wire import ChatCompletionRequest, ChatMessage, FunctionCallWire, ToolCallWire

# Chat request fields as the Responses API names them (for 400s raised while translating).
_FIELD_NAMES = {
    "messages": "input",
    "max_completion_tokens": "max_output_tokens",
    "response_format": "text.format",
    "tools": "tools",
}
_TEXT_PARTS = ("input_text", "output_text")
LOGPROBS_INCLUDE = "message.output_text.logprobs"


class ResponseNotFound(GatewayError):
    status = 404
    type = "invalid_request_error"
    code = "previous_response_not_found"


class ConversationStore:
    """Per key (an episode id, or None for plain inference) the conversations of its
    latest `per_key` responses; at most `keys` keys, the least recently used dropped first."""

    def __init__(self, per_key: int = 256, keys: int = 4096):
        self._per_key = per_key
        self._keys = keys
        self._lock = threading.Lock()  # `forget` runs in the recorder's worker thread
        self._by_key: OrderedDict[str | None, OrderedDict[str, list[ChatMessage]]] = OrderedDict()

    def get(self, key: str | None, response_id: str) -> list[ChatMessage] | None:
        with self._lock:
            responses = self._by_key.get(key)
            if responses is None or response_id not in responses:
                return None
            self._by_key.move_to_end(key)
            return list(responses[response_id])

    def put(self, key: str | None, response_id: str, conversation: list[ChatMessage]) -> None:
        with self._lock:
            responses = self._by_key.setdefault(key, OrderedDict())
            self._by_key.move_to_end(key)
            responses[response_id] = conversation
            while len(responses) > self._per_key:
                responses.popitem(last=False)
            while len(self._by_key) > self._keys:
                self._by_key.popitem(last=False)

    def forget(self, key: str) -> None:
        """The episode closed: its responses can no longer be continued."""
        with self._lock:
            self._by_key.pop(key, None)


@dataclass
class ResponsesTurn:
    """A translated Responses request."""

    request: ResponseCreateRequest
    chat: ChatCompletionRequest
    conversation: list[ChatMessage]  # what a later `previous_response_id` continues, so far
    logprobs: bool


def _part_text(parts: str | list[InputContentPart], where: str) -> str:
    if isinstance(parts, str):
        return parts
    for k, part in enumerate(parts):
        if part.type not in _TEXT_PARTS or part.text is None:
            raise InvalidRequest(
                f"{where}.{k}: {part.type!r} content is not supported (only text: "
                f"{' / '.join(_TEXT_PARTS)}).",
                param=f"{where}.{k}.type",
            )
    return "\n".join(part.text or "" for part in parts)


def input_messages(items: str | list[Any] | None) -> list[ChatMessage]:
    """`input` as chat messages."""
    if items is None:
        return []
    if isinstance(items, str):
        return [ChatMessage(role="user", content=items)]
    messages: list[ChatMessage] = []
    for i, item in enumerate(items):
        where = f"input.{i}"
        if isinstance(item, MessageItem):
            messages.append(
                ChatMessage(role=item.role, content=_part_text(item.content, f"{where}.content"))
            )
        elif isinstance(item, FunctionCallItem):
            call = ToolCallWire(
                id=item.call_id, function=FunctionCallWire(name=item.name, arguments=item.arguments)
            )
            last = messages[-1] if messages else None
            if last is not None and last.role == "assistant":  # the same assistant turn
                calls = [*(last.tool_calls or []), call]
                messages[-1] = last.model_copy(update={"tool_calls": calls})
            else:
                messages.append(ChatMessage(role="assistant", tool_calls=[call]))
        elif isinstance(item, FunctionCallOutputItem):
            text = _part_text(item.output, f"{where}.output")
            messages.append(ChatMessage(role="tool", tool_call_id=item.call_id, content=text))
        else:
            raise InvalidRequest(
                f"{where}.type: {item.type!r} items are not supported (message, function_call "
                "and function_call_output are).",
                param=f"{where}.type",
            )
    return messages


def _tool_choice(choice: Any) -> Any:
    if choice is None or isinstance(choice, str):
        return choice
    if isinstance(choice, FunctionToolChoice):
        return {"type": "function", "function": {"name": choice.name}}
    raise InvalidRequest(
        "tool_choice: only 'none', 'auto', 'required' or {'type': 'function', 'name': ...} "
        "are supported.",
        param="tool_choice",
    )


def _tools(request: ResponseCreateRequest) -> list[dict[str, Any]] | None:
    if request.tools is None:
        return None
    tools = []
    for i, tool in enumerate(request.tools):
        if tool.type != "function":
            raise InvalidRequest(
                f"tools.{i}.type: {tool.type!r} tools are not supported (only function tools).",
                param=f"tools.{i}.type",
            )
        function = tool.model_dump(exclude_none=True, exclude={"type"})
        tools.append({"type": "function", "function": function})
    return tools


def _response_format(request: ResponseCreateRequest) -> dict[str, Any] | None:
    text_format = request.text.format if request.text else None
    if text_format is None or text_format.type == "text":
        return None
    if text_format.type == "json_object":
        return {"type": "json_object"}
    schema = {
        "name": text_format.name,
        "schema": text_format.schema_,
        "strict": text_format.strict,
        "description": text_format.description,
    }
    return {
        "type": "json_schema",
        "json_schema": {k: v for k, v in schema.items() if v is not None},
    }


class ResponsesService:
    def __init__(self, chat: ChatService, store: ConversationStore | None = None):
        self._chat = chat
        self._store = store or ConversationStore()

    @property
    def store(self) -> ConversationStore:
        return self._store

    def translate(self, request: ResponseCreateRequest, episode_id: str | None) -> ResponsesTurn:
        """The chat request for `request` (400 / 404 `previous_response_not_found`)."""
        history: list[ChatMessage] = []
        if request.previous_response_id is not None:
            found = self._store.get(episode_id, request.previous_response_id)
            if found is None:
                raise ResponseNotFound(
                    f"Previous response with id {request.previous_response_id!r} not found "
                    "(responses are kept per episode, in memory, unless `store` is false).",
                    param="previous_response_id",
                )
            history = found
        conversation = history + input_messages(request.input)
        system = [ChatMessage(role="system", content=request.instructions)]
        logprobs = request.top_logprobs is not None or LOGPROBS_INCLUDE in (request.include or [])
        fields = {
            "model": request.model,
            "messages": (system if request.instructions else []) + conversation,
            "max_completion_tokens": request.max_output_tokens,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "tools": _tools(request),
            "tool_choice": _tool_choice(request.tool_choice),
            "parallel_tool_calls": request.parallel_tool_calls,
            "response_format": _response_format(request),
            "logprobs": logprobs,
            "top_logprobs": request.top_logprobs if logprobs else None,
            "stream": request.stream,
            "stream_options": {"include_usage": True} if request.stream else None,
            "user": request.user,
        }
        chat = translated_chat_request(
            {k: v for k, v in fields.items() if v is not None}, _FIELD_NAMES
        )
        return ResponsesTurn(
            request=request, chat=chat, conversation=conversation, logprobs=logprobs
        )

    # ---- answers ------------------------------------------------------------------------

    def _response(
        self,
        turn: ResponsesTurn,
        response_id: str,
        created_at: int,
        output: list[OutputItem],
        assistant: AssistantTurn | None,
        status: str,
    ) -> ResponseObject:
        request = turn.request
        text_format = request.text.format if request.text and request.text.format else None
        usage = assistant.usage if assistant else None
        return ResponseObject(
            id=response_id,
            created_at=created_at,
            status=status,
            incomplete_details=(
                IncompleteDetails(reason="max_output_tokens") if status == "incomplete" else None
            ),
            instructions=request.instructions,
            max_output_tokens=request.max_output_tokens,
            model=turn.chat.model,
            output=output,
            parallel_tool_calls=request.parallel_tool_calls is not False,
            previous_response_id=request.previous_response_id,
            store=request.store is not False,
            temperature=request.temperature,
            text={"format": text_format.model_dump(by_alias=True, exclude_none=True)}
            if text_format
            else {"format": {"type": "text"}},
            tool_choice=(
                request.tool_choice.model_dump()
                if isinstance(request.tool_choice, FunctionToolChoice)
                else request.tool_choice or "auto"
            ),
            tools=[tool.model_dump(exclude_none=True) for tool in request.tools or []],
            top_p=request.top_p,
            top_logprobs=request.top_logprobs,
            usage=ResponseUsage(
                input_tokens=usage.prompt_tokens,
                output_tokens=usage.completion_tokens,
                total_tokens=usage.total_tokens,
            )
            if usage
            else None,
            user=request.user,
            metadata=request.metadata or {},
        )

    def _output(
        self, turn: ResponsesTurn, assistant: AssistantTurn, message_id: str | None
    ) -> list[OutputItem]:
        status = "incomplete" if assistant.finish_reason == "length" else "completed"
        items: list[OutputItem] = []
        if assistant.content is not None and (assistant.content or not assistant.tool_calls):
            text = OutputText(
                text=assistant.content, logprobs=assistant.logprobs if turn.logprobs else []
            )
            items.append(
                OutputMessage(id=message_id or new_request_id("msg"), status=status, content=[text])
            )
        for call in assistant.tool_calls:
            items.append(
                OutputFunctionCall(
                    id=new_request_id("fc"),
                    call_id=call.id,
                    name=call.function.name,
                    arguments=call.function.arguments,
                    status="completed",
                )
            )
        return items

    def _remember(
        self,
        turn: ResponsesTurn,
        episode_id: str | None,
        response_id: str,
        assistant: AssistantTurn,
    ) -> None:
        if turn.request.store is not False:
            self._store.put(episode_id, response_id, [*turn.conversation, assistant.as_message()])

    async def complete(
        self, turn: ResponsesTurn, prepared: PreparedChat, episode_id: str | None
    ) -> ResponseObject:
        response_id = new_request_id("resp")
        answer = await self._chat.complete(prepared, episode_id, response_id)
        assistant = AssistantTurn.from_choice(answer.choices[0], answer.usage)
        self._remember(turn, episode_id, response_id, assistant)
        status = "incomplete" if assistant.finish_reason == "length" else "completed"
        output = self._output(turn, assistant, None)
        return self._response(turn, response_id, answer.created, output, assistant, status)

    async def stream(
        self, turn: ResponsesTurn, prepared: PreparedChat, episode_id: str | None
    ) -> AsyncIterator[dict[str, str]]:
        """SSE events (`{"event", "data"}`): created, in_progress, the output items as they
        grow, then completed (or incomplete); a failure ends with `error` and failed."""
        response_id = new_request_id("resp")
        created_at = now_s()
        numbers = itertools.count()

        def event(model: ResponseStreamEvent) -> dict[str, str]:
            return {"event": model.type, "data": model.model_dump_json()}

        def lifecycle(kind: str, output: list[OutputItem], status: str, assistant=None):
            response = self._response(turn, response_id, created_at, output, assistant, status)
            return event(
                ResponseLifecycleEvent(type=kind, sequence_number=next(numbers), response=response)
            )

        yield lifecycle("response.created", [], "in_progress")
        yield lifecycle("response.in_progress", [], "in_progress")
        assistant = AssistantTurn()
        message_id: str | None = None
        async with contextlib.aclosing(
            self._chat.stream(prepared, episode_id, response_id)
        ) as payloads:
            async with contextlib.aclosing(read_chat_stream(payloads, assistant)) as pieces:
                async for piece in pieces:
                    if isinstance(piece, StreamFailed):
                        yield event(_error_event(piece.error, next(numbers)))
                        failure = ResponseError(
                            code=_failure_code(piece.error), message=piece.error.get("message", "")
                        )
                        failed = self._response(
                            turn, response_id, created_at, [], assistant, "failed"
                        ).model_copy(update={"error": failure})
                        yield event(
                            ResponseLifecycleEvent(
                                type="response.failed",
                                sequence_number=next(numbers),
                                response=failed,
                            )
                        )
                        return
                    if message_id is None:
                        message_id = new_request_id("msg")
                        for opened in self._open_message(message_id, numbers):
                            yield event(opened)
                    yield event(
                        OutputTextDeltaEvent(
                            sequence_number=next(numbers),
                            item_id=message_id,
                            output_index=0,
                            content_index=0,
                            delta=piece.text,
                        )
                    )
        output = self._output(turn, assistant, message_id)
        for index, item in enumerate(output):
            for closing in self._finish_item(item, index, message_id, numbers):
                yield event(closing)
        self._remember(turn, episode_id, response_id, assistant)
        status = "incomplete" if assistant.finish_reason == "length" else "completed"
        yield lifecycle(f"response.{status}", output, status, assistant)

    @staticmethod
    def _open_message(message_id: str, numbers: Iterator[int]) -> Iterator[ResponseStreamEvent]:
        yield OutputItemEvent(
            type="response.output_item.added",
            sequence_number=next(numbers),
            output_index=0,
            item=OutputMessage(id=message_id, status="in_progress", content=[]),
        )
        yield ContentPartEvent(
            type="response.content_part.added",
            sequence_number=next(numbers),
            item_id=message_id,
            output_index=0,
            content_index=0,
            part=OutputText(text=""),
        )

    def _finish_item(
        self, item: OutputItem, index: int, opened_message: str | None, numbers: Iterator[int]
    ) -> Iterator[ResponseStreamEvent]:
        """The events that complete one output item (opening it first unless its text
        already streamed)."""
        if isinstance(item, OutputMessage):
            if opened_message is None:
                yield from self._open_message(item.id, numbers)
            part = item.content[0]
            yield OutputTextDoneEvent(
                sequence_number=next(numbers),
                item_id=item.id,
                output_index=index,
                content_index=0,
                text=part.text,
                logprobs=part.logprobs,
            )
            yield ContentPartEvent(
                type="response.content_part.done",
                sequence_number=next(numbers),
                item_id=item.id,
                output_index=index,
                content_index=0,
                part=part,
            )
        else:
            yield OutputItemEvent(
                type="response.output_item.added",
                sequence_number=next(numbers),
                output_index=index,
                item=item.model_copy(update={"arguments": "", "status": "in_progress"}),
            )
            yield FunctionCallArgumentsDeltaEvent(
                sequence_number=next(numbers),
                item_id=item.id,
                output_index=index,
                delta=item.arguments,
            )
            yield FunctionCallArgumentsDoneEvent(
                sequence_number=next(numbers),
                item_id=item.id,
                output_index=index,
                name=item.name,
                arguments=item.arguments,
            )
        yield OutputItemEvent(
            type="response.output_item.done",
            sequence_number=next(numbers),
            output_index=index,
            item=item,
        )


def _failure_code(error: dict[str, Any]) -> str:
    """A chat error object's `ResponseError.code` (OpenAI's codes for a failed response)."""
    if error.get("type") == "requests" or error.get("code") == "rate_limit_exceeded":
        return "rate_limit_exceeded"
    return "server_error" if error.get("type") == "server_error" else "invalid_prompt"


def _error_event(error: dict[str, Any], number: int) -> ErrorEvent:
    return ErrorEvent(
        sequence_number=number,
        code=error.get("code"),
        message=error.get("message") or "The response failed.",
        param=error.get("param"),
    )

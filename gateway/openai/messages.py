"""`/v1/messages`: the Anthropic Messages API as a thin translator over the chat core.

Owns: turning a Messages request into a chat request (`system` → a system message; an
assistant turn's `text` and `tool_use` blocks → one assistant message with `tool_calls`,
`input` written as JSON; a user turn's `tool_result` blocks → `tool` messages, its `text`
blocks → a user message; tools, `tool_choice`, `stop_sequences`, sampling), the chat
result back into a `message` or its streaming events, and Anthropic's error shape
(`anthropic_error`). The chat core (`gateway.openai.chat.ChatService`) renders, generates
and records, so a Messages call is recorded into its episode exactly as the same chat
call would be (token ids, logprobs, drift repair, timeline merging).

`tool_use.input` must be a JSON object; arguments the model wrote that are not one are
sent as `{"_raw_arguments": "<text>"}` and read back as that text, so the turn still
continues the call that generated it. Raises `GatewayError`s only; knows nothing about
routes or torch.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from gateway.errors import InvalidRequest
from gateway.openai.assistant_turn import (
    AssistantTurn,
    StreamFailed,
    read_chat_stream,
    translated_chat_request,
)
from gateway.openai.chat import ChatService, PreparedChat
from gateway.openai.common import new_request_id
from gateway.openai.messages_wire import (
    ContentBlockDeltaEvent,
    ContentBlockStartEvent,
    ContentBlockStopEvent,
    ContentOut,
    ErrorBody,
    ErrorDetail,
    ErrorType,
    InputJsonDelta,
    InputMessage,
    MessageDelta,
    MessageDeltaEvent,
    MessageDeltaUsage,
    MessageOut,
    MessagesRequest,
    MessagesStreamEvent,
    MessageStartEvent,
    MessageStopEvent,
    MessagesUsage,
    StopReason,
    TextBlock,
    TextDelta,
    TextOut,
    ToolResultBlock,
    ToolUseBlock,
    ToolUseOut,
)
from gateway.openai.wire import ChatCompletionRequest, ChatMessage, FunctionCallWire, ToolCallWire

RAW_ARGUMENTS_KEY = "_raw_arguments"
StopPair = tuple[StopReason, str | None]  # (stop_reason, stop_sequence)
# Chat request fields as the Messages API names them (for 400s raised while translating).
_FIELD_NAMES = {
    "max_completion_tokens": "max_tokens",
    "stop": "stop_sequences",
    "response_format": "output_config.format",
}
_ERROR_TYPES_BY_STATUS: dict[int, ErrorType] = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
}
# An OpenAI error object's `type` (a failure inside a stream carries no status)
_ERROR_TYPES_BY_OPENAI_TYPE: dict[str, ErrorType] = {
    "invalid_request_error": "invalid_request_error",
    "authentication_error": "authentication_error",
    "permission_error": "permission_error",
    "requests": "rate_limit_error",
}


def anthropic_error(status: int, message: str) -> ErrorBody:
    """An error answered with HTTP `status`, in Anthropic's shape."""
    kind = _ERROR_TYPES_BY_STATUS.get(status)
    if kind is None:
        kind = "api_error" if status >= 500 else "invalid_request_error"
    return ErrorBody(error=ErrorDetail(type=kind, message=message))


def _stream_error(error: dict[str, Any]) -> ErrorBody:
    kind = _ERROR_TYPES_BY_OPENAI_TYPE.get(error.get("type") or "", "api_error")
    return ErrorBody(error=ErrorDetail(type=kind, message=error.get("message") or "error"))


@dataclass
class MessagesTurn:
    request: MessagesRequest
    chat: ChatCompletionRequest


def _arguments(block: ToolUseBlock) -> str:
    raw = block.input.get(RAW_ARGUMENTS_KEY)
    if set(block.input) == {RAW_ARGUMENTS_KEY} and isinstance(raw, str):
        return raw
    return json.dumps(block.input, ensure_ascii=False)


def _tool_input(arguments: str) -> dict[str, Any]:
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {RAW_ARGUMENTS_KEY: arguments}


def _unsupported(where: str, kind: str, allowed: str) -> InvalidRequest:
    return InvalidRequest(
        f"{where}.type: {kind!r} blocks are not supported here ({allowed}).", param=f"{where}.type"
    )


def _result_text(block: ToolResultBlock, where: str) -> str:
    if block.content is None or isinstance(block.content, str):
        return block.content or ""
    for k, part in enumerate(block.content):
        if part.type != "text" or part.text is None:
            raise _unsupported(f"{where}.content.{k}", part.type, "tool results hold text")
    return "\n".join(part.text or "" for part in block.content)


def _assistant_message(message: InputMessage, where: str) -> ChatMessage:
    if isinstance(message.content, str):
        return ChatMessage(role="assistant", content=message.content)
    texts, calls = [], []
    for k, block in enumerate(message.content):
        if isinstance(block, TextBlock):
            texts.append(block.text)
        elif isinstance(block, ToolUseBlock):
            function = FunctionCallWire(name=block.name, arguments=_arguments(block))
            calls.append(ToolCallWire(id=block.id, function=function))
        else:
            raise _unsupported(f"{where}.content.{k}", block.type, "assistant: text, tool_use")
    content = "\n".join(texts) if texts else None
    return ChatMessage(role="assistant", content=content, tool_calls=calls or None)


def _user_messages(message: InputMessage, where: str) -> list[ChatMessage]:
    role = message.role  # user, or a mid-conversation system turn
    if isinstance(message.content, str):
        return [ChatMessage(role=role, content=message.content)]
    out: list[ChatMessage] = []
    texts: list[str] = []
    for k, block in enumerate(message.content):
        if isinstance(block, TextBlock):
            texts.append(block.text)
            continue
        if texts:
            out.append(ChatMessage(role=role, content="\n".join(texts)))
            texts = []
        if isinstance(block, ToolResultBlock) and role == "user":
            text = _result_text(block, f"{where}.content.{k}")
            out.append(ChatMessage(role="tool", tool_call_id=block.tool_use_id, content=text))
        else:
            raise _unsupported(f"{where}.content.{k}", block.type, f"{role}: text, tool_result")
    if texts:
        out.append(ChatMessage(role=role, content="\n".join(texts)))
    return out


def chat_messages(request: MessagesRequest) -> list[ChatMessage]:
    messages: list[ChatMessage] = []
    if request.system:
        system = request.system
        text = system if isinstance(system, str) else "\n".join(block.text for block in system)
        messages.append(ChatMessage(role="system", content=text))
    for i, message in enumerate(request.messages):
        if message.role == "assistant":
            messages.append(_assistant_message(message, f"messages.{i}"))
        else:
            messages.extend(_user_messages(message, f"messages.{i}"))
    return messages


def _tools(request: MessagesRequest) -> list[dict[str, Any]] | None:
    if request.tools is None:
        return None
    tools = []
    for i, tool in enumerate(request.tools):
        if tool.type not in (None, "custom"):
            raise InvalidRequest(
                f"tools.{i}.type: {tool.type!r} (a server tool) is not supported; only "
                "custom tools with an input_schema are.",
                param=f"tools.{i}.type",
            )
        function = {"name": tool.name, "parameters": tool.input_schema}
        if tool.description is not None:
            function["description"] = tool.description
        tools.append({"type": "function", "function": function})
    return tools


def _tool_choice(request: MessagesRequest) -> Any:
    choice = request.tool_choice
    if choice is None:
        return None
    if choice.type == "tool":
        if not choice.name:
            raise InvalidRequest("tool_choice.name: required for type 'tool'.", param="tool_choice")
        return {"type": "function", "function": {"name": choice.name}}
    return {"auto": "auto", "any": "required", "none": "none"}[choice.type]


def _response_format(request: MessagesRequest) -> dict[str, Any] | None:
    output_format = request.output_config.format if request.output_config else None
    if output_format is None:
        return None
    return {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": output_format.schema_},
    }


def translate(request: MessagesRequest) -> MessagesTurn:
    """The chat request for `request` (a 400 naming the Messages field when it cannot be)."""
    stops = request.stop_sequences or None
    fields = {
        "model": request.model,
        "messages": chat_messages(request),
        "max_completion_tokens": request.max_tokens,
        "stop": stops,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "top_k": request.top_k,
        "tools": _tools(request),
        "tool_choice": _tool_choice(request),
        "response_format": _response_format(request),
        "logprobs": bool(stops),  # the token texts tell which stop sequence ended the text
        "stream": request.stream,
        "stream_options": {"include_usage": True} if request.stream else None,
    }
    chat = translated_chat_request({k: v for k, v in fields.items() if v is not None}, _FIELD_NAMES)
    return MessagesTurn(request=request, chat=chat)


class MessagesService:
    def __init__(self, chat: ChatService):
        self._chat = chat

    @staticmethod
    def translate(request: MessagesRequest) -> MessagesTurn:
        return translate(request)

    @staticmethod
    def _stop(turn: MessagesTurn, prepared: PreparedChat, assistant: AssistantTurn) -> StopPair:
        if assistant.finish_reason == "length":  # even after whole calls, as the chat core
            return "max_tokens", None
        if assistant.tool_calls:
            return "tool_use", None
        tokenizer = prepared.served.tokenizer
        eos_texts = [tokenizer.token_text(i) for i in tokenizer.eos_token_ids]
        stop = assistant.stop_sequence(turn.request.stop_sequences or [], eos_texts)
        return ("stop_sequence", stop) if stop is not None else ("end_turn", None)

    @staticmethod
    def _content(assistant: AssistantTurn) -> list[ContentOut]:
        blocks: list[ContentOut] = []
        if assistant.content is not None and (assistant.content or not assistant.tool_calls):
            blocks.append(TextOut(text=assistant.content))
        for call in assistant.tool_calls:
            blocks.append(
                ToolUseOut(
                    id=call.id, name=call.function.name, input=_tool_input(call.function.arguments)
                )
            )
        return blocks

    async def complete(
        self, turn: MessagesTurn, prepared: PreparedChat, episode_id: str | None
    ) -> MessageOut:
        message_id = new_request_id("msg")
        answer = await self._chat.complete(prepared, episode_id, message_id)
        assistant = AssistantTurn.from_choice(answer.choices[0], answer.usage)
        stop_reason, stop_sequence = self._stop(turn, prepared, assistant)
        return MessageOut(
            id=message_id,
            model=answer.model,
            content=self._content(assistant),
            stop_reason=stop_reason,
            stop_sequence=stop_sequence,
            usage=MessagesUsage(
                input_tokens=answer.usage.prompt_tokens,
                output_tokens=answer.usage.completion_tokens,
            ),
        )

    async def stream(
        self, turn: MessagesTurn, prepared: PreparedChat, episode_id: str | None
    ) -> AsyncIterator[dict[str, str]]:
        """SSE events (`{"event", "data"}`): message_start, content blocks as they grow,
        message_delta (stop reason, output tokens), message_stop; a failure: `error`."""

        def event(model: MessagesStreamEvent) -> dict[str, str]:
            return {"event": model.type, "data": model.model_dump_json()}

        start = MessageOut(
            id=new_request_id("msg"),
            model=prepared.served.name,
            content=[],
            stop_reason=None,
            stop_sequence=None,
            usage=MessagesUsage(input_tokens=len(prepared.prompt.token_ids), output_tokens=0),
        )
        yield event(MessageStartEvent(message=start))
        assistant = AssistantTurn()
        text_open = False
        async with contextlib.aclosing(
            self._chat.stream(prepared, episode_id, start.id)
        ) as payloads:
            async with contextlib.aclosing(read_chat_stream(payloads, assistant)) as pieces:
                async for piece in pieces:
                    if isinstance(piece, StreamFailed):
                        yield event(_stream_error(piece.error))
                        return
                    if not text_open:
                        text_open = True
                        yield event(ContentBlockStartEvent(index=0, content_block=TextOut(text="")))
                    yield event(ContentBlockDeltaEvent(index=0, delta=TextDelta(text=piece.text)))
        blocks = self._content(assistant)
        for index, block in enumerate(blocks):
            if isinstance(block, TextOut):
                if not text_open:
                    yield event(ContentBlockStartEvent(index=index, content_block=block))
            else:
                opened = block.model_copy(update={"input": {}})
                yield event(ContentBlockStartEvent(index=index, content_block=opened))
                partial = InputJsonDelta(partial_json=json.dumps(block.input, ensure_ascii=False))
                yield event(ContentBlockDeltaEvent(index=index, delta=partial))
            yield event(ContentBlockStopEvent(index=index))
        stop_reason, stop_sequence = self._stop(turn, prepared, assistant)
        usage = assistant.usage
        yield event(
            MessageDeltaEvent(
                delta=MessageDelta(stop_reason=stop_reason, stop_sequence=stop_sequence),
                usage=MessageDeltaUsage(output_tokens=usage.completion_tokens if usage else 0),
            )
        )
        yield event(MessageStopEvent())

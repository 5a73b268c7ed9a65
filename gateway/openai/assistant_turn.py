"""What the chat core answered, as one assistant turn: what the Responses and Messages
translators (`gateway.openai.responses`, `gateway.openai.messages`) build their answers from.

Owns: `translated_chat_request` (a chat request built from another API's fields; a
validation problem is a 400 naming that API's own field), `AssistantTurn` (content, tool
calls, finish reason, usage and token texts) read from a whole `ChatCompletionResponse` or,
while it streams, from the chat core's SSE payloads (`read_chat_stream`), and the assistant
`ChatMessage` an agent sends back for that turn (so the next call continues it, and drift
repair finds the ids the model sampled). Knows nothing about HTTP or the other APIs' shapes.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from gateway.errors import InvalidRequest
from gateway.openai.common import DONE_EVENT
from gateway.openai.wire import (
    ChatChoice,
    ChatCompletionChunk,
    ChatCompletionRequest,
    ChatMessage,
    FunctionCallWire,
    TokenLogprobWire,
    ToolCallDelta,
    ToolCallWire,
    Usage,
)


def translated_chat_request(
    fields: dict[str, Any], names: Mapping[str, str]
) -> ChatCompletionRequest:
    """`fields` as a chat request; a field that fails validation is named as the caller's
    API calls it (`names`: chat field -> that API's field)."""
    try:
        return ChatCompletionRequest.model_validate(fields)
    except ValidationError as error:
        first = error.errors()[0]
        loc = [str(part) for part in first.get("loc", ())]
        param = names.get(loc[0], loc[0]) if loc else None
        raise InvalidRequest(f"{param}: {first.get('msg', 'invalid value')}", param=param) from None


@dataclass
class TextDelta:
    text: str


@dataclass
class StreamFailed:
    """The chat stream ended with an error; `error` is its OpenAI error object."""

    error: dict[str, Any]


@dataclass
class AssistantTurn:
    content: str | None = None
    tool_calls: list[ToolCallWire] = field(default_factory=list)
    finish_reason: str | None = None  # the chat core's: stop, length, tool_calls
    usage: Usage | None = None
    token_texts: list[str] = field(default_factory=list)  # only when logprobs were asked
    logprobs: list[TokenLogprobWire] = field(default_factory=list)

    @classmethod
    def from_choice(cls, choice: ChatChoice, usage: Usage) -> AssistantTurn:
        logprobs = list(choice.logprobs.content or []) if choice.logprobs else []
        return cls(
            content=choice.message.content,
            tool_calls=list(choice.message.tool_calls or []),
            finish_reason=choice.finish_reason,
            usage=usage,
            token_texts=[entry.token for entry in logprobs],
            logprobs=logprobs,
        )

    def as_message(self) -> ChatMessage:
        """The assistant message an agent sends back for this turn."""
        return ChatMessage(
            role="assistant", content=self.content, tool_calls=list(self.tool_calls) or None
        )

    def stop_sequence(self, stops: Sequence[str], eos_texts: Sequence[str]) -> str | None:
        """Which of `stops` ended the text (needs the token texts: ask for logprobs).

        The engine cuts the text before the first stop string; the sampled tokens go on to
        hold it, so it begins where the content ends (per-token decoding may spell a
        multi-byte character longer, which only moves that point earlier)."""
        if self.finish_reason != "stop" or not stops or not self.token_texts:
            return None
        texts = list(self.token_texts)
        if texts[-1] in eos_texts:
            return None
        rest = "".join(texts)[len(self.content or "") :]
        found = [(rest.find(stop), stop) for stop in stops if stop in rest]
        return min(found)[1] if found else None

    def _add_tool_call(self, delta: ToolCallDelta) -> None:
        if delta.index < len(self.tool_calls):  # a later piece of a call's arguments
            self.tool_calls[delta.index].function.arguments += delta.function.arguments
            return
        self.tool_calls.append(
            ToolCallWire(
                id=delta.id,
                function=FunctionCallWire(
                    name=delta.function.name, arguments=delta.function.arguments
                ),
            )
        )

    def add_chunk(self, chunk: ChatCompletionChunk) -> str:
        """Take in one chunk; the visible text it adds."""
        if chunk.usage is not None:
            self.usage = chunk.usage
        text = ""
        for choice in chunk.choices:  # one: the translators ask for n=1
            if choice.logprobs is not None and choice.logprobs.content:
                self.logprobs.extend(choice.logprobs.content)
                self.token_texts.extend(entry.token for entry in choice.logprobs.content)
            if choice.delta.content:
                text += choice.delta.content
            for call in choice.delta.tool_calls or []:
                self._add_tool_call(call)
            if choice.finish_reason is not None:
                self.finish_reason = choice.finish_reason
        if text:
            self.content = (self.content or "") + text
        return text


async def read_chat_stream(
    payloads: AsyncIterator[str], turn: AssistantTurn
) -> AsyncIterator[TextDelta | StreamFailed]:
    """The chat core's SSE payloads as text deltas, filling `turn` as they come; the tool
    calls, finish reason and usage are in `turn` when this ends."""
    async for payload in payloads:
        if payload == DONE_EVENT:
            return
        data = json.loads(payload)
        if "error" in data:
            yield StreamFailed(error=data["error"])
            return
        text = turn.add_chunk(ChatCompletionChunk.model_validate(data))
        if text:
            yield TextDelta(text=text)

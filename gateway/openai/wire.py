"""Wire types of the OpenAI-compatible endpoints (chat completions, completions, models).

Owns: the JSON shapes and their range checks (out-of-range values fail validation and
become a 400 naming the field; every string must be valid Unicode — a lone surrogate such
as "\ud800" cannot be tokenized or stored). Requests accept unknown fields (`extra="allow"`) so that
newer clients keep working; what the fields *mean* is checked by the services. Knows
nothing about engines, tokenizers, or episodes.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

Role = Literal["system", "user", "assistant", "tool", "developer"]
# OpenAI's seed is a 64-bit signed integer; the engines seed 64-bit generators with it
SEED_MIN, SEED_MAX = -(2**63), 2**63 - 1


def _lone_surrogate(value: Any) -> bool:
    """Whether a JSON value holds a string that is not valid Unicode (a lone surrogate)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_lone_surrogate(k) or _lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_lone_surrogate(v) for v in value)
    if isinstance(value, BaseModel):
        return _lone_surrogate(value.__dict__) or _lone_surrogate(value.model_extra or {})
    return False


_NOT_UNICODE = "must be valid Unicode (it holds a lone surrogate such as \\ud800)"


class _Request(BaseModel):
    model_config = ConfigDict(extra="allow")

    @field_validator("*", mode="after")
    @classmethod
    def _valid_unicode(cls, value: Any) -> Any:
        if _lone_surrogate(value):
            raise ValueError(_NOT_UNICODE)
        return value

    @model_validator(mode="after")
    def _valid_unicode_extras(self) -> Any:
        for name, value in (self.model_extra or {}).items():
            if _lone_surrogate(name) or _lone_surrogate(value):
                raise ValueError(f"unknown field {ascii(name)}: {_NOT_UNICODE}")
        return self


# ---- requests: chat ---------------------------------------------------------------------


class TextContentPart(_Request):
    type: Literal["text"]
    text: str


class FunctionCallWire(BaseModel):
    name: str
    arguments: str


class ToolCallWire(_Request):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCallWire


class ChatMessage(_Request):
    role: Role
    content: str | list[TextContentPart] | None = None
    name: str | None = None
    tool_calls: list[ToolCallWire] | None = None
    tool_call_id: str | None = None

    def text(self) -> str | None:
        """The content as one string (text parts joined by newlines)."""
        if isinstance(self.content, list):
            return "\n".join(part.text for part in self.content)
        return self.content


class FunctionDefinition(_Request):
    name: str = Field(min_length=1, max_length=64)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ToolDefinition(_Request):
    type: Literal["function"] = "function"
    function: FunctionDefinition


class NamedFunction(BaseModel):
    name: str


class NamedToolChoice(_Request):
    type: Literal["function"] = "function"
    function: NamedFunction


ToolChoice = Literal["none", "auto", "required"] | NamedToolChoice


class StreamOptions(_Request):
    include_usage: bool = False


class JsonSchemaFormat(_Request):
    """`response_format.json_schema`: the schema the answer must match (`schema`), named."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    name: str | None = Field(default=None, max_length=64)
    description: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None  # constrained either way: the answer always matches


class ResponseFormat(_Request):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None


MAX_STOP_SEQUENCES = 4  # OpenAI's limit
Stop = str | Annotated[list[str], Field(max_length=MAX_STOP_SEQUENCES)] | None


class _SamplingFields(_Request):
    """Fields both completion endpoints share."""

    model: str
    n: int = Field(default=1, ge=1, le=128)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    top_k: int | None = Field(default=None, ge=-1)  # extension; -1 or 0 means no cut
    max_tokens: int | None = Field(default=None, ge=1)
    stop: Stop = None
    seed: int | None = Field(default=None, ge=SEED_MIN, le=SEED_MAX)
    stream: bool = False
    stream_options: StreamOptions | None = None
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    logit_bias: dict[str, float] | None = None
    ignore_eos: bool = False  # extension
    user: str | None = None

    @field_validator("stop", mode="before")
    @classmethod
    def _at_most_four_stop_sequences(cls, stop: Any) -> Any:
        """Say the limit: past it, the union's `str` branch would only say "Input should be
        a valid string"."""
        if isinstance(stop, list) and len(stop) > MAX_STOP_SEQUENCES:
            raise PydanticCustomError(
                "too_long",
                "at most {most} stop sequences, got {count}",
                {"most": MAX_STOP_SEQUENCES, "count": len(stop)},
            )
        return stop


class ChatCompletionRequest(_SamplingFields):
    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    tools: list[ToolDefinition] | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    logprobs: bool = False
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    response_format: ResponseFormat | None = None
    metadata: dict[str, str] | None = None
    store: bool | None = None

    def choice_count(self) -> int:
        """How many generations this request asks of the engine."""
        return self.n


class CompletionRequest(_SamplingFields):
    prompt: str | list[str] | list[int] | list[list[int]] = Field(min_length=1)
    logprobs: int | None = Field(default=None, ge=0, le=5)
    echo: bool = False
    suffix: str | None = None
    best_of: int | None = Field(default=None, ge=1)
    response_format: ResponseFormat | None = None  # extension (vLLM's): constrained decoding

    def prompt_count(self) -> int:
        """How many prompts: one string or token-id list, or a batch of either."""
        if isinstance(self.prompt, str) or all(isinstance(p, int) for p in self.prompt):
            return 1
        return len(self.prompt)

    def choice_count(self) -> int:
        """How many generations this request asks of the engine: n per prompt."""
        return self.n * self.prompt_count()


# ---- responses: shared ------------------------------------------------------------------


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str
    max_model_len: int  # extension (as vLLM)


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


# ---- responses: chat --------------------------------------------------------------------


class TopLogprob(BaseModel):
    token: str
    logprob: float
    bytes: list[int] | None


class TokenLogprobWire(TopLogprob):
    top_logprobs: list[TopLogprob]


class ChoiceLogprobs(BaseModel):
    content: list[TokenLogprobWire] | None


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str | None
    tool_calls: list[ToolCallWire] | None = None


class ChatChoice(BaseModel):
    index: int
    message: AssistantMessage
    logprobs: ChoiceLogprobs | None = None
    finish_reason: str


class ChatCompletionResponse(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[ChatChoice]
    usage: Usage


class ToolCallDelta(BaseModel):
    index: int
    id: str
    type: Literal["function"] = "function"
    function: FunctionCallWire


class ChatDelta(BaseModel):
    role: Literal["assistant"] | None = None
    content: str | None = None
    tool_calls: list[ToolCallDelta] | None = None


class ChatChunkChoice(BaseModel):
    index: int
    delta: ChatDelta
    logprobs: ChoiceLogprobs | None = None
    finish_reason: str | None = None


class ChatCompletionChunk(BaseModel):
    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChatChunkChoice]
    usage: Usage | None = None


# ---- responses: completions -------------------------------------------------------------


class LegacyLogprobs(BaseModel):
    tokens: list[str]
    token_logprobs: list[float]
    top_logprobs: list[dict[str, float]] | None
    text_offset: list[int]


class CompletionChoice(BaseModel):
    index: int
    text: str
    logprobs: LegacyLogprobs | None = None
    finish_reason: str | None


class CompletionResponse(BaseModel):
    id: str
    object: Literal["text_completion"] = "text_completion"
    created: int
    model: str
    choices: list[CompletionChoice]
    usage: Usage | None = None

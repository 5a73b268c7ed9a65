"""Which grammar a chat request's completion must match (structured outputs, tool calls),
and a text completion's (`/v1/completions`: `response_format` only).

Owns: reading `response_format` (`json_object`, `json_schema`, strict or not — both are
constrained) and `tools` / `tool_choice` into a `trainer.types.Grammar` built by
`trainer.grammar`: a forced call (`required`, or a named function) names a declared tool
and carries arguments matching its parameters schema; with `auto`, a call the model opens
is well-formed; with `auto` and a JSON `response_format`, the answer is that JSON or a
call; a forced call wins over `response_format`. Each grammar is checked with the grammar
library first, so a bad schema or an unsupported feature is a 400 naming the field.
Without the library a JSON `response_format` is a 400 saying so, and tool calls are
served unconstrained as before. Knows nothing about HTTP or engines.
"""

from __future__ import annotations

import logging

from gateway.errors import InvalidRequest
from gateway.openai.wire import (
    ChatCompletionRequest,
    CompletionRequest,
    NamedToolChoice,
    ResponseFormat,
)
from trainer import chat_format, grammar
from trainer.errors import GrammarUnavailable, InvalidGrammar
from trainer.types import Grammar

log = logging.getLogger(__name__)
_warned_unconstrained_tools: list[bool] = []  # warn once per process


def _tool_schemas(request: ChatCompletionRequest) -> list[grammar.ToolSchema]:
    return [
        grammar.ToolSchema(
            name=tool.function.name,
            parameters=tool.function.parameters or dict(grammar.ANY_JSON_OBJECT),
        )
        for tool in request.tools or []
    ]


def _json_schema(response_format: ResponseFormat | None) -> tuple[bool, dict | None]:
    """(whether the answer must be JSON, its schema: None for any JSON object)."""
    if response_format is None or response_format.type == "text":
        return False, None
    if response_format.type == "json_object":
        return True, None
    spec = response_format.json_schema
    if spec is None or spec.schema_ is None:
        raise InvalidRequest(
            "response_format: type 'json_schema' needs `json_schema.schema` (a JSON schema "
            "object).",
            param="response_format",
        )
    return True, spec.schema_


def chat_grammar(request: ChatCompletionRequest) -> Grammar | None:
    """The grammar the request's completions must match, checked; None: unconstrained."""
    wants_json, schema = _json_schema(request.response_format)
    tools = _tool_schemas(request) if request.tool_choice != "none" else []
    choice = request.tool_choice
    if tools and (choice == "required" or isinstance(choice, NamedToolChoice)):
        if isinstance(choice, NamedToolChoice):
            tools = [t for t in tools if t.name == choice.function.name]
            prefix = chat_format.forced_prefix(choice.model_dump())
        else:
            prefix = chat_format.forced_prefix(choice)
        return _tool_grammar(grammar.forced_call(tools, prefix))
    if tools and wants_json:
        return _checked(grammar.json_or_call(schema, tools), param="response_format")
    if tools:
        return _tool_grammar(grammar.calls_in_text(tools))
    if wants_json:
        return _checked(grammar.json_value(schema), param="response_format")
    return None


def completion_grammar(request: CompletionRequest) -> Grammar | None:
    """The grammar a text completion must match (`response_format`, as for chat: the
    completion is the JSON value), checked; None: unconstrained."""
    wants_json, schema = _json_schema(request.response_format)
    if not wants_json:
        return None
    return _checked(grammar.json_value(schema), param="response_format")


def _tool_grammar(built: Grammar) -> Grammar | None:
    """`built`, checked; None without the library: tool calls were served before
    constrained decoding, and still are, as the model writes them (only a forced call's
    opening is enforced, by the prompt)."""
    try:
        return _checked(built, param="tools")
    except InvalidRequest as error:
        if not isinstance(error.__cause__, GrammarUnavailable):
            raise
        if not _warned_unconstrained_tools:
            _warned_unconstrained_tools.append(True)
            log.warning("tool calls are not constrained: %s", error.__cause__)
        return None


def _checked(built: Grammar, *, param: str) -> Grammar:
    try:
        grammar.check(built)
    except GrammarUnavailable as e:
        raise InvalidRequest(f"{param}: {e}.", param=param) from e
    except InvalidGrammar as e:
        what = "a tool's parameters schema" if param == "tools" else "the JSON schema"
        raise InvalidRequest(
            f"{param}: {what} cannot be used for constrained decoding: {e}", param=param
        ) from e
    return built

"""Grammars for constrained decoding: JSON answers and well-formed tool calls.

Owns: turning what a request asks for — one JSON value of a schema (or any JSON object), a
forced tool call, tool calls that must be well-formed once the model opens one — into a
`trainer.types.Grammar` in llguidance's Lark dialect, with JSON schemas embedded as
`%json {...}` (llguidance compiles them; nothing here parses JSON token by token), and
checking a grammar with llguidance before any engine sees it (`check`).

Tool calls are written in `trainer.chat_format`'s convention
(`<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`); a forced call's opening is
already in the prompt (`chat_format.forced_prefix`), so its grammar covers the rest.

Torch-free (the gateway imports it); llguidance is imported only by `check`. Knows nothing
of HTTP, OpenAI wire types or engines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trainer.chat_format import TOOL_CALL_CLOSE, TOOL_CALL_OPEN
from trainer.errors import GrammarUnavailable, InvalidGrammar
from trainer.types import Grammar

LIBRARY = "llguidance"
ANY_JSON_OBJECT: dict[str, Any] = {"type": "object"}
JSON_LAYOUT = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
_CALL_END = "}\n" + TOOL_CALL_CLOSE


@dataclass(frozen=True)
class ToolSchema:
    """A declared function: its name and the JSON schema of its arguments."""

    name: str
    parameters: dict[str, Any]


def _literal(text: str) -> str:
    """`text` as a Lark string literal (llguidance reads JSON string escapes)."""
    return json.dumps(text, ensure_ascii=False)


def _json(schema: dict[str, Any]) -> str:
    """`schema` as an embedded llguidance JSON grammar, written the way `json.dumps`
    writes JSON (", " and ": ", no other whitespace): a model cannot pad forever, and a
    call's arguments re-render to the same text when an agent sends them back."""
    own = schema.get("x-guidance")  # llguidance's options, when the caller set some
    options = {**JSON_LAYOUT, **(own if isinstance(own, dict) else {})}
    return "%json " + json.dumps({**schema, "x-guidance": options}, ensure_ascii=False)


def _call_head(name: str) -> str:
    """A call's text up to its arguments, as `chat_format.tool_call_text` writes it."""
    return f'{TOOL_CALL_OPEN}\n{{"name": {json.dumps(name, ensure_ascii=False)}, "arguments": '


def _call_rules(tools: Sequence[ToolSchema], already: str) -> str:
    """Rules `call_0 | call_1 | ...` for one call of any of `tools`, each written from
    after `already` (the part of the call the prompt or a trigger already holds)."""
    rules = []
    for i, tool in enumerate(tools):
        head = _call_head(tool.name)
        assert head.startswith(already), (head, already)
        rest = head[len(already) :]
        rules.append(
            f"call_{i}: {_literal(rest) if rest else ''} {_json(tool.parameters)} "
            f"{_literal(_CALL_END)}"
        )
    alternatives = " | ".join(f"call_{i}" for i in range(len(tools)))
    return f"call: {alternatives}\n" + "\n".join(rules) + "\n"


def json_value(schema: dict[str, Any] | None) -> Grammar:
    """The whole completion is one JSON value of `schema` (None: any JSON object)."""
    chosen = ANY_JSON_OBJECT if schema is None else schema
    kind = "json_object" if schema is None else "json_schema"
    return Grammar(kind=kind, lark=f"start: {_json(chosen)}\n")


def forced_call(tools: Sequence[ToolSchema], prefix: str) -> Grammar:
    """One call of one of `tools` (a named `tool_choice` passes just that tool), written
    after `prefix` — the call's opening the prompt already ends with."""
    assert tools, "a forced call needs at least one tool"
    return Grammar(kind="tool_call", lark="start: call\n" + _call_rules(tools, prefix))


def calls_in_text(tools: Sequence[ToolSchema]) -> Grammar:
    """Free text, in which every `<tool_call>` the model opens is one well-formed call of
    one of `tools` (llguidance's lazy trigger: the text is unconstrained until then)."""
    lark = (
        "%llguidance {}\n"
        "start: opened_call* text\n"
        "text: TEXT\n"
        "TEXT: /(.|\\n)*/\n"
        f"opening[lazy]: TEXT {_literal(TOOL_CALL_OPEN)}\n"
        "opened_call: opening call\n" + _call_rules(tools, TOOL_CALL_OPEN)
    )
    return Grammar(kind="tool_auto", lark=lark)


def json_or_call(schema: dict[str, Any] | None, tools: Sequence[ToolSchema]) -> Grammar:
    """Either one JSON value of `schema` (the answer) or one call of one of `tools`."""
    chosen = ANY_JSON_OBJECT if schema is None else schema
    lark = f"start: answer | call\nanswer: {_json(chosen)}\n" + _call_rules(tools, "")
    return Grammar(kind="json_or_tool", lark=lark)


def check(grammar: Grammar) -> None:
    """Raise `InvalidGrammar` with llguidance's message when it would not compile `grammar`
    (a bad schema, an unsupported keyword or format), `GrammarUnavailable` without it."""
    try:
        from llguidance import LLMatcher
    except ImportError as e:
        raise GrammarUnavailable(
            f"constrained decoding needs the {LIBRARY} package where the model is served "
            f"(pip install {LIBRARY})"
        ) from e
    is_error, messages = LLMatcher.validate_grammar_with_warnings(
        LLMatcher.grammar_from_lark(grammar.lark)
    )
    if is_error:
        raise InvalidGrammar(_first_line(messages[0]) if messages else "rejected by " + LIBRARY)


def _first_line(message: str) -> str:
    """llguidance's message without the position and the echoed grammar source."""
    line = message.strip().splitlines()[0]
    return re.sub(r"^at \d+\(\d+\): ", "", line)

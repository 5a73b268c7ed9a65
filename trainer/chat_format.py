"""The chat format around a model's own template: OpenAI messages in, tool calls out.

Torch-free (the gateway may import it). Models whose chat template knows nothing of tools
(SmolLM2's doesn't) get the Hermes convention that most open models are tuned on: the
tool signatures go into the system message inside `<tools>`, and the model answers with
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>` blocks, which we parse back into
OpenAI `tool_calls`. A `tool_choice` that names a function (or says `required`) is
enforced by starting the assistant turn with the opening of a call. A call cut off by
`max_tokens` is left as text (`parse_reply`).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from typing import Any

import jinja2

from trainer.types import ChatTokenizer, ParsedAssistant, ToolCall

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
_TOOL_CALL_RE = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_NAME_RE = re.compile(r'"name"\s*:\s*"([^"]+)"')
_ARGS_RE = re.compile(r'"arguments"\s*:\s*(.*)$', re.DOTALL)


@lru_cache(maxsize=1)
def _tools_system_template() -> jinja2.Template:
    text = resources.files("trainer").joinpath("templates/tools_system.j2").read_text()
    return jinja2.Environment(keep_trailing_newline=False).from_string(text)


def content_text(content: Any) -> str:
    """OpenAI message content (a string, None, or a list of parts) as plain text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "text":
            parts.append(part.get("text", ""))
        elif isinstance(part, str):
            parts.append(part)
    return "".join(parts)


def tool_call_text(name: str, arguments: str | dict[str, Any]) -> str:
    """How an assistant's tool call is written in the model's own words."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            pass  # keep the caller's text as it is; it is what the model once produced
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return (
        f'{TOOL_CALL_OPEN}\n{{"name": {json.dumps(name)}, "arguments": {args}}}\n{TOOL_CALL_CLOSE}'
    )


def normalize_messages(
    messages: Sequence[dict[str, Any]],
    tools: Sequence[dict[str, Any]] | None,
    native_tools: bool,
) -> list[dict[str, str]]:
    """Flatten OpenAI messages to `{role, content}` strings a plain chat template renders.

    Assistant tool calls become `<tool_call>` text; `developer` is treated as `system`;
    when tools are offered and the template has no tool support, their signatures are
    put into the system message.
    """
    out: list[dict[str, str]] = []
    for m in messages:
        role = "system" if m.get("role") == "developer" else m.get("role", "user")
        text = content_text(m.get("content"))
        if role == "assistant" and m.get("tool_calls"):
            calls = [
                tool_call_text(c["function"]["name"], c["function"].get("arguments", "{}"))
                for c in m["tool_calls"]
            ]
            text = "\n".join(([text] if text else []) + calls)
        out.append({"role": role, "content": text})
    if tools and not native_tools:
        functions = [t.get("function", t) for t in tools]
        if out and out[0]["role"] == "system":
            out[0] = {
                "role": "system",
                "content": _tools_system_template().render(
                    system=out[0]["content"], tools=functions
                ),
            }
        else:
            out.insert(
                0,
                {
                    "role": "system",
                    "content": _tools_system_template().render(system="", tools=functions),
                },
            )
    return out


def forced_prefix(tool_choice: str | dict[str, Any] | None) -> str:
    """Text that starts the assistant turn so the model must call a tool."""
    if isinstance(tool_choice, dict):
        name = (tool_choice.get("function") or {}).get("name")
        if name:
            return f'{TOOL_CALL_OPEN}\n{{"name": {json.dumps(name)}, "arguments": '
    if tool_choice == "required":
        return f'{TOOL_CALL_OPEN}\n{{"name": "'
    return ""


def _new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


def _parse_one_call(body: str) -> ToolCall | None:
    try:
        obj = json.loads(body)
    except json.JSONDecodeError:
        obj = None
    if isinstance(obj, dict) and isinstance(obj.get("name"), str):
        args = obj.get("arguments", {})
        args_text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        return ToolCall(id=_new_call_id(), name=obj["name"], arguments=args_text)
    # Lenient path: small models often get the name right and break the JSON after it.
    name = _NAME_RE.search(body)
    if not name:
        return None
    args_match = _ARGS_RE.search(body)
    args_text = args_match.group(1).strip() if args_match else "{}"
    if args_text.endswith("}"):  # the object that wrapped name+arguments
        args_text = args_text[:-1].rstrip()
    return ToolCall(id=_new_call_id(), name=name.group(1), arguments=args_text or "{}")


def parse_tool_calls(text: str) -> ParsedAssistant:
    """Split model text into content and `<tool_call>` blocks."""
    if TOOL_CALL_OPEN not in text:
        return ParsedAssistant(content=text)
    calls: list[ToolCall] = []
    for match in _TOOL_CALL_RE.finditer(text):
        call = _parse_one_call(match.group(1))
        if call is not None:
            calls.append(call)
    if not calls:
        return ParsedAssistant(content=text)
    content = _TOOL_CALL_RE.sub("", text).strip()
    return ParsedAssistant(content=content or None, tool_calls=calls)


def cut_tool_call(text: str) -> bool:
    """Does `text` end inside a `<tool_call>` block (opened, never closed)?"""
    return text.rfind(TOOL_CALL_OPEN) > text.rfind(TOOL_CALL_CLOSE)


def parse_reply(
    tokenizer: ChatTokenizer, text: str, *, tools_offered: bool, finish_reason: str
) -> ParsedAssistant:
    """A completion's text as the assistant message the client gets. A call that
    `max_tokens` cut off (`finish_reason` "length") is not a call: the whole raw text is
    the content, so no half-parsed call ever reaches a client as a valid one."""
    if not tools_offered or (finish_reason == "length" and cut_tool_call(text)):
        return ParsedAssistant(content=text)
    return tokenizer.parse_assistant(text, tools_offered=True)

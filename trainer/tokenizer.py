"""`HFChatTokenizer`: a transformers tokenizer behind the `ChatTokenizer` interface.

Renders OpenAI messages with the model's own chat template (tools through
`trainer.chat_format` when the template has no tool support), and decodes generated ids
incrementally for streaming.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jinja2

from trainer import chat_format
from trainer.errors import ChatFormatError
from trainer.types import ParsedAssistant, RenderedPrompt


class HFChatTokenizer:
    """Implements `trainer.types.ChatTokenizer` for any transformers tokenizer."""

    def __init__(self, hf_tokenizer: Any, extra_eos_token_ids: Sequence[int] = ()):
        self.hf = hf_tokenizer
        eos = {hf_tokenizer.eos_token_id, *extra_eos_token_ids}
        self._eos = frozenset(i for i in eos if i is not None)
        template = getattr(hf_tokenizer, "chat_template", None) or ""
        self.native_tools = "tools" in template
        self._special_ids = frozenset(hf_tokenizer.all_special_ids)

    @property
    def eos_token_ids(self) -> frozenset[int]:
        return self._eos

    @property
    def vocab_size(self) -> int:
        return len(self.hf)

    def encode(self, text: str) -> list[int]:
        return list(self.hf.encode(text, add_special_tokens=False))

    def decode(self, token_ids: Sequence[int]) -> str:
        return self.hf.decode(list(token_ids), skip_special_tokens=True)

    def token_text(self, token_id: int) -> str:
        return self.hf.decode([token_id], skip_special_tokens=False)

    def is_special(self, token_id: int) -> bool:
        return token_id in self._special_ids

    def render_chat(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
    ) -> RenderedPrompt:
        offered = list(tools or []) if tool_choice != "none" else []
        flat = chat_format.normalize_messages(messages, offered, self.native_tools)
        kwargs: dict[str, Any] = (
            {"tools": [t for t in offered]} if offered and self.native_tools else {}
        )
        try:
            text = self.hf.apply_chat_template(
                flat, tokenize=False, add_generation_prompt=True, **kwargs
            )
        except jinja2.TemplateError as e:
            raise ChatFormatError(f"the model's chat template rejected the messages: {e}") from e
        prefix = chat_format.forced_prefix(tool_choice) if offered else ""
        return RenderedPrompt(token_ids=self.encode(text + prefix), completion_prefix=prefix)

    def parse_assistant(self, text: str, tools_offered: bool) -> ParsedAssistant:
        if not tools_offered:
            return ParsedAssistant(content=text)
        return chat_format.parse_tool_calls(text)


class IncrementalDetokenizer:
    """Turns a growing list of ids into text deltas without re-decoding everything.

    Decodes a short window behind the last emitted position (the TGI/vLLM approach) and
    holds text back while it ends in an incomplete UTF-8 character.
    """

    def __init__(self, tokenizer: HFChatTokenizer):
        self._tok = tokenizer
        self.ids: list[int] = []
        self._prefix_offset = 0
        self._read_offset = 0

    def push(self, token_id: int) -> str:
        self.ids.append(token_id)
        decode = self._tok.decode
        prefix_text = decode(self.ids[self._prefix_offset : self._read_offset])
        new_text = decode(self.ids[self._prefix_offset :])
        if len(new_text) > len(prefix_text) and not new_text.endswith("\ufffd"):
            delta = new_text[len(prefix_text) :]
            self._prefix_offset = self._read_offset
            self._read_offset = len(self.ids)
            return delta
        return ""

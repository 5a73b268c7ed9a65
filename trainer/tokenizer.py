"""`HFChatTokenizer`: a transformers tokenizer behind the `ChatTokenizer` interface.

Renders OpenAI messages with the model's own chat template (tools through
`trainer.chat_format` when the template has no tool support), reusing the ids the model
generated for replies an agent sends back (`trainer.context.drift`), and decodes
generated ids incrementally for streaming.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import jinja2

from trainer import chat_format
from trainer.context import drift
from trainer.errors import ChatFormatError
from trainer.types import ParsedAssistant, PriorCall, RenderedPrompt


class HFChatTokenizer:
    """Implements `trainer.types.ChatTokenizer` for any transformers tokenizer."""

    def __init__(self, hf_tokenizer: Any, extra_eos_token_ids: Sequence[int] = ()):
        self.hf = hf_tokenizer
        eos = {hf_tokenizer.eos_token_id, *extra_eos_token_ids}
        self._eos = frozenset(i for i in eos if i is not None)
        template = getattr(hf_tokenizer, "chat_template", None) or ""
        self.native_tools = "tools" in template
        self._special_ids = frozenset(hf_tokenizer.all_special_ids)
        self._token_texts: dict[int, str] = {}  # token_text's cache: traces spell every id

    @property
    def eos_token_ids(self) -> frozenset[int]:
        return self._eos

    def fingerprint(self) -> str:
        """Equal for tokenizers that encode, decode and render chats alike (the gateway
        keeps one of them for every ended run's policy that uses it)."""
        backend = getattr(self.hf, "backend_tokenizer", None)
        vocab = (
            backend.to_str() if backend is not None else repr(sorted(self.hf.get_vocab().items()))
        )
        parts = [
            type(self.hf).__name__,
            vocab,
            getattr(self.hf, "chat_template", None) or "",
            repr(sorted(self.hf.special_tokens_map.items())),
            repr(sorted(self._eos)),
        ]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    @property
    def vocab_size(self) -> int:
        return len(self.hf)

    def encode(self, text: str) -> list[int]:
        return list(self.hf.encode(text, add_special_tokens=False))

    def decode(self, token_ids: Sequence[int]) -> str:
        return self.hf.decode(list(token_ids), skip_special_tokens=True)

    def token_text(self, token_id: int) -> str:
        text = self._token_texts.get(token_id)
        if text is None:
            text = self._token_texts[token_id] = self.hf.decode(
                [token_id], skip_special_tokens=False
            )
        return text

    def is_special(self, token_id: int) -> bool:
        return token_id in self._special_ids

    def render_text(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = None,
        add_generation_prompt: bool = True,
    ) -> str:
        """The chat as the model's template writes it (`tools`: the ones offered)."""
        flat = chat_format.normalize_messages(messages, tools, self.native_tools)
        kwargs: dict[str, Any] = {"tools": list(tools)} if tools and self.native_tools else {}
        try:
            return self.hf.apply_chat_template(
                flat, tokenize=False, add_generation_prompt=add_generation_prompt, **kwargs
            )
        except jinja2.TemplateError as e:
            raise ChatFormatError(f"the model's chat template rejected the messages: {e}") from e

    def render_chat(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
        *,
        history: Sequence[PriorCall] | None = None,
        model: str | None = None,
    ) -> RenderedPrompt:
        offered = list(tools or []) if tool_choice != "none" else []
        prefix = chat_format.forced_prefix(tool_choice) if offered else ""
        text = self.render_text(messages, offered) + prefix
        if not history or self._turn_end is None:
            return RenderedPrompt(self.encode(text), completion_prefix=prefix, text=text)
        assert model is not None, "render_chat: `history` needs the served `model` name"
        splice = drift.splice_prompt(
            messages=list(messages),
            model=model,
            prompt_text=text,
            history=history,
            render=lambda chat, generation: self.render_text(chat, offered, generation),
            encode=self.encode,
            eos_texts=self._eos_texts,
            eos_token_ids=self._eos,
            turn_end=self._turn_end,
        )
        return RenderedPrompt(
            splice.token_ids,
            completion_prefix=prefix,
            text=text,
            drift=splice.status,
            continues=splice.continues,
        )

    @cached_property
    def _turn_end(self) -> str | None:
        """What the template writes after an assistant turn's content; None when the
        template cannot render a plain user/assistant exchange (then nothing is spliced)."""

        def render(chat: list[dict[str, Any]], generation: bool) -> str:
            return self.render_text(chat, None, generation)

        probe = [{"role": "user", "content": "x"}, {"role": "assistant", "content": drift.SENTINEL}]
        try:
            if drift.SENTINEL not in render(probe, False):
                return None
            return drift.turn_end_text(render)
        except ChatFormatError:
            return None

    @cached_property
    def _eos_texts(self) -> list[str]:
        return [self.token_text(i) for i in sorted(self._eos)]

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

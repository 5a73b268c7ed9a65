"""What both rollout engines do with a request's tokens, whatever samples them.

Owns: how long a served context is (`serving_context`), which prompts an engine takes
(`prompt_error`), and `CompletionBuilder` — one completion assembled token by token: the
records (ids, logprobs, versions, top alternatives, token texts), the visible text
(incremental detokenizing, EOS adds none, cut before the first stop string, a tail that
may still grow into a stop string held back from the stream), when it finishes ("stop",
"length"), the `GeneratedToken` each token streams and the final `Completion`.

Must not know how tokens are sampled or delivered (torch, vLLM, queues, threads): the
engines call `CompletionBuilder.add` once per token on their own thread and emit what it
returns. `add` is on the torch engine's per-token path: no locks, no allocations beyond
the records and the `GeneratedToken` themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from trainer.errors import InvalidPrompt, PromptTooLong
from trainer.tokenizer import HFChatTokenizer, IncrementalDetokenizer
from trainer.types import Completion, FinishReason, GeneratedToken, SamplingParams, TokenLogprob

DEFAULT_CONTEXT_CAP = 8192


def serving_context(model_config: Any, configured: int | None) -> int:
    """Most tokens one sequence may hold: the configured `max_context`, else the model's
    `max_position_embeddings` capped at `DEFAULT_CONTEXT_CAP`."""
    model_context = getattr(model_config, "max_position_embeddings", None) or DEFAULT_CONTEXT_CAP
    return configured or min(model_context, DEFAULT_CONTEXT_CAP)


def prompt_error(
    prompt: Sequence[int], vocab_size: int, max_context: int
) -> InvalidPrompt | PromptTooLong | None:
    """Why an engine refuses `prompt`, or None: ids outside the vocabulary, or not 1 to
    `max_context - 1` tokens (one position must stay free for the first new token)."""
    if any(not 0 <= t < vocab_size for t in prompt):
        return InvalidPrompt(f"prompt token ids must lie in [0, {vocab_size})")
    if not 0 < len(prompt) < max_context:
        return PromptTooLong(
            f"prompt has {len(prompt)} tokens; this engine takes 1 to {max_context - 1}"
        )
    return None


@dataclass(slots=True)
class CompletionBuilder:
    """One completion assembled token by token (`start` it, `add` each token, then
    `completion`). Lives on one thread: the engine's."""

    tokenizer: HFChatTokenizer
    prompt: list[int]
    params: SamplingParams
    max_tokens: int  # params.max_tokens, capped by the room the prompt leaves in the context
    started_at: float  # time.time() when the request entered the engine
    eos: frozenset[int]
    detok: IncrementalDetokenizer
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    tops: list[list[TokenLogprob]] = field(default_factory=list)
    token_texts: list[str] = field(default_factory=list)
    text: str = ""  # visible text so far (cut at a stop string once one appears)
    emitted: int = 0  # chars of `text` already streamed
    first_token_at: float = 0.0
    finish_reason: FinishReason | None = None
    # constrained decoding only (None without a grammar): see `Completion`
    constrained: list[bool] | None = None
    unconstrained_logprobs: list[float | None] | None = None

    @classmethod
    def start(
        cls,
        tokenizer: HFChatTokenizer,
        prompt: list[int],
        params: SamplingParams,
        *,
        max_context: int,
        started_at: float,
    ) -> CompletionBuilder:
        return cls(
            tokenizer=tokenizer,
            prompt=prompt,
            params=params,
            max_tokens=min(params.max_tokens, max_context - len(prompt)),
            started_at=started_at,
            eos=tokenizer.eos_token_ids,
            detok=IncrementalDetokenizer(tokenizer),
            constrained=[] if params.grammar is not None else None,
            unconstrained_logprobs=[] if params.grammar is not None else None,
        )

    def add(
        self,
        token: int,
        logprob: float,
        top: list[TokenLogprob],
        version: int,
        now: float,
        finish_otherwise: FinishReason | None = None,
        *,
        constrained: bool = False,
        unconstrained_logprob: float | None = None,
    ) -> GeneratedToken:
        """Record one token and return what it streams. It finishes the completion with
        "stop" (EOS unless `ignore_eos`, or a stop string: the text is cut before it),
        "length" (`max_tokens` reached), else `finish_otherwise` (the sampler's own end,
        e.g. a completed grammar). With a grammar, `constrained` says whether its mask
        moved this token's logprob, `unconstrained_logprob` is the logprob without the
        mask (None when the engine cannot see it)."""
        p = self.params
        if not self.tokens:
            self.first_token_at = now
        self.tokens.append(token)
        self.logprobs.append(logprob)
        if self.constrained is not None and self.unconstrained_logprobs is not None:
            self.constrained.append(constrained)
            self.unconstrained_logprobs.append(unconstrained_logprob)
        self.versions.append(version)
        self.tops.append(top)
        self.token_texts.append(self.tokenizer.token_text(token))
        is_eos = token in self.eos and not p.ignore_eos
        if is_eos:
            self.finish_reason = "stop"
        else:
            self.text += self.detok.push(token)
            if p.stop and self._cut_at_stop():
                self.finish_reason = "stop"
            elif len(self.tokens) >= self.max_tokens:
                self.finish_reason = "length"
            else:
                self.finish_reason = finish_otherwise
        visible = self._emittable()
        piece = self.text[self.emitted : visible]
        self.emitted = visible
        return GeneratedToken(
            token_id=token, logprob=logprob, text=piece, version=version, top_logprobs=top
        )

    def end_without_token(self, finish_reason: FinishReason) -> None:
        """Finish with no further token (the sampler aborted or ended): the held-back
        tail is dropped, since no token will stream it."""
        self.finish_reason = finish_reason
        self.text = self.text[: self.emitted]

    def completion(self, finished_at: float) -> Completion:
        assert self.finish_reason is not None
        temperature = self.params.temperature
        unconstrained = self.unconstrained_logprobs
        return Completion(
            prompt_token_ids=self.prompt,
            token_ids=self.tokens,
            logprobs=self.logprobs,
            text=self.text,
            finish_reason=self.finish_reason,
            versions=self.versions,
            top_logprobs=self.tops,
            token_texts=self.token_texts,
            temperature=temperature if temperature > 0 else 1.0,
            started_at=self.started_at,
            first_token_at=self.first_token_at,
            finished_at=finished_at,
            constrained=self.constrained,
            unconstrained_logprobs=None
            if unconstrained is None or None in unconstrained
            else list(unconstrained),  # type: ignore[arg-type]
        )

    def _cut_at_stop(self) -> bool:
        """Cut `text` before the first stop string; False when there is none. Text already
        streamed was checked before, so only matches reaching past it are new."""
        stops = self.params.stop
        window_start = max(0, self.emitted - max(len(s) for s in stops))
        hits = [i for s in stops if (i := self.text.find(s, window_start)) >= 0]
        if not hits:
            return False
        self.text = self.text[: min(hits)]
        return True

    def _emittable(self) -> int:
        """How much of the text may be streamed: all of it once finished; otherwise hold
        back a tail that could still become a stop string."""
        text = self.text
        if self.finish_reason or not self.params.stop:
            return len(text)
        hold = 0
        for stop in self.params.stop:
            for k in range(min(len(stop) - 1, len(text)), 0, -1):
                if text.endswith(stop[:k]):
                    hold = max(hold, k)
                    break
        return max(self.emitted, len(text) - hold)

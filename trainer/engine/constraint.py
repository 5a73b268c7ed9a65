"""Constrained decoding in the torch engine: one llguidance matcher per sequence.

Owns: the llguidance tokenizer of a served tokenizer (`GrammarCompiler`: built once per
engine on first use, ~1 s), compiling a request's `Grammar` into a `GrammarMatcher`, and
`mask_logits`: a batch's logits with each constrained row cut to the tokens its matcher
allows (-inf elsewhere, so sampling, greedy and the reported logprobs all see the masked,
renormalised distribution), plus each such row's logprobs without the mask. A token is
marked constrained when the mask moved its logprob (`CONSTRAINED_SHIFT`).
Must not know how tokens are sampled or what becomes of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from trainer.errors import EngineFailure, InvalidGrammar
from trainer.tokenizer import HFChatTokenizer
from trainer.types import Grammar

_BITS = torch.arange(8, dtype=torch.uint8)


class GrammarMatcher:
    """Where one sequence stands in its grammar."""

    def __init__(self, matcher: object, vocab_size: int):
        self._matcher = matcher
        self._vocab_size = vocab_size
        self._bitmask = np.full(((vocab_size + 31) // 32,), -1, dtype=np.int32)

    def allowed_V(self) -> torch.Tensor:
        """Which tokens may come next (bool, one per vocabulary entry)."""
        self._matcher.unsafe_compute_mask_ptr(self._bitmask.ctypes.data, self._bitmask.nbytes)
        bytes_ = torch.from_numpy(self._bitmask.view(np.uint8))
        return ((bytes_[:, None] >> _BITS) & 1).flatten()[: self._vocab_size].bool()

    def advance(self, token: int) -> bool:
        """Take the sampled token; True when the grammar is complete and takes nothing more."""
        if not self._matcher.consume_token(token):
            raise EngineFailure(f"the grammar refused token {token}: {self._matcher.get_error()}")
        return self._matcher.is_stopped()


class GrammarCompiler:
    """Compiles grammars against one tokenizer (the llguidance tokenizer is built lazily:
    engines that never see a grammar never pay for it)."""

    def __init__(self, tokenizer: HFChatTokenizer, vocab_size: int):
        self._tokenizer = tokenizer
        self._vocab_size = vocab_size
        self._llg_tokenizer: object | None = None

    def matcher(self, grammar: Grammar) -> GrammarMatcher:
        from llguidance import LLMatcher

        if self._llg_tokenizer is None:
            import llguidance.hf

            self._llg_tokenizer = llguidance.hf.from_tokenizer(
                self._tokenizer.hf,
                n_vocab=self._vocab_size,
                eos_token=sorted(self._tokenizer.eos_token_ids),
            )
        matcher = LLMatcher(
            self._llg_tokenizer, LLMatcher.grammar_from_lark(grammar.lark), log_level=0
        )
        if matcher.is_error():
            raise InvalidGrammar(matcher.get_error())
        return GrammarMatcher(matcher, self._vocab_size)


# a token is "constrained" when the mask moved its logprob by more than this (the mask
# removed probability mass); a mask that only cut tokens of ~zero probability (free text
# between tool calls, which bars special tokens) leaves it unmarked
CONSTRAINED_SHIFT = 1e-6


@dataclass
class MaskedLogits:
    """A batch's logits after its grammars: `logits_BV` to sample from, `raw_BV` as the
    model gave them (for each sampled token's logprob without the mask)."""

    logits_BV: torch.Tensor
    raw_BV: torch.Tensor

    def unmasked_logprob(self, row: int, token: int, temperature: float) -> float:
        scale = temperature if temperature > 0 else 1.0
        logprobs_V = torch.log_softmax(self.raw_BV[row].float() / scale, dim=-1)
        return float(logprobs_V[token])


def mask_logits(
    logits_BV: torch.Tensor, matchers: Sequence[GrammarMatcher | None]
) -> MaskedLogits | None:
    """Rows with a matcher keep only the tokens it allows; None when no row has one."""
    rows = [i for i, m in enumerate(matchers) if m is not None]
    if not rows:
        return None
    masked_BV = logits_BV.clone()
    for i in rows:
        allowed_V = matchers[i].allowed_V().to(logits_BV.device)  # type: ignore[union-attr]
        width = min(allowed_V.shape[0], masked_BV.shape[1])
        masked_BV[i, :width].masked_fill_(~allowed_V[:width], float("-inf"))
        masked_BV[i, width:] = float("-inf")
    return MaskedLogits(masked_BV, logits_BV)

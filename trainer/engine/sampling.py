"""Per-row sampling for a batch of sequences with different settings.

Each row has its own temperature, top-p, top-k and random generator (a seeded request
replays). The reported logprob of a token is taken from the distribution it was sampled
from before truncation: `log_softmax(logits / temperature)` (raw logits when greedy).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from trainer.types import SamplingParams


@dataclass
class RowSampler:
    params: SamplingParams
    generator: torch.Generator | None


def sample_rows(logits_BV: torch.Tensor, rows: list[RowSampler], top_n: int) -> tuple[list[int], list[float], list[list[tuple[int, float]]]]:
    """Sample one token per row. Returns token ids, their logprobs, and per row the
    `top_n` most likely (id, logprob) alternatives (empty lists when top_n is 0)."""
    logits_BV = logits_BV.float()
    temps = torch.tensor([r.params.temperature if r.params.temperature > 0 else 1.0 for r in rows], device=logits_BV.device)
    logprobs_BV = torch.log_softmax(logits_BV / temps[:, None], dim=-1)
    tokens: list[int] = []
    needs_cut = any(r.params.top_p < 1.0 or r.params.top_k > 0 for r in rows)
    for i, row in enumerate(rows):
        p = row.params
        if p.temperature <= 0:
            tokens.append(int(torch.argmax(logprobs_BV[i])))
            continue
        row_logprobs = logprobs_BV[i]
        if needs_cut and (p.top_p < 1.0 or p.top_k > 0):
            row_logprobs = _truncate(row_logprobs, p.top_k, p.top_p)
        probs = torch.exp(row_logprobs)
        tokens.append(int(torch.multinomial(probs, 1, generator=row.generator)))
    index = torch.tensor(tokens, device=logits_BV.device)
    chosen = logprobs_BV.gather(1, index[:, None])[:, 0].tolist()
    tops: list[list[tuple[int, float]]] = [[] for _ in rows]
    if top_n > 0:
        values, ids = torch.topk(logprobs_BV, top_n, dim=-1)
        for i, row in enumerate(rows):
            k = row.params.top_logprobs
            tops[i] = list(zip(ids[i, :k].tolist(), values[i, :k].tolist(), strict=True))
    return tokens, chosen, tops


def _truncate(logprobs_V: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    sorted_lp, order = torch.sort(logprobs_V, descending=True)
    keep = torch.ones_like(sorted_lp, dtype=torch.bool)
    if top_k > 0:
        keep[top_k:] = False
    if top_p < 1.0:
        cumulative = torch.cumsum(torch.exp(sorted_lp), dim=-1)
        # keep the smallest set whose mass reaches top_p (always at least one token)
        keep &= (cumulative - torch.exp(sorted_lp)) < top_p
    keep[0] = True
    out = torch.full_like(logprobs_V, float("-inf"))
    out[order[keep]] = sorted_lp[keep]
    return out

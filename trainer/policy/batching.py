"""From scored episodes to padded micro-batches: which samples train, and their tensors.

`select_samples` drops what must not train (samples of zero-variance groups, samples more
than `max_staleness` versions old, malformed ones, ones with no trained token) and counts
each reason. `build_micro_batches` packs the rest into right-padded rows of at most
`micro_batch_tokens` (rows × longest row) and lists, flat over the trained tokens, where
each trained completion token sits and what it needs for the loss.

Knows nothing of models or optimizers; only `Sample` records and tensors.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import torch

from trainer.advantages import EpisodeAdvantages
from trainer.types import Sample


@dataclass
class TrainItem:
    sample: Sample
    advantage: float

    @property
    def length(self) -> int:
        return len(self.sample.prompt_token_ids) + len(self.sample.completion_token_ids)


@dataclass
class Selection:
    items: list[TrainItem] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)
    advantages: list[float] = field(default_factory=list)  # one per episode that trains


def sample_defect(sample: Sample) -> str | None:
    """Why a sample cannot be trained, or None."""
    n = len(sample.completion_token_ids)
    if not sample.prompt_token_ids or n == 0 or len(sample.behaviour_logprobs) != n:
        return "malformed"
    if sample.loss_mask is not None:
        if len(sample.loss_mask) != n:
            return "malformed"
        if not any(sample.loss_mask):
            return "no_trained_tokens"
    return None


def select_samples(
    scored: EpisodeAdvantages, current_version: int, max_staleness: int
) -> Selection:
    out = Selection()
    for episode in scored.zero_variance:
        out.dropped["zero_variance"] += len(episode.samples)
    for entry in scored.scored:
        trained = 0
        for sample in entry.episode.samples:
            reason = sample_defect(sample)
            if reason is None and current_version - sample.version > max_staleness:
                reason = "stale"
            if reason is not None:
                out.dropped[reason] += 1
                continue
            out.items.append(TrainItem(sample, entry.advantage))
            trained += 1
        if trained:
            out.advantages.append(entry.advantage)
    return out


@dataclass
class MicroBatch:
    """Right-padded token rows plus, flat over the N trained tokens, where each one is
    predicted (`rows_N`, `positions_N`: the position whose output predicts it) and what
    the loss needs about it."""

    input_ids_BT: torch.Tensor
    rows_N: torch.Tensor
    positions_N: torch.Tensor
    targets_N: torch.Tensor
    behaviour_logprobs_N: torch.Tensor
    advantages_N: torch.Tensor
    temperatures_B: torch.Tensor  # per row: the temperature its behaviour logprobs were taken at

    @property
    def trained_tokens(self) -> int:
        return int(self.targets_N.numel())

    @property
    def padded_tokens(self) -> int:
        return int(self.input_ids_BT.numel())


def group_rows(items: list[TrainItem], micro_batch_tokens: int) -> list[list[TrainItem]]:
    """Sort by length (less padding) and cut greedily so rows × longest ≤ the budget; a
    sample longer than the budget goes alone."""
    chunks: list[list[TrainItem]] = []
    current: list[TrainItem] = []
    for item in sorted(items, key=lambda i: i.length):
        if current and item.length * (len(current) + 1) > micro_batch_tokens:
            chunks.append(current)
            current = []
        current.append(item)
    if current:
        chunks.append(current)
    return chunks


def to_micro_batch(items: list[TrainItem], pad_id: int) -> MicroBatch:
    longest = max(i.length for i in items)
    input_ids_BT = torch.full((len(items), longest), pad_id, dtype=torch.long)
    rows, positions, targets, behaviour, advantages = [], [], [], [], []
    for row, item in enumerate(items):
        s = item.sample
        tokens = s.prompt_token_ids + s.completion_token_ids
        input_ids_BT[row, : len(tokens)] = torch.tensor(tokens, dtype=torch.long)
        start = len(s.prompt_token_ids)
        mask = s.loss_mask or [1] * len(s.completion_token_ids)
        for j, (token, keep) in enumerate(zip(s.completion_token_ids, mask, strict=True)):
            if keep:
                rows.append(row)
                positions.append(start + j - 1)
                targets.append(token)
                behaviour.append(s.behaviour_logprobs[j])
                advantages.append(item.advantage)
    return MicroBatch(
        input_ids_BT=input_ids_BT,
        rows_N=torch.tensor(rows, dtype=torch.long),
        positions_N=torch.tensor(positions, dtype=torch.long),
        targets_N=torch.tensor(targets, dtype=torch.long),
        behaviour_logprobs_N=torch.tensor(behaviour, dtype=torch.float32),
        advantages_N=torch.tensor(advantages, dtype=torch.float32),
        temperatures_B=torch.tensor([i.sample.temperature for i in items], dtype=torch.float32),
    )


def build_micro_batches(
    items: list[TrainItem], micro_batch_tokens: int, pad_id: int
) -> list[MicroBatch]:
    return [to_micro_batch(chunk, pad_id) for chunk in group_rows(items, micro_batch_tokens)]

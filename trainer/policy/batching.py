"""From scored episodes to micro-batches: which samples train, and their tensors.

`select_samples` drops what must not train (samples of zero-variance groups, samples more
than `max_staleness` versions old, malformed ones, ones with no trained token) and counts
each reason. `merge_items` turns the surviving per-call samples into timelines
(`trainer.context.timelines`) unless the layout is `none`. `build_micro_batches` lays
them out in one of the three layouts:

- `none` and `timeline`: right-padded rows, rows × longest row ≤ `micro_batch_tokens`,
  plain causal attention (no mask tensor at all: sdpa keeps its fast causal path);
- `tree`: prefix-tree rows (`trainer.context.trees`) of ≤ `micro_batch_tokens` nodes, with
  position ids (each node's depth) and each node's subtree end, from which
  `trainer.policy.tree_attention` plans the tree attention; sequences that share less
  than `MIN_SHARED_FRACTION` with any other go into padded rows as in `timeline`.

Every layout lists, flat over the N trained tokens, where each one is predicted (row and
position of the token before it) and what the loss needs about it, so the loss code is
the same for all three.

Knows nothing of models or optimizers; only `Sample` records and tensors.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import torch

from trainer.advantages import EpisodeAdvantages
from trainer.context.timelines import merge_timelines
from trainer.context.trees import pack_trees
from trainer.types import Sample

Layout = Literal["none", "timeline", "tree"]
# a sequence joins a prefix-tree row only if it shares at least this much of itself with
# it: measured on SmolLM2's shape (bench/merging.py), tree attention over a row beats
# plain causal rows when the shared prefix is a quarter or more of a sequence
MIN_SHARED_FRACTION = 0.25


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
    """Token rows plus, flat over the N trained tokens, where each one is predicted
    (`rows_N`, `positions_N`: the position whose output predicts it) and what the loss
    needs about it. Tree rows also carry `position_ids_BT` and `subtree_end_BT` (the
    exclusive end of each node's subtree); padded rows carry neither."""

    input_ids_BT: torch.Tensor
    rows_N: torch.Tensor
    positions_N: torch.Tensor
    targets_N: torch.Tensor
    behaviour_logprobs_N: torch.Tensor
    advantages_N: torch.Tensor
    temperatures_N: torch.Tensor  # the temperature each behaviour logprob was taken at
    position_ids_BT: torch.Tensor | None = None
    subtree_end_BT: torch.Tensor | None = None

    @property
    def trained_tokens(self) -> int:
        return int(self.targets_N.numel())

    @property
    def padded_tokens(self) -> int:
        return int(self.input_ids_BT.numel())


@dataclass
class _Targets:
    """Flat per-trained-token lists, filled row by row."""

    rows: list[int] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    targets: list[int] = field(default_factory=list)
    behaviour: list[float] = field(default_factory=list)
    advantages: list[float] = field(default_factory=list)
    temperatures: list[float] = field(default_factory=list)

    def add_item(self, row: int, item: TrainItem, predictor_of) -> None:
        """`predictor_of(k)`: the row position of the token at index k of the sequence."""
        s = item.sample
        start = len(s.prompt_token_ids)
        mask = s.loss_mask or [1] * len(s.completion_token_ids)
        for j, (token, keep) in enumerate(zip(s.completion_token_ids, mask, strict=True)):
            if keep:
                self.rows.append(row)
                self.positions.append(predictor_of(start + j - 1))
                self.targets.append(token)
                self.behaviour.append(s.behaviour_logprobs[j])
                self.advantages.append(item.advantage)
                self.temperatures.append(s.temperature_at(j))

    def micro_batch(self, input_ids_BT: torch.Tensor, **tree) -> MicroBatch:
        return MicroBatch(
            input_ids_BT=input_ids_BT,
            rows_N=torch.tensor(self.rows, dtype=torch.long),
            positions_N=torch.tensor(self.positions, dtype=torch.long),
            targets_N=torch.tensor(self.targets, dtype=torch.long),
            behaviour_logprobs_N=torch.tensor(self.behaviour, dtype=torch.float32),
            advantages_N=torch.tensor(self.advantages, dtype=torch.float32),
            temperatures_N=torch.tensor(self.temperatures, dtype=torch.float32),
            **tree,
        )


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
    flat = _Targets()
    for row, item in enumerate(items):
        s = item.sample
        tokens = s.prompt_token_ids + s.completion_token_ids
        input_ids_BT[row, : len(tokens)] = torch.tensor(tokens, dtype=torch.long)
        flat.add_item(row, item, lambda k: k)
    return flat.micro_batch(input_ids_BT)


def tree_micro_batches(
    items: list[TrainItem], micro_batch_tokens: int, pad_id: int
) -> list[MicroBatch]:
    """One prefix-tree row per micro-batch for sequences that share enough; the rest
    (rows that came out as one chain) go into padded causal rows like `timeline`'s."""
    sequences = [i.sample.prompt_token_ids + i.sample.completion_token_ids for i in items]
    batches = []
    unshared: list[TrainItem] = []
    for packed in pack_trees(sequences, micro_batch_tokens, MIN_SHARED_FRACTION):
        if packed.is_chain and len(packed.members) == 1:
            unshared.append(items[packed.members[0]])  # batched with the others below
            continue
        flat = _Targets()
        for member, path in zip(packed.members, packed.paths, strict=True):
            flat.add_item(0, items[member], path.__getitem__)
        input_ids_BT = torch.tensor([packed.token_ids], dtype=torch.long)
        if packed.is_chain:  # e.g. identical sequences: the tree mask is the causal one
            batches.append(flat.micro_batch(input_ids_BT))
            continue
        batches.append(
            flat.micro_batch(
                input_ids_BT,
                position_ids_BT=torch.tensor([packed.position_ids], dtype=torch.long),
                subtree_end_BT=torch.tensor([packed.subtree_end], dtype=torch.long),
            )
        )
    return batches + [to_micro_batch(c, pad_id) for c in group_rows(unshared, micro_batch_tokens)]


def build_micro_batches(
    items: list[TrainItem], micro_batch_tokens: int, pad_id: int, layout: Layout = "none"
) -> list[MicroBatch]:
    if layout == "tree":
        return tree_micro_batches(items, micro_batch_tokens, pad_id)
    return [to_micro_batch(chunk, pad_id) for chunk in group_rows(items, micro_batch_tokens)]


def merge_items(
    items: Sequence[TrainItem],
    layout: Layout,
    max_tokens: int | None = None,
    vocab_size: int | None = None,
) -> tuple[list[TrainItem], Counter[str]]:
    """Per-call items → one item per timeline (each episode's advantage carried over).
    `none` keeps the calls as they are. Counts are `trainer.context.MergeResult`'s."""
    if layout == "none":
        return list(items), Counter(calls=len(items), timelines=len(items))
    by_episode: dict[tuple[str, str], list[TrainItem]] = {}
    for item in items:
        by_episode.setdefault((item.sample.episode_id, item.sample.policy), []).append(item)
    merged: list[TrainItem] = []
    counts: Counter[str] = Counter()
    for members in by_episode.values():
        result = merge_timelines([m.sample for m in members], max_tokens, vocab_size)
        counts.update(result.counts)
        advantage = members[0].advantage
        merged.extend(TrainItem(t.to_sample(), advantage) for t in result.timelines)
    return merged, counts

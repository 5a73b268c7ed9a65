"""From selected samples to micro-batches: timelines, then tensors.

Which samples train is `trainer.selection`'s (its `TrainItem`s come in).
`merge_calls` turns the surviving per-call samples into timelines
(`trainer.context.timelines`) unless the layout is `none`, and says which calls merging
left out and why. `build_micro_batches` lays them out in one of the three layouts:

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

from trainer.context.timelines import merge_timelines
from trainer.context.trees import pack_trees
from trainer.selection import TrainItem
from trainer.types import Sample

Layout = Literal["none", "timeline", "tree"]
# a sequence joins a prefix-tree row only if it shares at least this much of itself with
# it: measured on SmolLM2's shape (bench/merging.py), tree attention over a row beats
# plain causal rows when the shared prefix is a quarter or more of a sequence
MIN_SHARED_FRACTION = 0.25


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


@dataclass
class Merged:
    """Per-call items merged into timeline items; `counts` are
    `trainer.context.MergeResult`'s, `left_out` the calls no timeline took, with why."""

    items: list[TrainItem]
    counts: Counter[str]
    left_out: list[tuple[Sample, str]] = field(default_factory=list)


def merge_calls(
    items: Sequence[TrainItem],
    layout: Layout,
    max_tokens: int | None = None,
    vocab_size: int | None = None,
) -> Merged:
    """Per-call items → one item per timeline (each episode's advantage carried over).
    `none` keeps the calls as they are."""
    if layout == "none":
        return Merged(list(items), Counter(calls=len(items), timelines=len(items)))
    by_episode: dict[tuple[str, str], list[TrainItem]] = {}
    for item in items:
        by_episode.setdefault((item.sample.episode_id, item.sample.policy), []).append(item)
    out = Merged([], Counter())
    for members in by_episode.values():
        result = merge_timelines([m.sample for m in members], max_tokens, vocab_size)
        out.counts.update(result.counts)
        out.left_out.extend(result.left_out)
        advantage = members[0].advantage
        out.items.extend(TrainItem(t.to_sample(), advantage) for t in result.timelines)
    return out


def merge_items(
    items: Sequence[TrainItem],
    layout: Layout,
    max_tokens: int | None = None,
    vocab_size: int | None = None,
) -> tuple[list[TrainItem], Counter[str]]:
    """`merge_calls` as (items, counts)."""
    merged = merge_calls(items, layout, max_tokens, vocab_size)
    return merged.items, merged.counts

"""Tree attention without T×T work: each segment of a prefix tree attends to its
ancestors and, causally, to itself — batched through SDPA.

A packed tree row (`trainer.context.trees`) of T nodes could run with a dense T×T mask,
but then every node pays for attention to every other node: on a GRPO group of 8
branches of 160 tokens under a 200-token prompt that is 1,480² scores where 200²/2 +
8·160·(200 + 80) are needed, and on this CPU the dense masked kernel made the tree row
no faster than the unshared timelines. So the row is cut into *segments* — maximal
chains of nodes with one child each (the prompt, then each branch) — and each segment's
queries attend to `ancestors + own nodes` with a bottom-right causal mask:

    query t of a segment with d ancestors may see key slot j  iff  j <= d + t

A long segment is cut into pieces of ≤ `PIECE_NODES` queries whose "ancestors" include
the segment's earlier nodes, so a long branch costs about n²/2 scores, like causal
attention, not n². Pieces are batched (padded) in groups of similar size, one SDPA call
per group, and the outputs are put back at their nodes. The result is exactly the dense
tree mask's.

The function is registered as a transformers attention implementation and used only
while a tree row runs (`tree_attention`); any other call falls through to sdpa.

Knows nothing of samples or losses: a row's `subtree_end` and `position_ids` in, a plan out.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward

IMPLEMENTATION = "swarmrl_tree"
PADDING_WASTE = 1.25  # a group's padded scores: at most this × its pieces' own
PIECE_NODES = 256  # longest run of queries one segment piece holds


@dataclass
class SegmentGroup:
    query_index_SL: torch.Tensor  # node of each query slot (padding: 0)
    key_index_SK: torch.Tensor  # ancestors then own nodes (padding: 0)
    ancestors_S: torch.Tensor  # d per segment
    valid_SL: torch.Tensor  # which query slots are real nodes
    _masks: dict = field(default_factory=dict, repr=False)

    def mask(self, dtype: torch.dtype) -> torch.Tensor:
        """S×1×L×K additive mask: slot t sees key slot j iff j <= d + t (built once per
        dtype: every layer uses the same)."""
        cached = self._masks.get(dtype)
        if cached is None:
            cached = self._masks[dtype] = self._build_mask(dtype)
        return cached

    def _build_mask(self, dtype: torch.dtype) -> torch.Tensor:
        L, K = self.query_index_SL.shape[1], self.key_index_SK.shape[1]
        device = self.query_index_SL.device
        limit_SL1 = self.ancestors_S[:, None, None] + torch.arange(L, device=device)[None, :, None]
        allowed = torch.arange(K, device=device)[None, None, :] <= limit_SL1
        mask = torch.zeros(allowed.shape, dtype=dtype, device=device)
        mask.masked_fill_(~allowed, torch.finfo(dtype).min)
        return mask[:, None]


@dataclass
class TreePlan:
    groups: list[SegmentGroup]
    nodes: int


def _segments(subtree_end: list[int], depth: list[int]) -> list[tuple[int, int, list[int]]]:
    """(start, end, ancestor nodes) of each maximal single-child chain, in preorder."""
    T = len(subtree_end)
    segments = []
    path: list[int] = []  # ancestors of the current node
    start = 0
    for i in range(T):
        if i == start:
            del path[depth[i] :]
            ancestors = list(path)
        path.append(i)
        only_child_follows = (
            i + 1 < T and i + 1 < subtree_end[i] and subtree_end[i + 1] == subtree_end[i]
        )
        if not only_child_follows:
            segments.append((start, i + 1, ancestors))
            start = i + 1
    return segments


def _pieces(segments, piece: int) -> list[tuple[int, int, list[int]]]:
    """Long segments cut into pieces whose ancestors include the segment's earlier nodes,
    so a long branch pays close to causal attention (≈ n²/2) rather than n²."""
    out = []
    for start, end, ancestors in segments:
        for cut in range(start, end, piece):
            out.append((cut, min(cut + piece, end), ancestors + list(range(start, cut))))
    return out


def build_plan(subtree_end: list[int], position_ids: list[int], device=None) -> TreePlan:
    segments = sorted(
        _pieces(_segments(subtree_end, position_ids), PIECE_NODES),
        key=lambda s: len(s[2]) + s[1] - s[0],
    )
    groups: list[SegmentGroup] = []
    batch: list[tuple[int, int, list[int]]] = []
    real = 0

    def flush() -> None:
        nonlocal batch, real
        if not batch:
            return
        L = max(end - start for start, end, _ in batch)
        K = max(len(anc) + end - start for start, end, anc in batch)
        query = torch.zeros(len(batch), L, dtype=torch.long)
        key = torch.zeros(len(batch), K, dtype=torch.long)
        valid = torch.zeros(len(batch), L, dtype=torch.bool)
        for s, (start, end, anc) in enumerate(batch):
            own = list(range(start, end))
            query[s, : len(own)] = torch.tensor(own)
            valid[s, : len(own)] = True
            key[s, : len(anc) + len(own)] = torch.tensor(anc + own)
        groups.append(
            SegmentGroup(
                query.to(device),
                key.to(device),
                torch.tensor([len(a) for _, _, a in batch], device=device),
                valid.to(device),
            )
        )
        batch, real = [], 0

    for segment in segments:
        start, end, anc = segment
        cost = (end - start) * (len(anc) + end - start)  # its scores, were it alone
        if batch:
            trial = [*batch, segment]
            L = max(e - s for s, e, _ in trial)
            K = max(len(a) + e - s for s, e, a in trial)
            if len(trial) * L * K > PADDING_WASTE * (real + cost):
                flush()
        batch.append(segment)
        real += cost
    flush()
    return TreePlan(groups, len(subtree_end))


def tree_attention_forward(
    module: torch.nn.Module,
    query: torch.Tensor,  # 1 × H × T × D
    key: torch.Tensor,  # 1 × KVH × T × D
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    tree_plan: TreePlan | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    if tree_plan is None:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    assert query.shape[0] == 1, "tree rows are one row per micro-batch"
    heads, kv_heads = query.shape[1], key.shape[1]
    q_HTD, k_HTD, v_HTD = query[0], key[0], value[0]
    out_THD = None  # in SDPA's output dtype (autocast may differ from the query's)
    for group in tree_plan.groups:
        q = q_HTD[:, group.query_index_SL].transpose(0, 1)  # S × H × L × D
        k = k_HTD[:, group.key_index_SK].transpose(0, 1)  # S × KVH × K × D
        v = v_HTD[:, group.key_index_SK].transpose(0, 1)
        o = F.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=group.mask(q.dtype),
            dropout_p=dropout,
            scale=scaling,
            enable_gqa=kv_heads != heads,  # no repeated K/V copies
        )  # S × H × L × D
        o_SLHD = o.transpose(1, 2)
        if out_THD is None:
            out_THD = o.new_zeros(query.shape[2], heads, query.shape[3])
        out_THD = out_THD.index_put((group.query_index_SL[group.valid_SL],), o_SLHD[group.valid_SL])
    return out_THD[None], None


AttentionInterface.register(IMPLEMENTATION, tree_attention_forward)


@contextlib.contextmanager
def tree_attention(model: torch.nn.Module) -> Iterator[None]:
    """Run `model` with tree attention for the duration (pass `tree_plan=` to the forward)."""
    config = model.config
    before = config._attn_implementation
    config._attn_implementation = IMPLEMENTATION
    try:
        yield
    finally:
        config._attn_implementation = before

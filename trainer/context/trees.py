"""Tree packing: sequences that share a prefix go into one row as a prefix tree (a trie),
so the shared prefix is computed once in the forward and backward pass.

The G members of a GRPO group share their prompt; the timelines of an episode that
branched share their trunk; every chat shares the template's system header. Sorted
lexicographically, a sequence shares with the row's trie exactly its longest common
prefix with the sequence before it, so rows are filled greedily in sorted order: a
sequence costs its length minus that prefix, a row holds at most `max_row_tokens`
nodes (a longer sequence goes alone), and a sequence that would share less than
`min_shared` of its tokens starts a new row. Nodes are laid out in depth-first preorder, which
makes every subtree a contiguous range: node i may attend to node j exactly when
`j <= i < subtree_end[j]` (j is i or an ancestor of i), and node i's position id is its
depth. Different trees in one row never see each other.

Identical sequences (two group members that sampled the same words) share every node;
each keeps its own path, so each still gets its own loss terms.

Plain Python: turning a `PackedRow` into an attention mask is `trainer.policy.batching`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class PackedRow:
    token_ids: list[int] = field(default_factory=list)
    position_ids: list[int] = field(default_factory=list)
    subtree_end: list[int] = field(default_factory=list)  # exclusive end of each node's subtree
    members: list[int] = field(default_factory=list)  # indices of the input sequences here
    paths: list[list[int]] = field(default_factory=list)  # per member: its node per token

    def __len__(self) -> int:
        return len(self.token_ids)

    @property
    def is_chain(self) -> bool:
        """One path from the root (every sequence a prefix of the longest): the tree
        mask is then the plain causal mask."""
        return all(end == len(self.token_ids) for end in self.subtree_end)


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class _RowBuilder:
    def __init__(self) -> None:
        self.row = PackedRow()
        self._prev: Sequence[int] = ()
        self._path: list[int] = []  # nodes of the previous sequence

    def cost(self, seq: Sequence[int]) -> int:
        return len(seq) - _common_prefix(self._prev, seq)

    def add(self, index: int, seq: Sequence[int]) -> None:
        row = self.row
        shared = _common_prefix(self._prev, seq)
        for node in self._path[shared:]:  # their subtrees end here
            row.subtree_end[node] = len(row.token_ids)
        path = self._path[:shared]
        for depth in range(shared, len(seq)):
            path.append(len(row.token_ids))
            row.token_ids.append(seq[depth])
            row.position_ids.append(depth)
            row.subtree_end.append(-1)
        row.members.append(index)
        row.paths.append(path)
        self._prev, self._path = seq, path

    def finish(self) -> PackedRow:
        for node in self._path:
            self.row.subtree_end[node] = len(self.row.token_ids)
        return self.row


def pack_trees(
    sequences: Sequence[Sequence[int]], max_row_tokens: int, min_shared: float = 0.0
) -> list[PackedRow]:
    """Pack `sequences` into prefix-tree rows of at most `max_row_tokens` nodes each. A
    sequence joins the row only if it shares at least `min_shared` of its tokens with it
    (sharing a sliver saves less than tree attention costs over plain causal rows)."""
    order = sorted(range(len(sequences)), key=lambda i: tuple(sequences[i]))
    rows: list[PackedRow] = []
    builder: _RowBuilder | None = None
    for index in order:
        seq = sequences[index]
        if builder is not None and (
            len(builder.row) + builder.cost(seq) > max_row_tokens
            or len(seq) - builder.cost(seq) < min_shared * len(seq)
        ):
            rows.append(builder.finish())
            builder = None
        if builder is None:
            builder = _RowBuilder()
        builder.add(index, seq)
    if builder is not None:
        rows.append(builder.finish())
    return rows

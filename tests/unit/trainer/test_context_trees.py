"""Prefix-tree packing (`trainer.context.trees`): hand-checked layouts, and on random
sequences the invariants the tree attention mask relies on."""

from __future__ import annotations

import random

import pytest

from trainer.context.trees import PackedRow, pack_trees


def ancestors_by_subtree_end(row: PackedRow, i: int) -> list[int]:
    """The nodes node i may attend to under the tree mask: j <= i < subtree_end[j]."""
    return [j for j in range(i + 1) if i < row.subtree_end[j]]


def check_row(row: PackedRow, sequences: list[list[int]]) -> None:
    """Every member reads back from its path; each node sees exactly its own root path."""
    seen_from: dict[int, list[int]] = {}
    for member, path in zip(row.members, row.paths, strict=True):
        assert [row.token_ids[n] for n in path] == sequences[member]
        assert [row.position_ids[n] for n in path] == list(range(len(path)))
        for depth, node in enumerate(path):
            assert seen_from.setdefault(node, path[: depth + 1]) == path[: depth + 1]
    assert sorted(seen_from) == list(range(len(row)))  # every node is on some path
    for node, root_path in seen_from.items():
        assert ancestors_by_subtree_end(row, node) == root_path
    assert len(row.position_ids) == len(row.subtree_end) == len(row)


def test_a_shared_prefix_is_laid_out_once():
    (row,) = pack_trees([[1, 2, 4, 5], [1, 2, 3]], max_row_tokens=100)
    assert row.token_ids == [1, 2, 3, 4, 5]
    assert row.position_ids == [0, 1, 2, 2, 3]
    assert row.subtree_end == [5, 5, 3, 5, 5]
    assert row.members == [1, 0]
    assert row.paths == [[0, 1, 2], [0, 1, 3, 4]]
    assert not row.is_chain


def test_identical_sequences_share_every_node_and_keep_their_own_paths():
    (row,) = pack_trees([[7, 8, 9], [7, 8, 9], [7, 8]], max_row_tokens=100)
    assert row.token_ids == [7, 8, 9]
    assert row.position_ids == [0, 1, 2]
    assert row.subtree_end == [3, 3, 3]
    assert sorted(row.members) == [0, 1, 2]
    assert {m: p for m, p in zip(row.members, row.paths, strict=True)} == {
        0: [0, 1, 2],
        1: [0, 1, 2],
        2: [0, 1],
    }
    assert row.is_chain  # nothing branches: plain causal attention is the tree mask


def test_a_sequence_that_is_a_prefix_of_another_adds_no_nodes():
    (row,) = pack_trees([[1, 2, 3, 4], [1, 2]], max_row_tokens=4)
    assert row.token_ids == [1, 2, 3, 4]
    assert row.position_ids == [0, 1, 2, 3]
    assert row.subtree_end == [4, 4, 4, 4]
    assert row.members == [1, 0] and row.paths == [[0, 1], [0, 1, 2, 3]]
    assert row.is_chain


def test_disjoint_trees_in_one_row_never_see_each_other():
    sequences = [[5, 6, 7], [1, 2], [5, 6, 8], [1, 3]]
    (row,) = pack_trees(sequences, max_row_tokens=100)
    assert row.token_ids == [1, 2, 3, 5, 6, 7, 8]
    assert row.position_ids == [0, 1, 1, 0, 1, 2, 2]
    assert row.subtree_end == [3, 2, 3, 7, 7, 6, 7]
    assert ancestors_by_subtree_end(row, 3) == [3]  # the second root sees only itself
    assert ancestors_by_subtree_end(row, 6) == [3, 4, 6]
    assert not row.is_chain
    check_row(row, sequences)


def test_rows_respect_the_node_budget_and_a_longer_sequence_goes_alone():
    sequences = [[1] * 3 + [2, 3], [1] * 3 + [4], [9] * 12, [5, 6, 7], [5, 6, 8, 8], [1] * 3]
    rows = pack_trees(sequences, max_row_tokens=8)
    for row in rows:
        assert len(row) <= 8 or len(row.members) == 1
        check_row(row, sequences)
    assert sorted(m for row in rows for m in row.members) == list(range(len(sequences)))
    (alone,) = [row for row in rows if 2 in row.members]
    assert alone.members == [2] and len(alone) == 12
    # what fits shares: the [1,1,1] family costs 3 + 2 + 1 nodes in one row
    (family,) = [row for row in rows if 0 in row.members]
    assert sorted(family.members) == [0, 1, 5] and len(family) == 6


def random_sequences(rng: random.Random) -> list[list[int]]:
    """Small alphabets and shared stems: many shared prefixes, duplicates, prefixes."""
    stems = [[rng.randrange(4) for _ in range(rng.randrange(0, 6))] for _ in range(3)]
    out = []
    for _ in range(rng.randrange(1, 12)):
        tail = [rng.randrange(4) for _ in range(rng.randrange(0, 6))]
        seq = rng.choice(stems) + tail
        out.append(seq or [rng.randrange(4)])
    return out


def distinct_prefixes(sequences: list[list[int]]) -> int:
    return len({tuple(s[:k]) for s in sequences for k in range(1, len(s) + 1)})


@pytest.mark.parametrize("seed", range(40))
def test_one_row_holds_one_node_per_distinct_prefix(seed):
    sequences = random_sequences(random.Random(seed))
    (row,) = pack_trees(sequences, max_row_tokens=10_000)
    assert len(row) == distinct_prefixes(sequences)
    check_row(row, sequences)
    longest = max(sequences, key=len)
    assert row.is_chain == all(s == longest[: len(s)] for s in sequences)


@pytest.mark.parametrize("seed", range(40))
def test_random_packings_keep_every_sequence_and_the_mask_invariants(seed):
    rng = random.Random(1000 + seed)
    sequences = random_sequences(rng)
    budget = rng.randrange(3, 16)
    rows = pack_trees(sequences, max_row_tokens=budget)
    assert sorted(m for row in rows for m in row.members) == list(range(len(sequences)))
    for row in rows:
        assert len(row) <= budget or len(row.members) == 1
        assert len(row) == distinct_prefixes([sequences[m] for m in row.members])
        check_row(row, sequences)

"""Deterministic task generation: which split a task is in, its id, and drawing `n` of them.

Owns: the rule that a task's split is a function of its *content* (a sha256 of a key such
as "add:3:4"), never of the seed or the draw order, so train and test are disjoint for every
seed; `draw_tasks`, the sampling loop for large task spaces, and `shuffled_tasks` for small
ones listed in full.

Must not know about any particular task.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterator
from typing import Any, Literal

Split = Literal["train", "test"]
SPLITS: tuple[Split, ...] = ("train", "test")
TEST_FRACTION = 0.2


def check_split(split: str) -> Split:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
    return split  # type: ignore[return-value]


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def split_of(family: str, key: str) -> Split:
    """The split of the task `key` of `family`: "test" for about TEST_FRACTION of keys."""
    return "test" if _digest(f"split/{family}/{key}") % 1000 < TEST_FRACTION * 1000 else "train"


def task_id(family: str, key: str) -> str:
    """A stable id: the family and 10 hex digits of the content key."""
    return f"{family}-{_digest(f'id/{family}/{key}'):016x}"[: len(family) + 11]


def rng_for(family: str, split: str, seed: int) -> random.Random:
    return random.Random(_digest(f"rng/{family}/{split}/{seed}"))


def draw_tasks(
    family: str,
    split: str,
    seed: int,
    n: int,
    make: Callable[[random.Random], tuple[str, dict[str, Any]]],
    *,
    max_draws_per_task: int = 200,
) -> Iterator[dict[str, Any]]:
    """Yield `n` distinct tasks of `split`: `make(rng)` returns (content key, task fields);
    tasks of the other split and repeats are skipped. Raises ValueError when the task space
    of the split is too small for `n`."""
    split = check_split(split)
    rng = rng_for(family, split, seed)
    seen: set[str] = set()
    draws = 0
    while len(seen) < n:
        draws += 1
        if draws > n * max_draws_per_task:
            raise ValueError(f"{family}: only {len(seen)} distinct {split} tasks, asked for {n}")
        key, fields = make(rng)
        if key in seen or split_of(family, key) != split:
            continue
        seen.add(key)
        yield {"id": task_id(family, key), "family": family, **fields}


def shuffled_tasks(
    family: str,
    split: str,
    seed: int,
    space: list[tuple[str, dict[str, Any]]],
    n: int | None = None,
) -> Iterator[dict[str, Any]]:
    """For a small task space listed in full as (content key, task fields): the tasks of
    `split` in a seed-dependent order, the first `n` of them (default: all)."""
    split = check_split(split)
    mine = [(key, fields) for key, fields in space if split_of(family, key) == split]
    if n is not None and n > len(mine):
        raise ValueError(f"{family}: only {len(mine)} distinct {split} tasks, asked for {n}")
    rng_for(family, split, seed).shuffle(mine)
    for key, fields in mine[:n]:
        yield {"id": task_id(family, key), "family": family, **fields}

"""Multi-task cocktails: what share of each training batch each task family gets.

Owns the pure arithmetic of a run's `task_mix` (`{family: weight}`): the effective mix at a
step of a linear schedule (`effective_mix`), whole-group quotas that keep each family
within one group of its exact share (`quotas`), and which buffered groups a batch takes
(`select`). Plain Python: knows nothing about HTTP, runs, or torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

DEFAULT_FAMILY = "default"  # the family of an episode created without `task_family`


def family_of(task_family: str | None) -> str:
    return task_family if task_family is not None else DEFAULT_FAMILY


def effective_mix(
    start: Mapping[str, float],
    to: Mapping[str, float] | None,
    steps: int,
    elapsed: int,
) -> dict[str, float]:
    """The mix `elapsed` steps into a linear schedule from `start` to `to` over `steps`
    steps (a family missing on one side weighs 0 there); `start` itself without `to`."""
    if to is None:
        return dict(start)
    t = min(max(elapsed / steps, 0.0), 1.0)
    families = list(start) + [family for family in to if family not in start]
    return {f: (1 - t) * start.get(f, 0.0) + t * to.get(f, 0.0) for f in families}


def shares(mix: Mapping[str, float]) -> dict[str, float]:
    """The weights normalised to sum to 1."""
    total = sum(mix.values())
    return {family: weight / total for family, weight in mix.items()}


def quotas(mix: Mapping[str, float], count: int) -> dict[str, int]:
    """`count` groups apportioned by weight (largest remainder, ties in mix order): the
    quotas sum to `count` and each is its exact share rounded down or up."""
    exact = {family: share * count for family, share in shares(mix).items()}
    result = {family: math.floor(value) for family, value in exact.items()}
    left = count - sum(result.values())
    order = sorted(exact, key=lambda f: result[f] - exact[f])  # largest remainder first
    for family in order[:left]:
        result[family] += 1
    return result


def select(families: Sequence[str], want: Mapping[str, int], count: int) -> list[int]:
    """Indices (ascending, i.e. oldest first) of at most `count` groups whose families are
    `families` (oldest first): each family's oldest `want[f]` groups, then the oldest of the
    rest to fill the batch when a family has fewer groups than its quota."""
    taken: dict[str, int] = {}
    chosen: list[int] = []
    for i, family in enumerate(families):
        if taken.get(family, 0) < want.get(family, 0):
            taken[family] = taken.get(family, 0) + 1
            chosen.append(i)
    picked = set(chosen)
    rest = [i for i in range(len(families)) if i not in picked]
    chosen += rest[: max(0, count - len(chosen))]
    return sorted(chosen[:count])


def short_families(available: Mapping[str, int], want: Mapping[str, int]) -> list[str]:
    """The families with fewer complete groups than their quota."""
    return [family for family, n in want.items() if available.get(family, 0) < n]

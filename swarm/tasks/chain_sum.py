"""`chain_sum`: add and subtract a chain of integers (reasoning-gym).

"State the final answer to the following arithmetic problem: 4 - 1 - 7 =" The reply ends
"Answer: -4" (without that line, its last number counts); the reward is reasoning-gym's
chain_sum scorer on it: 1.0 for the right number, else 0.0.

Levels (`level=`, or any knob of reasoning-gym's `ChainSumConfig` as a param):
- "easy" (default): two 1-digit terms ("6 + 0 =", about 200 problems in all);
- "medium": 2-3 terms of up to 2 digits;
- "standard": the library's defaults (2-6 terms of 1-4 digits).

Must not know about the gateway: the rollout uses only `Episode`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from swarm.tasks import reasoning_gym

FAMILY = "chain_sum"
DATASET = "chain_sum"
MAX_TOKENS = 32
LEVELS: dict[str, dict[str, Any]] = {
    "easy": {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1},
    "medium": {"min_terms": 2, "max_terms": 3, "min_digits": 1, "max_digits": 2},
    "standard": {},
}  # fmt: skip
reward = reasoning_gym.reward  # the dataset's own scorer on the reply's answer
DEFAULT_LEVEL = "easy"


def tasks(
    split: str = "train",
    seed: int = 0,
    n: int | None = None,
    level: str = DEFAULT_LEVEL,
    **params: Any,
) -> Iterator[dict[str, Any]]:
    """`n` tasks of `split` at `level` (default: up to 1,000); `params` override its knobs."""
    return reasoning_gym.draw_at_level(FAMILY, DATASET, LEVELS, level, split, seed, n, params,
                                       MAX_TOKENS)  # fmt: skip


async def rollout(task: dict[str, Any], episode) -> float:
    return await reasoning_gym.rollout(task, episode)

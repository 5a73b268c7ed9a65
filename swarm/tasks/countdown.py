"""`countdown`: reach a target number from given numbers with + - * / (reasoning-gym).

"Calculate 35 using all of these numbers: 7, 5, 1." The reply ends "Answer: 7*5*1"; the
reward is reasoning-gym's countdown scorer on that expression: 1.0 when it uses exactly the
given numbers and equals the target, 0.05 for a wrong expression over the right numbers,
0.01 for one that does not parse, and 0.0 when the reply has no answer at all.

Levels (`level=`, or any knob of reasoning-gym's `CountdownConfig` as a param):
- "tiny": 2 numbers of 1..10, target 1..100 ("make 10 from 7, 3");
- "easy" (default): 3 numbers of 1..10, target 1..100;
- "standard": the library's defaults, the usual game (4-6 numbers of 1..100, target 100..999).

Must not know about the gateway: the rollout uses only `Episode`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from swarm.tasks import reasoning_gym

FAMILY = "countdown"
DATASET = "countdown"
MAX_TOKENS = 48
LEVELS: dict[str, dict[str, Any]] = {
    "tiny": {"min_numbers": 2, "max_numbers": 2, "max_value": 10, "min_target": 1, "max_target": 100},
    "easy": {"min_numbers": 3, "max_numbers": 3, "max_value": 10, "min_target": 1, "max_target": 100},
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

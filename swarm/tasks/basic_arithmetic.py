"""`basic_arithmetic`: evaluate an arithmetic expression (reasoning-gym).

"Calculate 6 + 10." The reply ends "Answer: 16" (without that line, its last number
counts); the reward is reasoning-gym's basic_arithmetic scorer on it: 1.0 for the right
value; a wrong one containing the right one gets the library's default partial credit,
len(right) / len(given) ("Answer: 12345" for 1 scores 0.2); else 0.0.

Levels (`level=`, or any knob of reasoning-gym's `BasicArithmeticDatasetConfig`):
- "easy" (default): two 1-digit terms with + - *, no parentheses or negation;
- "medium": 2-3 terms of up to 2 digits with + - *, no parentheses;
- "standard": the library's defaults (2-6 terms of 1-4 digits, + - * /, parentheses).

Must not know about the gateway: the rollout uses only `Episode`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from swarm.tasks import reasoning_gym

FAMILY = "basic_arithmetic"
DATASET = "basic_arithmetic"
MAX_TOKENS = 32
LEVELS: dict[str, dict[str, Any]] = {
    "easy": {
        "min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1,
        "operators": ["+", "-", "*"], "allow_parentheses": False, "allow_negation": False,
    },
    "medium": {
        "min_terms": 2, "max_terms": 3, "min_digits": 1, "max_digits": 2,
        "operators": ["+", "-", "*"], "allow_parentheses": False, "allow_negation": False,
    },
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

"""`letter_counting`: count a letter's occurrences in a short text (reasoning-gym).

'How many times does the letter "i" appear in the text: "solicit"?' The reply ends
"Answer: 2" (without that line, its last number counts); the reward is reasoning-gym's
letter_counting scorer on it: 1.0 for the right count; a wrong one containing the right
one gets the library's default partial credit, len(right) / len(given); else 0.0.

Levels (`level=`, or any knob of reasoning-gym's `LetterCountingConfig` as a param):
- "easy" (default): a text of 1-3 words;
- "standard": the library's defaults (5-15 words).

Must not know about the gateway: the rollout uses only `Episode`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from swarm.tasks import reasoning_gym

FAMILY = "letter_counting"
DATASET = "letter_counting"
MAX_TOKENS = 32
LEVELS: dict[str, dict[str, Any]] = {
    "easy": {"min_words": 1, "max_words": 3},
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

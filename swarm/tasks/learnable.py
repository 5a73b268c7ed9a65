"""`learnable`: say a given word — the smallest task a 135M model learns in minutes.

Prompts like "Reply with the word banana." (a few phrasings × a few words); the reward is
1.0 when the reply contains the word (whole word, case-insensitive), else 0.0. Completions
are capped at `MAX_TOKENS` so training stays cheap. A similar "says banana" reward took
SmolLM2-135M-Instruct from 0.06 to 1.0 in ~17 steps of a hand-written GRPO loop (the
project's field notes); through the gateway and `swarm run` this task went from ~0.35
to ≥ 0.9 by step 13–18 of 20 (`bench/learning.py`, group 8 × 4 prompts, lr 2e-5).

Must not know about the gateway: the rollout uses only `Episode`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from swarm.tasks.splits import shuffled_tasks

FAMILY = "learnable"
MAX_TOKENS = 24
WORDS = (
    "banana", "apple", "orange", "purple", "ocean", "guitar", "rocket", "pencil",
    "tiger", "coffee", "window", "silver", "garden", "winter", "candle", "pirate",
)  # fmt: skip
PHRASINGS = (
    "Reply with the word {word}.",
    "Say {word}.",
    "Answer with one word: {word}.",
    "Write the word '{word}' and nothing else.",
    "Please say the word {word}.",
    "Respond with just this word: {word}",
    "What word comes next? Say {word}.",
    "Type {word}.",
)


def tasks(split: str = "train", seed: int = 0, n: int | None = None) -> Iterator[dict[str, Any]]:
    """`n` tasks of `split` (default: all of the split's ~100), in a seed-dependent order."""
    space = [
        (f"{word}:{i}", {"prompt": phrasing.format(word=word), "word": word})
        for word in WORDS
        for i, phrasing in enumerate(PHRASINGS)
    ]
    return shuffled_tasks(FAMILY, split, seed, space, n)


def reward(reply: str | None, task: dict[str, Any]) -> float:
    """1.0 when `reply` contains the task's word (whole word, any case), else 0.0."""
    return 1.0 if re.search(rf"\b{re.escape(task['word'])}\b", reply or "", re.IGNORECASE) else 0.0


async def rollout(task: dict[str, Any], episode) -> float:
    llm = episode.openai()
    response = await llm.chat.completions.create(
        model=episode.model,
        messages=[{"role": "user", "content": task["prompt"]}],
        max_tokens=MAX_TOKENS,
    )
    return reward(response.choices[0].message.content, task)

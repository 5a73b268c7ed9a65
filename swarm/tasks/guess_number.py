"""`guess_number`: a multi-turn game — find a hidden number from "higher"/"lower" hints.

The environment (`GuessNumberGame`) hides `target` in `low..high` (high ∈ 10, 20, 50, 100;
the target is part of the task, so fixed per seed) and allows `max_turns` guesses
(ceil(log2(high)) + 1: enough for a binary search). The first integer of each reply is the
guess; a reply without one still uses a turn.

Reward: 1.0 on a hit; otherwise partial by closeness of the best guess,
0.5 × (1 − |best − target| / (high − low)), floored at 0; 0.0 when no guess was made.

Must not know about the gateway: the rollout uses only `Episode`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from swarm.tasks.answers import first_integer
from swarm.tasks.splits import shuffled_tasks

FAMILY = "guess_number"
RANGES = (10, 20, 50, 100)
MAX_TOKENS = 16
MISS_WEIGHT = 0.5


def tasks(split: str = "train", seed: int = 0, n: int | None = None) -> Iterator[dict[str, Any]]:
    """`n` games of `split` (default: all of the split's ~150), in a seed-dependent order."""
    space = [
        (
            f"{high}:{target}",
            {"low": 1, "high": high, "target": target, "max_turns": math.ceil(math.log2(high)) + 1},
        )
        for high in RANGES
        for target in range(1, high + 1)
    ]
    return shuffled_tasks(FAMILY, split, seed, space, n)


@dataclass
class GuessNumberGame:
    low: int
    high: int
    target: int
    max_turns: int
    guesses: list[int | None] = field(default_factory=list)

    @classmethod
    def from_task(cls, task: dict[str, Any]) -> GuessNumberGame:
        return cls(task["low"], task["high"], task["target"], task["max_turns"])

    def opening(self) -> str:
        return (
            f"I am thinking of a number between {self.low} and {self.high}. Guess it: reply "
            f"with a single number. I will say if my number is higher or lower. "
            f"You have {self.max_turns} guesses."
        )

    @property
    def won(self) -> bool:
        return self.target in self.guesses

    @property
    def over(self) -> bool:
        return self.won or len(self.guesses) >= self.max_turns

    def play(self, reply: str | None) -> str:
        """Take one reply as a guess; the environment's answer."""
        assert not self.over, "the game is over"
        guess = first_integer(reply)
        self.guesses.append(guess)
        if guess is None:
            return f"Please reply with a number between {self.low} and {self.high}."
        if guess == self.target:
            return "Correct!"
        return "Higher." if guess < self.target else "Lower."

    def reward(self) -> float:
        if self.won:
            return 1.0
        made = [guess for guess in self.guesses if guess is not None]
        if not made:
            return 0.0
        best = min(abs(guess - self.target) for guess in made)
        return MISS_WEIGHT * max(0.0, 1.0 - best / (self.high - self.low))


async def rollout(task: dict[str, Any], episode) -> float:
    llm = episode.openai()
    game = GuessNumberGame.from_task(task)
    messages = [{"role": "user", "content": game.opening()}]
    while not game.over:
        response = await llm.chat.completions.create(
            model=episode.model, messages=messages, max_tokens=MAX_TOKENS
        )
        reply = response.choices[0].message.content or ""
        messages += [
            {"role": "assistant", "content": reply},
            {"role": "user", "content": game.play(reply)},
        ]
    return game.reward()

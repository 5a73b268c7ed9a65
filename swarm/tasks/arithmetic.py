"""`arithmetic`: one-step word problems with integer answers (a + b, a - b, a × b).

Numbers are small (sums and differences of 1..99, products of 2..12 by 2..20). The reward
is 1.0 when the *last* integer in the reply equals the answer ("12", "12.0" and "1,200"
read as integers), else 0.0 — so "3 + 4 = 7" scores, and so does a worked answer that
ends on the result.

Must not know about the gateway: the rollout uses only `Episode`.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from swarm.tasks.answers import last_integer
from swarm.tasks.splits import draw_tasks

FAMILY = "arithmetic"
MAX_TOKENS = 64
SYSTEM_PROMPT = "Solve the problem. End your reply with the answer as a single number."
PROBLEMS = {
    "add": (
        "Tom has {a} apples and buys {b} more. How many apples does he have now?",
        "A shelf holds {a} books. Someone adds {b} books. How many books are on the shelf?",
        "There are {a} birds on a tree and {b} more arrive. How many birds are there?",
        "What is {a} plus {b}?",
    ),
    "sub": (
        "Sara has {a} stickers and gives away {b}. How many stickers does she have left?",
        "A bus carries {a} people. At the stop {b} get off. How many are still on the bus?",
        "What is {a} minus {b}?",
    ),
    "mul": (
        "A box holds {a} pencils. How many pencils are in {b} boxes?",
        "Each row has {a} chairs and there are {b} rows. How many chairs are there?",
        "What is {a} times {b}?",
    ),
}


def _make(rng: random.Random) -> tuple[str, dict[str, Any]]:
    operation = rng.choice(sorted(PROBLEMS))
    if operation == "mul":
        a, b = rng.randint(2, 12), rng.randint(2, 20)
        answer = a * b
    else:
        a, b = rng.randint(1, 99), rng.randint(1, 99)
        if operation == "sub":
            a, b = max(a, b), min(a, b)
        answer = a + b if operation == "add" else a - b
    phrasing = rng.randrange(len(PROBLEMS[operation]))
    question = PROBLEMS[operation][phrasing].format(a=a, b=b)
    key = f"{operation}:{a}:{b}"  # the split ignores phrasing: one sum never sits in both
    return key, {"question": question, "answer": answer, "operation": operation}


def tasks(split: str = "train", seed: int = 0, n: int = 1000) -> Iterator[dict[str, Any]]:
    """`n` distinct problems of `split`, deterministic per `seed`."""
    return draw_tasks(FAMILY, split, seed, n, _make)


def reward(reply: str | None, task: dict[str, Any]) -> float:
    """1.0 when the last integer in `reply` is the answer, else 0.0."""
    return 1.0 if last_integer(reply) == task["answer"] else 0.0


async def rollout(task: dict[str, Any], episode) -> float:
    llm = episode.openai()
    response = await llm.chat.completions.create(
        model=episode.model,
        messages=[
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": task["question"]},
        ],
        max_tokens=MAX_TOKENS,
    )
    return reward(response.choices[0].message.content, task)

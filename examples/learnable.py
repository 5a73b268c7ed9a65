"""Teach a model to say a word: the smallest workflow that trains.

swarm run examples/learnable.py --gateway http://127.0.0.1:8400 --run banana
"""

import swarm
from swarm.tasks import learnable


def tasks(split: str = "train"):
    return learnable.tasks(split, seed=0)  # {"id", "prompt": "Reply with the word banana.", "word"}


async def rollout(task: dict, episode: swarm.Episode) -> float:
    llm = episode.openai()  # an AsyncOpenAI whose calls are recorded into this episode
    response = await llm.chat.completions.create(
        model=episode.model,
        messages=[{"role": "user", "content": task["prompt"]}],
        max_tokens=24,
    )
    return learnable.reward(response.choices[0].message.content, task)  # 1.0 if it said the word

"""A live-edit test workflow: one short chat call, reward `REWARD`. The test copies this
file, then edits `REWARD` while the run trains: each code version's episodes and
`code/<version>/reward/mean` metrics then carry that version's constant."""

from collections.abc import Iterable

import swarm

REWARD = 0.25


def tasks(split: str = "train") -> Iterable[dict]:
    for i in range(4):
        yield {"id": f"{split}-{i}", "question": f"Count to {i + 3}."}


async def rollout(task: dict, episode: swarm.Episode) -> float:
    llm = episode.openai()
    await llm.chat.completions.create(
        model=episode.model,
        messages=[{"role": "user", "content": task["question"]}],
        max_tokens=4,
    )
    return REWARD

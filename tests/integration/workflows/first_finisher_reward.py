"""A test workflow whose every group has reward variance, whatever the `tiny` model writes:
in each group the first episode to finish scores 1, the others 0. For tests that assert a
gradient on every step (`length_reward.py` leaves about one group in seven with equal
rewards, and a step whose groups all have equal rewards has no gradient)."""

from collections.abc import Iterable

import swarm

_rewarded_groups: set[str] = set()  # one `swarm run` process runs a group's episodes


def tasks(split: str = "train") -> Iterable[dict]:
    for i in range(4):
        yield {"id": f"{split}-{i}", "question": f"Count to {i + 3}."}


async def rollout(task: dict, episode: swarm.Episode) -> float:
    llm = episode.openai()
    await llm.chat.completions.create(
        model=episode.model,
        messages=[{"role": "user", "content": task["question"]}],
        max_tokens=12,
        temperature=1.0,
    )
    if episode.group_id in _rewarded_groups:
        return 0.0
    _rewarded_groups.add(episode.group_id)
    return 1.0

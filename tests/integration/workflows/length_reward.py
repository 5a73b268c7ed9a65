"""A test workflow whose reward varies within groups (reply length mod 7), so GRPO always
has a signal — even on the random `tiny` model, whose replies are noise."""

from collections.abc import Iterable

import swarm


def tasks(split: str = "train") -> Iterable[dict]:
    for i in range(4):
        yield {"id": f"{split}-{i}", "question": f"Count to {i + 3}."}


async def rollout(task: dict, episode: swarm.Episode) -> float:
    llm = episode.openai()
    reply = await llm.chat.completions.create(
        model=episode.model,
        messages=[{"role": "user", "content": task["question"]}],
        max_tokens=12,
        temperature=1.0,
    )
    return (len(reply.choices[0].message.content or "") % 7) / 6

"""A chaos-test workflow: reward = reply length mod 7 (varies within groups), and a ledger.

The rollout finishes its own episode and, only once `finish` has returned, appends the
episode id to the file named by `$SWARMRL_CHAOS_LEDGER` — so every line is an episode the
gateway acknowledged as finished. (The runner sees the episode closed and just counts it.)
"""

import os
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
        max_tokens=6,
        temperature=1.0,
    )
    reward = (len(reply.choices[0].message.content or "") % 7) / 6
    await episode.finish(reward)
    with open(os.environ["SWARMRL_CHAOS_LEDGER"], "a") as ledger:
        ledger.write(episode.episode_id + "\n")
    return reward

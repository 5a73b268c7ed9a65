"""Countdown (reasoning-gym): reach the target from the given numbers with + - * /.

    swarm run examples/countdown.py --gateway http://127.0.0.1:8400 --run countdown

One chat call per task (system prompt: end with "Answer: <expression>", at most 48 tokens);
the reward is reasoning-gym's own countdown scorer on the expression (1.0 solved, 0.05 a
wrong expression over the right numbers, 0.01 unparsable, 0.0 no answer). LEVEL picks the
difficulty: "tiny" (2 numbers of 1..10), "easy" (3 numbers of 1..10, the default) or
"standard" (the usual game: 4-6 numbers of 1..100, target 100..999).
"""

import swarm
from swarm.tasks import countdown

LEVEL = "easy"


def tasks(split: str = "train"):
    # {"id", "question", "answer", "metadata": {"numbers", "target", ...}, "dataset", "config"}
    return countdown.tasks(split, seed=0, level=LEVEL)


async def rollout(task: dict, episode: swarm.Episode) -> float:
    llm = episode.openai()  # an AsyncOpenAI whose calls are recorded into this episode
    response = await llm.chat.completions.create(
        model=episode.model,
        messages=[
            {"role": "system", "content": countdown.reasoning_gym.SYSTEM_PROMPT},
            {"role": "user", "content": task["question"]},
        ],
        max_tokens=countdown.MAX_TOKENS,
    )
    return countdown.reward(response.choices[0].message.content, task)

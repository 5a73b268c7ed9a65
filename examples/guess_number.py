"""A multi-turn game: find a hidden number from "Higher."/"Lower." hints.

    swarm run examples/guess_number.py --gateway http://127.0.0.1:8400 --run guess

The rollout is the task's reference one (`swarm/tasks/guess_number.py`): the environment,
`GuessNumberGame`, answers each reply until a hit or the last allowed guess. Reward: 1.0 on
a hit, else up to 0.5 by how close the best guess came.
"""

from swarm.tasks import guess_number
from swarm.tasks.guess_number import rollout  # noqa: F401  (the workflow's `rollout`)


def tasks(split: str = "train"):
    return guess_number.tasks(split, seed=0)  # {"id", "low", "high", "target", "max_turns"}

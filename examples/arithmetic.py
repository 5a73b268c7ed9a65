"""Word problems with integer answers (+, −, ×); the last integer of the reply is the answer.

    swarm run examples/arithmetic.py --gateway http://127.0.0.1:8400 --run arithmetic

The rollout is the task's reference one (`swarm/tasks/arithmetic.py`): one chat call with a
system prompt asking for the answer as a number, at most 64 tokens, reward 1.0 or 0.0.
"""

from swarm.tasks import arithmetic
from swarm.tasks.arithmetic import rollout  # noqa: F401  (the workflow's `rollout`)


def tasks(split: str = "train"):
    return arithmetic.tasks(split, seed=0)  # {"id", "question", "answer", "operation"}

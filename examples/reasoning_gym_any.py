"""Any reasoning-gym dataset by name, with its difficulty knobs: here chain_sum at 3 terms.

    swarm run examples/reasoning_gym_any.py --gateway http://127.0.0.1:8400 --run rg

DATASET is any name of `reasoning_gym.factory.DATASETS` (about 100: "countdown",
"basic_arithmetic", "letter_counting", "spell_backward", ...), KNOBS any fields of its config
class. The rollout is the family's reference one (`swarm/tasks/reasoning_gym.py`): one chat
call asking for "Answer: <answer>", rewarded by the dataset's own `score_answer`.
"""

from swarm.tasks import reasoning_gym
from swarm.tasks.reasoning_gym import rollout  # noqa: F401  (the workflow's `rollout`)

DATASET = "chain_sum"
KNOBS = {"min_terms": 3, "max_terms": 3, "min_digits": 1, "max_digits": 1}


def tasks(split: str = "train"):
    return reasoning_gym.tasks(split, seed=0, dataset=DATASET, **KNOBS)

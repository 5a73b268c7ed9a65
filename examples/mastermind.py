"""Mastermind (TextArena): crack a hidden code from black/white-peg feedback, multi-turn.

    pip install 'swarmrl[games]'   # TextArena; it runs offline
    swarm run examples/mastermind.py --gateway http://127.0.0.1:8400 --run mastermind

The rollout is the family's reference one (`swarm/tasks/mastermind.py`): TextArena's own
Mastermind env gives the rules, answers each reply ("[2 1]") with pegs, and ends the game;
each turn is one chat call on the growing conversation (≤ 24 tokens), so an episode's calls
merge into one timeline. Reward: TextArena's — 1 for cracking the code, else (black + 0.5 ×
white) / code length of the last valid guess, 0.0 without one. LEVEL picks the difficulty:
"tiny" (2 digits of 1..4, 6 guesses; the default), "easy" (3 of 1..5, 8 guesses),
"standard" (TextArena's Mastermind-v0: 4 of 1..6, 20 guesses) or "hard" (4 of 1..8, 30).
"""

from swarm.tasks import mastermind
from swarm.tasks.mastermind import rollout  # noqa: F401  (the workflow's `rollout`)

LEVEL = "tiny"


def tasks(split: str = "train"):
    # {"id", "env_id", "env_seed", "code_length", "num_numbers", "max_turns", ...}
    return mastermind.tasks(split, seed=0, level=LEVEL)

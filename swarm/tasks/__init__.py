"""Task environments that ship with swarmrl, each with an exact verifier.

Every module here has `tasks(split, seed=0, n=...)` (procedurally generated, deterministic
per seed, train and test disjoint by content), a verifier, and a reference
`async def rollout(task, episode)`; `examples/<name>.py` is the matching workflow file.

- `learnable`: "Reply with the word banana." — the reply must contain the word.
- `arithmetic`: word problems with integer answers; the last integer of the reply counts.
- `calculator`: multi-turn tool use with a `calculator` tool (a safe evaluator).
- `guess_number`: a multi-turn game with "higher"/"lower" feedback.
- `reasoning_gym`: any reasoning-gym dataset by name (`dataset=`, its knobs as params),
  rewarded by the dataset's own `score_answer`; first-class, with difficulty levels:
  `countdown`, `chain_sum`, `basic_arithmetic`, `letter_counting`.
- `mastermind`: TextArena's Mastermind, a multi-turn code-breaking game, with difficulty
  levels; TextArena's env decides the reward (the `games` extra).
- `bfcl`: function calling from the Berkeley Function Calling Leaderboard (its wheel's data,
  `category=` simple / multiple / parallel / parallel_multiple), the functions offered as
  OpenAI tools, rewarded by BFCL's own AST checker on the reply's `tool_calls`. Its tasks are
  BFCL's entries (not generated); the split is a function of the BFCL id.

Every task carries `"family"` (the module name), which `swarm run` sends as the episode's
`task_family`. `family(name)` is the one place a family name becomes its tasks and rollout:
a module here, or any other reasoning-gym dataset by its own name (`family("leg_counting")`).
Must not know about the gateway's HTTP API: rollouts use only `Episode`.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

CATALOGUE = (
    "learnable",
    "arithmetic",
    "calculator",
    "guess_number",
    "countdown",
    "chain_sum",
    "basic_arithmetic",
    "letter_counting",
    "reasoning_gym",
    "mastermind",
    "bfcl",
)


def family(name: str) -> ModuleType | Any:
    """The task family `name`: its module in `swarm.tasks` (one of CATALOGUE), else the
    reasoning-gym dataset of that name as a family (`reasoning_gym.Dataset`); both have
    `tasks(split, seed, n, **params)`, `rollout(task, episode)` and `reward`. LookupError
    for anything else."""
    if name in CATALOGUE:
        return importlib.import_module(f"swarm.tasks.{name}")
    from swarm.tasks import reasoning_gym

    if name in reasoning_gym.dataset_names():
        return reasoning_gym.Dataset(name)
    raise LookupError(
        f"no task family {name!r}: swarm.tasks ships {', '.join(CATALOGUE)}, and any "
        f"reasoning-gym dataset by its name"
    )

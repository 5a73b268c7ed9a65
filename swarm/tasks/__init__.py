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

Every task carries `"family"` (the module name), which `swarm run` sends as the episode's
`task_family`. Must not know about the gateway's HTTP API: rollouts use only `Episode`.
"""

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
)

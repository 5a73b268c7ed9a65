"""Task environments that ship with swarmrl, each with an exact verifier.

Every module here has `tasks(split, seed=0, n=...)` (procedurally generated, deterministic
per seed, train and test disjoint by content), a verifier, and a reference
`async def rollout(task, episode)`; `examples/<name>.py` is the matching workflow file.

- `learnable`: "Reply with the word banana." — the reply must contain the word.
- `arithmetic`: word problems with integer answers; the last integer of the reply counts.
- `calculator`: multi-turn tool use with a `calculator` tool (a safe evaluator).
- `guess_number`: a multi-turn game with "higher"/"lower" feedback.

Every task carries `"family"` (the module name), which `swarm run` sends as the episode's
`task_family`. Must not know about the gateway's HTTP API: rollouts use only `Episode`.
"""

CATALOGUE = ("learnable", "arithmetic", "calculator", "guess_number")

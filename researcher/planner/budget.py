"""Sizing an experiment from its time budget: steps per run, held-out episodes, a round's cost.

Runs go one after another on a small box, so each run gets
`budget_s × train share / (arms × seeds)` of training time. Shared by both planners (the LLM
planner is told the sizes; the template planner uses them as they are). Must not know
about families, prompts or the gateway.
"""

from __future__ import annotations

BUDGET_SPLIT = {"validate": 0.05, "train": 0.7, "evaluate": 0.15, "report": 0.1}
# before a pilot measures it: one training step of the bundled SmolLM2-135M on two cores,
# start-up and evaluation included (bench/concurrent_runs.py: 4.1–5.7 steps/min across runs)
STEP_SECONDS = {"tiny": 2.0}
DEFAULT_STEP_SECONDS = 13.0


def step_seconds_for(model: str) -> float:
    """The planner's estimate of one training step of `model`, until a pilot measures it."""
    return STEP_SECONDS.get(model, DEFAULT_STEP_SECONDS)


def reserve_s(budget_s: float) -> float:
    """The end of the budget kept for the last evaluation and the report once a pilot has
    priced the runs (their evaluation included): 5% of it, at least a minute."""
    return max(60.0, 0.05 * budget_s)


MIN_STEPS, MAX_STEPS = 2, 200
MIN_EVAL_EPISODES, MAX_EVAL_EPISODES = 16, 48


def clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))


def steps_for(budget_s: float, runs: int, step_seconds: float) -> int:
    """Training steps per run: the training share of the budget, split over the runs."""
    per_run_s = budget_s * BUDGET_SPLIT["train"] / max(1, runs)
    return clamp(int(per_run_s / step_seconds), MIN_STEPS, MAX_STEPS)


def eval_episodes_for(
    budget_s: float, runs: int, step_seconds: float, episodes_per_step: int
) -> int:
    """Held-out tasks per run: what the evaluation share buys at about the cost of one
    training episode (a step's time over its episodes), between 16 and 48."""
    per_run_s = budget_s * BUDGET_SPLIT["evaluate"] / max(1, runs)
    per_episode_s = step_seconds / max(1, episodes_per_step)
    return clamp(int(per_run_s / per_episode_s), MIN_EVAL_EPISODES, MAX_EVAL_EPISODES)


def round_cost_s(runs: int, steps: int, step_seconds: float) -> float:
    """What one more round of the same size costs: its training time over the train share."""
    return runs * steps * step_seconds / BUDGET_SPLIT["train"]


def next_round_cost_s(
    arms: int, seeds: int, steps: int, step_seconds: float, seeds_per_look: int = 1
) -> float:
    """What the next look of a sequential study costs: the `seeds_per_look` seeds it adds per
    arm at this round's steps — earlier looks' runs are kept, not trained again (a look with
    fewer steps would not measure the same thing). `seeds` is accepted for old callers."""
    del seeds
    return round_cost_s(arms * seeds_per_look, steps, step_seconds)

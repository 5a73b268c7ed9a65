"""The pilot, and sizing the comparison from what it measured.

Before a comparison runs, the study trains the control arm's first seeds at the design's
settings (the *pilot*, `pilot_design`). From them (`summarise_pilot`):

- is the task learnable at these settings? the control's learned-or-not verdict against
  the untrained baseline (`researcher.learning`);
- what does a run really cost? the budget the pilot used per run, training, held-out
  evaluation and start-up included (`Pilot.run_seconds`), and seconds per training step;
- how much do seeds and held-out items vary? the seed-to-seed SD of the design's outcome
  and the item-to-item SD of held-out scores;
- in what units are the rewards? when they go beyond [0, 1] (a workflow scoring 0-100),
  `researcher.reward_units` multiplies the smallest effect (and a default margin) by the
  width of the range the pilot saw.

The pilot runs *are* the control's first seeds: the main design has the same settings, so
they are reused and the pilot costs nothing extra. When the control did not learn, `retune`
changes what the question leaves free — the learning rate (×3,
within `LR_CEILING`), else the steps (×2, within the budget) — never the factor under
study; the pilot runs are then evidence only (`kept` False) and the report says what
changed. `size_looks` turns the budget left into seeds per look and the number of looks of
the sequential rule (`researcher.sequential`), and `minimum_detectable_effect` states the
smallest true difference that design detects with 80% power at its last look — before
the treatment runs.

Pure arithmetic over plan records: knows nothing of LangGraph, the gateway or the database.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from researcher.intervals import t_quantile
from researcher.learning import is_baseline, learned_or_not
from researcher.outcomes import FINAL_SHARE, run_score, unscored_reason
from researcher.plan import MARGIN_DIRECTIONS, Design, Pilot, Reading, RunResult
from researcher.reward_units import in_reward_units, reward_range
from researcher.sequential import SINGLE_LOOK_LEVEL, spent_share
from swarm.protocol import RunSettings

PILOT_SEEDS = 2  # the fewest seeds that show seed-to-seed variation
# the gateway's run defaults (POST /runs) where an arm's settings do not name them
DEFAULT_GROUP_SIZE = RunSettings.model_fields["group_size"].default
DEFAULT_BATCH_GROUPS = RunSettings.model_fields["batch_groups"].default
MAX_LOOKS = 3  # the most looks of the sequential rule
MAX_SEEDS = 10  # the most seeds per arm a study sizes itself to (as `researcher start --seeds`)
POWER = 0.8
SIMULATED_STUDIES = 20_000  # simulated comparisons behind a minimum detectable effect
LR_CEILING = 1e-4  # a retune never raises the learning rate above this (full fine-tuning)
LR_RETUNE_FACTOR = 3.0
STEPS_RETUNE_FACTOR = 2


LEARNED_WORDS = {
    "learned": "the control learned",
    "did not learn": "the control did not learn",
    "unclear": "unclear whether the control learned",
}  # the pilot's verdict on the control, in words


def wants_pilot(main: Design) -> bool:
    """A design a pilot can serve: a control and a treatment, 2+ seeds per arm (with one
    seed nothing varies to measure, and no verdict can be drawn: a smoke run)."""
    roles = [arm.role for arm in main.arms]
    return "control" in roles and "treatment" in roles and len(main.seeds) >= 2


def pilot_design(main: Design, seeds: int = PILOT_SEEDS) -> Design:
    """The control arm alone, its first `seeds` seeds (no more than the design has), at the
    main design's settings."""
    control = [arm for arm in main.arms if arm.role == "control"][:1]
    seeds = max(1, min(seeds, len(main.seeds)))
    steps = (control[0].run.get("max_steps") if control else None) or main.steps
    return main.model_copy(
        update={
            "arms": control,
            "seeds": list(range(seeds)),
            "phase": "pilot",
            "look": 1,
            "max_looks": 1,
            "decision_rule": (
                f"Pilot: the control arm ({control[0].name if control else '-'}) trains "
                f"{seeds} seeds at the design's settings ({steps} steps) and is scored on "
                f"the held-out items beside the untrained model. It decides nothing about the "
                f"hypothesis: it checks that the task is learnable at these settings and "
                f"measures a run's cost and the seeds' and items' variation, from which the "
                f"comparison is sized and its minimum detectable effect stated before the "
                f"treatment runs."
            ),
        }
    )


def summarise_pilot(main: Design, results: list[RunResult], run_seconds: float | None) -> Pilot:
    """What the pilot runs (`results`, with the baseline) showed; see the module docstring."""
    baseline = next((r for r in results if is_baseline(r)), None)
    runs = [r for r in results if not is_baseline(r)]
    finished = [r for r in runs if r.status == "finished"]
    rewards = reward_range(results)
    learning = learned_or_not(in_reward_units(main, rewards), finished, baseline)
    scored = [r for r in finished if unscored_reason(main, r) is None]
    scores = [run_score(main, r) for r in scored]
    seed_sd = float(np.std(scores, ddof=1)) if len(scores) > 1 else None
    if seed_sd is not None and (floor := _sampling_sd(main, scored)) is not None:
        seed_sd = max(seed_sd, floor)  # two seeds can agree by chance (rewards are discrete)
    items = [np.asarray(r.eval_outcomes, dtype=float) for r in finished if r.eval_outcomes]
    item_sd = float(np.mean([v.std(ddof=1) for v in items if len(v) > 1])) if items else None
    per_step = [r.wall_s / max(1, len(r.curve)) for r in finished if r.wall_s and r.curve]
    control = next((a for a in main.arms if a.role == "control"), None)
    return Pilot(
        runs=[r.run for r in runs],
        work=training_work(control.run, main.steps) if control else None,
        steps=max((len(r.curve) for r in runs), default=0),
        step_seconds=float(np.mean(per_step)) if per_step else None,
        run_seconds=run_seconds,
        learned=learning.verdict,
        evidence=learning.reason,
        seed_sd=seed_sd,
        item_sd=item_sd,
        kept=True,  # until a retune changes the settings (the design node decides)
        reward_range=rewards,
    )


def _sampling_sd(main: Design, runs: list[RunResult]) -> float | None:
    """The least a training-reward score varies by from its episodes' sampling alone: each
    step's mean reward over its episodes has variance p(1 − p)/episodes (rewards in [0, 1]),
    and learning speed averages the steps (a final reward a share of them, at least one).
    None for held-out scores (`outcome_sd` floors those by their items)."""
    if main.outcome not in ("learning_speed", "final_train_reward") or not runs:
        return None
    if reward_range(runs) is not None:
        return None  # the p(1 - p) bound holds for rewards in [0, 1] only
    control = next((a for a in main.arms if a.role == "control"), None)
    run = control.run if control else {}
    episodes = episodes_a_step(run)
    rewards = np.clip([v for r in runs for _, v in r.curve], 0.0, 1.0)
    if not len(rewards):
        return None
    longest = max(len(r.curve) for r in runs)
    steps = main.steps if main.outcome == "learning_speed" else int(longest * FINAL_SHARE)
    steps = max(1, steps)
    return float(np.sqrt(np.mean(rewards * (1 - rewards)) / (episodes * steps)))


def retune(
    reading: Reading | None, main: Design, pilot: Pilot, budget_left_s: float
) -> tuple[Design, dict[str, list]]:
    """The main design with what the question leaves free changed because the pilot's
    control did not learn, and {setting: [old, new]}; unchanged when it learned or nothing
    free can change. Never the factor under study."""
    if pilot.learned != "did not learn":
        return main, {}
    factor = reading.factor if reading is not None else ""
    held = reading.held if reading is not None else {}  # the question fixed them: never changed
    lrs = {arm.run.get("lr") for arm in main.arms}
    if (
        factor != "lr"
        and "lr" not in held
        and len(lrs) == 1
        and isinstance(old := lrs.pop(), float)
        and old < LR_CEILING
    ):
        new = min(LR_CEILING, float(f"{old * LR_RETUNE_FACTOR:.3g}"))
        arms = [a.model_copy(update={"run": {**a.run, "lr": new}}) for a in main.arms]
        return main.model_copy(update={"arms": arms}), {"lr": [old, new]}
    steps = main.steps * STEPS_RETUNE_FACTOR
    runs = len(main.arms) * len(main.seeds)
    if (
        factor != "max_steps"
        and pilot.run_seconds
        and runs * pilot.run_seconds * 2 <= budget_left_s
    ):
        arms = [a.model_copy(update={"run": {**a.run, "max_steps": steps}}) for a in main.arms]
        return main.model_copy(update={"arms": arms, "steps": steps}), {
            "steps": [main.steps, steps]
        }
    return main, {}


def episodes_a_step(run: dict) -> int:
    """Group size × prompts a step of a run's settings (the gateway's defaults where unnamed)."""
    group = int(run.get("group_size") or DEFAULT_GROUP_SIZE)
    return group * int(run.get("batch_groups") or DEFAULT_BATCH_GROUPS)


def training_work(run: dict, steps: int) -> int:
    """A run's training work in episodes: its steps (`max_steps`, else the design's) × its
    episodes a step."""
    return int(run.get("max_steps") or steps) * episodes_a_step(run)


def run_costs(design: Design, pilot: Pilot) -> dict[str, float]:
    """Seconds one run of each arm costs (arm name -> seconds), from the pilot's measured
    run: its training part scaled by the arm's training work over the work the pilot's runs
    were set to do (`Pilot.work`: a 40-step arm of a steps study costs four 10-step pilot
    runs of training, a retune that doubled the steps doubles it), start-up and held-out
    evaluation as measured. A pilot run that stopped early (no learning signal) is priced as
    it ran: what it cost is what a run at its settings costs here. Empty without a measured
    cost."""
    if not pilot.run_seconds:
        return {}
    control = next((a for a in design.arms if a.role == "control"), design.arms[0])
    measured = pilot.work or training_work(control.run, design.steps)
    # the training part: the pilot runs' wall time (steps x seconds a step, batches that
    # trained nothing included), the rest start-up and evaluation
    trained = min(pilot.run_seconds, (pilot.step_seconds or 0.0) * pilot.steps)
    if not trained:  # no step time measured: the whole run scales
        trained = pilot.run_seconds
    fixed = pilot.run_seconds - trained
    return {
        arm.name: fixed + trained * training_work(arm.run, design.steps) / max(1, measured)
        for arm in design.arms
    }


def mean_run_seconds(design: Design, pilot: Pilot | None) -> float | None:
    """What a run costs on average over the design's arms (`run_costs`): what a look of one
    seed per arm costs, divided by the arms. None without a measured cost."""
    costs = run_costs(design, pilot) if pilot is not None else {}
    return sum(costs.values()) / len(costs) if costs else None


@dataclass(frozen=True)
class Looks:
    """How the comparison's seeds come in: `first` per arm at look 1, `step` more per arm at
    each later look, up to `max_looks` looks."""

    first: int
    step: int
    max_looks: int

    def seeds_at(self, look: int) -> int:
        return self.first + self.step * (look - 1)


def size_looks(
    arms: int, have: int, budget_left_s: float, run_seconds: float | None, first: int = PILOT_SEEDS
) -> Looks:
    """Seeds per look from the budget left: look 1 has `first` seeds per arm (`have` runs
    already exist: the pilot's kept control seeds); the runs the rest of the budget buys
    go to up to MAX_LOOKS − 1 later looks, at least one seed per arm each, up to MAX_SEEDS
    per arm in all. Without a measured cost: one look."""
    if not run_seconds or run_seconds <= 0:
        return Looks(first, 1, 1)
    affordable = int(budget_left_s // run_seconds)
    spare = affordable - (arms * first - have)
    if spare < arms:
        return Looks(first, 1, 1)
    later = min(MAX_LOOKS - 1, spare // arms, MAX_SEEDS - first)
    if later < 1:
        return Looks(first, 1, 1)
    step = min(spare // (arms * later), (MAX_SEEDS - first) // later)
    return Looks(first, max(1, step), 1 + later)


def seeds_that_fit(arms: int, wanted: int, budget_left_s: float, run_seconds: float) -> int:
    """How many of the `wanted` seeds per arm the next look can add in `budget_left_s` at
    `run_seconds` a run (0: not even one per arm). A look that cannot fit whole is shrunk to
    this, not skipped: the alpha-spending rule spends each look's share by its index, so a
    look with fewer seeds than planned keeps the study's error rate (it only loses power)."""
    if run_seconds <= 0:
        return wanted
    return max(0, min(wanted, int(budget_left_s // (arms * run_seconds))))


def minimum_detectable_effect(
    sd: float | None,
    seeds: int,
    direction: str,
    *,
    look: int = 1,
    max_looks: int = 1,
    comparisons: int = 1,
    min_effect: float = 0.0,
    power: float = POWER,
    studies: int = SIMULATED_STUDIES,
    seed: int = 0,
) -> float | None:
    """The smallest true difference (outcome units) that the design's rule calls "supported"
    with probability `power` at look `look` of `max_looks`, with `seeds` per arm whose
    scores vary by `sd` (normal, the same in both arms); for an equivalence question, the
    smallest margin that a true difference of 0 is shown to lie within with that
    probability. None with fewer than 2 seeds or no spread to size it with.

    Computed, not approximated: the rule reads a Welch t interval whose width and degrees
    of freedom are random with so few seeds, and the usual (t + t)·sd·√(2/n) formula
    overstates the power of 3 seeds a side by 15 points. With the seeds' noise drawn once
    (`studies` simulated comparisons, fixed `seed`), "supported" at a true effect δ is
    δ/sd above a per-study threshold that does not depend on δ — so the detectable effect
    is the `power` quantile of those thresholds."""
    if seeds < 2 or sd is None or not math.isfinite(sd) or sd <= 0:
        return None
    rng = np.random.default_rng(seed)
    treatment, control = rng.standard_normal((2, studies, seeds))
    difference = treatment.mean(axis=1) - control.mean(axis=1)
    var_t, var_c = (x.var(axis=1, ddof=1) / seeds for x in (treatment, control))
    var = var_t + var_c
    df = var**2 / ((var_t**2 + var_c**2) / (seeds - 1))
    share = spent_share(look, max_looks)
    margin_test = direction in MARGIN_DIRECTIONS
    level = SINGLE_LOOK_LEVEL[direction if margin_test else "greater"]
    one_side = (1 - level) / 2 * share / (1 if margin_test else comparisons)
    grid = np.linspace(df.min(), df.max(), 64)
    critical = np.interp(df, grid, [t_quantile(1 - one_side, g) for g in grid])
    half_width = critical * np.sqrt(var)
    if direction == "equivalent":
        thresholds = np.abs(difference) + half_width
    elif direction == "noninferior":  # the lower end above -margin at a true difference 0
        thresholds = half_width - difference
    else:  # less and two-sided are the mirror image of greater
        thresholds = np.maximum(half_width - difference, min_effect / sd - difference)
    return float(np.quantile(thresholds, power)) * sd


def outcome_sd(pilot: Pilot, design: Design) -> float | None:
    """The SD a run's score varies by, from the pilot: the seeds' SD; for held-out accuracy
    at least what the items alone give a run's mean (binomial, as `arm_scores` assumes)."""
    sd = pilot.seed_sd
    if design.outcome == "heldout_accuracy" and pilot.item_sd is not None and design.eval_episodes:
        floor = pilot.item_sd / math.sqrt(design.eval_episodes)
        sd = floor if sd is None else max(sd, floor)
    return sd


def mde_words(mde: float | None, pilot: Pilot, looks: Looks, design: Design, label: str) -> str:
    """How `mde` was computed, in words, for the design event and the report."""
    if mde is None:
        return (
            "no minimum detectable effect: the pilot gave no seed-to-seed variation to size it with"
        )
    n = looks.seeds_at(looks.max_looks)
    what = ("the smallest equivalence margin it can confirm when there is no difference"
            if design.direction == "equivalent"
            else "the smallest non-inferiority margin it can confirm when there is no difference"
            if design.direction == "noninferior"
            else "the smallest true difference it detects")  # fmt: skip
    sd = outcome_sd(pilot, design)
    return (
        f"With the budget left this design runs up to {looks.max_looks} look(s), "
        f"{n} seeds per arm at the last; {what} with {POWER:.0%} power is {mde:.3f} {label} "
        f"(simulating {SIMULATED_STUDIES:,} comparisons by the decision rule with a "
        f"seed-to-seed SD of {sd:.3f}, from the pilot's {len(pilot.runs)} control runs — a "
        f"rough estimate from so few seeds)."
    )

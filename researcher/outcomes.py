"""What one run scores on the outcome a study asks about, and that outcome in words.

A design names its outcome (`Design.outcome`, read from the question): every run gets one
number on it, and the analysis compares arms on those numbers.

- `heldout_accuracy`: the mean of the run's held-out outcomes (1.0 solved, 0.0 not).
- `learning_speed`: the normalised area under the training-reward curve — the mean of
  `reward/mean` over steps 1..`design.steps`, the logged points joined by straight lines,
  the first value held before the first point and the last value carried after the last
  (a run stopped early keeps the reward it reached). In the reward's own units: 1.0 for a
  run at reward 1 from its first step, 0.0 for one that never earns anything. Higher is
  faster. With `design.threshold` set it is instead the number of training steps to the
  first logged `reward/mean` ≥ threshold, censored at `design.steps + 1` when never
  reached: *fewer* steps is faster, so `speed_sign` is −1 and the analysis turns the
  design's "greater" (faster) into "fewer steps".
- `final_train_reward`: the mean of the last max(1, ⌊20%⌋) logged curve points.
- `cost`: the run's training wall time in seconds (`RunResult.wall_s`), or the tokens it
  trained on when no run of the study has a wall time. "less" is "cheaper".

`min_effect` and `margin` are in these units (accuracy points, reward, steps, seconds).
Plain functions over plan records: nothing here knows of the gateway or the report.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from researcher.plan import Design, RunResult

FINAL_SHARE = 0.2  # final_train_reward: the share of the curve's last points averaged
MIN_HORIZON_SHARE = 0.5  # a common horizon shorter than this share of the steps is not used


def heldout_metric(result: RunResult) -> float:
    """A run's held-out accuracy: the mean of its per-task outcomes (1.0 solved, 0.0 not)."""
    return float(np.mean(result.eval_outcomes))


def usable(result: RunResult) -> bool:
    """A run with held-out outcomes (what the report's held-out table and figure show)."""
    return result.status == "finished" and bool(result.eval_outcomes)


def _curve(result: RunResult, last_step: int | None = None) -> list[tuple[int, float]]:
    points = sorted((int(s), float(v)) for s, v in result.curve if math.isfinite(v))
    return [(s, v) for s, v in points if last_step is None or s <= last_step]


def area_under_curve(result: RunResult, steps: int) -> float:
    """Mean training reward over steps 1..`steps`, linearly interpolated between logged
    points, the first value held before them and the last carried after them."""
    at_steps, values = zip(*_curve(result), strict=True)
    return float(np.mean(np.interp(np.arange(1, max(1, steps) + 1), at_steps, values)))


def steps_to_threshold(result: RunResult, threshold: float, steps: int) -> float:
    """The first logged step whose training reward reaches `threshold`; `steps + 1` if none."""
    return float(next((s for s, v in _curve(result, steps) if v >= threshold), steps + 1))


def final_train_reward(result: RunResult) -> float:
    points = _curve(result)
    last = max(1, int(len(points) * FINAL_SHARE))
    return float(np.mean([v for _, v in points[-last:]]))


def cost_unit(results: Iterable[RunResult]) -> str:
    """ "wall_s" when any run has a wall time, else "tokens"."""
    return "wall_s" if any(r.wall_s is not None for r in results) else "tokens"


def unscored_reason(design: Design, result: RunResult, unit: str = "wall_s") -> str | None:
    """Why `result` has no score on the design's outcome, or None when it has one."""
    if result.status != "finished":
        return result.note or ""
    if design.outcome == "heldout_accuracy" and not result.eval_outcomes:
        return "no held-out outcomes"
    if design.outcome in ("learning_speed", "final_train_reward") and not _curve(result):
        return "no training curve"
    if design.outcome == "learning_speed" and design.threshold is None:
        if short := stopped_short(design, result):
            # the area would carry its last value over the steps it never took
            return f"stopped at step {short[0]} of {short[1]}: too short a curve to score learning speed"
    if design.outcome == "cost" and getattr(result, unit) is None:
        return "no wall time recorded" if unit == "wall_s" else "no token count recorded"
    return None


def stopped_short(design: Design, result: RunResult) -> tuple[int, int] | None:
    """(last logged training step, planned steps) of a run that stopped more than a tenth of
    its planned steps early — its share of the budget ran out, or the trainer or a person
    stopped it; None when it reached them (or logged no step)."""
    points = _curve(result)
    if not points:
        return None
    planned, last = _planned_steps(design, result), points[-1][0]
    return (last, planned) if last < planned - max(1, planned // 10) else None


def common_horizon(design: Design, results: list[RunResult]) -> tuple[Design, str]:
    """For learning speed as an area: when runs were stopped short of the design's steps
    (the budget ran out while they trained), `design` with its steps cut to the last step
    that every such run reached — so every run is scored over the same steps 1..h rather
    than the short ones being excluded — and the reason in words; else `design` as it is
    and "". Runs that reached fewer than MIN_HORIZON_SHARE of the steps do not set h (they
    stay excluded as too short), and arms that train different numbers of steps (a study
    of `max_steps`) are never cut. Where a run stops depends on the clock, not on its
    rewards, so the shorter horizon measures the same thing on fewer steps."""
    if design.outcome != "learning_speed" or design.threshold is not None:
        return design, ""
    planned = {int(a.run.get("max_steps") or design.steps) for a in design.arms}
    if len(planned) != 1:
        return design, ""
    steps = planned.pop()
    arms = {a.name for a in design.arms}
    lasts = [
        _curve(r)[-1][0] for r in results if r.arm in arms and r.status == "finished" and _curve(r)
    ]
    reached = [last for last in lasts if last >= math.ceil(MIN_HORIZON_SHARE * steps)]
    if not reached or min(reached) >= steps - max(1, steps // 10):
        return design, ""
    horizon = min(reached)
    short = sum(1 for last in reached if last < steps)
    arms_cut = [
        a.model_copy(update={"run": {**a.run, "max_steps": horizon}}) if "max_steps" in a.run else a
        for a in design.arms
    ]
    return design.model_copy(update={"steps": horizon, "arms": arms_cut}), (
        f"Learning speed is scored over steps 1–{horizon}, the steps every scored run reached: "
        f"{short} run(s) were stopped before step {steps} by the budget."
    )


def _planned_steps(design: Design, result: RunResult) -> int:
    arm = next((a for a in design.arms if a.name == result.arm), None)
    return int((arm.run.get("max_steps") if arm else None) or design.steps)


def run_score(design: Design, result: RunResult, unit: str = "wall_s") -> float:
    """The run's number on the design's outcome (see the module docstring); the run must
    have one (`unscored_reason` is None)."""
    if design.outcome == "learning_speed":
        if design.threshold is not None:
            return steps_to_threshold(result, design.threshold, design.steps)
        return area_under_curve(result, design.steps)
    if design.outcome == "final_train_reward":
        return final_train_reward(result)
    if design.outcome == "cost":
        return float(getattr(result, unit))
    return heldout_metric(result)


def speed_sign(design: Design) -> int:
    """+1 when a larger score is what "greater" means; −1 for steps to a threshold (fewer
    steps is faster, and the question's "faster" is the design's "greater")."""
    return -1 if design.outcome == "learning_speed" and design.threshold is not None else 1


def outcome_label(design: Design, unit: str = "wall_s") -> str:
    """The outcome in words, with its unit: what the report's tables and figures name."""
    if design.outcome == "learning_speed":
        if design.threshold is not None:
            return (
                f"learning speed (training steps to first reach a training reward of "
                f"{design.threshold:g}; fewer is faster; {design.steps + 1} = never within "
                f"{design.steps} steps)"
            )
        return (
            f"learning speed (area under the training-reward curve over steps "
            f"1–{design.steps}, as a mean reward per step)"
        )
    if design.outcome == "final_train_reward":
        return "final training reward (mean of the last 20% of logged steps)"
    if design.outcome == "cost":
        return (
            "cost (training wall time, seconds)" if unit == "wall_s" else "cost (tokens trained on)"
        )
    return f"held-out {design.metric} on {design.eval_task}"


def short_label(design: Design) -> str:
    """A column or axis name: "held-out accuracy", "learning speed (AUC)", ..."""
    return {
        "heldout_accuracy": f"held-out {design.metric}",
        "learning_speed": "steps to threshold" if design.threshold is not None else
                          "learning speed (reward AUC)",
        "final_train_reward": "final training reward",
        "cost": "cost",
    }[design.outcome]  # fmt: skip


def direction_words(design: Design) -> str:
    """Which way the hypothesis says the outcome moves, in words."""
    margin = design.margin if design.margin is not None else design.min_effect
    return describe_direction(design.direction, outcome=design.outcome,
                              threshold=design.threshold, margin=margin)  # fmt: skip


def describe_direction(
    direction: str, *, outcome: str, threshold: float | None = None, margin: float | None = None
) -> str:
    speed = outcome == "learning_speed"
    steps = speed and threshold is not None
    within = f" within ±{margin:g}" if margin is not None else ""
    return {
        "greater": "faster learning (fewer steps) is the hypothesis" if steps
        else "faster learning (a larger area) is the hypothesis" if speed
        else "higher is the hypothesis",
        "less": "slower learning (more steps) is the hypothesis" if steps
        else "slower learning (a smaller area) is the hypothesis" if speed
        else "lower is the hypothesis",
        "two_sided": "a difference in either direction is the hypothesis",
        "equivalent": f"equivalence{within} is the hypothesis",
        "noninferior": (f"no worse than the control (by more than {margin:g})" if margin is not None
                        else "no worse than the control") + " is the hypothesis",
    }[direction]  # fmt: skip


def describe_outcome(outcome: str, *, threshold: float | None = None) -> str:
    """An outcome's name in words before any design fixes its steps or held-out task."""
    if outcome == "learning_speed" and threshold is not None:
        return f"learning speed (training steps to reach a training reward of {threshold:g})"
    return {
        "heldout_accuracy": "held-out accuracy",
        "learning_speed": "learning speed (area under the training-reward curve)",
        "final_train_reward": "final training reward",
        "cost": "cost (training wall time, or tokens)",
    }[outcome]

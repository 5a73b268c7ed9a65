"""Did an arm learn? The untrained baseline and each arm's learned-or-not verdict.

Owns two checks a comparison needs before it can mean anything: the untrained policy's
score on the same held-out items as the arms (the *baseline*: a `RunResult` with status
"baseline", evaluated once per round by the evaluate node), and per arm a verdict read from
two signals:

- **held-out gain**: the arm's mean held-out score over seeds minus the baseline's, with a
  95% t interval over the held-out items. Every run and the baseline are scored on the same
  first N items in the same order, so the interval is paired: per item, the mean over the
  arm's seeds minus the baseline's outcome (df N − 1); when the lists differ in length (a
  user workflow's failed rollouts are left out) it is a Welch interval of the pooled items.
  The seeds are taken as they are — the question is whether *these* runs moved the policy,
  not what another seed would do — so item sampling is the uncertainty;
- **training trend**: the slope of training reward over steps within seeds (each seed's
  curve centred on its own mean, one least-squares slope, a t interval with n − seeds − 1
  degrees of freedom). Successive steps of one run are correlated, so this interval is
  optimistic; it only ever keeps an arm out of "did not learn", never makes it "learned".

The verdict, with `margin` the smallest held-out gain that counts (the design's
`min_effect` on held-out accuracy, else `DEFAULT_MARGIN`, times the design's
`reward_scale` when the pilot saw rewards beyond [0, 1]):

- "learned": the gain's interval lies above 0 and the gain reaches `margin` (a gain of
  0.001 whose interval happens to clear 0 is no learning; without a baseline: the training
  reward is rising);
- "did not learn": the gain's interval lies below 0 (worse than untrained), or the gain is
  below `margin` and the training reward is not *rising*;
- *rising* means the trend's interval lies above 0 **and** its fitted rise over the steps
  logged reaches `margin`: a curve that creeps up by 0.001 in 13 steps is noise the
  optimistic interval happened to clear, not learning (a flat reward with 1% noise clears
  it in about one arm in forty);
- "unclear": anything else (the gain looks real but its interval reaches 0, the training
  reward rises but the held-out score does not show it, no baseline and a flat curve, or
  no finished run).

Batches the gateway took but trained nothing from (`RunResult.dropped_batches`: every
sample dropped, e.g. all of a group's rewards equal) are no steps; the reason says how many
there were ("12 of 30 batches trained nothing: zero_variance 12"), and an arm whose runs
took only such batches (no step at all) "did not learn", whatever else is known.

A study in which every arm "did not learn" is *not testable* (`no_arm_learned`): the
comparison is between policies that cannot do the task. When every run was stopped because
every group's rewards were equal (zero variance: the gateway's "no learning signal"), the
reason says so and the advice changes: more steps or a higher learning rate cannot help —
in the user's own workflow the reward likely does not depend on the model's output; on a
shipped task every sample scored the same. Pure numpy over plan records.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from researcher.intervals import LEVEL, Interval, arm_scores, t_interval
from researcher.outcomes import heldout_metric, usable
from researcher.plan import WORKFLOW_FAMILY, Design, Learning, RunResult

EQUAL_REWARDS = "every group's rewards were equal"  # in the reason of an arm stopped for it
_OUTPUT_BLIND = "the reward did not vary with the model's output"  # ... in a user workflow
# the gateway's stop: "no learning signal: 20 consecutive batches trained nothing
# (zero_variance 20)" — zero variance the only reason
_ZERO_VARIANCE_STOP = re.compile(r"no learning signal: (\d+) consecutive batches trained "
                                 r"nothing \(zero_variance \d+\)")  # fmt: skip

BASELINE_ARM = "baseline"
BASELINE_STATUS = "baseline"
DEFAULT_MARGIN = 0.05  # held-out gain that counts when the design's min_effect is on another scale


# training reward up, held-out below the untrained model: in words, beside the verdict
DIVERGED = (
    "the training reward rose while held-out accuracy fell below the untrained model's: the "
    "policy fit the training tasks or exploited the reward (check the rollouts' answers), "
    "it did not learn the task"
)


def is_baseline(result: RunResult) -> bool:
    return result.status == BASELINE_STATUS


def baseline_result(
    model: str, outcomes: list[float], *, eval_params: dict[str, Any] | None = None
) -> RunResult:
    """The untrained `model`'s held-out outcomes as a result the analysis recognises;
    `eval_params`: the workflow PARAMS it was evaluated with (a user-workflow study)."""
    return RunResult(arm=BASELINE_ARM, seed=0, run=model, eval_outcomes=list(outcomes),
                     status=BASELINE_STATUS, note=f"the untrained {model}",
                     eval_params=dict(eval_params or {}))  # fmt: skip


def _heldout_design(design: Design) -> Design:
    return design.model_copy(update={"outcome": "heldout_accuracy"})


def baseline_summary(design: Design, baseline: RunResult) -> tuple[float, tuple[float, float]]:
    """The baseline's held-out mean and its 95% interval over its items."""
    scores = arm_scores(_heldout_design(design), [baseline], "wall_s")
    low, high = scores.interval()
    return scores.mean, (max(0.0, low), min(1.0, high)) if _binary(baseline) else (low, high)


def _binary(result: RunResult) -> bool:
    return all(v in (0.0, 1.0) for v in result.eval_outcomes)


def reward_trend(runs: list[RunResult]) -> tuple[float, tuple[float, float], float, int] | None:
    """(slope per step, its 95% interval, the fitted rise over the steps logged, the most
    steps a run logged) of the runs' training curves, within seeds; None with too few points."""
    xs, ys, steps, k = [], [], [], 0
    for r in runs:
        points = [(float(s), float(v)) for s, v in r.curve if math.isfinite(v)]
        if len(points) < 2:
            continue
        x, y = np.array(points).T
        xs.append(x - x.mean())
        ys.append(y - y.mean())
        steps.extend(x)
        k += 1
    if not xs:
        return None
    x, y = np.concatenate(xs), np.concatenate(ys)
    sxx, df = float(np.sum(x * x)), len(x) - k - 1
    if sxx <= 0 or df < 1:
        return None
    slope = float(np.sum(x * y) / sxx)
    residual_var = float(np.sum((y - slope * x) ** 2)) / df
    interval = t_interval(slope, residual_var / sxx, df, LEVEL)
    return slope, interval, slope * (max(steps) - min(steps)), int(max(steps))


def heldout_gain(scored: list[RunResult], baseline: RunResult) -> tuple[float, float, Interval]:
    """(the arm's held-out mean, the baseline's, the gain's 95% interval) over the items."""
    base = np.array(baseline.eval_outcomes, dtype=float)
    n = len(base)
    per_run = [np.array(r.eval_outcomes, dtype=float) for r in scored]
    arm_mean = float(np.mean([v.mean() for v in per_run]))
    gain = arm_mean - float(base.mean())
    if n >= 2 and all(len(v) == n for v in per_run):
        diffs = np.mean(per_run, axis=0) - base
        return arm_mean, float(base.mean()), t_interval(gain, float(np.var(diffs, ddof=1)) / n,
                                                        n - 1, LEVEL)  # fmt: skip
    pooled = np.concatenate(per_run)
    parts = [float(np.var(v, ddof=1)) / len(v) if len(v) > 1 else 0.0 for v in (pooled, base)]
    var = sum(parts)
    dfs = [(p**2 / (len(v) - 1)) for p, v in zip(parts, (pooled, base), strict=True) if p > 0]
    return (
        arm_mean,
        float(base.mean()),
        t_interval(gain, var, var**2 / sum(dfs) if dfs else 0, LEVEL),
    )


def dropped_words(runs: list[RunResult]) -> tuple[str | None, bool]:
    """("12 of 30 batches trained nothing: zero_variance 12" over the arm's runs, or None
    when none was dropped; True when the runs took no step at all, only dropped batches).
    A run's steps are the last step of its training curve."""
    dropped: dict[str, int] = {}
    for r in runs:
        for reason, count in r.dropped_batches.items():
            dropped[reason] = dropped.get(reason, 0) + count
    total = sum(dropped.values())
    if not total:
        return None, False
    steps = sum(max((step for step, _ in r.curve), default=0) for r in runs)
    reasons = ", ".join(
        f"{reason} {n}" for reason, n in sorted(dropped.items(), key=lambda i: -i[1])
    )
    return f"{total} of {total + steps} batches trained nothing: {reasons}", steps == 0


def learned_or_not(design: Design, runs: list[RunResult], baseline: RunResult | None) -> Learning:
    """The learned-or-not verdict of one arm's runs (see the module docstring)."""
    margin = (
        design.min_effect
        if design.outcome == "heldout_accuracy"
        else DEFAULT_MARGIN * (design.reward_scale or 1.0)
    )
    dropped, nothing_trained = dropped_words(runs)
    if nothing_trained:
        learning = Learning(
            verdict="did not learn", reason=f"did not learn: no training step, {dropped}"
        )
    else:
        learning = _learned_or_not(design, runs, baseline, margin)
        if dropped is not None:
            learning.reason += f"; {dropped}"
    equal = _equal_rewards_words(design, runs)
    if equal and learning.verdict == "did not learn":
        learning.reason += f"; {equal}"
    return learning


def stopped_for_equal_rewards(note: str | None) -> bool:
    """True when a run's stop reason is the gateway's zero-variance stop (every group's
    rewards equal, batch after batch), and nothing else."""
    return bool(_ZERO_VARIANCE_STOP.search(note or ""))


def _equal_rewards_words(design: Design, runs: list[RunResult]) -> str | None:
    """Why the arm's runs stopped, when every one stopped because every group's rewards
    were equal (the gateway's zero-variance stop); None otherwise."""
    stops = [_ZERO_VARIANCE_STOP.search(r.note or "") for r in runs]
    if not runs or not all(stops):
        return None
    in_a_row = min(int(stop.group(1)) for stop in stops if stop)
    last = [v for r in runs for _, v in r.curve[-1:] if math.isfinite(v)]
    seen = f" (training reward {np.mean(last):.3f} at the last step)" if last else ""
    why = (
        _OUTPUT_BLIND
        if design.eval_family == WORKFLOW_FAMILY
        else "every sample of a task scored the same"
    )
    return f"{EQUAL_REWARDS} in {in_a_row} batches in a row, so the runs stopped{seen}: {why}"


def _learned_or_not(
    design: Design, runs: list[RunResult], baseline: RunResult | None, margin: float
) -> Learning:
    trend = reward_trend(runs)
    fields: dict = {}
    words: list[str] = []
    if trend is not None:
        slope, (s_low, s_high), rise, steps = trend
        fields |= {"slope": slope, "slope_ci": (s_low, s_high), "rise": rise, "steps": steps}
        words.append(f"training reward {rise:+.3f} over {steps} steps (slope {slope:+.4f}/step, "
                     f"95% CI {s_low:+.4f} to {s_high:+.4f})")  # fmt: skip
    rising = trend is not None and trend[1][0] > 0 and trend[2] >= margin
    scored = [r for r in runs if usable(r)]
    if scored and baseline is not None and baseline.eval_outcomes:
        heldout, base, (low, high) = heldout_gain(scored, baseline)
        gain = heldout - base
        fields |= {"heldout": heldout, "baseline": base, "gain": gain, "gain_ci": (low, high)}
        words.insert(0, f"held-out {heldout:.3f} vs the untrained baseline {base:.3f}: "
                        f"{gain:+.3f} (95% CI {low:+.3f} to {high:+.3f})")  # fmt: skip
        if low > 0 and gain >= margin:
            verdict = "learned"
        elif high < 0:
            verdict, words[0] = "did not learn", words[0] + ", below the untrained policy"
            if rising:  # what it learned in training cost it on new items
                words.append(DIVERGED)
        elif gain < margin and not rising:
            verdict = "did not learn"
        else:
            verdict = "unclear"
            if rising and gain < margin:
                words.append("the training reward rose but held-out accuracy did not follow")
    elif scored or trend is not None:
        if scored:
            fields["heldout"] = float(np.mean([heldout_metric(r) for r in scored]))
        words.insert(0, "no untrained baseline to compare the held-out score with")
        verdict = "learned" if rising else "unclear"
    else:
        verdict = "unclear"
        words.append("no run finished with a held-out score or a training curve")
    return Learning(verdict=verdict, reason=f"{verdict}: " + "; ".join(words), **fields)


def no_arm_learned(learned: dict[str, Learning]) -> bool:
    """True when there are arms and every one "did not learn": a comparison not testable."""
    return bool(learned) and all(v.verdict == "did not learn" for v in learned.values())


def not_testable_words(learned: dict[str, Learning], steps: int = 0) -> str:
    """The study's verdict in words when no arm learned — "not testable: no arm learned in N
    steps", with the baseline and what would make the question testable. `steps`: the
    design's, when no arm logged a training step."""
    if learned and all(EQUAL_REWARDS in v.reason for v in learned.values()):
        if any(_OUTPUT_BLIND in v.reason for v in learned.values()):
            return (
                f"not testable: no arm could learn — {EQUAL_REWARDS} in every run, so no "
                "batch carried a learning signal and the runs stopped. Your reward does not "
                "depend on the model's output, or every sample is solved (or failed) alike: "
                "check what rollout returns for different answers. More training steps or a "
                "higher learning rate would not change this"
            )
        return (
            f"not testable: no arm could learn — the task is too hard for the model (or, if "
            f"every sample scored full marks, too easy): {EQUAL_REWARDS}, every sample of a "
            "task scored the same, so no batch carried a learning signal and the runs "
            "stopped. A test needs a level of the task the model solves some of the time, a "
            "stronger model, or more samples per group; more steps or a higher learning rate "
            "would not change this"
        )
    steps = max((v.steps for v in learned.values()), default=0) or steps
    base = next((v.baseline for v in learned.values() if v.baseline is not None), None)
    beside = (f" — none beat the untrained baseline ({base:.3f} held-out)"
              if base is not None else "")  # fmt: skip
    return (
        f"not testable: no arm learned{f' in {steps} steps' if steps else ''}{beside}, so "
        "comparing them says nothing about the hypothesis. A test needs arms that learn: "
        "more training steps, a higher learning rate within the safe range, or an easier "
        "level of the task"
    )

"""Analysis of a finished experiment: per-arm held-out accuracy, bootstrap intervals, verdict.

Owns the statistics the researcher applies to an experiment's `RunResult`s: the held-out
metric of a run (the mean of its `eval_outcomes`), each arm's mean over seeds with a
hierarchical bootstrap 95% interval (seeds resampled, then held-out items within each
seed), each treatment's difference from the control with its interval and Cohen's h, and
the verdict of the design's pre-registered decision rule. Also the seed bands of the
training curves that the report plots. Pure numpy on plan records: it knows nothing of the
gateway, the graph, the database or how the report is drawn.

    from researcher.analysis import analyse
    analysis = analyse(design, results)        # -> plan.Analysis
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from researcher.plan import Analysis, Comparison, Design, RunResult

LEVEL = 0.95  # the interval every arm and comparison reports


def heldout_metric(result: RunResult) -> float:
    """A run's held-out accuracy: the mean of its per-task outcomes (1.0 solved, 0.0 not)."""
    return float(np.mean(result.eval_outcomes))


def usable(result: RunResult) -> bool:
    return result.status == "finished" and bool(result.eval_outcomes)


def _padded(runs: list[RunResult]) -> tuple[np.ndarray, np.ndarray]:
    """The runs' outcomes as a (seeds, max items) matrix padded with 0, and each row's length."""
    n_S = np.array([len(r.eval_outcomes) for r in runs])
    outcomes_SN = np.zeros((len(runs), n_S.max()))
    for i, r in enumerate(runs):
        outcomes_SN[i, : n_S[i]] = r.eval_outcomes
    return outcomes_SN, n_S


def bootstrap_arm(runs: list[RunResult], n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """`n_boot` hierarchical bootstrap replicates of an arm's mean held-out metric.

    Each replicate draws the arm's seeds with replacement, then each drawn seed's held-out
    items with replacement, and averages the per-seed means — the same estimator as the
    arm's mean, so seed-to-seed and item-to-item variation both enter the interval.
    """
    outcomes_SN, n_S = _padded(runs)
    S, N = outcomes_SN.shape
    seeds_BS = rng.integers(0, S, size=(n_boot, S))
    n_BS = n_S[seeds_BS]
    items_BSN = (rng.random((n_boot, S, N)) * n_BS[..., None]).astype(np.int64)
    drawn_BSN = outcomes_SN[seeds_BS[..., None], items_BSN]
    inside_BSN = np.arange(N) < n_BS[..., None]  # seeds with fewer items use their first n
    seed_means_BS = (drawn_BSN * inside_BSN).sum(-1) / n_BS
    return seed_means_BS.mean(-1)


def interval(replicates: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(replicates, [tail, 100 - tail])
    return float(low), float(high)


def cohens_h(p_treatment: float, p_control: float) -> float:
    """Cohen's h between two proportions: 2·asin√p₁ − 2·asin√p₂ (0.2 small, 0.5 medium, 0.8 large)."""
    clip = lambda p: min(1.0, max(0.0, p))  # noqa: E731
    return 2 * math.asin(math.sqrt(clip(p_treatment))) - 2 * math.asin(math.sqrt(clip(p_control)))


def _pooled(runs: list[RunResult]) -> float:
    return float(np.mean(np.concatenate([r.eval_outcomes for r in runs])))


def _signed(x: float) -> str:
    return f"{x:+.3f}"


def analyse(
    design: Design, results: list[RunResult], *, n_boot: int = 2000, rng_seed: int = 0
) -> Analysis:
    """Apply `design`'s pre-registered decision rule to `results` and say what it found.

    Runs count when they finished with held-out outcomes; the rest are named in the summary.
    Each treatment arm is compared with the control arm on the difference of mean held-out
    accuracy (treatment − control) with a percentile bootstrap interval (arms resampled
    independently, each hierarchically); `min_effect` is the design's smallest difference
    that matters. The verdict on the hypothesis "the treatment helps":

    - **supported** when the interval of the difference lies above 0 *and* the estimated
      difference is at least `min_effect`: a credible effect of a size that matters.
    - **refuted** when the interval's upper end is below `min_effect`: any benefit is
      credibly smaller than what would matter (an equivalence/non-superiority reading —
      it covers "no effect" measured precisely, and "worse").
    - **inconclusive** otherwise — the interval is too wide to tell, or the data cannot
      carry a verdict: fewer than 2 usable seeds in an arm (seed-to-seed variation cannot
      be estimated, so any interval would understate it), no control arm, an arm without
      usable runs, or outcomes without variance in both arms (every item scored the same:
      a floor or ceiling, where the bootstrap has nothing to resample).

    With k > 1 treatment arms each verdict uses a Bonferroni-widened interval (level
    1 − 0.05/k) so the family of comparisons keeps a 5% error rate; the reported intervals
    stay 95%. The study's verdict is "supported" if any treatment is, "refuted" if every
    treatment is, else "inconclusive".
    """
    rng = np.random.default_rng(rng_seed)
    arm_names = [a.name for a in design.arms]
    excluded: list[str] = []
    by_arm: dict[str, list[RunResult]] = defaultdict(list)
    for r in results:
        if r.arm not in arm_names:
            excluded.append(f"{r.run} (arm {r.arm!r} is not in the design)")
        elif not usable(r):
            why = r.note or ("no held-out outcomes" if r.status == "finished" else "")
            excluded.append(f"{r.run} ({r.status}{': ' + why if why else ''})")
        else:
            by_arm[r.arm].append(r)

    arm_means: dict[str, float] = {}
    arm_ci: dict[str, tuple[float, float]] = {}
    replicates: dict[str, np.ndarray] = {}
    for name in arm_names:
        runs = sorted(by_arm.get(name, []), key=lambda r: r.seed)
        if not runs:
            continue
        by_arm[name] = runs
        arm_means[name] = float(np.mean([heldout_metric(r) for r in runs]))
        replicates[name] = bootstrap_arm(runs, n_boot, rng)
        arm_ci[name] = interval(replicates[name])

    problems: list[str] = []  # why no verdict can be drawn, in words
    controls = [a.name for a in design.arms if a.role == "control"]
    treatments = [a.name for a in design.arms if a.role == "treatment"]
    missing = [name for name in arm_names if name not in arm_means]
    if missing:
        problems.append(
            f"no usable runs for arm{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
        )
    if not controls:
        problems.append("the design has no control arm to compare against")
    if not treatments:
        problems.append("the design has no treatment arm")
    control = controls[0] if controls else None

    comparisons: list[Comparison] = []
    verdicts: list[str] = []
    compared = [t for t in treatments if t in arm_means and control in arm_means]
    alpha = (1 - LEVEL) / max(1, len(compared))
    for t in compared:
        diff_B = replicates[t] - replicates[control]
        low, high = interval(diff_B)
        difference = arm_means[t] - arm_means[control]
        n_seeds = min(len(by_arm[t]), len(by_arm[control]))
        comparisons.append(
            Comparison(
                treatment=t,
                control=control,
                difference=difference,
                ci_low=low,
                ci_high=high,
                effect_size=cohens_h(_pooled(by_arm[t]), _pooled(by_arm[control])),
                n_seeds=n_seeds,
            )
        )
        pooled_values = np.concatenate([r.eval_outcomes for r in by_arm[t] + by_arm[control]])
        if n_seeds < 2:
            problems.append(
                f"{t} vs {control} has {n_seeds} usable seed in an arm: seed-to-seed "
                "variation cannot be estimated, so no verdict is drawn from it"
            )
            verdicts.append("inconclusive")
        elif np.ptp(pooled_values) == 0:
            problems.append(
                f"every held-out item of {t} and {control} scored {pooled_values[0]:g}: "
                "no variation to measure a difference with (a floor or ceiling)"
            )
            verdicts.append("inconclusive")
        else:
            v_low, v_high = interval(diff_B, level=1 - alpha) if len(compared) > 1 else (low, high)
            if v_low > 0 and difference >= design.min_effect:
                verdicts.append("supported")
            elif v_high < design.min_effect:
                verdicts.append("refuted")
            else:
                verdicts.append("inconclusive")

    if not comparisons or missing:
        verdict = "inconclusive"
    elif "supported" in verdicts:
        verdict = "supported"
    elif all(v == "refuted" for v in verdicts):
        verdict = "refuted"
    else:
        verdict = "inconclusive"

    return Analysis(
        arm_means=arm_means,
        arm_ci=arm_ci,
        comparisons=comparisons,
        verdict=verdict,
        summary=_summary(
            design, by_arm, arm_means, arm_ci, comparisons, verdicts, verdict, problems, excluded
        ),
    )


def _summary(
    design: Design,
    by_arm: dict[str, list[RunResult]],
    arm_means: dict[str, float],
    arm_ci: dict[str, tuple[float, float]],
    comparisons: list[Comparison],
    verdicts: list[str],
    verdict: str,
    problems: list[str],
    excluded: list[str],
) -> str:
    parts: list[str] = []
    if arm_means:
        arms = "; ".join(
            f"{name} {arm_means[name]:.3f} [{arm_ci[name][0]:.3f}, {arm_ci[name][1]:.3f}] "
            f"over {len(by_arm[name])} seed{'s' if len(by_arm[name]) != 1 else ''}"
            for name in arm_means
        )
        parts.append(
            f"Held-out {design.metric} on {design.eval_family} (mean over seeds, 95% "
            f"bootstrap interval): {arms}."
        )
    else:
        parts.append(f"No run finished with held-out {design.metric} on {design.eval_family}.")
    for c, v in zip(comparisons, verdicts, strict=True):
        parts.append(
            f"{c.treatment} − {c.control} = {_signed(c.difference)} (95% CI "
            f"{_signed(c.ci_low)} to {_signed(c.ci_high)}; Cohen's h {c.effect_size:+.2f}; "
            f"{c.n_seeds} seed{'s' if c.n_seeds != 1 else ''} per arm): {v}."
        )
    parts.append(
        f"By the pre-registered rule (supported if the interval lies above 0 and the "
        f"difference is at least {design.min_effect:g}; refuted if the interval's upper end "
        f"is below {design.min_effect:g}), "
        + (
            f"the test of {design.hypothesis} is inconclusive."
            if verdict == "inconclusive"
            else f"{design.hypothesis} is {verdict}."
        )
    )
    if problems:
        parts.append("No verdict can be drawn because " + "; ".join(problems) + ".")
    if excluded:
        parts.append(f"Excluded from the analysis: {', '.join(excluded)}.")
    return " ".join(parts)


def curve_bands(results: list[RunResult]) -> dict[str, list[tuple[int, float, float, float]]]:
    """Per arm, the training curve across seeds: (step, mean, min, max) at each logged step.

    Every run with a curve counts, finished or not (a failed run's partial curve is still
    what it trained); a step's band covers the seeds that logged it. With few seeds the
    band is the seeds' full range (min–max), which hides nothing, rather than an interval.
    """
    values: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        for step, value in r.curve:
            if math.isfinite(value):
                values[r.arm][int(step)].append(float(value))
    return {
        arm: [
            (step, float(np.mean(v)), float(np.min(v)), float(np.max(v)))
            for step, v in sorted(steps.items())
        ]
        for arm, steps in values.items()
    }

"""Analysis of a finished experiment: per-arm outcome, intervals, the direction-aware verdict.

Owns the statistics the researcher applies to an experiment's `RunResult`s. Every run gets
one score on the design's outcome (`researcher.outcomes`: held-out accuracy, learning
speed, final training reward or cost); each arm's mean over seeds gets a 95% t interval,
each treatment's difference from the control a Welch t interval, and a design with three
or more numeric levels a dose-response slope. The design's pre-registered rule — its
`direction` (greater, less, two-sided, equivalent, non-inferior), `min_effect` and `margin` — turns
these into a verdict — or "not_testable" when no arm learned (`researcher.learning`: each
arm's held-out score against the untrained baseline and its training-reward trend). Also
the seed bands of the training curves that the report plots.
Pure numpy on plan records: it knows nothing of the gateway, the graph, the database or
how the report is drawn.

    from researcher.analysis import analyse
    analysis = analyse(design, results)        # -> plan.Analysis

Why t intervals over seeds and not a bootstrap: a study has two or three seeds per arm,
and a percentile bootstrap over so few seeds is far too narrow — with two seeds per arm
and no true effect it calls a difference "credibly above 0" about 16% of the time where
2.5% is promised (and the hierarchical item bootstrap about 8% once seeds differ in
truth). A Welch interval on the per-seed scores (`researcher.intervals`) keeps its promise at any seed count
(`tests/unit/researcher/test_analysis_outcomes.py` proves the rates by simulation). For
held-out accuracy the per-seed variance is floored at the binomial variance of a seed's
items, so identical seeds still carry the uncertainty of their finite held-out set.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from researcher.headroom import ceiling_words
from researcher.intervals import (
    LEVEL,
    ONE_SEED_INTERVAL,
    ArmScores,
    Interval,
    arm_scores,
    item_variance,
    judge,
    t_interval,
    welch,
)
from researcher.learning import (
    baseline_summary,
    is_baseline,
    learned_or_not,
    no_arm_learned,
    not_testable_words,
)
from researcher.outcomes import (
    common_horizon,
    cost_unit,
    direction_words,
    heldout_metric,
    outcome_label,
    speed_sign,
    stopped_short,
    unscored_reason,
    usable,
)
from researcher.plan import (
    MARGIN_DIRECTIONS,
    Analysis,
    Arm,
    Comparison,
    Design,
    Learning,
    RunResult,
    Trend,
)
from researcher.reward_units import in_reward_units, reward_range, reward_scale_words, units_words
from researcher.sequential import describe as describe_stopping
from researcher.sequential import spending

__all__ = [
    "analyse",
    "arm_scores",
    "cohens_h",
    "curve_bands",
    "describe_rule",
    "heldout_metric",
    "judge",
    "usable",
]


def cohens_h(p_treatment: float, p_control: float) -> float:
    """Cohen's h between two proportions: 2·asin√p₁ − 2·asin√p₂ (0.2 small, 0.5 medium, 0.8 large)."""
    clip = lambda p: min(1.0, max(0.0, p))  # noqa: E731
    return 2 * math.asin(math.sqrt(clip(p_treatment))) - 2 * math.asin(math.sqrt(clip(p_control)))


def _effect_size(design: Design, t: ArmScores, c: ArmScores) -> tuple[float, str]:
    outcomes = [v for a in (t, c) for r in a.runs for v in r.eval_outcomes]
    # Cohen's h is for proportions: a workflow's own rewards (0.5, 3.0, -1) are not one
    if design.outcome == "heldout_accuracy" and all(v in (0.0, 1.0) for v in outcomes):
        pooled = lambda a: float(np.mean(np.concatenate([r.eval_outcomes for r in a.runs])))  # noqa: E731
        return cohens_h(pooled(t), pooled(c)), "Cohen's h"
    dof = len(t.scores) + len(c.scores) - 2
    if dof < 1:
        return 0.0, "none (one seed: no seed-to-seed spread)"
    ss = sum(float(np.sum((a.scores - a.mean) ** 2)) for a in (t, c))
    if ss == 0:
        return 0.0, "none (no seed-to-seed spread)"
    return (t.mean - c.mean) / math.sqrt(ss / dof), "standardized difference (d)"


def _effective_direction(design: Design) -> str:
    """The direction on the score's own scale: steps to a threshold run the other way."""
    flipped = {"greater": "less", "less": "greater", "noninferior": "nonsuperior"}
    return (
        flipped.get(design.direction, design.direction)
        if speed_sign(design) < 0
        else design.direction
    )


def _numeric(level: object) -> bool:
    return isinstance(level, int | float) and not isinstance(level, bool) and math.isfinite(level)


def dose_response(
    design: Design, arms: dict[str, ArmScores], control: str, *, look: int = 1, max_looks: int = 1
) -> Trend | None:
    """The least-squares slope of the run scores against the arms' numeric levels (log10
    levels when they are all positive and span more than 10×), with its t interval; None
    unless 3+ arms with distinct numeric levels have scores. Its verdict applies the rule
    to the fitted change from the control's level to the level farthest from it."""
    levels = {a.name: a.level for a in design.arms if a.name in arms and _numeric(a.level)}
    if len(set(levels.values())) < 3 or control not in levels or len(levels) < len(arms):
        return None
    values = np.array(list(levels.values()), dtype=float)
    log_scale = bool(values.min() > 0 and values.max() / values.min() > 10)
    scale = np.log10 if log_scale else (lambda v: np.asarray(v, dtype=float))
    x = np.concatenate([np.full(len(arms[a].scores), scale(lv)) for a, lv in levels.items()])
    y = np.concatenate([arms[a].scores for a in levels])
    n = len(y)
    sxx = float(np.sum((x - x.mean()) ** 2))
    slope = float(np.sum((x - x.mean()) * (y - y.mean())) / sxx)
    residual_var = float(np.sum((y - y.mean() - slope * (x - x.mean())) ** 2)) / max(1, n - 2)
    df = float(n - 2)
    if design.outcome == "heldout_accuracy":
        runs = [r for a in levels for r in arms[a].runs]
        item_var = float(np.mean([item_variance(r) for r in runs]))
        if residual_var < item_var:
            residual_var, df = item_var, float(sum(len(r.eval_outcomes) for r in runs) - n)
    x_control = float(scale(levels[control]))
    span = float(max((scale(v) - x_control for v in values), key=abs))

    def change_at(level: float) -> Interval:
        low, high = t_interval(slope, residual_var / sxx, df, level)
        return tuple(sorted((low * span, high * span)))  # type: ignore[return-value]

    verdict = None
    if design.direction in ("greater", "less"):
        if min(len(arms[a].scores) for a in levels) >= 2 and residual_var > 0:
            verdict, _ = judge(_effective_direction(design), slope * span,
                               spending(change_at, look, max_looks),
                               min_effect=design.min_effect, margin=0.0)  # fmt: skip
        else:
            verdict = "inconclusive"
    low, high = t_interval(slope, residual_var / sxx, df, LEVEL)
    return Trend(
        factor=f"log10({_factor(design)})" if log_scale else _factor(design),
        slope=slope, ci_low=low, ci_high=high, change=slope * span,
        log_scale=log_scale, n_runs=n, verdict=verdict,
    )  # fmt: skip


def _factor(design: Design) -> str:
    keys = [set(a.run) | set(a.workflow_params) for a in design.arms]
    varied = [k for k in set.union(*keys) if len({repr(a.run.get(k, a.workflow_params.get(k)))
                                                   for a in design.arms}) > 1]  # fmt: skip
    return varied[0] if len(varied) == 1 else "level"


def analyse(
    design: Design,
    results: list[RunResult],
    *,
    look: int | None = None,
    max_looks: int | None = None,
    n_boot: int = 0,
    rng_seed: int = 0,
) -> Analysis:
    """Apply `design`'s pre-registered decision rule to `results` and say what it found.

    Runs count when they finished with a score on the design's outcome; the rest are named
    in the summary. Each treatment is compared with the control on the difference of mean
    scores (treatment − control), judged by `judge` in the design's direction. No verdict
    ("inconclusive", with the reason in the summary) when an arm has fewer than 2 usable
    seeds (seed-to-seed variation cannot be estimated), there is no control arm or an arm
    has no usable runs, or the scores do not vary (a floor or ceiling). The study's verdict
    is "supported" if any treatment is ("equivalent", "noninferior": if every one is),
    "refuted" if every one is ("equivalent", "noninferior": if any is), else "inconclusive"; with 3+ numeric levels and a
    greater/less hypothesis it is the dose-response trend's verdict instead. This is look
    `look` of up to `max_looks` (default: the design's; one look of one is the single-look
    rule): the verdict reads the interval at that look's level (`researcher.sequential`),
    the reported intervals stay 95%. Results with status "baseline" are the untrained
    policy (`researcher.learning`): each arm gets a learned-or-not verdict against it, and
    when every arm "did not learn" the study's verdict is "not_testable" whatever the rule
    gave (the summary says both). `n_boot` and `rng_seed` are accepted for old callers;
    the intervals are exact t intervals.
    """
    del n_boot, rng_seed
    max_looks = max(1, design.max_looks if max_looks is None else max_looks)
    look = min(max(1, design.look if look is None else look), max_looks)
    baselines = [r for r in results if is_baseline(r)]
    results = [r for r in results if not is_baseline(r)]
    design, horizon_words = common_horizon(design, results)
    design, units_words = _in_reward_units(design, baselines + results)
    unit = cost_unit(results)
    arm_names = [a.name for a in design.arms]
    excluded: list[str] = []
    by_arm: dict[str, list[RunResult]] = defaultdict(list)
    for r in results:
        if r.arm not in arm_names:
            excluded.append(f"{r.run} (arm {r.arm!r} is not in the design)")
        elif (why := unscored_reason(design, r, unit)) is not None:
            excluded.append(f"{r.run} ({r.status}{': ' + why if why else ''})")
        else:
            by_arm[r.arm].append(r)
    arms = {
        name: arm_scores(design, sorted(by_arm[name], key=lambda r: r.seed), unit)
        for name in arm_names
        if by_arm.get(name)
    }
    arm_ci = {name: _clipped(design, a.interval()) for name, a in arms.items()}

    problems: list[str] = []  # why no verdict can be drawn, in words
    controls = [a.name for a in design.arms if a.role == "control"]
    treatments = [a.name for a in design.arms if a.role == "treatment"]
    missing = [name for name in arm_names if name not in arms]
    if missing:
        problems.append(
            f"no usable runs for arm{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
        )
    if not controls:
        problems.append("the design has no control arm to compare against")
    if not treatments:
        problems.append("the design has no treatment arm")
    control = controls[0] if controls else None
    direction = _effective_direction(design)
    margin = design.margin if design.margin is not None else design.min_effect

    comparisons: list[Comparison] = []
    compared = [t for t in treatments if t in arms and control in arms]
    for t in compared:
        tr, co = arms[t], arms[control]
        difference = tr.mean - co.mean
        var, df = welch(tr, co)
        interval_at = lambda level, d=difference, v=var, f=df: t_interval(d, v, f, level)  # noqa: E731
        low, high = interval_at(LEVEL)
        interval_at = spending(interval_at, look, max_looks)
        n_seeds = min(len(tr.scores), len(co.scores))
        effect, measure = _effect_size(design, tr, co)
        verdict, decision_ci = "inconclusive", None
        if n_seeds < 2:
            problems.append(
                f"{t} vs {control} has {n_seeds} usable seed in an arm: seed-to-seed "
                "variation cannot be estimated, so no verdict is drawn from it"
            )
        elif (
            design.outcome == "heldout_accuracy"
            and np.ptp(np.concatenate([r.eval_outcomes for r in tr.runs + co.runs])) == 0
        ):
            value = tr.runs[0].eval_outcomes[0]
            problems.append(
                f"every held-out item of {t} and {control} scored {value:g}: "
                "no variation to measure a difference with (a floor or ceiling)"
            )
        elif var <= 0 or df <= 0:
            problems.append(
                f"every seed of {t} and every seed of {control} scored the same within its "
                "arm: no seed-to-seed variation to measure the uncertainty with"
            )
        else:
            verdict, used = judge(direction, difference, interval_at, min_effect=design.min_effect,
                                  margin=margin, comparisons=len(compared))  # fmt: skip
            decision_ci = used if used != (low, high) else None
        comparisons.append(
            Comparison(
                treatment=t,
                control=control,
                difference=difference,
                ci_low=low,
                ci_high=high,
                effect_size=effect,
                n_seeds=n_seeds,
                effect_measure=measure,
                verdict=verdict,
                decision_ci=decision_ci,
            )  # fmt: skip
        )

    trend = (
        dose_response(design, arms, control, look=look, max_looks=max_looks)
        if control in arms
        else None
    )
    verdicts = [c.verdict for c in comparisons]
    if not comparisons or missing:
        verdict = "inconclusive"
    elif trend is not None and trend.verdict is not None:
        verdict = "inconclusive" if problems else trend.verdict
    elif design.direction in MARGIN_DIRECTIONS:
        verdict = ("supported" if all(v == "supported" for v in verdicts)
                   else "refuted" if "refuted" in verdicts else "inconclusive")  # fmt: skip
    elif "supported" in verdicts:
        verdict = "supported"
    elif all(v == "refuted" for v in verdicts):
        verdict = "refuted"
    else:
        verdict = "inconclusive"

    learned = {
        arm.name: learned_or_not(
            design,
            # a run that took no step but dropped batches is evidence of not learning
            [
                r
                for r in results
                if r.arm == arm.name and (r.status == "finished" or r.dropped_batches)
            ],  # fmt: skip
            _baseline_of(arm, baselines),
        )  # fmt: skip
        for arm in design.arms
    }
    rule_verdict = verdict
    pilot_failed = (
        not comparisons and design.pilot is not None and design.pilot.learned == "did not learn"
    )  # the comparison made no data, and the pilot showed the task unlearned at these settings
    failed_runs = _every_run_failed(results) if not arms else None
    if no_arm_learned(learned) or pilot_failed or failed_runs:
        verdict = "not_testable"
    baseline = _baseline_of(_arm(design, control) if control else None, baselines)
    base_mean, base_ci = baseline_summary(design, baseline) if baseline else (None, None)
    means = {name: a.mean for name, a in arms.items()}
    summary = _summary(design, unit, arms, arm_ci, comparisons, trend, rule_verdict, problems,
                       excluded, margin,
                       untestable=verdict == "not_testable" and not failed_runs)  # fmt: skip
    if failed_runs:
        summary += f" The study is not testable: {failed_runs}."
    else:
        summary += _learning_words(design, baseline, base_mean, base_ci, learned, verdict)
    if horizon_words:
        summary += " " + horizon_words
    short_words, unequal = _stopped_short_words(design, by_arm)
    summary += short_words
    caveats = [f"Caveat: {unequal}."] if unequal else []
    if control and control in means and (ceiling := ceiling_words(
        design, control, means[control], by_arm[control]
    )):  # fmt: skip
        summary += f" {ceiling}."
        caveats.append(f"{ceiling}.")
    summary += units_words
    if pilot_failed:
        summary += " " + _pilot_failed_words(design)
    return Analysis(
        arm_means=means,
        arm_ci=arm_ci,
        comparisons=comparisons,
        verdict=verdict,
        summary=summary,
        outcome=design.outcome,
        outcome_label=outcome_label(design, unit),
        direction=design.direction,
        trend=trend,
        baseline=base_mean,
        baseline_ci=base_ci,
        baseline_n=len(baseline.eval_outcomes) if baseline else 0,
        baseline_model=baseline.run if baseline else None,
        learned=learned,
        failed_runs=failed_runs,
        caveats=caveats,
    )


# arms whose runs reached shares of their planned steps this far apart trained for unequal
# lengths: their difference mixes the factor with how long each trained
UNEQUAL_TRAINING_GAP = 0.10


def _stopped_short_words(
    design: Design, by_arm: dict[str, list[RunResult]]
) -> tuple[str, str | None]:
    """A caveat for the summary when scored runs stopped more than a tenth of their planned
    steps early (the budget share ran out, the trainer or a person stopped them), and, when
    the arms reached different shares of their steps, that in words for the answer (else
    None). Learning speed as an area is left out: `common_horizon` already scores every run
    over the steps all reached."""
    if design.outcome == "learning_speed" and design.threshold is None:
        return "", None
    runs = [r for name in by_arm for r in by_arm[name]]
    short = {r.run: s for r in runs if (s := stopped_short(design, r))}
    if not short:
        return "", None
    listed = [f"{r.arm} seed {r.seed} at step {short[r.run][0]} of {short[r.run][1]}"
              for r in runs if r.run in short]  # fmt: skip
    why = list(dict.fromkeys(_first_line(r.note, 120) for r in runs if r.run in short and r.note))
    text = (
        f" Caveat: {len(short)} of {len(runs)} scored runs stopped before their planned steps "
        f"({'; '.join(listed[:4])}{f'; and {len(listed) - 4} more' if len(listed) > 4 else ''})"
        + (f" — {'; '.join(why[:2])}" if why else "")
    )
    reached = {
        name: float(np.mean([short[r.run][0] / short[r.run][1] if r.run in short else 1.0
                             for r in results]))
        for name, results in by_arm.items() if results
    }  # fmt: skip
    if max(reached.values()) - min(reached.values()) <= UNEQUAL_TRAINING_GAP:
        return text + (
            ". Every arm was cut about equally, so the arms are compared after shorter "
            "training than planned."
        ), None
    shares = ", ".join(f"{name} {share:.0%}" for name, share in reached.items())
    unequal = (
        f"the arms trained for unequal lengths (share of their planned steps reached: "
        f"{shares}), so their difference mixes what the arms vary with how long each trained"
    )
    if design.outcome == "cost":
        unequal += " — a run stopped early is cheaper for it"
    elif design.outcome == "learning_speed":
        unequal += " — a run stopped before the threshold counts as never reaching it"
    return f"{text}. Caveat: {unequal}.", unequal


def _every_run_failed(results: list[RunResult]) -> str | None:
    """Why no run produced data, in words, when every run failed (a workflow that kept
    failing, a gateway error): more seeds would fail the same way. None otherwise."""
    if not results or any(r.status != "failed" for r in results):
        return None
    notes = list(dict.fromkeys(_first_line(r.note or "no reason recorded") for r in results))
    shown = "; ".join(notes[:2]) + (f"; and {len(notes) - 2} more" if len(notes) > 2 else "")
    return (
        f"every run ({len(results)}) failed before it produced a score ({shown}), so there is "
        "no data to test the hypothesis with; more seeds would fail the same way. Fix what "
        "failed and start the study again"
    )


def _first_line(text: str, limit: int = 240) -> str:
    line = (text.strip().splitlines() or [""])[0]
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _in_reward_units(design: Design, results: list[RunResult]) -> tuple[Design, str]:
    """A design no pilot put in reward units (`--no-pilot`, one seed) is put there by its
    own results, when they went beyond [0, 1]; the words say so ("" when nothing changed)."""
    rewards = reward_range(results)
    scaled = in_reward_units(design, rewards)
    if scaled is design:
        return design, ""
    return scaled, reward_scale_words(
        scaled, rewards, seen_by="No pilot set the rule's units: the rewards"
    )


def _arm(design: Design, name: str) -> Arm:
    return next(a for a in design.arms if a.name == name)


def _baseline_of(arm: Arm | None, baselines: list[RunResult]) -> RunResult | None:
    """The untrained result an arm is compared with: of the arm's own base model when it
    names one, else the first (the study's model's); among those, the one evaluated with the
    arm's own workflow PARAMS when there is one (a user-workflow study)."""
    wanted = arm.run.get("base_model") if arm is not None else None
    if wanted:
        baselines = [b for b in baselines if b.run == wanted]
    if arm is not None:
        own = arm.workflow_params
        same = [b for b in baselines
                if b.eval_params and all(own.get(k) == v for k, v in b.eval_params.items())]  # fmt: skip
        if same:
            return same[0]
    return baselines[0] if baselines else None


def _learning_words(
    design: Design,
    baseline: RunResult | None,
    mean: float | None,
    ci: tuple[float, float] | None,
    learned: dict[str, Learning],
    verdict: str,
) -> str:
    parts = []
    if baseline is not None and mean is not None and ci is not None:
        parts.append(
            f"The untrained {baseline.run} (step 0) scores {mean:.3f} [{ci[0]:.3f}, {ci[1]:.3f}] "
            f"on the same {len(baseline.eval_outcomes)} held-out {design.eval_task} items."
        )
    else:
        parts.append("The untrained policy was not evaluated (no baseline).")
    parts.extend(f"{name} {v.reason}." for name, v in learned.items())
    if verdict == "not_testable":
        parts.append(f"The study is {not_testable_words(learned, design.steps)}.")
    return " " + " ".join(parts)


def _pilot_failed_words(design: Design) -> str:
    pilot = design.pilot
    assert pilot is not None
    retuned = "; ".join(f"{k} {v[0]:g} → {v[1]:g}" for k, v in pilot.retuned.items())
    after = (f"The comparison, retuned ({retuned}), produced no usable runs within the budget"
             if retuned else "The comparison produced no usable runs within the budget")  # fmt: skip
    return (
        f"The study is not testable: the pilot's control did not learn in {pilot.steps} steps "
        f"({pilot.evidence}). {after}, so nothing shows the arms can learn the task."
    )


def _clipped(design: Design, interval: Interval) -> Interval:
    if design.outcome == "heldout_accuracy" and design.reward_scale is None:
        return max(0.0, interval[0]), min(1.0, interval[1])
    return interval


def _signed(x: float) -> str:
    return f"{x:+.3f}"


def rule_words(design: Design, margin: float) -> str:
    """The pre-registered rule in words, on the outcome's own scale."""
    m = design.min_effect
    rules = {
        "greater": f"supported if the interval lies above 0 and the difference is at least "
        f"{m:g}; refuted if the interval's upper end is below {m:g}",
        "less": f"supported if the interval lies below 0 and the difference is at most "
        f"{-m:g}; refuted if the interval's lower end is above {-m:g}",
        "two_sided": f"supported if the interval excludes 0 and the difference is at least "
        f"{m:g} either way; refuted if the interval lies within ±{m:g}",
        "equivalent": f"an equivalence test (two one-sided tests, TOST): supported if the 90% interval lies "
        f"inside ±{margin:g}; refuted if the 95% interval lies entirely outside ±{margin:g}",
        "noninferior": f"a non-inferiority test (one one-sided 5% test): supported if the 90% "
        f"interval's lower end is above {-margin:g} (the treatment is not worse by more than "
        f"{margin:g}); refuted if the 95% interval lies entirely below {-margin:g}",
        "nonsuperior": f"a non-inferiority test on a score where lower is better (one one-sided "
        f"5% test): supported if the 90% interval's upper end is below {margin:g} (the "
        f"treatment is not worse by more than {margin:g}); refuted if the 95% interval lies "
        f"entirely above {margin:g}",
    }
    return rules[_effective_direction(design)]


def describe_rule(design: Design) -> str:
    """The whole pre-registered rule in words, fixed before any run: what a planner can put
    in `Design.decision_rule` so the rule the report states is the rule `analyse` applies."""
    margin = design.margin if design.margin is not None else design.min_effect
    k = sum(a.role == "treatment" for a in design.arms)
    widened = (
        f", widened to {1 - (1 - LEVEL) / k:.2%} (Bonferroni) for the verdicts of {k} treatments"
        if k > 1 and design.direction not in MARGIN_DIRECTIONS
        else ""
    )
    text = (
        f"Each run is scored on {outcome_label(design)}; {direction_words(design)}. Each "
        f"treatment − control difference of mean scores over seeds gets a 95% Welch t "
        f"interval{widened}: {rule_words(design, margin)}; inconclusive otherwise, and "
        "fewer than 2 usable seeds in an arm give no verdict."
    )
    levels = [a.level for a in design.arms if _numeric(a.level)]
    if len(set(levels)) >= 3 and design.direction in ("greater", "less"):
        text += (
            " With 3+ numeric levels the verdict is the dose-response trend's instead: the "
            "slope of the score against the level (log10 when the levels span more than 10×), "
            "its fitted change from the control's level to the farthest one judged by the "
            "same rule."
        )
    return text + units_words(design) + stopping_words(design)


def stopping_words(design: Design) -> str:
    """The sequential stopping rule and this design's look, in words ("" for one look)."""
    if design.max_looks <= 1:
        return ""
    stopping = describe_stopping(design.max_looks, design.direction, design.seeds_per_look)
    return f" {stopping} This is look {design.look}."


def _equivalence_words(design: Design, verdict: str, margin: float) -> str:
    if design.direction == "noninferior":
        if verdict == "supported":
            return f": the treatment is not worse than the control by more than {margin:g}"
        return f": the treatment is worse than the control by more than {margin:g}"
    if design.direction != "equivalent":
        return ""
    if verdict == "supported":
        return f": the arms are equivalent within ±{margin:g}"
    return f": the arms differ by more than ±{margin:g}"


def _summary(
    design: Design,
    unit: str,
    arms: dict[str, ArmScores],
    arm_ci: dict[str, Interval],
    comparisons: list[Comparison],
    trend: Trend | None,
    verdict: str,
    problems: list[str],
    excluded: list[str],
    margin: float,
    *,
    untestable: bool = False,
) -> str:
    label = outcome_label(design, unit)
    parts: list[str] = []
    if arms:
        listed = "; ".join(
            f"{name} {a.mean:.3f} [{arm_ci[name][0]:.3f}, {arm_ci[name][1]:.3f}] "
            f"over {len(a.scores)} seed{'s' if len(a.scores) != 1 else ''}"
            for name, a in arms.items()
        )
        parts.append(f"{label[0].upper()}{label[1:]}, mean over seeds [95% interval]: {listed}.")
    elif design.outcome == "heldout_accuracy":
        parts.append(f"No run finished with held-out {design.metric} on {design.eval_task}.")
    else:
        parts.append(f"No run finished with a score on {label}.")
    for c in comparisons:
        parts.append(
            f"{c.treatment} − {c.control} = {_signed(c.difference)} (95% CI "
            f"{_signed(c.ci_low)} to {_signed(c.ci_high)}; {c.effect_measure} "
            f"{c.effect_size:+.2f}; {c.n_seeds} seed{'s' if c.n_seeds != 1 else ''} per arm"
            f"{ONE_SEED_INTERVAL if c.n_seeds == 1 else ''}): {c.verdict}."
        )
    if trend is not None:
        parts.append(
            f"Dose-response over {trend.n_runs} runs: slope {trend.slope:+.3g} per unit of "
            f"{trend.factor} (95% CI {trend.ci_low:+.3g} to {trend.ci_high:+.3g}), a fitted "
            f"change of {_signed(trend.change)} from the control's level to the farthest level"
            + (f"; the verdict follows this trend: {trend.verdict}." if trend.verdict else ".")
        )
    rule = rule_words(design, margin)
    judged = (
        f"the comparison alone would give {verdict}, but no arm learned (below), so it does "
        f"not test {design.hypothesis}."
        if untestable
        else f"the test of {design.hypothesis} is inconclusive."
        if verdict == "inconclusive"
        else f"{design.hypothesis} is {verdict}{_equivalence_words(design, verdict, margin)}."
    )
    parts.append(
        f"The hypothesis is about {label}, and {direction_words(design)}. By the "
        f"pre-registered rule ({rule}), {judged}"
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

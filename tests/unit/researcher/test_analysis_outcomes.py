"""researcher.analysis by outcome and direction: the scores, the verdicts, and their error
rates proven by simulation (no true effect → "supported" at most ~5% of studies; a true
difference equal to the equivalence margin → "equivalent" at most ~5%; a treatment worse by
the non-inferiority margin → "non-inferior" at most ~5%; a large effect → high power)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from researcher.analysis import analyse, describe_rule, judge
from researcher.intervals import t_quantile
from researcher.outcomes import area_under_curve, final_train_reward, steps_to_threshold
from researcher.plan import Arm, Design, RunResult

STUDIES = 500  # simulated studies per scenario
NOMINAL = 0.05
SLACK = 3 * math.sqrt(NOMINAL * (1 - NOMINAL) / STUDIES)  # three Monte-Carlo standard errors


def design(
    outcome: str = "heldout_accuracy",
    direction: str = "greater",
    *,
    levels: tuple = (None, None),
    min_effect: float = 0.0,
    margin: float | None = None,
    threshold: float | None = None,
    steps: int = 20,
) -> Design:
    arms = [
        Arm(name=f"arm{i}", role="control" if i == 0 else "treatment", description="",
            tasks={"arithmetic": 1.0}, run={} if level is None else {"lr": level}, level=level)
        for i, level in enumerate(levels)
    ]  # fmt: skip
    return Design(
        hypothesis="H1", arms=arms, seeds=[0, 1, 2], steps=steps, eval_family="arithmetic",
        eval_episodes=48, decision_rule="pre-registered", min_effect=min_effect,
        outcome=outcome, direction=direction, margin=margin, threshold=threshold,
    )  # fmt: skip


def accuracy_run(rng, arm: str, seed: int, p: float, items: int = 48) -> RunResult:
    outcomes = (rng.random(items) < min(1.0, max(0.0, p))).astype(float).tolist()
    return RunResult(arm=arm, seed=seed, run=f"{arm}-s{seed}", eval_outcomes=outcomes)


def curve_run(rng, arm: str, seed: int, rate: float, steps: int = 20, every: int = 2) -> RunResult:
    """A noisy rising reward curve logged every `every` steps: 1 − exp(−rate·step)."""
    points = [
        (s, float(np.clip(1 - math.exp(-rate * s) + rng.normal(0, 0.05), 0, 1)))
        for s in range(1, steps + 1, every)
    ]
    return RunResult(arm=arm, seed=seed, run=f"{arm}-s{seed}", curve=points)


def supported_rate(make_design, make_results, studies: int = STUDIES, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    d = make_design()
    hits = sum(analyse(d, make_results(rng)).verdict == "supported" for _ in range(studies))
    return hits / studies


def two_arms(run_of, seeds: int, effects: tuple[float, float]):
    """results(rng): `seeds` runs per arm, arm i's runs drawn by run_of(rng, arm, seed, effect_i)."""
    return lambda rng: [
        run_of(rng, f"arm{i}", s, effect) for i, effect in enumerate(effects) for s in range(seeds)
    ]


# -- the scores ---------------------------------------------------------------------------


def test_learning_speed_is_the_mean_reward_over_the_steps_interpolated_and_carried():
    r = RunResult(arm="a", seed=0, run="a0", curve=[(2, 0.0), (4, 1.0)])
    # steps 1..6: 0 (held before the first point), 0, 0.5, 1, 1, 1 (carried)
    assert area_under_curve(r, 6) == pytest.approx(3.5 / 6)
    assert area_under_curve(r, 3) == pytest.approx(0.5 / 3)  # only steps 1..3 count


def test_steps_to_threshold_is_the_first_step_reaching_it_or_censored_past_the_end():
    r = RunResult(arm="a", seed=0, run="a0", curve=[(1, 0.1), (3, 0.7), (5, 0.9), (7, 0.95)])
    assert steps_to_threshold(r, 0.7, 10) == 3
    assert steps_to_threshold(r, 0.99, 10) == 11
    assert steps_to_threshold(r, 0.95, 6) == 7  # step 7 is past the design's 6 steps


def test_final_train_reward_averages_the_last_fifth_of_the_curve():
    r = RunResult(arm="a", seed=0, run="a0", curve=[(s, float(s)) for s in range(1, 11)])
    assert final_train_reward(r) == pytest.approx(9.5)
    assert final_train_reward(RunResult(arm="a", seed=0, run="a0", curve=[(1, 0.3)])) == 0.3


def test_cost_is_wall_time_and_runs_without_one_are_excluded():
    d = design("cost", "less", min_effect=1.0)
    results = [RunResult(arm="arm0", seed=s, run=f"c{s}", wall_s=100.0 + s) for s in range(3)]
    results += [RunResult(arm="arm1", seed=s, run=f"t{s}", wall_s=50.0 + s) for s in range(3)]
    results.append(RunResult(arm="arm1", seed=3, run="t3", tokens=10))
    a = analyse(d, results)
    assert a.verdict == "supported" and a.comparisons[0].difference == pytest.approx(-50)
    assert "t3 (finished: no wall time recorded)" in a.summary
    assert (
        "cost (training wall time, seconds)" in a.summary and "lower is the hypothesis" in a.summary
    )


def test_cost_falls_back_to_tokens_when_no_run_has_a_wall_time():
    d = design("cost", "less")
    results = [RunResult(arm=f"arm{i}", seed=s, run=f"{i}{s}", tokens=1000 * (i + 1) + s)
               for i in range(2) for s in range(3)]  # fmt: skip
    a = analyse(d, results)
    assert a.outcome_label == "cost (tokens trained on)" and a.verdict == "refuted"


# -- the verdict rules, one case each ------------------------------------------------------


def interval(low: float, high: float):
    return lambda level: (low, high)


@pytest.mark.parametrize(
    ("direction", "difference", "low", "high", "verdict"),
    [
        ("greater", 0.3, 0.1, 0.5, "supported"),
        ("greater", -0.3, -0.5, -0.1, "refuted"),
        ("less", -0.3, -0.5, -0.1, "supported"),
        ("less", 0.3, 0.1, 0.5, "refuted"),
        ("less", -0.01, -0.2, 0.18, "inconclusive"),
        ("two_sided", -0.3, -0.5, -0.1, "supported"),
        ("two_sided", 0.3, 0.1, 0.5, "supported"),
        ("two_sided", 0.0, -0.03, 0.03, "refuted"),
        ("two_sided", 0.0, -0.2, 0.2, "inconclusive"),
        ("equivalent", 0.0, -0.05, 0.05, "supported"),
        ("equivalent", 0.5, 0.3, 0.7, "refuted"),
        ("equivalent", 0.1, -0.05, 0.25, "inconclusive"),
    ],
)
def test_each_direction_judges_the_interval_its_own_way(direction, difference, low, high, verdict):
    got, _ = judge(direction, difference, interval(low, high), min_effect=0.05, margin=0.1)
    assert got == verdict


def test_a_credible_but_small_drop_is_not_supported_as_less():
    got, _ = judge("less", -0.02, interval(-0.03, -0.01), min_effect=0.05, margin=0.1)
    assert got == "refuted"  # credibly lower, but by less than what matters


def test_steps_to_threshold_flip_the_direction_and_the_summary_says_so():
    d = design("learning_speed", "greater", threshold=0.8, min_effect=1.0)
    fast = [(s, min(1.0, 0.2 * s)) for s in range(1, 21)]  # reaches 0.8 at step 4
    slow = [(s, min(1.0, 0.05 * s)) for s in range(1, 21)]  # at step 16
    results = [RunResult(arm="arm0", seed=s, run=f"c{s}", curve=[(t, v - 0.01 * s) for t, v in slow])
               for s in range(3)]  # fmt: skip
    results += [RunResult(arm="arm1", seed=s, run=f"t{s}", curve=[(t, v - 0.02 * s) for t, v in fast])
                for s in range(3)]  # fmt: skip
    a = analyse(d, results)
    assert a.comparisons[0].difference < -10  # fewer steps
    assert a.verdict == "supported"
    assert "fewer is faster" in a.summary and "faster learning (fewer steps)" in a.summary


def test_learning_speed_less_names_the_outcome_and_direction_in_words():
    d = design("learning_speed", "less", min_effect=0.05)
    rng = np.random.default_rng(1)
    results = two_arms(curve_run, 3, (0.5, 0.08))(rng)
    a = analyse(d, results)
    assert a.verdict == "supported" and a.comparisons[0].difference < 0
    assert "learning speed (area under the training-reward curve" in a.summary
    assert "slower learning (a smaller area) is the hypothesis" in a.summary
    assert a.comparisons[0].effect_measure == "standardized difference (d)"


def test_an_equivalence_study_reports_the_tost_interval():
    d = design(direction="equivalent", margin=0.1)
    rng = np.random.default_rng(2)
    results = two_arms(lambda rng, a, s, p: accuracy_run(rng, a, s, p, items=2000), 3, (0.5, 0.5))(
        rng
    )
    a = analyse(d, results)
    (c,) = a.comparisons
    assert a.verdict == "supported" and c.decision_ci is not None
    assert c.ci_low < c.decision_ci[0] < c.decision_ci[1] < c.ci_high  # 90% inside 95%
    assert "TOST)" in a.summary and "±0.1" in a.summary


def test_dose_response_on_log_levels_decides_by_the_trend():
    levels = (1e-6, 1e-5, 1e-4, 1e-3)
    d = design("final_train_reward", "greater", levels=levels, min_effect=0.1)
    rng = np.random.default_rng(3)
    results = [
        RunResult(arm=f"arm{i}", seed=s, run=f"{i}{s}",
                  curve=[(1, 0.2 + 0.15 * i + rng.normal(0, 0.03))])
        for i in range(4) for s in range(2)
    ]  # fmt: skip
    a = analyse(d, results)
    assert a.trend is not None and a.trend.log_scale and a.trend.factor == "log10(lr)"
    assert a.trend.slope == pytest.approx(0.15, abs=0.05) and a.trend.change > 0.3
    assert a.verdict == a.trend.verdict == "supported"
    assert "Dose-response" in a.summary and len(a.comparisons) == 3


def test_the_rule_in_words_names_outcome_direction_and_the_trend():
    speed = describe_rule(design("learning_speed", "less", min_effect=0.05))
    assert "learning speed (area under the training-reward curve" in speed
    assert "slower learning" in speed and "at most -0.05" in speed
    dose = describe_rule(design(levels=(1e-5, 1e-4, 1e-3), min_effect=0.05))
    assert "Bonferroni" in dose and "dose-response trend" in dose
    equivalent = describe_rule(design(direction="equivalent", margin=0.1))
    assert "TOST" in equivalent and "±0.1" in equivalent


def test_t_quantiles_match_the_tables():
    for df, expected in ((1, 12.7062), (2, 4.3027), (4, 2.7764), (30, 2.0423), (1e6, 1.9600)):
        assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-4)
    assert t_quantile(0.05, 3) == pytest.approx(-2.3534, abs=1e-4)


# -- error rates by simulation -------------------------------------------------------------


def seed_effect_accuracy(tau: float):
    """Held-out accuracy of a run whose seed shifts its true rate by N(0, tau)."""
    return lambda rng, arm, seed, p: accuracy_run(rng, arm, seed, p + rng.normal(0, tau))


@pytest.mark.parametrize("direction", ["greater", "less", "two_sided"])
@pytest.mark.parametrize(("seeds", "tau"), [(2, 0.15), (3, 0.0)])
def test_without_a_true_effect_accuracy_is_rarely_supported(direction, seeds, tau):
    rate = supported_rate(
        lambda: design(direction=direction),
        two_arms(seed_effect_accuracy(tau), seeds, (0.5, 0.5)),
    )
    assert rate <= NOMINAL + SLACK


@pytest.mark.slow
@pytest.mark.parametrize("direction", ["greater", "less", "two_sided"])
def test_without_a_true_effect_learning_speed_is_rarely_supported(direction):
    def run_of(rng, arm, seed, rate):
        return curve_run(rng, arm, seed, rate * math.exp(rng.normal(0, 0.4)))

    rate = supported_rate(
        lambda: design("learning_speed", direction), two_arms(run_of, 3, (0.2, 0.2))
    )
    assert rate <= NOMINAL + SLACK


@pytest.mark.slow
@pytest.mark.parametrize("direction", ["greater", "less"])
def test_without_a_true_effect_steps_to_threshold_is_rarely_supported(direction):
    def run_of(rng, arm, seed, rate):  # some runs never reach the threshold: censored
        return curve_run(rng, arm, seed, rate * math.exp(rng.normal(0, 0.5)), every=1)

    rate = supported_rate(
        lambda: design("learning_speed", direction, threshold=0.8), two_arms(run_of, 3, (0.1, 0.1))
    )
    assert rate <= NOMINAL + SLACK


@pytest.mark.parametrize("outcome", ["final_train_reward", "cost"])
def test_without_a_true_effect_other_outcomes_are_rarely_supported(outcome):
    def run_of(rng, arm, seed, centre):
        value = float(centre * math.exp(rng.normal(0, 0.3)))  # skewed, like wall times
        return RunResult(arm=arm, seed=seed, run=f"{arm}{seed}", curve=[(1, value)], wall_s=value)

    rate = supported_rate(lambda: design(outcome, "two_sided"), two_arms(run_of, 2, (1.0, 1.0)))
    assert rate <= NOMINAL + SLACK


@pytest.mark.parametrize("seeds", [2, 4])
def test_a_true_difference_equal_to_the_margin_is_rarely_called_equivalent(seeds):
    margin = 0.1
    rate = supported_rate(
        lambda: design(direction="equivalent", margin=margin),
        two_arms(seed_effect_accuracy(0.05), seeds, (0.5, 0.5 + margin)),
    )
    assert rate <= NOMINAL + SLACK


@pytest.mark.parametrize("seeds", [2, 4])
def test_a_treatment_worse_by_the_margin_is_rarely_called_non_inferior(seeds):
    """Non-inferiority's error: a treatment exactly the margin worse passes at most ~5%."""
    margin = 0.1
    rate = supported_rate(
        lambda: design(direction="noninferior", margin=margin),
        two_arms(seed_effect_accuracy(0.05), seeds, (0.5, 0.5 - margin)),
    )
    assert rate <= NOMINAL + SLACK


def test_a_better_treatment_is_non_inferior_where_equivalence_would_refute():
    """The one-sided test is not equivalence: a treatment far better than the control
    passes "no worse than" and fails "as good as" on the same runs."""
    rng = np.random.default_rng(7)
    results = two_arms(lambda rng, a, s, p: accuracy_run(rng, a, s, p, items=2000), 3, (0.4, 0.7))(
        rng
    )
    noninferior = analyse(design(direction="noninferior", margin=0.05), results)
    equivalent = analyse(design(direction="equivalent", margin=0.05), results)
    assert noninferior.verdict == "supported" and equivalent.verdict == "refuted"
    (c,) = noninferior.comparisons
    assert c.decision_ci is not None and c.ci_low < c.decision_ci[0]  # the 90% lower end
    assert "non-inferiority" in noninferior.summary and "not worse" in noninferior.summary


def test_a_clearly_worse_treatment_is_refuted_as_non_inferior():
    rng = np.random.default_rng(8)
    results = two_arms(lambda rng, a, s, p: accuracy_run(rng, a, s, p, items=2000), 3, (0.7, 0.4))(
        rng
    )
    a = analyse(design(direction="noninferior", margin=0.05), results)
    assert a.verdict == "refuted" and a.comparisons[0].ci_high < -0.05


def test_non_inferiority_on_steps_to_a_threshold_reads_fewer_steps_as_better():
    """On steps to a threshold lower is better: a treatment that needs far fewer steps is
    no worse; one that needs far more is refuted."""
    d = design("learning_speed", "noninferior", margin=2.0, threshold=0.5)

    def arm(name, slopes):  # steps to 0.5: ceil(0.5 / slope)
        return [RunResult(arm=name, seed=s, run=f"{name}{s}",
                          curve=[(k, min(1.0, slope * k)) for k in range(1, 21)])
                for s, slope in enumerate(slopes)]  # fmt: skip

    fast = arm("arm0", (0.08, 0.1, 0.125))  # 7, 5, 4 steps
    faster = arm("arm1", (0.2, 0.25, 0.17))  # 3, 2, 3
    slower = arm("arm1", (0.03, 0.035, 0.04))  # 17, 15, 13
    assert analyse(d, fast + faster).verdict == "supported"
    assert analyse(d, fast + slower).verdict == "refuted"


def test_three_treatments_without_effect_keep_the_family_rate():
    def results(rng):
        return [
            seed_effect_accuracy(0.1)(rng, f"arm{i}", s, 0.5) for i in range(4) for s in range(3)
        ]

    rate = supported_rate(lambda: design(levels=("a", "b", "c", "d")), results)
    assert rate <= NOMINAL + SLACK


@pytest.mark.slow
@pytest.mark.parametrize("direction", ["greater", "less"])
def test_a_flat_dose_response_is_rarely_supported(direction):
    levels = (1e-6, 1e-5, 1e-4, 1e-3)

    def results(rng):
        return [RunResult(arm=f"arm{i}", seed=s, run=f"{i}{s}", curve=[(1, rng.normal(0.5, 0.1))])
                for i in range(4) for s in range(2)]  # fmt: skip

    rate = supported_rate(lambda: design("final_train_reward", direction, levels=levels), results)
    assert rate <= NOMINAL + SLACK


def test_a_trend_is_read_from_the_control_towards_the_other_levels():
    """A control at the highest level: "greater" means the lower levels score higher."""
    levels = (1e-3, 1e-4, 1e-5)
    d = design("final_train_reward", "greater", levels=levels, min_effect=0.1)
    rng = np.random.default_rng(4)
    results = [
        RunResult(arm=f"arm{i}", seed=s, run=f"{i}{s}",
                  curve=[(1, 0.2 + 0.2 * i + rng.normal(0, 0.02))])
        for i in range(3) for s in range(2)
    ]  # fmt: skip
    a = analyse(d, results)
    assert a.trend.slope < 0 and a.trend.change > 0.3  # falls with lr; rises away from control
    assert a.verdict == "supported"


# -- power ---------------------------------------------------------------------------------

POWER_STUDIES = 100


@pytest.mark.parametrize("direction", ["greater", "two_sided"])
def test_a_large_accuracy_gain_is_found(direction):
    rate = supported_rate(
        lambda: design(direction=direction, min_effect=0.05),
        two_arms(seed_effect_accuracy(0.03), 3, (0.3, 0.6)),
        studies=POWER_STUDIES,
    )
    assert rate >= 0.8


def test_a_large_slowdown_of_learning_is_found():
    rate = supported_rate(
        lambda: design("learning_speed", "less", min_effect=0.05),
        two_arms(curve_run, 3, (0.5, 0.1)),
        studies=POWER_STUDIES,
    )
    assert rate >= 0.8


@pytest.mark.parametrize("direction", ["equivalent", "noninferior"])
def test_equal_arms_measured_precisely_pass_a_test_against_a_margin(direction):
    rate = supported_rate(
        lambda: design(direction=direction, margin=0.1),
        two_arms(lambda rng, a, s, p: accuracy_run(rng, a, s, p, items=400), 3, (0.5, 0.5)),
        studies=POWER_STUDIES,
    )
    assert rate >= 0.8


def test_a_steep_dose_response_is_found():
    levels = (1e-6, 1e-5, 1e-4, 1e-3)

    def results(rng):
        return [RunResult(arm=f"arm{i}", seed=s, run=f"{i}{s}",
                          curve=[(1, rng.normal(0.2 + 0.1 * i, 0.05))])
                for i in range(4) for s in range(2)]  # fmt: skip

    rate = supported_rate(
        lambda: design("final_train_reward", "greater", levels=levels, min_effect=0.05),
        results,
        studies=POWER_STUDIES,
    )
    assert rate >= 0.8


def test_continuous_held_out_rewards_vary_by_their_own_spread_not_a_binomial_one():
    from researcher.intervals import item_variance

    steady = RunResult(arm="a", seed=0, run="r", eval_outcomes=[0.60, 0.61, 0.59, 0.60] * 4)
    assert item_variance(steady) == pytest.approx(np.var(steady.eval_outcomes, ddof=1) / 16)
    assert item_variance(steady) < 1e-4  # a binomial 0.6 would say 0.015
    solved = RunResult(arm="a", seed=0, run="r", eval_outcomes=[1.0] * 16)
    assert item_variance(solved) > 0  # all solved still counts as uncertain


def test_a_run_cut_short_is_not_scored_on_learning_speed():
    from researcher.outcomes import unscored_reason

    arms = [Arm(name=n, role=r, description="", tasks={"learnable": 1.0})
            for n, r in (("c", "control"), ("t", "treatment"))]  # fmt: skip
    design = Design(hypothesis="H1", arms=arms, seeds=[0], steps=20, eval_family="learnable",
                    eval_episodes=8, decision_rule="", outcome="learning_speed")  # fmt: skip
    short = RunResult(arm="t", seed=0, run="r", curve=[(s, 0.9) for s in range(1, 9)])
    whole = RunResult(arm="t", seed=0, run="r", curve=[(s, 0.5) for s in range(1, 20)])
    assert "stopped at step 8 of 20" in unscored_reason(design, short)
    assert unscored_reason(design, whole) is None  # a step short of the plan still counts
    held = design.model_copy(update={"outcome": "final_train_reward"})
    assert unscored_reason(held, short) is None


def test_runs_the_budget_stopped_are_scored_over_the_steps_every_run_reached():
    from researcher.outcomes import area_under_curve, common_horizon

    d = design("learning_speed", levels=(1e-5, 4e-5), steps=10)
    rising = lambda arm, seed, last, rate: RunResult(  # noqa: E731
        arm=arm,
        seed=seed,
        run=f"{arm}-s{seed}",
        curve=[(s, min(1.0, rate * s)) for s in range(1, last + 1)],
    )
    results = [rising("arm0", 0, 10, 0.05), rising("arm0", 1, 10, 0.06),
               rising("arm1", 0, 6, 0.12), rising("arm1", 1, 7, 0.13),
               rising("arm1", 2, 3, 0.2)]  # fmt: skip
    cut, words = common_horizon(d, results)
    assert (
        cut.steps == 6 and "steps 1–6" in words and "2 run(s) were stopped before step 10" in words
    )
    analysis = analyse(d, results)
    assert "scored over steps 1–6" in analysis.summary and "1–6" in analysis.outcome_label
    assert analysis.arm_means["arm0"] == pytest.approx(
        np.mean([area_under_curve(r, 6) for r in results[:2]])
    )
    assert "arm1-s2" in analysis.summary  # under half the steps: still excluded as too short
    assert analysis.comparisons[0].n_seeds == 2  # 2 cut runs compared, not excluded
    # whole runs, or runs a step short, are scored over all the steps as before
    assert common_horizon(d, results[:2]) == (d, "")
    # a study of max_steps (arms train different numbers of steps) is never cut
    steps_study = d.model_copy(update={"arms": [a.model_copy(update={"run": {"max_steps": m}})
                                                for a, m in zip(d.arms, (10, 20), strict=True)]})  # fmt: skip
    assert common_horizon(steps_study, results)[0] is steps_study
    # other outcomes are never cut
    held = design("heldout_accuracy", levels=(1e-5, 4e-5), steps=10)
    assert common_horizon(held, results)[0] is held


# -- runs stopped short of their planned steps ----------------------------------------------


def _with_curve(result: RunResult, last: int, note: str | None = None) -> RunResult:
    """`result` having logged steps 1..last (a run stopped at `last` when last < planned)."""
    return result.model_copy(update={"curve": [(s, 0.5) for s in range(1, last + 1)], "note": note})


def test_arms_stopped_at_different_shares_of_their_steps_are_named_in_summary_and_answer():
    from researcher.answer import plain_answer
    from researcher.plan import Framing

    rng = np.random.default_rng(3)
    spent = "its share of the training budget (300 s) is spent"
    results = [_with_curve(accuracy_run(rng, "arm0", s, 0.3), 20) for s in range(3)]
    results += [_with_curve(accuracy_run(rng, "arm1", s, 0.7), 8, spent) for s in range(3)]
    a = analyse(design(levels=(1e-5, 4e-5)), results)
    assert a.verdict == "supported"
    assert "Caveat: 3 of 6 scored runs stopped before their planned steps (arm1 seed 0 at step 8 of 20" in a.summary  # fmt: skip
    assert spent in a.summary
    (caveat,) = a.caveats
    assert caveat.startswith("Caveat: the arms trained") and "arm0 100%, arm1 40%" in caveat
    framing = Framing(question="does 4e-5 help?", family="learning_rate", summary="lr",
                      model="tiny", planner="template")  # fmt: skip
    answer = plain_answer(framing, design(levels=(1e-5, 4e-5)), a)
    assert answer.startswith("Yes") and caveat in answer


def test_arms_cut_equally_or_runs_that_reached_their_steps_get_no_unequal_caveat():
    rng = np.random.default_rng(4)
    cut = [_with_curve(accuracy_run(rng, f"arm{i}", s, 0.5), 12, "budget") for i in (0, 1)
           for s in range(3)]  # fmt: skip
    a = analyse(design(), cut)
    assert "Caveat: 6 of 6 scored runs stopped" in a.summary
    assert "compared after shorter training than planned" in a.summary
    assert a.caveats == []
    # a run two steps short of 20 (within a tenth) reached its steps: nothing is said
    full = [_with_curve(accuracy_run(rng, f"arm{i}", s, 0.5), 18) for i in (0, 1) for s in range(3)]
    b = analyse(design(), full)
    assert "Caveat" not in b.summary and b.caveats == []


def test_learning_speed_as_an_area_leaves_short_runs_to_the_common_horizon():
    rng = np.random.default_rng(5)
    results = [curve_run(rng, "arm0", s, 0.2) for s in range(3)]
    results += [curve_run(rng, "arm1", s, 0.2, steps=14) for s in range(3)]
    a = analyse(design("learning_speed", min_effect=0.05), results)
    assert "the steps every scored run reached" in a.summary
    assert "stopped before their planned steps" not in a.summary and a.caveats == []

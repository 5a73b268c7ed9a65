"""researcher.analysis: per-arm bootstrap intervals, comparisons and the pre-registered verdict."""

from __future__ import annotations

import math
import time

import pytest

from researcher.analysis import analyse, arm_scores, cohens_h, curve_bands
from researcher.plan import Arm, Design, RunResult


def design(*arms: tuple[str, str], min_effect: float = 0.05) -> Design:
    return Design(
        hypothesis="H1",
        arms=[Arm(name=n, role=role, description=n, tasks={"arithmetic": 1.0}) for n, role in arms],
        seeds=[0, 1],
        steps=10,
        eval_family="arithmetic",
        eval_episodes=48,
        decision_rule="supported if the CI of treatment − control lies above 0",
        min_effect=min_effect,
    )


TWO_ARMS = (("control", "control"), ("mixed", "treatment"))


def run(arm: str, seed: int, accuracy: float, items: int = 48, **kw) -> RunResult:
    solved = round(items * accuracy)
    outcomes = [1.0] * solved + [0.0] * (items - solved)
    return RunResult(arm=arm, seed=seed, run=f"{arm}-s{seed}", eval_outcomes=outcomes, **kw)


def test_identical_arms_are_inconclusive_with_an_interval_straddling_zero():
    results = [run(arm, s, 0.5) for arm in ("control", "mixed") for s in (0, 1)]
    a = analyse(design(*TWO_ARMS), results)
    (c,) = a.comparisons
    assert a.verdict == "inconclusive"
    assert c.difference == 0.0 and c.effect_size == 0.0
    assert c.ci_low < 0 < c.ci_high
    # two arms of 96 items at p = 0.5: the difference's SE is about 0.072
    assert 0.09 < c.ci_high < 0.2 and -0.2 < c.ci_low < -0.09


def test_a_clearly_better_treatment_is_supported():
    results = [run("control", s, 0.2) for s in (0, 1)] + [run("mixed", s, 0.9) for s in (0, 1)]
    a = analyse(design(*TWO_ARMS), results)
    (c,) = a.comparisons
    assert a.verdict == "supported"
    assert a.arm_means["control"] == pytest.approx(10 / 48)  # round(48 * 0.2) = 10
    assert a.arm_means["mixed"] == pytest.approx(43 / 48)
    assert c.difference == pytest.approx(33 / 48)
    assert 0.5 < c.ci_low < c.difference < c.ci_high < 0.85
    h = 2 * math.asin(math.sqrt(43 / 48)) - 2 * math.asin(math.sqrt(10 / 48))
    assert c.effect_size == pytest.approx(h)
    assert c.n_seeds == 2
    assert "supported" in a.summary and "+0.688" in a.summary


def test_a_clearly_worse_treatment_is_refuted():
    results = [run("control", s, 0.8) for s in (0, 1)] + [run("mixed", s, 0.3) for s in (0, 1)]
    a = analyse(design(*TWO_ARMS), results)
    assert a.verdict == "refuted"
    assert a.comparisons[0].ci_high < 0


def test_a_real_but_too_small_effect_is_not_supported():
    results = [run("control", s, 0.50, items=2000) for s in (0, 1)]
    results += [run("mixed", s, 0.55, items=2000) for s in (0, 1)]
    a = analyse(design(*TWO_ARMS, min_effect=0.2), results)
    assert a.comparisons[0].ci_low > 0  # credible, but smaller than what matters
    assert a.verdict == "refuted"


def test_arm_intervals_cover_the_mean_and_seed_spread_widens_them():
    tight = [run("control", s, 0.5) for s in (0, 1, 2)]
    spread = [run("control", 0, 0.1), run("control", 1, 0.5), run("control", 2, 0.9)]
    tight_lo, tight_hi = arm_scores(design(), tight, "wall_s").interval()
    spread_lo, spread_hi = arm_scores(design(), spread, "wall_s").interval()
    assert tight_lo < 0.5 < tight_hi and spread_lo < 0.5 < spread_hi
    assert spread_hi - spread_lo > 2 * (tight_hi - tight_lo)


def test_seeds_with_different_item_counts_are_averaged_per_seed():
    results = [run("control", 0, 1.0, items=10), run("control", 1, 0.0, items=40)]
    a = analyse(design(("control", "control")), results)
    assert a.arm_means["control"] == pytest.approx(0.5)


def test_one_seed_gives_no_verdict_and_says_why():
    results = [run("control", 0, 0.2), run("mixed", 0, 0.9)]
    a = analyse(design(*TWO_ARMS), results)
    assert a.verdict == "inconclusive"
    assert a.comparisons[0].n_seeds == 1
    assert "seed-to-seed variation cannot be estimated" in a.summary
    # its interval is over one seed's held-out items: said beside it, here and in a decision
    assert "1 seed per arm: this interval is over the held-out items of one seed" in a.summary
    from researcher.plan import Hypothesis
    from researcher.planner.template import TemplatePlanner

    hypothesis = Hypothesis(key="H1", statement="mixing helps", prediction="p", refuted_if="r")
    decision = TemplatePlanner().decide(None, hypothesis, a, notes=[], budget_left_s=0, round=1)
    assert "not over seeds" in decision.conclusion


def test_a_design_without_control_reports_arms_but_compares_nothing():
    results = [run("a", s, 0.9) for s in (0, 1)] + [run("b", s, 0.1) for s in (0, 1)]
    a = analyse(design(("a", "treatment"), ("b", "treatment")), results)
    assert a.verdict == "inconclusive" and a.comparisons == []
    assert set(a.arm_means) == {"a", "b"}
    assert "no control arm" in a.summary


def test_an_arm_without_finished_runs_is_named_and_its_runs_excluded():
    results = [run("control", s, 0.2) for s in (0, 1)]
    results += [run("mixed", s, 0.9, status="failed", note="client crashed") for s in (0, 1)]
    a = analyse(design(*TWO_ARMS), results)
    assert a.verdict == "inconclusive" and a.comparisons == []
    assert "mixed" not in a.arm_means
    assert "no usable runs for arm mixed" in a.summary
    assert "mixed-s0 (failed: client crashed)" in a.summary


def test_finished_runs_without_outcomes_and_foreign_arms_are_excluded():
    results = [run("control", s, 0.2) for s in (0, 1)] + [run("mixed", s, 0.9) for s in (0, 1)]
    results += [RunResult(arm="mixed", seed=2, run="mixed-s2"), run("other", 0, 1.0)]
    a = analyse(design(*TWO_ARMS), results)
    assert a.verdict == "supported"
    assert "mixed-s2 (finished: no held-out outcomes)" in a.summary
    assert "other-s0 (arm 'other' is not in the design)" in a.summary


def test_all_zero_outcomes_are_inconclusive_with_a_floor_message():
    results = [run(arm, s, 0.0) for arm in ("control", "mixed") for s in (0, 1)]
    a = analyse(design(*TWO_ARMS), results)
    assert a.verdict == "inconclusive"
    low, high = a.arm_ci["control"]  # 0 of 96 solved is still not a rate known to be 0
    assert low == 0.0 and 0.0 < high < 0.04
    assert "floor or ceiling" in a.summary


def test_every_run_failed_is_not_testable_with_why_and_concludes_without_more_seeds():
    from researcher.plan import Hypothesis
    from researcher.planner.template import TemplatePlanner

    note = "workflow kept failing: 12 episodes aborted, 2 finished; rollout returned nan"
    results = [run(arm, s, 0.0, items=0, status="failed", note=note + "\nlog…")
               for arm in ("control", "mixed") for s in (0, 1)]  # fmt: skip
    a = analyse(design(*TWO_ARMS), results)
    assert a.verdict == "not_testable" and a.comparisons == []
    assert a.failed_runs is not None and "every run (4) failed" in a.failed_runs
    assert "rollout returned nan" in a.failed_runs and "log…" not in a.failed_runs
    assert "no arm learned" not in a.summary  # not the advice for arms that did not learn
    hypothesis = Hypothesis(key="H1", statement="mixing helps", prediction="p", refuted_if="r")
    decision = TemplatePlanner().decide(
        None, hypothesis, a, notes=[], budget_left_s=10_000, round=1, design=design(*TWO_ARMS)
    )
    assert decision.action == "conclude"  # more seeds would fail the same way
    assert "not testable" in decision.conclusion and "rollout returned nan" in decision.conclusion


def test_one_arm_failing_while_the_other_ran_stays_inconclusive():
    results = [run("control", s, 0.2) for s in (0, 1)]
    results += [run("mixed", s, 0.0, items=0, status="failed", note="crashed") for s in (0, 1)]
    assert analyse(design(*TWO_ARMS), results).failed_runs is None


def test_no_results_at_all_is_inconclusive():
    a = analyse(design(*TWO_ARMS), [])
    assert a.verdict == "inconclusive" and a.arm_means == {} and a.comparisons == []
    assert "No run finished" in a.summary


def test_several_treatments_supported_if_any_is_after_bonferroni():
    arms = (("control", "control"), ("good", "treatment"), ("same", "treatment"))
    results = [
        run(arm, s, p)
        for arm, p in (("control", 0.2), ("good", 0.9), ("same", 0.2))
        for s in (0, 1)
    ]
    a = analyse(design(*arms), results)
    assert [c.treatment for c in a.comparisons] == ["good", "same"]
    assert a.verdict == "supported"


def test_the_analysis_is_deterministic_for_a_seed_and_round_trips_json():
    results = [run(arm, s, p) for arm, p in (("control", 0.4), ("mixed", 0.6)) for s in (0, 1)]
    first, second = analyse(design(*TWO_ARMS), results), analyse(design(*TWO_ARMS), results)
    assert first == second
    assert type(first).model_validate_json(first.model_dump_json()) == first


def test_bootstrap_of_four_runs_by_48_items_is_fast():
    results = [run(arm, s, 0.5) for arm in ("control", "mixed") for s in (0, 1)]
    start = time.perf_counter()
    analyse(design(*TWO_ARMS), results)
    assert time.perf_counter() - start < 5  # ~0.05 s here; a per-item Python loop takes minutes


def test_cohens_h_of_equal_proportions_is_zero_and_grows_with_distance():
    assert cohens_h(0.3, 0.3) == 0.0
    assert cohens_h(0.9, 0.2) > cohens_h(0.6, 0.2) > 0 > cohens_h(0.2, 0.6)


def test_a_workflows_graded_rewards_get_a_standardized_difference_not_cohens_h():
    """Cohen's h compares proportions; a workflow scoring 0.5 or 3.0 per task is no
    proportion (h would clip 3.0 to 1.0)."""

    def graded(arm: str, seed: int, values: list[float]) -> RunResult:
        return RunResult(arm=arm, seed=seed, run=f"{arm}-s{seed}", eval_outcomes=values)

    results = [graded("control", 0, [0.5, 1.0, 0.0]), graded("control", 1, [0.5, 0.5, 0.0]),
               graded("mixed", 0, [3.0, 2.0, 1.0]), graded("mixed", 1, [3.0, 2.5, 1.0])]  # fmt: skip
    (c,) = analyse(design(*TWO_ARMS), results).comparisons
    assert c.effect_measure == "standardized difference (d)"
    control, mixed = [0.5, 1 / 3], [2.0, 6.5 / 3]
    spread = math.sqrt(sum((v - sum(a) / 2) ** 2 for a in (control, mixed) for v in a) / 2)
    assert c.effect_size == pytest.approx((sum(mixed) - sum(control)) / 2 / spread)


def test_curve_bands_average_seeds_per_step_with_their_range():
    results = [
        RunResult(arm="a", seed=0, run="a0", curve=[(1, 0.0), (2, 0.4)]),
        RunResult(arm="a", seed=1, run="a1", curve=[(1, 0.2), (2, 0.6), (3, 0.8)], status="failed"),
        RunResult(arm="b", seed=0, run="b0", curve=[(1, 0.5)]),
        RunResult(arm="c", seed=0, run="c0"),
    ]
    bands = curve_bands(results)
    assert bands["a"] == [
        (1, pytest.approx(0.1), 0.0, 0.2),
        (2, pytest.approx(0.5), 0.4, 0.6),
        (3, pytest.approx(0.8), 0.8, 0.8),
    ]
    assert bands["b"] == [(1, 0.5, 0.5, 0.5)]
    assert "c" not in bands

"""Sequential seeds keep their error rates: simulated studies that add one seed per arm per
look (2, 3, 4 seeds; up to 3 looks) and stop at the first verdict. Under no true effect at
most 5% end "supported" (greater and two-sided), at a true difference equal to the
equivalence margin at most 5% end "supported", under a true effect of twice the minimum most
end "supported" — and the same studies tested at the unadjusted level at every look exceed
5%, so the checks can fail. Each look is judged by the pieces `analyse` composes (Welch
variance, t interval, `spending`, `judge`); one test checks that `analyse` agrees with them.
"""

from __future__ import annotations

import numpy as np
import pytest

from researcher.analysis import analyse, describe_rule
from researcher.intervals import ArmScores, judge, t_interval, welch
from researcher.plan import Arm, Design, Hypothesis, Pilot, RunResult
from researcher.planner import budget
from researcher.sequential import describe, look_level, spending, spent_share

STUDIES = 2000
LOOKS = 3
FIRST_SEEDS = 2
NOMINAL = 0.05
SLACK = 0.015  # about 3 Monte-Carlo standard errors of a 5% rate over 2,000 studies
SIGMA = 1.0  # seed-to-seed standard deviation of a run's score
MIN_EFFECT = 1.5  # in units of SIGMA: what a few seeds per arm can hope to detect
MARGIN = 4.0  # equivalence margin, wide enough that a few seeds can show equivalence


def _arm(scores: np.ndarray) -> ArmScores:
    n = len(scores)
    return ArmScores([], scores, float(np.var(scores, ddof=1)) / n, n - 1)


def verdict_at(direction: str, treatment: np.ndarray, control: np.ndarray, look: int,
               *, adjusted: bool = True, min_effect: float = MIN_EFFECT) -> str:  # fmt: skip
    """The verdict of one look, as `analyse` reaches it for two arms' per-seed scores."""
    tr, co = _arm(treatment), _arm(control)
    difference = tr.mean - co.mean
    var, df = welch(tr, co)
    interval_at = lambda level: t_interval(difference, var, df, level)  # noqa: E731
    if adjusted:
        interval_at = spending(interval_at, look, LOOKS)
    verdict, _ = judge(direction, difference, interval_at, min_effect=min_effect, margin=MARGIN)
    return verdict


def supported_rate(direction: str, effect: float, *, adjusted: bool = True, fresh: bool = False,
                   min_effect: float = MIN_EFFECT, seed: int = 0) -> float:  # fmt: skip
    """The share of simulated studies that end "supported". Nested looks add one seed per arm
    to the seeds already run; `fresh` looks re-draw every seed (the graph re-trains a round's
    seeds, identical only as far as training is deterministic in its seed)."""
    rng = np.random.default_rng(seed)
    n_max = FIRST_SEEDS + LOOKS - 1
    draws = 1 + (LOOKS - 1) * fresh
    control = rng.normal(0.0, SIGMA, (draws, STUDIES, n_max))
    treatment = rng.normal(effect, SIGMA, (draws, STUDIES, n_max))
    supported = 0
    for study in range(STUDIES):
        for look in range(1, LOOKS + 1):
            n, draw = FIRST_SEEDS + look - 1, (look - 1) * fresh
            verdict = verdict_at(direction, treatment[draw, study, :n], control[draw, study, :n],
                                 look, adjusted=adjusted, min_effect=min_effect)  # fmt: skip
            if verdict != "inconclusive":
                supported += verdict == "supported"
                break
    return supported / STUDIES


# -- the rule -----------------------------------------------------------------------------------


def test_one_look_is_the_single_look_rule():
    assert look_level(1, 1, "greater") == pytest.approx(0.95)
    assert look_level(1, 1, "two_sided") == pytest.approx(0.95)
    assert look_level(1, 1, "equivalent") == pytest.approx(0.90)
    plain = lambda level: (level, level)  # noqa: E731
    assert spending(plain, 1, 1) is plain


def test_the_looks_spend_exactly_the_single_look_error():
    for looks in (2, 3, 5):
        shares = [spent_share(k, looks) for k in range(1, looks + 1)]
        assert sum(shares) == pytest.approx(1.0)
        # more error at later looks, where there are more seeds to spend it on
        assert all(a < b for a, b in zip(shares, shares[1:], strict=False))
        errors = [1 - look_level(k, looks, "greater") for k in range(1, looks + 1)]
        assert sum(errors) == pytest.approx(0.05)
    assert [round(look_level(k, 3, "greater"), 4) for k in (1, 2, 3)] == [0.9944, 0.9833, 0.9722]
    with pytest.raises(ValueError):
        spent_share(4, 3)
    text = describe(3, "greater")
    assert "alpha spending" in text and "99.44%, 98.33%, 97.22%" in text
    assert "90% TOST" in describe(3, "equivalent")


# -- error rates by simulation ------------------------------------------------------------------


# The null checks use no minimum effect: requiring one only makes "supported" rarer.


@pytest.mark.slow
@pytest.mark.parametrize("direction", ["greater", "two_sided"])
def test_no_true_effect_is_rarely_supported(direction):
    rate = supported_rate(direction, 0.0, min_effect=0.0)
    assert rate <= NOMINAL + SLACK, rate
    if direction == "greater":  # one-sided: the upper 2.5% tail of the 95% interval
        assert rate <= NOMINAL / 2 + SLACK, rate


@pytest.mark.slow
def test_fresh_looks_keep_the_rate_too():
    rate = supported_rate("two_sided", 0.0, fresh=True, min_effect=0.0, seed=1)
    assert rate <= NOMINAL + SLACK, rate


@pytest.mark.slow
@pytest.mark.parametrize("direction", ["greater", "two_sided"])
def test_twice_the_minimum_effect_is_mostly_supported(direction):
    rate = supported_rate(direction, 2 * MIN_EFFECT, seed=2)
    assert rate > 0.5, rate


@pytest.mark.slow
def test_a_difference_at_the_margin_is_rarely_called_equivalent():
    rate = supported_rate("equivalent", MARGIN, seed=3)
    assert rate <= NOMINAL + SLACK, rate


@pytest.mark.slow
def test_unadjusted_looks_exceed_the_promised_rate():
    """Without spending, stopping at the first of three 95% looks breaks the 5% promise:
    the checks above would fail on the plain rule."""
    two_sided = supported_rate("two_sided", 0.0, adjusted=False, min_effect=0.0, seed=4)
    equivalent = supported_rate("equivalent", MARGIN, adjusted=False, seed=5)
    assert two_sided > NOMINAL + SLACK and equivalent > NOMINAL + SLACK, (two_sided, equivalent)


# -- the analysis applies it --------------------------------------------------------------------


def _design(direction: str = "greater", *, look: int = 1, max_looks: int = 1) -> Design:
    arms = [Arm(name=name, role=role, description="", tasks={"arithmetic": 1.0})
            for name, role in (("control", "control"), ("treatment", "treatment"))]  # fmt: skip
    return Design(
        hypothesis="H1", arms=arms, seeds=[0, 1, 2], steps=10, eval_family="arithmetic",
        eval_episodes=16, decision_rule="", min_effect=MIN_EFFECT, outcome="final_train_reward",
        direction=direction, margin=MARGIN if direction == "equivalent" else None,
        look=look, max_looks=max_looks,
        reward_scale=1.0,  # the simulated scores' own units: MIN_EFFECT is already in them
    )  # fmt: skip


def _results(treatment: np.ndarray, control: np.ndarray) -> list[RunResult]:
    return [
        RunResult(arm=arm, seed=seed, run=f"{arm}-{seed}", curve=[(10, float(score))])
        for arm, scores in (("treatment", treatment), ("control", control))
        for seed, score in enumerate(scores)
    ]


@pytest.mark.parametrize("direction", ["greater", "two_sided", "equivalent"])
def test_analyse_reaches_the_simulated_verdicts(direction):
    rng = np.random.default_rng(7)
    for _ in range(15):
        look = int(rng.integers(1, LOOKS + 1))
        n = FIRST_SEEDS + look - 1
        effect = {"greater": 2.5, "two_sided": -2.5, "equivalent": 1.0}[direction]
        treatment, control = rng.normal(effect, SIGMA, n), rng.normal(0.0, SIGMA, n)
        design = _design(direction, look=look, max_looks=LOOKS)
        analysis = analyse(design, _results(treatment, control))
        assert analysis.verdict == verdict_at(direction, treatment, control, look)
        comparison = analysis.comparisons[0]
        assert (comparison.ci_low, comparison.ci_high) == pytest.approx(
            t_interval(comparison.difference, *welch(_arm(treatment), _arm(control)), 0.95)
        )  # the reported interval stays 95%


def test_an_early_look_needs_more_evidence():
    treatment, control = np.array([1.5, 2.5, 3.0]), np.array([0.0, 0.5, 1.0])
    results = _results(treatment, control)
    single = analyse(_design(), results)
    first_of_three = analyse(_design(look=1, max_looks=3), results)
    assert single.verdict == "supported" and first_of_three.verdict == "inconclusive"
    assert first_of_three.comparisons[0].decision_ci is not None
    low, high = first_of_three.comparisons[0].decision_ci
    assert low < single.comparisons[0].ci_low and high > single.comparisons[0].ci_high
    # explicit arguments override the design's look
    assert analyse(_design(look=1, max_looks=3), results, max_looks=1).verdict == "supported"
    assert "alpha spending" in describe_rule(_design(max_looks=3))
    assert "alpha spending" not in describe_rule(_design())


# -- the planner and the budget -----------------------------------------------------------------


def test_template_designs_carry_their_look():
    from researcher.plan import Framing, Reading
    from researcher.planner.template import MAX_ROUNDS, TemplatePlanner

    reading = Reading(factor="kl_coef", levels=[0.0, 0.5], control=0.0, task="arithmetic")
    framing = Framing(question="q", family="kl_coef", summary="s", model="m", planner="template",
                      served_models=["m"], reading=reading)  # fmt: skip
    planner = TemplatePlanner()
    h1 = Hypothesis(key="H1", statement="s", prediction="p", refuted_if="r")
    designs = [
        planner.design(framing, h, budget_s=1200, seeds=2, step_seconds=12, notes=[])
        for h in (h1, h1.model_copy(update={"key": "H2", "parent": "H1"}),
                  h1.model_copy(update={"key": "H3", "parent": "H2"}))
    ]  # fmt: skip
    assert [(d.look, d.max_looks) for d in designs] == [(1, MAX_ROUNDS), (2, 3), (3, 3)]
    assert [len(d.seeds) for d in designs] == [2, 3, 4]  # one more seed per arm per look
    assert "99.44%, 98.33%, 97.22%" in designs[0].decision_rule


def test_the_next_look_costs_only_the_seeds_it_adds():
    # earlier looks' runs are kept: a look adds `seeds_per_look` runs per arm, nothing else
    cost = budget.next_round_cost_s(arms=2, seeds=2, steps=10, step_seconds=7.0)
    assert cost == pytest.approx(2 * 1 * 10 * 7.0 / budget.BUDGET_SPLIT["train"])
    assert budget.next_round_cost_s(2, 2, 10, 7.0, seeds_per_look=3) == pytest.approx(3 * cost)


def test_the_decide_node_prices_the_next_look_from_the_design():
    from types import SimpleNamespace

    from researcher.nodes.decide import decide, next_look_cost_s
    from researcher.plan import Analysis, Framing, Reading
    from researcher.planner.template import TemplatePlanner

    reading = Reading(factor="kl_coef", levels=[0.0, 0.5], control=0.0, task="arithmetic")
    framing = Framing(question="q", family="kl_coef", summary="s", model="m", planner="template",
                      served_models=["m"], reading=reading)  # fmt: skip
    h1 = Hypothesis(key="H1", statement="s", prediction="p", refuted_if="r")
    design = _design(max_looks=3).model_copy(update={"seeds": [0, 1], "steps": 10})
    analysis = Analysis(arm_means={}, arm_ci={}, comparisons=[], verdict="inconclusive",
                        summary="")  # fmt: skip
    events: list[tuple] = []
    ctx = SimpleNamespace(
        planner=TemplatePlanner(), step_seconds=5.0, budget_left=lambda: 120.0,
        study=lambda: SimpleNamespace(budget_s=1200.0), tick=lambda *a, **k: None, event=lambda *a, **k: events.append((a, k)),
    )  # fmt: skip
    state = {"framing": framing.model_dump(), "hypotheses": [h1.model_dump()], "hypothesis": "H1",
             "analyses": [analysis.model_dump()], "design": design.model_dump(), "round": 1}  # fmt: skip
    update = decide(state, SimpleNamespace(context=ctx))
    cost = budget.next_round_cost_s(2, 2, 10, 5.0)  # 2 arms x 1 new seed x 10 steps x 5 s / 0.7
    assert round(cost) == 143  # not the flat 600 s guessed before
    assert update["outcome"] == "concluded"
    assert "120 s of budget left, the next look needs about 143 s" in update["decision"]["reason"]
    # with the run cost a pilot measured, the next look is priced at that cost
    measured = design.model_copy(update={"pilot": Pilot(run_seconds=50.0)})
    assert next_look_cost_s(measured, 5.0) == 100.0  # 2 arms x 1 new seed x 50 s
    decision = TemplatePlanner().decide(
        framing, h1, analysis, notes=[], budget_left_s=120.0, round=2, round_cost_s=100.0,
        design=measured,
    )  # fmt: skip
    assert decision.action == "refine"
    assert "the next look needs about 100 s" in decision.reason


def test_a_look_that_does_not_fit_whole_is_shrunk_not_skipped():
    from researcher.nodes.decide import next_look_cost_s
    from researcher.nodes.design import next_look
    from researcher.pilot import seeds_that_fit

    assert seeds_that_fit(2, 3, budget_left_s=240, run_seconds=50) == 2
    assert seeds_that_fit(2, 3, budget_left_s=1e4, run_seconds=50) == 3
    assert seeds_that_fit(2, 3, budget_left_s=90, run_seconds=50) == 0
    design = _design(max_looks=3).model_copy(
        update={"seeds": [0, 1], "steps": 10, "seeds_per_look": 3, "pilot": Pilot(run_seconds=50.0)}
    )
    # a 1200 s study keeps 60 s in reserve; 300 s left pays for 2 of the 3 planned seeds per arm
    cost = next_look_cost_s(design, 5.0, budget_s=1200.0, budget_left_s=300.0)
    assert cost == 2 * 2 * 50.0 + 60.0
    assert _template_refines(design, cost, budget_left_s=300.0)
    # 150 s left: not one seed per arm fits beside the reserve, so the look is not run
    cost = next_look_cost_s(design, 5.0, budget_s=1200.0, budget_left_s=150.0)
    assert cost == 1 * 2 * 50.0 + 60.0 > 150.0
    assert not _template_refines(design, cost, budget_left_s=150.0)
    # the shrunk look adds 2 seeds, keeps the plan's seeds_per_look for later looks
    shrunk = next_look(design, "H1b", adds=2)
    assert (shrunk.seeds, shrunk.look, shrunk.seeds_per_look) == ([0, 1, 2, 3], 2, 3)
    assert next_look(design, "H1b").seeds == [0, 1, 2, 3, 4]


def _template_refines(design, cost: float, budget_left_s: float) -> bool:
    from researcher.plan import Analysis, Framing, Reading
    from researcher.planner.template import TemplatePlanner

    reading = Reading(factor="kl_coef", levels=[0.0, 0.5], control=0.0, task="arithmetic")
    framing = Framing(question="q", family="kl_coef", summary="s", model="m", planner="template",
                      served_models=["m"], reading=reading)  # fmt: skip
    h1 = Hypothesis(key="H1", statement="s", prediction="p", refuted_if="r")
    analysis = Analysis(arm_means={}, arm_ci={}, comparisons=[], verdict="inconclusive",
                        summary="")  # fmt: skip
    decision = TemplatePlanner().decide(framing, h1, analysis, notes=[], budget_left_s=budget_left_s,
                                        round=2, round_cost_s=cost, design=design)  # fmt: skip
    return decision.action == "refine"

"""The pilot and the sizing it feeds: what the control's first seeds show, what a retune may
change (never the factor), how the budget left becomes looks, and that the stated minimum
detectable effect is detected with the stated power — checked by simulating studies at that
effect (and at half of it, so the check can fail) and judging them as `analyse` does."""

from __future__ import annotations

import numpy as np
import pytest

from researcher.analysis import analyse
from researcher.pilot import (
    LR_CEILING,
    POWER,
    Looks,
    mean_run_seconds,
    minimum_detectable_effect,
    outcome_sd,
    pilot_design,
    retune,
    run_costs,
    size_looks,
    summarise_pilot,
)
from researcher.plan import Arm, Design, Pilot, Reading, RunResult
from researcher.reward_units import in_reward_units, reward_range, reward_scale_words


def _design(outcome: str = "final_train_reward", direction: str = "greater", **run) -> Design:
    arms = [
        Arm(name="control", role="control", description="", tasks={"learnable": 1.0},
            run={"lr": 2e-5, "max_steps": 10, **run}),
        Arm(name="treatment", role="treatment", description="", tasks={"learnable": 1.0},
            run={"lr": 2e-5, "kl_coef": 0.5, "max_steps": 10, **run}),
    ]  # fmt: skip
    return Design(hypothesis="H1", arms=arms, seeds=[0, 1], steps=10, eval_family="learnable",
                  eval_episodes=20, decision_rule="rule", min_effect=0.05, outcome=outcome,
                  direction=direction, margin=0.1 if direction == "equivalent" else None,
                  look=1, max_looks=3)  # fmt: skip


def _run(seed: int, rewards: list[float], heldout: list[float], wall_s: float = 50.0) -> RunResult:
    return RunResult(arm="control", seed=seed, run=f"c{seed}", wall_s=wall_s, eval_outcomes=heldout,
                     curve=[(i + 1, r) for i, r in enumerate(rewards)])  # fmt: skip


def _baseline(heldout: list[float]) -> RunResult:
    return RunResult(arm="baseline", seed=0, run="m", eval_outcomes=heldout, status="baseline")


def test_the_pilot_is_the_control_arm_alone_at_the_designs_settings():
    main = _design()
    pilot = pilot_design(main)
    assert [a.name for a in pilot.arms] == ["control"] and pilot.arms[0] == main.arms[0]
    assert pilot.seeds == [0, 1] and pilot.steps == main.steps and pilot.phase == "pilot"
    assert (pilot.look, pilot.max_looks) == (1, 1)
    assert "decides nothing about the hypothesis" in pilot.decision_rule


def test_a_control_that_learned_is_kept_with_its_cost_and_spread():
    rising = [0.2, 0.4, 0.6, 0.8, 0.9]
    heldout = [1.0] * 16 + [0.0] * 4
    results = [_run(0, rising, heldout), _run(1, [r - 0.1 for r in rising], heldout),
               _baseline([1.0] * 4 + [0.0] * 16)]  # fmt: skip
    pilot = summarise_pilot(_design(), results, run_seconds=80.0)
    assert pilot.learned == "learned" and pilot.kept
    assert pilot.runs == ["c0", "c1"] and pilot.steps == 5
    assert pilot.step_seconds == pytest.approx(10.0) and pilot.run_seconds == 80.0
    # final training reward: the seeds' SD, or the least their episodes' sampling gives
    sampling = np.sqrt(np.mean([r * (1 - r) for r in rising + [r - 0.1 for r in rising]]) / 32)
    assert pilot.seed_sd == pytest.approx(max(np.std([0.9, 0.8], ddof=1), sampling))
    assert pilot.item_sd == pytest.approx(np.std(heldout, ddof=1))
    assert "held-out 0.800 vs the untrained baseline 0.200" in pilot.evidence


def test_a_control_that_did_not_learn_says_so():
    flat = [0.1, 0.1, 0.1, 0.1]
    results = [_run(0, flat, [0.0] * 20), _run(1, flat, [0.0] * 20), _baseline([0.0] * 20)]
    pilot = summarise_pilot(_design(), results, run_seconds=60.0)
    assert pilot.learned == "did not learn" and pilot.kept  # kept unless a retune changes it


def test_a_retune_raises_the_learning_rate_within_its_ceiling_and_never_touches_the_factor():
    main = _design()
    stuck = Pilot(learned="did not learn", run_seconds=60.0, runs=["c0", "c1"])
    kl = Reading(factor="kl_coef", levels=[0.0, 0.5], control=0.0, task="learnable")
    retuned, changed = retune(kl, main, stuck, budget_left_s=1000)
    assert changed == {"lr": [2e-5, 6e-5]}
    assert [a.run["lr"] for a in retuned.arms] == [6e-5, 6e-5]
    assert [a.run["kl_coef"] for a in retuned.arms if "kl_coef" in a.run] == [0.5]  # the factor
    near = _design(lr=8e-5)
    assert retune(kl, near, stuck, 1000)[1] == {"lr": [8e-5, LR_CEILING]}
    # the learning rate is the factor: the steps are doubled instead, when the budget allows
    lr = Reading(factor="lr", levels=[1e-5, 4e-5], control=1e-5, task="learnable")
    by_lr = _design().model_copy(update={"arms": [
        a.model_copy(update={"run": {**a.run, "lr": lr_}}) for a, lr_ in zip(main.arms, (1e-5, 4e-5), strict=True)
    ]})  # fmt: skip
    retuned, changed = retune(lr, by_lr, stuck, budget_left_s=1000)
    assert changed == {"steps": [10, 20]} and retuned.steps == 20
    assert [a.run["lr"] for a in retuned.arms] == [1e-5, 4e-5]
    assert retune(lr, by_lr, stuck, budget_left_s=100) == (by_lr, {})  # no room: unchanged
    # a control that learned is left alone
    assert retune(kl, main, stuck.model_copy(update={"learned": "learned"}), 1000) == (main, {})
    # a learning rate the question fixed ("at lr 2e-5") is not the retune's to change
    at_lr = kl.model_copy(update={"held": {"lr": 2e-5}})
    assert retune(at_lr, main, stuck, budget_left_s=1000)[1] == {"steps": [10, 20]}


def test_the_budget_left_becomes_looks_of_at_least_one_seed_per_arm():
    # 2 arms, the pilot's 2 control runs kept: look 1 needs 2 treatment runs (200 s)
    assert size_looks(2, 2, budget_left_s=250, run_seconds=100) == Looks(2, 1, 1)
    assert size_looks(2, 2, budget_left_s=400, run_seconds=100) == Looks(2, 1, 2)
    assert size_looks(2, 2, budget_left_s=600, run_seconds=100) == Looks(2, 1, 3)
    assert size_looks(2, 2, budget_left_s=1800, run_seconds=100) == Looks(2, 4, 3)
    assert size_looks(2, 2, budget_left_s=1e6, run_seconds=1) == Looks(2, 4, 3)  # 10 seeds at most
    assert size_looks(2, 0, budget_left_s=600, run_seconds=100) == Looks(2, 1, 2)
    assert size_looks(2, 2, budget_left_s=600, run_seconds=None) == Looks(2, 1, 1)
    assert Looks(2, 4, 3).seeds_at(3) == 10


def test_an_arm_that_trains_more_is_priced_for_its_training_not_the_pilots():
    # a steps study: the control (pilot) trains 10 steps, the treatment 40; the pilot's run
    # cost 100 s of which 10 steps x 8 s trained, the rest start-up and evaluation
    main = _design()
    main.arms[1].run["max_steps"] = 40
    main = main.model_copy(update={"steps": 40})
    pilot = Pilot(run_seconds=100.0, step_seconds=8.0, steps=10)
    assert run_costs(main, pilot) == {"control": pytest.approx(100.0),
                                      "treatment": pytest.approx(20 + 320.0)}  # fmt: skip
    assert mean_run_seconds(main, pilot) == pytest.approx(220.0)
    # the pilot records the work it was set to do: 10 steps x 8 x 4 episodes (the defaults)
    summarised = summarise_pilot(main, [_run(0, [0.1] * 10, [1.0])], run_seconds=100.0)
    assert summarised.work == 10 * 8 * 4
    pilot = pilot.model_copy(update={"work": summarised.work})
    assert run_costs(main, pilot)["treatment"] == pytest.approx(20 + 320.0)
    # more episodes a step (prompts x group) costs in proportion too
    wide = _design(group_size=4, batch_groups=4)
    wide.arms[1].run["batch_groups"] = 8
    assert run_costs(wide, pilot.model_copy(update={"work": 160}))["treatment"] == pytest.approx(
        20 + 160.0
    )
    # a retune that doubled every arm's steps doubles the training the pilot measured
    doubled = _design(max_steps=20).model_copy(update={"steps": 20})
    assert run_costs(doubled, pilot) == {"control": pytest.approx(180.0),
                                         "treatment": pytest.approx(180.0)}  # fmt: skip
    # a pilot run stopped at step 1 of 4 (no learning signal; its batches that trained
    # nothing are in its 69 s of training) is priced as it ran, not as 4 x 69 s: the control
    # costs what it cost, the 12-step arm three times its training
    early = Pilot(run_seconds=78.0, step_seconds=69.0, steps=1, work=4 * 32)
    short = _design(max_steps=4)
    short.arms[1].run["max_steps"] = 12
    short = short.model_copy(update={"steps": 12})
    assert run_costs(short, early) == {"control": pytest.approx(78.0),
                                       "treatment": pytest.approx(9 + 3 * 69.0)}  # fmt: skip
    # without a step time the whole run scales; without a cost nothing is priced
    assert run_costs(main, Pilot(run_seconds=100.0, steps=10))["treatment"] == pytest.approx(400)
    assert run_costs(main, Pilot()) == {} and mean_run_seconds(main, None) is None
    # the looks are sized at the arms' mean cost: at the control's 100 s a 700 s budget
    # buys 3 looks, at their mean (220 s) one
    assert size_looks(2, 2, 700, 100.0).max_looks == 3
    assert size_looks(2, 2, 700, mean_run_seconds(main, pilot)).max_looks == 1


def test_held_out_spread_is_at_least_what_the_items_give():
    design = _design(outcome="heldout_accuracy")
    pilot = Pilot(seed_sd=0.01, item_sd=0.5)
    assert outcome_sd(pilot, design) == pytest.approx(0.5 / np.sqrt(20))
    assert outcome_sd(pilot, _design()) == 0.01


def _supported_rate(effect: float, sd: float, seeds: int, looks: int, direction: str,
                    studies: int = 2000, seed: int = 0) -> float:  # fmt: skip
    """Share of simulated single-look-at-the-end judgements that say "supported"."""
    rng = np.random.default_rng(seed)
    design = _design(direction=direction).model_copy(
        update={"look": looks, "max_looks": looks, "min_effect": 0.0}
    )
    hits = 0
    for _ in range(studies):
        treatment = rng.normal(effect, sd, seeds)
        control = rng.normal(0.0, sd, seeds)
        results = [
            RunResult(arm=arm, seed=i, run=f"{arm}{i}", curve=[(10, float(v))])
            for arm, values in (("treatment", treatment), ("control", control))
            for i, v in enumerate(values)
        ]
        hits += analyse(design, results).verdict == "supported"
    return hits / studies


@pytest.mark.slow
@pytest.mark.parametrize(("seeds", "looks"), [(4, 1), (4, 3), (3, 2), (2, 1)])
def test_the_minimum_detectable_effect_is_detected_with_the_stated_power(seeds, looks):
    sd = 0.1
    mde = minimum_detectable_effect(sd, seeds, "greater", look=looks, max_looks=looks)
    rate = _supported_rate(mde, sd, seeds, looks, "greater", studies=800)
    assert abs(rate - POWER) < 0.05  # 800 studies: a Monte-Carlo SE of 0.014
    assert _supported_rate(mde / 2, sd, seeds, looks, "greater", studies=600, seed=1) < 0.5


def test_the_minimum_detectable_effect_grows_with_fewer_seeds_and_more_looks():
    one = minimum_detectable_effect(0.1, 4, "greater")
    assert minimum_detectable_effect(0.1, 3, "greater") > one
    assert minimum_detectable_effect(0.1, 4, "greater", look=3, max_looks=3) > one
    assert minimum_detectable_effect(0.1, 1, "greater") is None
    assert minimum_detectable_effect(0.1, 4, "equivalent") > 0


def test_a_comparison_without_data_after_a_failed_pilot_is_not_testable():
    stuck = Pilot(learned="did not learn", steps=13, runs=["c0", "c1"], retuned={"lr": [2e-5, 6e-5]},
                  evidence="did not learn: held-out 0.205 vs the untrained baseline 0.204")  # fmt: skip
    design = _design().model_copy(update={"pilot": stuck})
    cut = [RunResult(arm="control", seed=0, run="c", status="stopped", note="budget spent")]
    analysis = analyse(design, cut)
    assert analysis.verdict == "not_testable"
    assert "the pilot's control did not learn in 13 steps" in analysis.summary
    assert "lr 2e-05 → 6e-05" in analysis.summary
    # a pilot that learned leaves a comparison without data inconclusive
    learned = design.model_copy(update={"pilot": stuck.model_copy(update={"learned": "learned"})})
    assert analyse(learned, cut).verdict == "inconclusive"


def test_two_seeds_that_agree_by_chance_still_vary_by_their_episodes_sampling():
    # rewards are multiples of 1/32: two curves can have exactly the same area
    design = _design(outcome="learning_speed")
    a = [0.3125, 0.28125, 0.40625, 0.34375, 0.53125, 0.46875, 0.40625, 0.46875, 0.59375, 0.59375]
    b = [0.25, 0.125, 0.375, 0.1875, 0.3125, 0.4375, 0.75, 0.53125, 0.71875, 0.71875]
    assert sum(a) == sum(b)
    results = [_run(0, a, [1.0] * 20), _run(1, b, [1.0] * 20), _baseline([0.0] * 20)]
    pilot = summarise_pilot(design, results, run_seconds=100.0)
    # p(1 - p) / (32 episodes x 10 steps) with p around 0.44: about 0.028
    assert 0.02 < pilot.seed_sd < 0.035
    assert minimum_detectable_effect(pilot.seed_sd, 4, "greater") is not None


def test_rewards_beyond_0_to_1_put_the_smallest_effect_in_their_own_units():
    # a user's workflow scoring 0-100: the untrained model at about 40, the pilot at 41.5
    rng = np.random.default_rng(3)
    items = lambda mean: [float(v) for v in np.clip(rng.normal(mean, 5.0, 200), 0, 100)]  # noqa: E731
    results = [_run(0, [40.0, 41.0, 41.5], items(41.5)), _run(1, [40.0, 41.5, 41.5], items(41.5)),
               _baseline(items(40.0))]  # fmt: skip
    assert reward_range([_run(0, [0.2, 0.9], [0.0, 1.0])]) is None  # within [0, 1]
    low, high = reward_range(results)
    assert low < 30 and high > 50
    design = _design(outcome="heldout_accuracy")
    pilot = summarise_pilot(design, results, run_seconds=60.0)
    assert pilot.reward_range == (low, high)
    # +1.5 of ~40 clears 0 but is under 5% of the rewards' range: no learning (with the 0-1
    # default of 0.05 it was "learned")
    assert pilot.learned != "learned", pilot.evidence
    scaled = in_reward_units(design, pilot.reward_range)
    assert scaled.min_effect == pytest.approx(0.05 * (high - low))
    assert scaled.reward_scale == pytest.approx(high - low)
    assert "in the workflow's own units" in reward_scale_words(scaled, pilot.reward_range)
    # a difference of 1 point on 0-100 is inside the scaled smallest effect: never supported
    rng = np.random.default_rng(4)
    verdicts = set()
    for _ in range(50):
        runs = [RunResult(arm=arm, seed=i, run=f"{arm}{i}", curve=[(10, 1.0)],
                          eval_outcomes=[float(v) for v in rng.normal(mean, 1.0, 40)])
                for arm, mean in (("control", 40.0), ("treatment", 41.0)) for i in range(4)]  # fmt: skip
        verdicts.add(analyse(scaled.model_copy(update={"max_looks": 1}), runs).verdict)
        # the rule of 0-1 rewards (0.05) would call it supported
        unscaled = design.model_copy(update={"max_looks": 1, "reward_scale": 1.0})
        assert analyse(unscaled, runs).verdict == "supported"
    assert "supported" not in verdicts


def test_only_scores_in_reward_units_are_rescaled_and_only_a_default_margin():
    rewards = (0.0, 100.0)
    equivalent = _design(outcome="heldout_accuracy", direction="equivalent")
    assert in_reward_units(equivalent, rewards).margin == 0.1  # the question's own margin
    default = equivalent.model_copy(update={"margin": 0.05})
    assert in_reward_units(default, rewards).margin == pytest.approx(5.0)
    steps = _design(outcome="learning_speed").model_copy(update={"threshold": 50.0})
    assert in_reward_units(steps, rewards) is steps  # steps to a threshold: not rewards
    assert in_reward_units(_design(outcome="cost"), rewards).min_effect == 0.05
    assert in_reward_units(_design(), None).reward_scale is None
    twice = in_reward_units(_design(), rewards)
    assert in_reward_units(twice, rewards).min_effect == twice.min_effect  # applied once


def _rubric_planner(tmp_path):
    """The template planner's design for a question on a rubric workflow (scored 0-10)."""
    from researcher.planning import make_plan

    rubric = {"workflow": str(tmp_path / "rubric.py"), "workflow_params": {"prompt": "Be brief."},
              "workflow_has_test": True, "workflow_test_size": 64}  # fmt: skip

    def planned(question: str) -> Design:
        return make_plan(question, planner="template", served=["smollm2-135m"], budget_s=1200,
                         seeds=2, workflow_args=rubric).design  # fmt: skip

    return planned


def test_a_smallest_effect_the_question_named_is_in_the_rewards_units_already(tmp_path):
    # a rubric scored 0-10: "by at least 0.5" means 0.5 of the rubric, not 0.5 of its range
    # (5 points, half the scale: an effect no study would ever support)
    planned = _rubric_planner(tmp_path)

    named = planned("does lr 5e-5 improve my agent's score by at least 0.5?")
    assert named.min_effect == 0.5 and named.min_effect_named
    scaled = in_reward_units(named, (0.0, 10.0))
    assert scaled.min_effect == 0.5 and scaled.reward_scale == 10.0  # units known, effect kept
    assert "named, 0.5, is read in the workflow's own units" in reward_scale_words(
        scaled, (0.0, 10.0)
    )
    default = planned("does lr 5e-5 improve my agent's score?")
    assert not default.min_effect_named
    assert in_reward_units(default, (0.0, 10.0)).min_effect == pytest.approx(0.5)  # 0.05 x 10
    # the learned-or-not gain on a training-reward outcome still reads the rewards' range
    speed = planned("does lr 5e-5 make my agent learn faster by at least 0.5?")
    assert in_reward_units(speed, (0.0, 10.0)).reward_scale == 10.0


def test_a_margin_named_as_the_default_number_is_kept_as_written(tmp_path):
    # "within 0.05" equals the default margin but the question named it: 0.05 of the rubric
    planned = _rubric_planner(tmp_path)

    named = planned("is RLOO as good as GRPO within 0.05 on my agent?")
    assert named.margin == 0.05 and named.margin_named
    scaled = in_reward_units(named, (0.0, 10.0))
    assert scaled.margin == 0.05 and scaled.reward_scale == 10.0
    assert "margin the question named, 0.05, is read in the workflow's own units" in (
        reward_scale_words(scaled, (0.0, 10.0))
    )
    default = planned("is RLOO as good as GRPO on my agent?")
    assert not default.margin_named
    assert in_reward_units(default, (0.0, 10.0)).margin == pytest.approx(0.5)  # 0.05 x 10


def test_points_the_question_named_are_the_workflows_own_units_once_its_rewards_go_beyond_0_to_1(
    tmp_path,
):
    # a rubric scored 0-10: "by at least 1 point" is 1 of the rubric, "within 0.5 points"
    # 0.5, "by 10%" a tenth of the rewards' range; on rewards of 0-1 they stay 0.01, 0.005, 0.1
    planned = _rubric_planner(tmp_path)

    point = planned("does lr 5e-5 improve my agent's score by at least 1 point?")
    assert (point.min_effect, point.effect_units) == (0.01, "points")
    assert "named in points, 1, is 0.01 on a reward of 0 to 1" in point.decision_rule
    assert in_reward_units(point, None) is point
    scaled = in_reward_units(point, (0.0, 10.0))
    assert scaled.min_effect == pytest.approx(1.0)
    assert "1 point is 1." in reward_scale_words(scaled, (0.0, 10.0))
    within = planned("is lr 5e-5 within 0.5 points of the default for my agent?")
    assert within.margin == pytest.approx(0.005)
    assert in_reward_units(within, (0.0, 10.0)).margin == pytest.approx(0.5)
    share = planned("does lr 5e-5 improve my agent's score by 10%?")
    assert in_reward_units(share, (0.0, 10.0)).min_effect == pytest.approx(1.0)
    stated = planned("is lr 5e-5 within 1 point on the 0-10 rubric of the default for my agent?")
    assert stated.margin == 1.0 and stated.effect_units is None
    assert in_reward_units(stated, (0.0, 10.0)).margin == 1.0  # units fixed by the question


def test_a_workflow_plan_says_its_default_effect_is_for_rewards_of_0_to_1_until_the_pilot(
    tmp_path,
):
    # a user reading "at least 0.05" for a rubric scored 0-10 must see, before any run,
    # that 0.05 is a 0-1 default to be restated in the rewards' own units
    from researcher.nodes.design import _in_reward_units
    from researcher.plan import Pilot
    from researcher.planning import make_plan

    rubric = {"workflow": str(tmp_path / "rubric.py"), "workflow_params": {"prompt": "Be brief."},
              "workflow_has_test": True, "workflow_test_size": 64}  # fmt: skip

    def planned(question: str, **args) -> Design:
        return make_plan(question, planner="template", served=["smollm2-135m"], budget_s=1200,
                         seeds=2, **args).design  # fmt: skip

    design = planned("does lr 5e-5 improve my agent's score?", workflow_args=rubric)
    note = "is set for rewards of 0 to 1"
    assert "the smallest difference that counts, 0.05, " + note in design.decision_rule
    assert "on a reward of 0 to 10: 0.5" in design.decision_rule
    equivalent = planned("is lr 5e-5 as good as 2e-5 for my agent?", workflow_args=rubric)
    assert "the equivalence margin, 0.05, " + note in equivalent.decision_rule
    # said only where it applies: a named effect, a shipped task, steps to a threshold
    assert note not in planned("does lr 5e-5 help my agent by at least 0.5?",
                               workflow_args=rubric).decision_rule  # fmt: skip
    assert note not in planned("does lr 5e-5 help on chain_sum?").decision_rule
    # once the pilot saw 0-10, the rule states the restated number instead of the promise
    scaled = _in_reward_units(design, Pilot(reward_range=(0.0, 10.0)), design)
    assert note not in scaled.decision_rule and "at least 0.5" in scaled.decision_rule
    assert "0.5 in the workflow's own units" in scaled.decision_rule


def test_without_a_pilot_the_analysis_puts_the_rule_in_the_rewards_own_units():
    # `--no-pilot` on a workflow scoring 0-100: a true +1 point is no effect, and the
    # summary says the rule was restated in the rewards' units
    rng = np.random.default_rng(5)
    design = _design(outcome="heldout_accuracy").model_copy(update={"max_looks": 1})
    supported = 0
    for _ in range(50):
        runs = [RunResult(arm=arm, seed=i, run=f"{arm}{i}", curve=[(10, 40.0)],
                          eval_outcomes=[float(v) for v in rng.normal(mean, 1.0, 40)])
                for arm, mean in (("control", 40.0), ("treatment", 41.0)) for i in range(4)]  # fmt: skip
        runs.append(_baseline([float(v) for v in rng.normal(20.0, 10.0, 40)]))
        analysis = analyse(design, runs)
        supported += analysis.verdict == "supported"
        assert "No pilot set the rule's units" in analysis.summary
        assert analysis.arm_ci["control"][0] > 39  # not clipped to an accuracy's [0, 1]
    assert supported == 0
    # within 0-1 nothing changes: no words, and the rule keeps 0.05
    runs = [RunResult(arm=arm, seed=i, run=f"{arm}{i}", curve=[(10, 0.5)],
                      eval_outcomes=[1.0] * (20 + 10 * (arm == "treatment")) + [0.0] * 20)
            for arm in ("control", "treatment") for i in range(3)]  # fmt: skip
    assert "No pilot set" not in analyse(design, runs).summary

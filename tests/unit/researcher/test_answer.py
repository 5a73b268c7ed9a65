"""researcher.answer: the report's one-paragraph "Yes / No / Can't tell" answer, per branch."""

from __future__ import annotations

import pytest

from researcher.answer import plain_answer
from researcher.plan import (
    Analysis,
    Arm,
    Comparison,
    Design,
    Direction,
    Framing,
    Learning,
    Reading,
    Trend,
)


def reading(direction: Direction = "greater", outcome="heldout_accuracy", **extra) -> Reading:
    return Reading(factor="lr", levels=[1e-5, 4e-5], control=1e-5, task="arithmetic",
                   outcome=outcome, direction=direction, **extra)  # fmt: skip


def framing(read: Reading | None) -> Framing:
    return Framing(question="does a higher lr help?", family="learning_rate", summary="lr",
                   model="tiny", planner="template", reading=read)  # fmt: skip


def design(direction: Direction = "greater", outcome="heldout_accuracy", levels=(1e-5, 4e-5),
           **extra) -> Design:  # fmt: skip
    arms = [Arm(name=f"lr-{lv:g}", role="control" if i == 0 else "treatment", description="",
                tasks={"arithmetic": 1.0}, run={"lr": lv}, level=lv)
            for i, lv in enumerate(levels)]  # fmt: skip
    return Design(hypothesis="H1", arms=arms, seeds=[0, 1, 2], steps=12, eval_family="arithmetic",
                  eval_episodes=32, decision_rule="rule", outcome=outcome, direction=direction,
                  **extra)  # fmt: skip


def learned(verdict="learned", heldout=0.6, steps=12) -> Learning:
    return Learning(verdict=verdict, reason="r", heldout=heldout, baseline=0.3, steps=steps)


def analysis(verdict, difference=0.21, ci=(0.12, 0.30), *, baseline=0.30, learning=None,
             trend=None, outcome_label="held-out accuracy", comparisons=None) -> Analysis:  # fmt: skip
    comparison = Comparison(treatment="lr-4e-05", control="lr-1e-05", difference=difference,
                            ci_low=ci[0], ci_high=ci[1], effect_size=0.5, n_seeds=3,
                            verdict=verdict if verdict != "not_testable" else "inconclusive")  # fmt: skip
    return Analysis(
        arm_means={"lr-1e-05": 0.4, "lr-4e-05": 0.6}, arm_ci={}, verdict=verdict, summary="s",
        comparisons=[comparison] if comparisons is None else comparisons,
        outcome_label=outcome_label, baseline=baseline, trend=trend,
        learned={"lr-1e-05": learned(), "lr-4e-05": learned()} if learning is None else learning,
    )  # fmt: skip


def test_a_supported_greater_question_says_yes_with_the_number_interval_seeds_and_baseline():
    text = plain_answer(framing(reading()), design(), analysis("supported"))
    assert text.startswith("Yes: a learning rate of 4e-5 gave higher held-out accuracy than a "
                           "learning rate of 1e-5 on arithmetic")  # fmt: skip
    assert (
        "0.21 higher held-out accuracy on arithmetic (95% CI 0.12 to 0.30) over 3 seeds each"
        in text
    )
    assert "both arms beat the untrained model (0.30 held-out)" in text
    assert "Because the whole interval lies above 0" in text and "(0.05)" in text
    assert "judged once" in text


def test_a_refuted_greater_question_says_no_and_why():
    text = plain_answer(framing(reading()), design(), analysis("refuted", 0.01, (-0.02, 0.04)))
    assert text.startswith("No: a learning rate of 4e-5 did not give higher held-out accuracy")
    assert "upper end lies below the smallest effect that counts (0.05)" in text


def test_an_inconclusive_result_cannot_tell_and_names_the_sequential_look():
    d = design(look=3, max_looks=3)
    text = plain_answer(framing(reading()), d, analysis("inconclusive", 0.05, (-0.1, 0.2)))
    assert text.startswith("Can't tell: this study could not tell whether a learning rate of "
                           "4e-5 gives higher held-out accuracy")  # fmt: skip
    assert "too wide to decide" in text and "at look 3 of up to 3 of the sequential rule" in text
    assert "minimum detectable" not in text  # no pilot, no stated effect: nothing claimed


def test_an_inconclusive_answer_says_what_the_design_could_detect_and_what_seeds_cost():
    from researcher.plan import Pilot

    d = design().model_copy(update={"mde": 0.856, "pilot": Pilot(run_seconds=212.0)})
    text = plain_answer(framing(reading()), d, analysis("inconclusive", 0.18, (-0.55, 0.9)))
    assert "could only detect a difference of 0.86 or more with 80% power" in text
    assert f"for {len(d.seeds)} seeds per arm at its last look" in text
    assert "One more seed per arm costs about 7 min of budget" in text  # 2 arms x 212 s
    supported = plain_answer(framing(reading()), d, analysis("supported"))
    assert "could only detect" not in supported and "costs about" not in supported


def test_less_supported_and_refuted():
    yes = plain_answer(framing(reading("less")), design("less"),
                       analysis("supported", -0.2, (-0.3, -0.1)))  # fmt: skip
    assert yes.startswith("Yes: a learning rate of 4e-5 gave lower held-out accuracy")
    assert "0.20 lower held-out accuracy" in yes and "lies below 0" in yes
    no = plain_answer(
        framing(reading("less")), design("less"), analysis("refuted", 0.0, (-0.02, 0.03))
    )
    assert no.startswith("No:") and "did not give lower" in no and "lower end lies above" in no


def test_two_sided_supported_and_refuted():
    yes = plain_answer(framing(reading("two_sided")), design("two_sided"), analysis("supported"))
    assert yes.startswith("Yes: a learning rate of 4e-5 changed held-out accuracy compared with")
    assert "excludes 0" in yes
    no = plain_answer(framing(reading("two_sided")), design("two_sided"),
                      analysis("refuted", 0.0, (-0.03, 0.03)))  # fmt: skip
    assert no.startswith("No:") and "did not change" in no and "lies within ±0.05" in no


def test_equivalence_supported_refuted_and_inconclusive():
    d, f = design("equivalent", margin=0.1), framing(reading("equivalent", margin=0.1))
    yes = plain_answer(f, d, analysis("supported", 0.01, (-0.05, 0.06)))
    assert yes.startswith("Yes: a learning rate of 4e-5 is as good as a learning rate of 1e-5")
    assert "within ±0.1" in yes and "90% interval lies inside the margin ±0.1" in yes
    no = plain_answer(f, d, analysis("refuted", 0.3, (0.2, 0.4)))
    assert no.startswith("No:") and "is not as good as" in no and "entirely outside" in no
    unsure = plain_answer(f, d, analysis("inconclusive", 0.05, (-0.05, 0.15)))
    assert unsure.startswith("Can't tell:") and "neither lies inside" in unsure


def test_non_inferiority_supported_refuted_and_inconclusive():
    d, f = design("noninferior", margin=0.1), framing(reading("noninferior", margin=0.1))
    yes = plain_answer(f, d, analysis("supported", 0.3, (0.2, 0.4)))  # better passes too
    assert yes.startswith("Yes: a learning rate of 4e-5 is no worse than a learning rate of 1e-5")
    assert "by more than 0.1" in yes and "lies above −0.1" in yes
    no = plain_answer(f, d, analysis("refuted", -0.3, (-0.4, -0.2)))
    assert no.startswith("No:") and "is worse than" in no and "entirely below −0.1" in no
    unsure = plain_answer(f, d, analysis("inconclusive", -0.05, (-0.15, 0.05)))
    assert unsure.startswith("Can't tell:") and "reaches below −0.1" in unsure


def test_learning_speed_is_faster_in_mean_reward_per_step():
    d = design(outcome="learning_speed")
    text = plain_answer(framing(reading(outcome="learning_speed")), d, analysis("supported"))
    assert "learned faster than a learning rate of 1e-5 on arithmetic" in text
    assert "0.21 more mean training reward per step over steps 1–12 (95% CI" in text


def test_learning_speed_to_a_threshold_counts_fewer_steps():
    d = design(outcome="learning_speed", threshold=0.5)
    text = plain_answer(framing(reading(outcome="learning_speed", threshold=0.5)), d,
                        analysis("supported", -4.0, (-6.0, -2.0)))  # fmt: skip
    assert "4.00 fewer training steps to reach a training reward of 0.5" in text


def test_a_cost_question_speaks_of_training_time_or_tokens():
    d = design("less", outcome="cost")
    text = plain_answer(framing(reading("less", outcome="cost")), d,
                        analysis("supported", -120.0, (-200.0, -40.0), baseline=None,
                                 outcome_label="cost (training wall time, seconds)"))  # fmt: skip
    assert text.startswith("Yes: a learning rate of 4e-5 cost less to train than")
    assert "120.00 fewer seconds of training wall time" in text
    assert "untrained" not in text  # no baseline evaluated: none mentioned
    tokens = plain_answer(framing(reading("greater", outcome="cost")), design(outcome="cost"),
                          analysis("refuted", 10.0, (-5.0, 20.0), baseline=None,
                                   outcome_label="cost (tokens trained on)"))  # fmt: skip
    assert (
        tokens.startswith("No:") and "did not cost more" in tokens and "tokens trained on" in tokens
    )


def test_not_testable_cannot_tell_because_no_arm_learned():
    no_learning = {
        "lr-1e-05": learned("did not learn", 0.3, 8),
        "lr-4e-05": learned("did not learn", 0.31, 8),
    }
    text = plain_answer(
        framing(reading()), design(), analysis("not_testable", learning=no_learning)
    )
    assert text.startswith("Can't tell: no arm learned arithmetic in 8 training steps")
    assert "against the untrained model's 0.30" in text and "not testable" in text


def test_a_dose_response_answer_reads_the_trend():
    d = design(levels=(1e-5, 2e-5, 4e-5))
    trend = Trend(factor="log10(lr)", slope=0.3, ci_low=0.1, ci_high=0.5, change=0.18,
                  log_scale=True, n_runs=9, verdict="supported")  # fmt: skip
    text = plain_answer(framing(reading()), d, analysis("supported", trend=trend))
    assert text.startswith(
        "Yes: raising the learning rate from 1e-5 to 4e-5 raises held-out accuracy"
    )
    assert "fitted change of 0.18" in text and "dose-response rule over 3 levels" in text
    trend.verdict = "refuted"
    assert "does not raise" in plain_answer(framing(reading()), d, analysis("refuted", trend=trend))


def test_only_some_arms_beat_the_baseline_and_old_studies_without_a_reading_use_arm_names():
    some = {"lr-1e-05": learned("did not learn"), "lr-4e-05": learned()}
    text = plain_answer(framing(None), design(), analysis("supported", learning=some))
    assert text.startswith(
        "Yes: lr-4e-05 gave higher held-out accuracy than lr-1e-05 on arithmetic"
    )
    assert "only lr-4e-05 clearly beat the untrained model" in text


def test_no_comparison_says_why():
    a = analysis("inconclusive", comparisons=[])
    a.summary = "Held-out... No verdict can be drawn because no usable runs for arm lr-4e-05."
    text = plain_answer(framing(reading()), design(), a)
    assert text.startswith("Can't tell: no comparison could be drawn") and "no usable runs" in text


@pytest.mark.parametrize("verdict", ["supported", "refuted", "inconclusive", "not_testable"])
@pytest.mark.parametrize("direction", ["greater", "less", "two_sided", "equivalent"])
@pytest.mark.parametrize(
    "outcome", ["heldout_accuracy", "learning_speed", "final_train_reward", "cost"]
)
def test_every_branch_gives_one_paragraph_with_its_opening(verdict, direction, outcome):
    text = plain_answer(framing(reading(direction, outcome, margin=0.1 if direction == "equivalent" else None)),
                        design(direction, outcome), analysis(verdict))  # fmt: skip
    opening = {"supported": "Yes:", "refuted": "No:"}.get(verdict, "Can't tell:")
    assert text.startswith(opening) and "\n" not in text and "Because" in text

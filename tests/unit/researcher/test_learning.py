"""The untrained baseline and the learned-or-not verdicts: per arm (simulated arms at the
baseline, with a clear gain, with a rising curve the held-out score does not show), the
study's "not_testable" verdict when no arm learned, and its flow through both planners'
decide and the report."""

from __future__ import annotations

import numpy as np
import pytest

from researcher.analysis import analyse
from researcher.learning import baseline_result, learned_or_not, no_arm_learned, reward_trend
from researcher.plan import Analysis, Arm, Design, Framing, Hypothesis, RunResult
from researcher.planner.llm import LLMPlanner
from researcher.planner.template import TemplatePlanner
from researcher.report import write_report
from researcher.report.context import ReportContext
from tests.unit.researcher.test_llm_planner import ScriptedClient

ITEMS = 40
STEPS = 16
H1 = Hypothesis(key="H1", statement="mixing helps", prediction="mixed > control",
                refuted_if="mixed ≤ control")  # fmt: skip


def outcomes(accuracy: float, items: int = ITEMS, shift: int = 0) -> list[float]:
    """`accuracy` of the items solved; `shift` moves which ones (the same items, another run)."""
    solved = round(items * accuracy)
    return list(np.roll([1.0] * solved + [0.0] * (items - solved), shift))


def curve(
    start: float, end: float, *, noise: float = 0.0, seed: int = 0
) -> list[tuple[int, float]]:
    rng = np.random.default_rng(seed)
    values = np.linspace(start, end, STEPS) + rng.normal(0, noise, STEPS)
    return [(step, float(v)) for step, v in zip(range(1, STEPS + 1), values, strict=True)]


def run(arm: str, seed: int, accuracy: float, start: float, end: float) -> RunResult:
    return RunResult(arm=arm, seed=seed, run=f"{arm}-s{seed}",
                     eval_outcomes=outcomes(accuracy, shift=3 * seed + 2),
                     curve=curve(start, end, noise=0.03, seed=seed))  # fmt: skip


def design() -> Design:
    arms = [Arm(name="control", role="control", description="c", tasks={"arithmetic": 1.0}),
            Arm(name="mixed", role="treatment", description="m", tasks={"arithmetic": 1.0})]  # fmt: skip
    return Design(hypothesis="H1", arms=arms, seeds=[0, 1], steps=STEPS, eval_family="arithmetic",
                  eval_episodes=ITEMS, decision_rule="greater by 0.05")  # fmt: skip


BASELINE = baseline_result("tiny", outcomes(0.10))


# -- one arm ----------------------------------------------------------------------------------


def test_an_arm_at_the_baseline_with_a_flat_curve_did_not_learn():
    runs = [run("control", s, 0.10, 0.08, 0.08) for s in (0, 1)]
    verdict = learned_or_not(design(), runs, BASELINE)
    assert verdict.verdict == "did not learn", verdict.reason
    assert verdict.gain == pytest.approx(0.0) and verdict.gain_ci[0] < 0 < verdict.gain_ci[1]
    assert verdict.baseline == pytest.approx(0.10) and verdict.steps == STEPS


def test_an_arm_clearly_above_the_baseline_learned():
    runs = [run("mixed", s, 0.60, 0.1, 0.6) for s in (0, 1)]
    verdict = learned_or_not(design(), runs, BASELINE)
    assert verdict.verdict == "learned", verdict.reason
    assert verdict.gain == pytest.approx(0.5) and verdict.gain_ci[0] > 0
    assert verdict.slope > 0 and verdict.slope_ci[0] > 0
    assert "held-out 0.600 vs the untrained baseline 0.100" in verdict.reason


def test_a_rising_training_reward_the_held_out_score_does_not_show_is_unclear():
    runs = [run("mixed", s, 0.10, 0.0, 0.5) for s in (0, 1)]
    verdict = learned_or_not(design(), runs, BASELINE)
    assert verdict.verdict == "unclear"
    assert "the training reward rose but held-out accuracy did not follow" in verdict.reason


def test_an_arm_below_the_untrained_policy_did_not_learn():
    base = baseline_result("tiny", outcomes(0.7))
    runs = [run("mixed", s, 0.1, 0.3, 0.3) for s in (0, 1)]
    verdict = learned_or_not(design(), runs, base)
    assert verdict.verdict == "did not learn" and "below the untrained policy" in verdict.reason
    assert "exploited the reward" not in verdict.reason  # its training reward stayed flat


def test_a_training_reward_that_rose_while_held_out_fell_below_the_untrained_model_is_named():
    base = baseline_result("tiny", outcomes(0.7))
    runs = [run("mixed", s, 0.1, 0.1, 0.8) for s in (0, 1)]
    verdict = learned_or_not(design(), runs, base)
    assert verdict.verdict == "did not learn"
    assert "the policy fit the training tasks or exploited the reward" in verdict.reason


def test_without_a_baseline_only_a_rising_curve_says_learned_and_a_flat_one_is_unclear():
    rising = [run("mixed", s, 0.3, 0.0, 0.6) for s in (0, 1)]
    flat = [run("mixed", s, 0.3, 0.2, 0.2) for s in (0, 1)]
    assert learned_or_not(design(), rising, None).verdict == "learned"
    assert learned_or_not(design(), flat, None).verdict == "unclear"
    assert learned_or_not(design(), [], None).verdict == "unclear"


def test_held_out_lists_of_different_lengths_are_compared_unpaired():
    base = baseline_result("tiny", outcomes(0.1, items=30))
    runs = [RunResult(arm="a", seed=s, run=f"a{s}", eval_outcomes=outcomes(0.8, items=28 + s))
            for s in (0, 1)]  # fmt: skip
    verdict = learned_or_not(design(), runs, base)
    assert (
        verdict.verdict == "learned" and 0 < verdict.gain_ci[0] < verdict.gain < verdict.gain_ci[1]
    )


def test_the_trend_is_within_seeds_so_seeds_at_different_levels_do_not_make_a_slope():
    low = RunResult(arm="a", seed=0, run="a0", curve=[(s, 0.1) for s in range(1, 9)])
    high = RunResult(arm="a", seed=1, run="a1", curve=[(s, 0.9) for s in range(5, 13)])
    slope, (lo, hi), rise, steps = reward_trend([low, high])
    assert slope == pytest.approx(0.0) and lo == hi == pytest.approx(0.0) and steps == 12


@pytest.mark.slow
def test_arms_at_the_baseline_are_rarely_called_learned_and_real_gains_mostly_are():
    """By simulation: 2 seeds × 40 items, noisy flat curves. An arm whose true accuracy is the
    baseline's is "learned" in at most 5% of 1,000 studies; one 0.3 above it in most."""
    rng = np.random.default_rng(7)

    def verdicts(p_arm: float, n: int = 1000) -> list[str]:
        found = []
        for i in range(n):
            base = baseline_result("tiny", list(map(float, rng.random(ITEMS) < 0.2)))
            runs = [RunResult(arm="a", seed=s, run=f"a{s}",
                              eval_outcomes=list(map(float, rng.random(ITEMS) < p_arm)),
                              curve=curve(0.1, 0.1, noise=0.05, seed=i * 2 + s)) for s in (0, 1)]  # fmt: skip
            found.append(learned_or_not(design(), runs, base).verdict)
        return found

    null = verdicts(0.2)
    assert null.count("learned") / len(null) <= 0.05
    assert null.count("did not learn") / len(null) >= 0.5
    gain = verdicts(0.5, n=300)
    assert gain.count("learned") / len(gain) >= 0.8


def test_a_training_reward_that_creeps_up_by_less_than_the_margin_is_no_learning():
    """The optimistic slope interval clears 0 on a rise of 0.002 in 13 steps: no learning."""
    runs = [RunResult(arm="a", seed=s, run=f"a{s}", eval_outcomes=outcomes(0.10, shift=s),
                      curve=[(k, 0.2 + 0.00015 * k + 0.0001 * (k % 2)) for k in range(1, 14)])
            for s in (0, 1)]  # fmt: skip
    verdict = learned_or_not(design(), runs, BASELINE)
    assert verdict.slope_ci[0] > 0 and verdict.rise < 0.05
    assert verdict.verdict == "did not learn", verdict.reason


def test_flat_noisy_curves_at_the_baseline_always_did_not_learn():
    """By simulation, the shape that failed a CI run: reward 0.2 plus uniform 1% noise on
    every item and step, 2 seeds × 13 steps. The slope interval alone clears 0 in a few
    percent of arms; with the rise held to the margin, none of 400 arms is kept out of
    "did not learn"."""
    rng = np.random.default_rng(11)
    verdicts = []
    for _ in range(400):
        base = baseline_result("tiny", list(0.2 + rng.uniform(0, 0.01, ITEMS)))
        runs = [RunResult(arm="a", seed=s, run=f"a{s}",
                          eval_outcomes=list(0.2 + rng.uniform(0, 0.01, ITEMS)),
                          curve=[(k, 0.2 + float(rng.uniform(0, 0.01))) for k in range(1, 14)])
                for s in (0, 1)]  # fmt: skip
        verdicts.append(learned_or_not(design(), runs, base).verdict)
    assert verdicts.count("did not learn") == len(verdicts), set(verdicts)


# -- the study --------------------------------------------------------------------------------


def flat_study() -> list[RunResult]:
    return [run(arm, s, acc, 0.05, 0.05) for arm, acc in (("control", 0.10), ("mixed", 0.125))
            for s in (0, 1)] + [BASELINE]  # fmt: skip


def test_a_study_in_which_no_arm_learned_is_not_testable_never_inconclusive_or_refuted():
    analysis = analyse(design(), flat_study())
    assert analysis.verdict == "not_testable"
    assert no_arm_learned(analysis.learned) and set(analysis.learned) == {"control", "mixed"}
    assert analysis.baseline == pytest.approx(0.10) and analysis.baseline_n == ITEMS
    assert analysis.baseline_model == "tiny" and analysis.baseline_ci[0] < 0.10
    assert f"not testable: no arm learned in {STEPS} steps" in analysis.summary
    assert "untrained baseline (0.100 held-out)" in analysis.summary
    assert "baseline" not in analysis.arm_means  # the baseline is no arm of the comparison
    assert "is inconclusive" not in analysis.summary and "does not test H1" in analysis.summary


def test_a_study_with_an_arm_that_learned_keeps_the_rule_s_verdict_and_shows_the_baseline():
    results = [run("control", s, 0.10, 0.05, 0.05) for s in (0, 1)]
    results += [run("mixed", s, 0.70, 0.1, 0.7) for s in (0, 1)] + [BASELINE]
    analysis = analyse(design(), results)
    assert analysis.verdict == "supported"
    assert analysis.learned["mixed"].verdict == "learned"
    assert analysis.learned["control"].verdict == "did not learn"
    assert "The untrained tiny (step 0) scores 0.100" in analysis.summary


def test_without_a_baseline_the_analysis_is_as_before_and_old_records_load():
    results = [r for r in flat_study() if r.status != "baseline"]
    analysis = analyse(design(), results)
    assert analysis.verdict != "not_testable" and analysis.baseline is None
    old = analysis.model_dump(mode="json")
    for key in ("baseline", "baseline_ci", "baseline_n", "baseline_model", "learned"):
        del old[key]
    assert Analysis.model_validate(old).learned == {}


def test_template_decide_concludes_not_testable_with_the_baseline_and_what_a_test_needs():
    framing = Framing(question="q", family="task_mixing", summary="s", model="tiny", planner="t")
    decision = TemplatePlanner().decide(framing, H1, analyse(design(), flat_study()), notes=[],
                                        budget_left_s=10_000, round=1)  # fmt: skip
    assert decision.action == "conclude" and decision.follow_up is None
    first = decision.conclusion.split(". ")[0]
    assert "not testable: no arm learned in 16 steps" in first and "baseline" in first
    assert "more training steps" in decision.conclusion
    assert "nconclusive" not in decision.conclusion


def test_llm_decide_concludes_not_testable_without_asking_the_model():
    client = ScriptedClient()
    planner = LLMPlanner("http://planner.test/v1", "k", "m", client=client)
    framing = Framing(question="q", family="task_mixing", summary="s", model="tiny", planner="t")
    decision = planner.decide(framing, H1, analyse(design(), flat_study()), notes=[],
                              budget_left_s=10_000, round=1)  # fmt: skip
    assert decision.action == "conclude" and "not testable" in decision.conclusion
    assert client.asked == []


def test_the_report_shows_the_baseline_the_learned_column_and_not_testable(tmp_path):
    results = flat_study()
    the_design = design()
    analysis = analyse(the_design, results)
    framing = Framing(question="q", family="task_mixing", summary="s", model="tiny", planner="t")
    decision = TemplatePlanner().decide(framing, H1, analysis, notes=[], budget_left_s=1, round=1)
    ctx = ReportContext(study_id="st-x", question="Does mixing help?", framing=framing,
                        planner="template", designs=[the_design], results=results,
                        analyses=[analysis], decision=decision, budget_s=60, started_at=0.0,
                        finished_at=60.0)  # fmt: skip
    files = write_report(ctx, tmp_path)
    md, html = files.markdown.read_text(), files.html.read_text()
    conclusion = md.split("## Conclusion")[1].strip().split(". ")[0]
    assert "baseline" in conclusion and "not testable" in conclusion
    assert "| untrained baseline (`tiny`, step 0) | 0.100 [" in md
    assert "| per seed | learned? |" in md and "| did not learn |" in md
    assert "**Verdict by the pre-registered rule:** not testable" in md
    assert "**Untrained baseline (step 0):** 0.100" in md
    assert "Run `tiny`" not in md  # the baseline is no failed run
    assert '<span class="verdict not_testable">not testable</span>' in html
    assert "dashed line: the untrained baseline" in md


def test_a_conclusion_that_does_not_mention_the_baseline_gets_it_first_when_no_arm_beat_it(
    tmp_path,
):
    analysis = analyse(design(), flat_study()).model_copy(update={"verdict": "refuted"})
    framing = Framing(question="q", family="task_mixing", summary="s", model="tiny", planner="t")
    ctx = ReportContext(study_id="st-y", question="q?", framing=framing, planner="llm",
                        designs=[design()], results=flat_study(), analyses=[analysis],
                        decision={"action": "conclude", "reason": "r",
                                  "conclusion": "Mixing does not help."},
                        budget_s=60, started_at=0.0, finished_at=60.0)  # fmt: skip
    md = write_report(ctx, tmp_path).markdown.read_text()
    assert (
        "No arm beat the untrained baseline (0.100 held-out, tiny before training). "
        "Mixing does not help." in md
    )


# -- a user-workflow study: the PARAMS change what the untrained model scores ----------------


def test_an_arm_is_asked_did_it_learn_against_the_baseline_run_with_its_own_params():
    """Three few-shot examples lift the untrained model from 0.10 to 0.60 with no training;
    an arm that trains with them and stays at 0.60 learned nothing, though it beats the
    control's untrained 0.10 (the old rule credited training with what the prompt did)."""
    arms = [Arm(name="shots-0", role="control", description="c", tasks={"workflow": 1.0},
                workflow_params={"few_shot": 0}),
            Arm(name="shots-3", role="treatment", description="t", tasks={"workflow": 1.0},
                workflow_params={"few_shot": 3})]  # fmt: skip
    plan = Design(hypothesis="H1", arms=arms, seeds=[0, 1], steps=STEPS, eval_family="workflow",
                  eval_episodes=ITEMS, decision_rule="greater by 0.05")  # fmt: skip
    runs = [run("shots-0", s, 0.40, 0.1, 0.4) for s in (0, 1)]
    runs += [run("shots-3", s, 0.60, 0.6, 0.6) for s in (0, 1)]
    zero_shot = baseline_result("tiny", outcomes(0.10), eval_params={"few_shot": 0})
    three_shot = baseline_result("tiny", outcomes(0.60), eval_params={"few_shot": 3})

    result = analyse(plan, [*runs, zero_shot, three_shot])

    assert result.learned["shots-0"].verdict == "learned"
    assert result.learned["shots-0"].baseline == pytest.approx(0.10)
    assert result.learned["shots-3"].baseline == pytest.approx(0.60)
    assert result.learned["shots-3"].verdict == "did not learn"
    assert result.baseline == pytest.approx(0.10)  # the report's line: the control's
    # without its own baseline the arm falls back to the control's (a study from before)
    fallback = analyse(plan, [*runs, zero_shot])
    assert fallback.learned["shots-3"].baseline == pytest.approx(0.10)


def test_a_workflow_study_evaluates_one_baseline_per_set_of_declared_params():
    from researcher.nodes.evaluate import _baseline_conditions

    framing = Framing(question="q", family="workflow:few_shot", summary="s", model="tiny",
                      planner="template", workflow="/tmp/agent.py",
                      workflow_params={"few_shot": 0, "system_prompt": "Answer."})  # fmt: skip
    shots = [Arm(name=f"shots-{n}", role="treatment" if n else "control", description="d",
                 tasks={"workflow": 1.0}, workflow_params={"few_shot": n}) for n in (0, 3)]  # fmt: skip
    assert [arm.name for _, arm in _baseline_conditions(shots, framing)] == ["shots-0", "shots-3"]
    # a sampling setting PARAMS does not declare is not sent at evaluation: one baseline
    hot = [Arm(name=f"t-{t}", role="treatment" if t > 1 else "control", description="d",
               tasks={"workflow": 1.0}, workflow_params={"temperature": t}) for t in (1.0, 1.2)]  # fmt: skip
    assert [arm.name for _, arm in _baseline_conditions(hot, framing)] == ["t-1.0"]
    # a shipped task's study: one baseline per base model, whatever the arms' params
    shipped = framing.model_copy(update={"workflow": None, "workflow_params": {}})
    assert len(_baseline_conditions(shots, shipped)) == 1
    # no arms at all (no planner makes such a design): the framing's model, untrained
    assert _baseline_conditions([], framing) == [("tiny", None)]

"""The template planner maps questions onto families (or refuses clearly), substitutes
unserved models honestly, sizes designs from the budget and applies the decision rule."""

from __future__ import annotations

import pytest

from researcher.errors import EmptyQuestion, UnmappableQuestion
from researcher.plan import Analysis, Comparison, Hypothesis
from researcher.planner.template import TemplatePlanner

SMOL = "HuggingFaceTB/SmolLM2-135M-Instruct"
SERVED = [SMOL]

QUESTIONS = [
    ("does multi-task mixing help?", "task_mixing"),
    ("Does mixing calculator into arithmetic training help?", "task_mixing"),
    ("Is a cocktail of tasks better than one task?", "task_mixing"),
    ("Should I combine tasks when training?", "task_mixing"),
    ("does multi-task mixing help 7B?", "task_mixing"),
    ("Does a higher learning rate help?", "learning_rate"),
    ("lr 1e-4 vs 2e-5 on arithmetic?", "learning_rate"),
    ("What group size is best for GRPO?", "group_size"),
    ("Does a KL penalty help on guess_number?", "kl"),
    ("Is LoRA as good as full fine-tuning?", "lora_vs_full"),
    ("Is RLOO better than GRPO?", "algorithm"),
    ("GRPO vs PPO on arithmetic?", "algorithm"),
    ("Do more turns help in multi-turn training?", "num_turns"),
    ("Does giving the model more guesses help?", "num_turns"),
]
UNMAPPABLE = [
    "What is the meaning of life?",
    "asdf qwer zxcv",
    "hello",
    "Which GPU should I buy?",
]


@pytest.fixture
def planner() -> TemplatePlanner:
    return TemplatePlanner()


@pytest.mark.parametrize(("question", "family"), QUESTIONS)
def test_each_question_maps_onto_its_family(planner, question, family):
    framing = planner.frame(question, served_models=SERVED)
    assert framing.family == family
    assert framing.planner == "template"
    hypotheses = planner.hypotheses(framing, notes=[])
    design = planner.design(
        framing, hypotheses[0], budget_s=1200, seeds=2, step_seconds=12, notes=[]
    )
    assert {arm.role for arm in design.arms} == {"control", "treatment"}
    assert len({arm.name for arm in design.arms}) == len(design.arms)


@pytest.mark.parametrize("question", UNMAPPABLE)
def test_a_question_it_cannot_map_gets_a_message_listing_families_and_examples(planner, question):
    with pytest.raises(UnmappableQuestion) as caught:
        planner.frame(question, served_models=SERVED)
    message = str(caught.value)
    assert question in message
    for family in ("task_mixing", "learning_rate", "group_size", "kl", "num_turns"):
        assert family in message
    assert "does multi-task mixing help?" in message
    assert "--planner" in message


@pytest.mark.parametrize("question", ["", "   ", "?!", "42"])
def test_an_empty_question_is_refused(planner, question):
    with pytest.raises(EmptyQuestion, match="empty"):
        planner.frame(question, served_models=SERVED)


def test_a_model_the_gateway_does_not_serve_is_substituted_and_said_so(planner):
    framing = planner.frame("does multi-task mixing help 7B?", served_models=SERVED)
    assert framing.model == SMOL
    assert framing.model_requested == "7B"
    assert "7B" in framing.substitution and SMOL in framing.substitution


def test_a_named_model_that_is_served_is_used_without_substitution(planner):
    served = [SMOL, "Qwen/Qwen2.5-7B-Instruct"]
    framing = planner.frame("does a KL penalty help Qwen 7B?", served_models=served)
    assert framing.model == "Qwen/Qwen2.5-7B-Instruct"
    assert framing.substitution is None


def test_the_model_argument_is_used_when_served(planner):
    served = ["a-135M", "b-360M"]
    assert (
        planner.frame("does mixing help?", served_models=served, model="b-360M").model == "b-360M"
    )
    framing = planner.frame("does mixing help?", served_models=served, model="llama-70B")
    assert framing.model == "a-135M" and "llama-70B" in framing.substitution


def test_model_size_needs_two_served_models(planner):
    with pytest.raises(UnmappableQuestion, match="serves only"):
        planner.frame("Do bigger models learn arithmetic faster?", served_models=SERVED)
    framing = planner.frame(
        "Do bigger models learn arithmetic faster?", served_models=["m-360M", "m-135M"]
    )
    design = planner.design(
        framing,
        planner.hypotheses(framing, notes=[])[0],
        budget_s=1200,
        seeds=2,
        step_seconds=12,
        notes=[],
    )
    assert [arm.run["base_model"] for arm in design.arms] == ["m-135M", "m-360M"]


def test_the_default_study_is_arithmetic_alone_vs_mixed_with_calculator(planner):
    framing = planner.frame("does multi-task mixing help?", served_models=SERVED)
    assert framing.substitution is None and framing.model == SMOL
    [h1] = planner.hypotheses(framing, notes=[])
    assert h1.key == "H1"
    assert (
        h1.statement == "Mixing arithmetic with calculator tool use improves held-out arithmetic."
    )
    design = planner.design(framing, h1, budget_s=1200, seeds=2, step_seconds=12, notes=[])
    control, treatment = design.arms
    assert (control.name, control.role, control.tasks) == (
        "arithmetic-only",
        "control",
        {"arithmetic": 1.0},
    )
    assert (treatment.name, treatment.role, treatment.tasks) == (
        "arithmetic+calculator",
        "treatment",
        {"arithmetic": 0.5, "calculator": 0.5},
    )
    assert treatment.run["task_mix"] == {"arithmetic": 0.5, "calculator": 0.5}
    assert design.eval_family == "arithmetic"
    assert design.seeds == [0, 1]
    # 1200 s × 0.7 / (2 arms × 2 seeds) = 210 s per run, / 12 s per step
    assert design.steps == 17
    assert all(arm.run["max_steps"] == 17 for arm in design.arms)
    assert control.run["lr"] == 2e-5 and control.run["group_size"] == 4
    assert design.eval_episodes == 48
    assert design.min_effect == 0.05 and "0.05" in design.decision_rule
    assert design.budget_split == {"validate": 0.05, "train": 0.7, "evaluate": 0.15, "report": 0.1}


@pytest.mark.parametrize(
    ("budget_s", "step_seconds", "steps"),
    [(1200, 12, 17), (120, 12, 2), (10, 12, 2), (6 * 3600, 12, 200), (3600, 5, 126)],
)
def test_steps_are_sized_from_the_budget(planner, budget_s, step_seconds, steps):
    framing = planner.frame("does multi-task mixing help?", served_models=SERVED)
    design = planner.design(
        framing,
        planner.hypotheses(framing, notes=[])[0],
        budget_s=budget_s,
        seeds=2,
        step_seconds=step_seconds,
        notes=[],
    )
    assert design.steps == steps
    assert 16 <= design.eval_episodes <= 48


def test_small_budgets_get_fewer_held_out_episodes(planner):
    framing = planner.frame("does multi-task mixing help?", served_models=SERVED)
    h1 = planner.hypotheses(framing, notes=[])[0]
    small = planner.design(framing, h1, budget_s=120, seeds=2, step_seconds=12, notes=[])
    assert small.eval_episodes == 16


def test_notes_are_applied_and_quoted_in_the_decision_rule(planner):
    framing = planner.frame("does multi-task mixing help?", served_models=SERVED)
    h1 = planner.hypotheses(framing, notes=[])[0]
    notes = ["use 3 seeds", "lr 1e-5 please", "keep an eye on calculator"]
    design = planner.design(framing, h1, budget_s=1200, seeds=2, step_seconds=12, notes=notes)
    assert design.seeds == [0, 1, 2]
    assert all(arm.run["lr"] == 1e-5 for arm in design.arms)
    for note in notes:
        assert note in design.decision_rule


def test_num_turns_varies_the_turn_budget_of_guess_number(planner):
    framing = planner.frame("Do more turns help in multi-turn training?", served_models=SERVED)
    design = planner.design(
        framing,
        planner.hypotheses(framing, notes=[])[0],
        budget_s=1200,
        seeds=2,
        step_seconds=12,
        notes=[],
    )
    assert design.eval_family == "guess_number"
    assert [arm.workflow_params.get("max_turns") for arm in design.arms] == [2, None]


def _analysis(verdict, difference=0.02, low=-0.1, high=0.14):
    comparison = Comparison(
        treatment="arithmetic+calculator",
        control="arithmetic-only",
        difference=difference,
        ci_low=low,
        ci_high=high,
        effect_size=0.05,
        n_seeds=2,
    )
    return Analysis(
        arm_means={"arithmetic-only": 0.3, "arithmetic+calculator": 0.3 + difference},
        arm_ci={"arithmetic-only": (0.2, 0.4), "arithmetic+calculator": (0.2, 0.45)},
        comparisons=[comparison],
        verdict=verdict,
        summary="...",
    )


H1 = Hypothesis(key="H1", statement="Mixing helps.", prediction="p", refuted_if="r")


def test_decide_concludes_on_a_verdict_with_the_effect_and_its_interval(planner):
    framing = planner.frame("does multi-task mixing help?", served_models=SERVED)
    decision = planner.decide(
        framing,
        H1,
        _analysis("supported", 0.12, 0.06, 0.2),
        notes=[],
        budget_left_s=1e6,
        round=1,
    )
    assert decision.action == "conclude"
    assert "supported" in decision.conclusion
    assert "+0.120" in decision.conclusion and "+0.060 to +0.200" in decision.conclusion


def test_decide_refines_an_inconclusive_round_only_while_budget_and_rounds_remain(planner):
    framing = planner.frame("does multi-task mixing help?", served_models=SERVED)
    refine = planner.decide(
        framing,
        H1,
        _analysis("inconclusive"),
        notes=[],
        budget_left_s=5000,
        round=1,
        round_cost_s=1000,
    )
    assert refine.action == "refine"
    assert refine.follow_up.key == "H2" and refine.follow_up.parent == "H1"
    poor = planner.decide(
        framing,
        H1,
        _analysis("inconclusive"),
        notes=[],
        budget_left_s=500,
        round=1,
        round_cost_s=1000,
    )
    assert poor.action == "conclude" and "Inconclusive" in poor.conclusion
    last = planner.decide(
        framing, H1, _analysis("inconclusive"), notes=[], budget_left_s=1e6, round=3
    )
    assert last.action == "conclude"
    told = planner.decide(
        framing,
        H1,
        _analysis("inconclusive"),
        notes=["please conclude now"],
        budget_left_s=1e6,
        round=1,
    )
    assert told.action == "conclude" and "please conclude now" in told.reason


def test_a_follow_up_hypothesis_gets_one_more_seed(planner):
    framing = planner.frame("does multi-task mixing help?", served_models=SERVED)
    follow_up = H1.model_copy(update={"key": "H2", "parent": "H1"})
    design = planner.design(framing, follow_up, budget_s=1200, seeds=2, step_seconds=12, notes=[])
    assert design.seeds == [0, 1, 2] and design.hypothesis == "H2"

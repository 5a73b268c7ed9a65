"""The template planner designs from a reading: one arm per level (control first) holding the
task's full run settings with the level applied, hypotheses and decision rules worded by
outcome and direction, steps from the question or the budget; it substitutes unserved models
honestly, refuses what it cannot read, and applies the decision rule."""

from __future__ import annotations

import re

import pytest

from researcher.errors import EmptyQuestion, UnmappableQuestion
from researcher.plan import Analysis, Comparison, Framing, Hypothesis, Reading
from researcher.planner.design_space import build_arms
from researcher.planner.template import TemplatePlanner
from swarm.protocol import RunCreate

SMOL = "HuggingFaceTB/SmolLM2-135M-Instruct"
SERVED = [SMOL]
KL = "does a KL penalty of 0.5 slow learning on the easy single-turn task?"
GROUPS = "does a larger GRPO group size (8 vs 2) help on arithmetic?"
LORA = "is LoRA as good as full fine-tuning on the easy task?"
MIXING = "does multi-task mixing help?"


@pytest.fixture
def planner() -> TemplatePlanner:
    return TemplatePlanner()


def framing_of(reading: Reading, *, served: list[str] = SERVED, **fields) -> Framing:
    return Framing(question="q", family=reading.factor, summary="s", model=served[0],
                   planner="template", served_models=served, reading=reading, **fields)  # fmt: skip


def design_of(planner, reading: Reading, *, notes=(), budget_s=1200, seeds=2, **fields):
    framing = framing_of(reading, **fields)
    [h1] = planner.hypotheses(framing, notes=list(notes))
    design = planner.design(framing, h1, budget_s=budget_s, seeds=seeds, step_seconds=12,
                            notes=list(notes))  # fmt: skip
    return h1, design


def reading(factor, levels, task="arithmetic", **fields) -> Reading:
    return Reading(factor=factor, levels=levels, control=levels[0], task=task, **fields)


def run_create(run: dict) -> RunCreate:
    """An arm's run as the launch node posts it: lora and base_model go into the policy."""
    body = {k: v for k, v in run.items() if k not in ("lora", "base_model")}
    policy = {"base_model": run.get("base_model"), "lora": run.get("lora")}
    return RunCreate(name="x", policies={"policy": policy}, **body)


# -- arms from a reading ----------------------------------------------------------------------

ARMS = [
    (reading("kl_coef", [0.0, 0.5], "learnable"), ["kl_coef-0", "kl_coef-0.5"], "run", "kl_coef"),
    (reading("lr", [1e-6, 1e-5, 1e-4]), ["lr-1e-6", "lr-1e-5", "lr-0.0001"], "run", "lr"),
    (reading("clip_eps", [0.1, 0.3]), ["clip_eps-0.1", "clip_eps-0.3"], "run", "clip_eps"),
    (reading("algorithm", ["grpo", "rloo"]), ["algorithm-grpo", "algorithm-rloo"], "run",
     "algorithm"),
    (reading("merge", ["none", "tree"]), ["merge-none", "merge-tree"], "run", "merge"),
    (reading("temperature", [1.0, 1.2], "guess_number"), ["temperature-1", "temperature-1.2"],
     "workflow_params", "temperature"),
    (reading("max_tokens", [64, 256]), ["max_tokens-64", "max_tokens-256"], "workflow_params",
     "max_tokens"),
    (reading("max_turns", [2, 8], "guess_number"), ["max_turns-2", "max_turns-8"],
     "workflow_params", "max_turns"),
]  # fmt: skip


@pytest.mark.parametrize(("read", "names", "where", "key"), ARMS)
def test_each_level_is_one_arm_with_the_full_run_and_the_level_where_it_belongs(
    planner, read, names, where, key
):
    _, design = design_of(planner, read)

    assert [arm.name for arm in design.arms] == names
    assert [arm.role for arm in design.arms] == ["control"] + ["treatment"] * (len(names) - 1)
    assert [arm.level for arm in design.arms] == read.levels
    assert [getattr(arm, where)[key] for arm in design.arms] == read.levels
    for arm in design.arms:
        assert {"algorithm", "lr", "group_size", "batch_groups", "kl_coef"} <= set(arm.run)
        assert arm.run["max_steps"] == design.steps
        assert arm.run["task_mix"] == arm.tasks == {read.task: 1.0}
        run_create(arm.run)
    assert design.eval_family == read.task


def test_group_sizes_are_compared_at_about_the_same_episodes_per_step(planner):
    _, design = design_of(planner, reading("group_size", [2, 8]))

    assert [(a.run["group_size"], a.run["batch_groups"]) for a in design.arms] == [(2, 8), (8, 2)]
    assert [a.name for a in design.arms] == ["group_size-2", "group_size-8"]
    _, learnable = design_of(planner, reading("group_size", [4, 16], "learnable"))
    assert [a.run["group_size"] * a.run["batch_groups"] for a in learnable.arms] == [32, 32]


def test_lora_arms_carry_the_rank_and_the_usual_higher_lr_unless_lr_is_the_factor(planner):
    _, design = design_of(planner, reading("lora", ["full", 16], "learnable"))
    full, lora = design.arms

    assert (full.name, lora.name) == ("lora-full", "lora-r16")
    assert "lora" not in full.run and full.run["lr"] == 2e-5
    assert lora.run["lora"] == {"r": 16, "alpha": 32} and lora.run["lr"] == 1e-4
    assert "lr 0.0001" in lora.description and "2e-5" in lora.description
    run_create(lora.run)


def test_a_task_mix_names_its_arms_by_the_tasks_and_sets_tasks_and_run_task_mix(planner):
    mix = [{"arithmetic": 1.0}, {"arithmetic": 0.5, "calculator": 0.5}]
    _, design = design_of(planner, reading("task_mix", mix))
    control, treatment = design.arms

    assert (control.name, control.tasks) == ("arithmetic-only", {"arithmetic": 1.0})
    assert (treatment.name, treatment.tasks) == (
        "arithmetic+calculator", {"arithmetic": 0.5, "calculator": 0.5})  # fmt: skip
    assert treatment.run["task_mix"] == {"arithmetic": 0.5, "calculator": 0.5}
    assert design.eval_family == "arithmetic"
    uneven = [{"arithmetic": 0.75, "calculator": 0.25}, {"arithmetic": 0.25, "calculator": 0.75}]
    names = [a.name for a in build_arms(reading("task_mix", uneven))]
    assert len(set(names)) == 2


def test_base_models_are_arms_and_the_framed_model_is_the_control(planner):
    served = ["m-135M", "org/m-360M"]
    read = reading("base_model", served)
    _, design = design_of(planner, read, served=served)

    assert [a.run["base_model"] for a in design.arms] == served
    assert [a.name for a in design.arms] == ["m-135m", "m-360m"]


def test_a_workflow_parameter_goes_to_workflow_params_and_no_task_mix_is_set(planner):
    read = reading("workflow:system_prompt", ["", "Think step by step."], "workflow")
    _, design = design_of(planner, read, workflow="/tmp/agent.py",
                          workflow_params={"system_prompt": ""})  # fmt: skip

    assert [a.workflow_params for a in design.arms] == [
        {"system_prompt": ""}, {"system_prompt": "Think step by step."}]  # fmt: skip
    assert all(a.tasks == {"workflow": 1.0} and "task_mix" not in a.run for a in design.arms)
    assert len({a.name for a in design.arms}) == 2
    assert design.eval_family == "workflow"


def test_the_control_is_first_even_when_the_reading_lists_it_later(planner):
    read = Reading(factor="kl_coef", levels=[0.5, 0.0], control=0.0, task="arithmetic")
    assert [(a.name, a.role) for a in build_arms(read)] == [
        ("kl_coef-0", "control"), ("kl_coef-0.5", "treatment")]  # fmt: skip


# -- hypotheses and decision rules by outcome and direction -----------------------------------


def test_three_or_more_levels_are_a_dose_response_design(planner):
    h1, design = design_of(planner, reading("lr", [1e-6, 1e-5, 1e-4]))

    assert len(design.arms) == 3
    assert "dose-response" in h1.statement.lower()
    assert "dose-response" in design.decision_rule and "slope" in design.decision_rule
    assert "log10" in design.decision_rule  # the levels span 100x


def test_an_equivalence_question_gets_an_equivalence_test_with_its_margin(planner):
    read = reading("lora", ["full", 16], "learnable", direction="equivalent", margin=0.1)
    h1, design = design_of(planner, read)

    assert (design.direction, design.margin) == ("equivalent", 0.1)
    assert "within ±0.1" in h1.statement
    assert "90% interval" in design.decision_rule and "±0.1" in design.decision_rule
    assert "two one-sided tests" in design.decision_rule
    assert "at least 0.05" not in design.decision_rule  # no superiority test


@pytest.mark.parametrize(
    ("direction", "outcome", "statement", "rule"),
    [
        ("greater", "heldout_accuracy", "improves held-out arithmetic accuracy", "at least 0.05"),
        ("less", "heldout_accuracy", "lowers held-out arithmetic accuracy", "at most -0.05"),
        ("less", "learning_speed", "slows learning on arithmetic", "area under"),
        ("greater", "learning_speed", "speeds up learning", "area under"),
        ("two_sided", "final_train_reward", "changes final training reward", "excludes 0"),
        ("less", "cost", "lowers the training cost", "wall time"),
    ],
)
def test_the_hypothesis_and_rule_follow_the_direction_and_outcome(
    planner, direction, outcome, statement, rule
):
    read = reading("kl_coef", [0.0, 0.5], direction=direction, outcome=outcome)
    h1, design = design_of(planner, read)

    assert statement in h1.statement
    assert rule in design.decision_rule
    assert (design.outcome, design.direction) == (outcome, direction)
    assert all(word in design.decision_rule for word in ("supported", "refuted", "inconclusive"))


def test_steps_to_a_threshold_count_in_steps(planner):
    read = reading("lr", [2e-5, 1e-4], outcome="learning_speed", threshold=0.8)
    _, design = design_of(planner, read)

    assert design.threshold == 0.8
    assert "reach a training reward of 0.8" in design.decision_rule
    assert design.min_effect == max(1, round(0.1 * design.steps))


@pytest.mark.parametrize(
    ("direction", "threshold", "words"),
    [("greater", None, "faster learning (a larger area)"), ("less", None, "slower learning (a smaller area)"),
     ("greater", 0.8, "faster learning (fewer steps)"), ("less", 0.8, "slower learning (more steps)")],
)  # fmt: skip
def test_a_dose_response_judges_the_trend_the_direction_asks_for(
    planner, direction, threshold, words
):
    read = reading("lr", [1e-6, 1e-5, 1e-4], outcome="learning_speed", direction=direction,
                   threshold=threshold)  # fmt: skip
    _, design = design_of(planner, read)
    assert f"{words} is the hypothesis" in design.decision_rule
    assert "dose-response trend" in design.decision_rule


# -- steps, seeds and notes -------------------------------------------------------------------


def test_steps_the_question_fixes_win_over_the_budget_and_notes_win_over_both(planner):
    read = reading("kl_coef", [0.0, 0.5], steps=20)
    _, design = design_of(planner, read)
    assert design.steps == 20 and all(a.run["max_steps"] == 20 for a in design.arms)
    _, noted = design_of(planner, read, notes=["40 steps"])
    assert noted.steps == 40


@pytest.mark.parametrize(("budget_s", "steps"), [(1200, 11), (120, 2), (10, 2), (6 * 3600, 200)])
def test_steps_are_sized_from_the_budget(planner, budget_s, steps):
    _, design = design_of(planner, reading("kl_coef", [0.0, 0.5]), budget_s=budget_s)
    assert design.steps == steps
    assert 16 <= design.eval_episodes <= 48
    assert design.budget_split == {"validate": 0.05, "train": 0.7, "evaluate": 0.15, "report": 0.1}


def test_a_design_never_promises_more_held_out_items_than_the_split_has(planner):
    from swarm.tasks import learnable

    _, design = design_of(planner, reading("lr", [1e-5, 4e-5], task="learnable"), budget_s=6 * 3600)
    assert design.eval_episodes == len(list(learnable.tasks("test", seed=0))) == 27
    _, endless = design_of(planner, reading("lr", [1e-5, 4e-5]), budget_s=6 * 3600)
    assert endless.eval_episodes == 48  # arithmetic's split is not the limit


def test_a_workflow_design_never_promises_more_held_out_items_than_its_test_split_holds(
    planner,
):
    read = reading("workflow:system_prompt", ["", "Think step by step."], "workflow")
    fields = {"workflow": "/tmp/agent.py", "workflow_params": {"system_prompt": ""}}
    _, small = design_of(planner, read, budget_s=6 * 3600, workflow_test_size=5, **fields)
    assert small.eval_episodes == 5
    _, large = design_of(planner, read, budget_s=6 * 3600, workflow_test_size=1000, **fields)
    assert large.eval_episodes == 48
    _, uncounted = design_of(planner, read, budget_s=6 * 3600, **fields)  # framed before counting
    assert uncounted.eval_episodes == 48


def test_a_small_workflow_test_split_is_said_in_the_reading(planner):
    question = "does a step-by-step system prompt help my agent?"
    small = planner.frame(question, served_models=SERVED, workflow="/tmp/agent.py",
                          workflow_params={"system_prompt": ""}, workflow_test_size=4)  # fmt: skip
    assert small.workflow_test_size == 4
    said = " ".join(small.reading.assumptions)
    assert "tasks('test') holds 4 tasks" in said and "steps of 1/4" in said
    enough = planner.frame(question, served_models=SERVED, workflow="/tmp/agent.py",
                           workflow_params={"system_prompt": ""}, workflow_test_size=16)  # fmt: skip
    assert "tasks('test') holds" not in " ".join(enough.reading.assumptions)


def test_max_steps_as_the_factor_keeps_each_arms_own_steps(planner):
    _, design = design_of(planner, reading("max_steps", [10, 40]))
    assert [a.run["max_steps"] for a in design.arms] == [10, 40]
    assert design.steps == 40


def test_notes_are_applied_and_quoted_in_the_decision_rule(planner):
    notes = ["use 3 seeds", "lr 1e-5 please", "keep an eye on calculator"]
    _, design = design_of(planner, reading("kl_coef", [0.0, 0.5]), notes=notes)
    assert design.seeds == [0, 1, 2]
    assert all(arm.run["lr"] == 1e-5 for arm in design.arms)
    for note in notes:
        assert note in design.decision_rule
    _, lr_study = design_of(planner, reading("lr", [2e-5, 1e-4]), notes=["lr 1e-5"])
    assert [a.run["lr"] for a in lr_study.arms] == [2e-5, 1e-4]  # the factor is not overridden


def test_a_follow_up_hypothesis_gets_one_more_seed(planner):
    framing = framing_of(reading("kl_coef", [0.0, 0.5]))
    follow_up = H1.model_copy(update={"key": "H2", "parent": "H1"})
    design = planner.design(framing, follow_up, budget_s=1200, seeds=2, step_seconds=12, notes=[])
    assert design.seeds == [0, 1, 2] and design.hypothesis == "H2"


def test_the_same_reading_always_gives_the_same_design(planner):
    read = reading("group_size", [2, 8])
    assert design_of(planner, read) == design_of(planner, read)


# -- framing: the question read, the model chosen ----------------------------------------------


@pytest.mark.parametrize(
    ("question", "factor", "levels", "task", "outcome", "direction"),
    [
        (KL, "kl_coef", [0, 0.5], "learnable", "learning_speed", "less"),
        (GROUPS, "group_size", [2, 8], "arithmetic", "heldout_accuracy", "greater"),
        (LORA, "lora", None, "learnable", "heldout_accuracy", "equivalent"),
    ],
)
def test_the_done_when_questions_are_read_and_designed(
    planner, question, factor, levels, task, outcome, direction
):
    framing = planner.frame(question, served_models=SERVED)
    read = framing.reading
    assert (read.factor, read.task, read.outcome, read.direction) == (
        factor, task, outcome, direction)  # fmt: skip
    assert framing.family == factor and framing.planner == "template"
    [h1] = planner.hypotheses(framing, notes=[])
    design = planner.design(framing, h1, budget_s=1200, seeds=2, step_seconds=12, notes=[])
    if levels is not None:
        assert sorted(a.run[factor] for a in design.arms) == levels
    if direction == "equivalent":
        assert design.margin is not None and design.margin > 0
    assert design.eval_family == task


def _makefile_question() -> str:
    from pathlib import Path

    makefile = (Path(__file__).resolve().parents[3] / "Makefile").read_text()
    return re.search(r"^QUESTION \?= (.+)$", makefile, re.M).group(1).strip()


def test_the_default_study_compares_two_learning_rates_on_the_easy_task(planner):
    # `make demo`'s question: a task the bundled model learns in minutes, two levels that
    # both learn at different speeds, so the 20-minute study can reach a verdict
    framing = planner.frame(_makefile_question(), served_models=SERVED)
    assert framing.substitution is None and framing.model == SMOL
    reading = framing.reading
    assert (reading.factor, reading.levels, reading.control) == ("lr", [1e-5, 4e-5], 1e-5)
    assert (reading.task, reading.outcome, reading.direction) == (
        "learnable", "learning_speed", "greater")  # fmt: skip
    [h1] = planner.hypotheses(framing, notes=[])
    design = planner.design(framing, h1, budget_s=1200, seeds=2, step_seconds=12, notes=[])
    assert [a.run["lr"] for a in design.arms] == [1e-5, 4e-5]
    assert design.eval_family == "learnable" and design.steps == 11


@pytest.mark.parametrize("question", ["What is the meaning of life?", "Which GPU should I buy?"])
def test_a_question_it_cannot_read_is_refused_with_a_message(planner, question):
    with pytest.raises(UnmappableQuestion) as caught:
        planner.frame(question, served_models=SERVED)
    assert str(caught.value)


@pytest.mark.parametrize("question", ["", "   ", "?!", "42"])
def test_an_empty_question_is_refused(planner, question):
    with pytest.raises(EmptyQuestion, match="empty"):
        planner.frame(question, served_models=SERVED)


def test_a_model_the_gateway_does_not_serve_is_substituted_and_said_so(planner):
    framing = planner.frame(KL + " on a 7B model", served_models=SERVED)
    assert framing.model == SMOL
    assert framing.model_requested == "7B"
    assert "7B" in framing.substitution and SMOL in framing.substitution


def test_the_model_argument_is_used_when_served(planner):
    served = ["a-135M", "b-360M"]
    assert planner.frame(GROUPS, served_models=served, model="b-360M").model == "b-360M"
    framing = planner.frame(GROUPS, served_models=served, model="llama-70B")
    assert framing.model == "a-135M" and "llama-70B" in framing.substitution


# -- decide -----------------------------------------------------------------------------------


def _analysis(verdict, difference=0.02, low=-0.1, high=0.14):
    comparison = Comparison(treatment="kl_coef-0.5", control="kl_coef-0", difference=difference,
                            ci_low=low, ci_high=high, effect_size=0.05, n_seeds=2)  # fmt: skip
    return Analysis(
        arm_means={"kl_coef-0": 0.3, "kl_coef-0.5": 0.3 + difference},
        arm_ci={"kl_coef-0": (0.2, 0.4), "kl_coef-0.5": (0.2, 0.45)},
        comparisons=[comparison],
        verdict=verdict,
        summary="...",
    )


H1 = Hypothesis(key="H1", statement="KL slows learning.", prediction="p", refuted_if="r")


def test_decide_concludes_on_a_verdict_with_the_effect_and_its_interval(planner):
    framing = framing_of(reading("kl_coef", [0.0, 0.5]))
    decision = planner.decide(framing, H1, _analysis("supported", 0.12, 0.06, 0.2), notes=[],
                              budget_left_s=1e6, round=1)  # fmt: skip
    assert decision.action == "conclude"
    assert "supported" in decision.conclusion
    assert "+0.120" in decision.conclusion and "+0.060 to +0.200" in decision.conclusion


def test_a_verdict_at_a_later_look_names_the_questions_hypothesis_and_the_look(planner):
    framing = framing_of(reading("kl_coef", [0.0, 0.5]))
    h3 = H1.model_copy(update={"key": "H3", "parent": "H2"})
    design = planner.design(framing, H1, budget_s=1200, seeds=1, step_seconds=12, notes=[])
    design = design.model_copy(update={"look": 3, "max_looks": 3})
    decision = planner.decide(framing, h3, _analysis("supported", 0.12, 0.06, 0.2), notes=[],
                              budget_left_s=1e6, round=4, design=design)  # fmt: skip
    assert decision.conclusion.startswith("H1 (KL slows learning.) is supported at look 3 of 3")
    assert "retested as H3" in decision.conclusion
    first = planner.decide(framing, H1, _analysis("refuted", -0.2, -0.3, -0.1), notes=[],
                           budget_left_s=1e6, round=1, design=design.model_copy(update={"look": 1}))  # fmt: skip
    assert first.conclusion.startswith("H1 (KL slows learning.) is refuted at look 1 of 3:")


def test_decide_refines_an_inconclusive_round_only_while_budget_and_rounds_remain(planner):
    framing = framing_of(reading("kl_coef", [0.0, 0.5]))
    inconclusive = _analysis("inconclusive")

    def decide(**kwargs):
        return planner.decide(framing, H1, inconclusive, **{"notes": [], "round": 1, **kwargs})

    refine = decide(budget_left_s=5000, round_cost_s=1000)
    assert refine.action == "refine"
    assert refine.follow_up.key == "H2" and refine.follow_up.parent == "H1"
    poor = decide(budget_left_s=500, round_cost_s=1000)
    assert poor.action == "conclude" and "Inconclusive" in poor.conclusion
    assert decide(budget_left_s=1e6, round=3).action == "conclude"
    told = decide(budget_left_s=1e6, notes=["please conclude now"])
    assert told.action == "conclude" and "please conclude now" in told.reason


def test_a_workflow_params_level_is_written_as_its_type_reads():
    from researcher.planner.design_space import level_phrase

    assert level_phrase("workflow:few_shot", 3) == "few_shot=3"
    assert level_phrase("workflow:use_hint", True) == "use_hint=true"
    assert level_phrase("workflow:system_prompt", "Be brief.") == "system_prompt='Be brief.'"
    assert (
        level_phrase("workflow:system_prompt", "x" * 50) == f"system_prompt='{'x' * 18}…{'x' * 20}'"
    )
    # a long prompt and the same prompt with a sentence added stay told apart
    base = "You can call tools. Call one when it helps, then answer."
    assert level_phrase("workflow:system_prompt", base) != level_phrase(
        "workflow:system_prompt", base + " Always use the calculator."
    )

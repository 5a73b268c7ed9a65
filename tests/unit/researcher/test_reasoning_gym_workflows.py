"""A study on a reasoning-gym task reads its task from the question, and every arm of its
design renders to a workflow that imports the family, serves its tasks and scores a reply
with the library's own scorer."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from researcher.planner.reader import read_question
from tests.unit.researcher.template_workflows import designed, load_workflow
from tests.unit.swarm.test_tasks import ScriptedEpisode

SERVED = ["m-135M"]


@pytest.mark.parametrize(
    ("question", "task", "factor"),
    [
        ("does a KL penalty of 0.1 slow learning on countdown?", "countdown", "kl_coef"),
        ("does lr 1e-4 help on the countdown game?", "countdown", "lr"),
        ("does LoRA hurt on letter counting?", "letter_counting", "lora"),
        ("does a group size of 8 help on basic arithmetic?", "basic_arithmetic", "group_size"),
        ("is lr 1e-4 better than 2e-5 on chain sums?", "chain_sum", "lr"),
        ("does a KL penalty help on arithmetic?", "arithmetic", "kl_coef"),  # unchanged
    ],
)
def test_questions_about_reasoning_gym_tasks_are_read(question, task, factor):
    reading = read_question(question, served_models=SERVED)
    assert (reading.task, reading.factor) == (task, factor)


@pytest.mark.parametrize(
    "question",
    [
        "does a KL penalty of 0.1 slow learning on countdown?",
        "does mixing in 50% chain sums help on countdown?",
    ],
)
def test_each_arm_of_a_countdown_study_renders_to_a_working_workflow(tmp_path, question):
    planner, framing, design = designed(question)
    for i, arm in enumerate(design.arms):
        workflow = load_workflow(
            planner.write_workflow(framing, design, arm, seed=0), tmp_path, f"w{i}"
        )
        drawn = list(itertools.islice(workflow.tasks("train"), 20))
        assert {task["family"] for task in drawn} <= set(arm.tasks)
        assert "countdown" in {task["family"] for task in drawn}
        task = next(t for t in drawn if t["family"] == "countdown")
        reply = {"content": f"Answer: {task['answer']}"}
        assert asyncio.run(workflow.rollout(task, ScriptedEpisode([reply]))) == 1.0


@pytest.mark.parametrize(
    ("question", "task"),
    [
        ("does a KL penalty help on leg_counting?", "leg_counting"),
        ("does a larger group help on spell backward?", "spell_backward"),
        ("does lr 1e-4 vs 2e-5 matter on the products dataset?", "products"),
        ("does a KL penalty help on sudoku?", "sudoku"),
        ("does a KL penalty help on the countdown game?", "countdown"),  # first-class wins
    ],
)
def test_any_reasoning_gym_dataset_named_in_a_question_is_its_task(question, task):
    assert read_question(question, served_models=SERVED).task == task


def test_a_dataset_name_that_is_an_everyday_word_needs_the_word_dataset():
    reading = read_question("does a KL penalty help on products of numbers?", served_models=SERVED)
    assert reading.task != "products"


def test_gsm8k_is_refused_with_its_offline_twin_named():
    from researcher.errors import UnreadableQuestion

    with pytest.raises(UnreadableQuestion, match="gsm_symbolic"):
        read_question("does a KL penalty help on gsm8k?", served_models=SERVED)


def test_a_study_of_a_dataset_without_a_module_renders_a_working_workflow(tmp_path):
    planner, framing, design = designed("does a KL penalty help on leg_counting?")
    assert design.eval_family == "leg_counting"
    for i, arm in enumerate(design.arms):
        assert arm.tasks == {"leg_counting": 1.0}
        workflow = load_workflow(
            planner.write_workflow(framing, design, arm, seed=0), tmp_path, f"d{i}"
        )
        drawn = list(itertools.islice(workflow.tasks("train"), 5))
        assert {task["family"] for task in drawn} == {"leg_counting"}
        reply = {"content": f"Answer: {drawn[0]['answer']}"}
        assert asyncio.run(workflow.rollout(drawn[0], ScriptedEpisode([reply]))) == 1.0
        wrong = {"content": "Answer: -1"}
        assert asyncio.run(workflow.rollout(drawn[0], ScriptedEpisode([wrong]))) == 0.0

"""A study on the multi-turn game (`mastermind`, TextArena's Mastermind) reads its task from
the question — by name or as "the multi-turn game" — and every arm of its design renders to
a workflow that imports the family, serves its games and plays one to TextArena's reward."""

from __future__ import annotations

import asyncio
import importlib.util
import itertools

import pytest

from researcher.plan import Framing
from researcher.planner.reader import read_question
from researcher.planner.template import TemplatePlanner
from tests.unit.researcher.template_workflows import load_workflow
from tests.unit.swarm.test_tasks import ScriptedEpisode

SERVED = ["m-135M"]


@pytest.mark.parametrize(
    ("question", "factor", "levels"),
    [
        ("does a larger group help on mastermind?", "group_size", [4, 8]),
        ("does a larger group help on the multi-turn game?", "group_size", [4, 8]),
        ("does a KL penalty of 0.1 slow learning on Mastermind?", "kl_coef", [0.0, 0.1]),
        ("is lr 1e-4 better than 2e-5 on the TextArena game?", "lr", [2e-5, 1e-4]),
        ("does LoRA hurt on the code-breaking game?", "lora", ["full", 16]),
    ],
)
def test_questions_about_the_game_are_read_as_mastermind(question, factor, levels):
    reading = read_question(question, served_models=SERVED)
    assert (reading.task, reading.factor, reading.levels) == ("mastermind", factor, levels)


def test_the_number_guessing_game_is_still_its_own_task():
    reading = read_question("does a larger group help on the guessing game?", served_models=SERVED)
    assert reading.task == "guess_number"


@pytest.mark.skipif(
    importlib.util.find_spec("textarena") is None,
    reason="TextArena is not installed (the `games` extra: pip install 'swarmrl[games]')",
)
def test_each_arm_of_a_mastermind_study_renders_to_a_workflow_that_plays_the_game(tmp_path):
    from swarm.tasks import mastermind

    question = "does a larger group help on mastermind?"
    planner = TemplatePlanner()
    reading = read_question(question, served_models=SERVED)
    framing = Framing(question=question, family=reading.factor, summary="s", model=SERVED[0],
                      planner="template", served_models=SERVED, reading=reading)  # fmt: skip
    hypothesis = planner.hypotheses(framing, notes=[])[0]
    design = planner.design(framing, hypothesis, budget_s=1200, seeds=1, step_seconds=12, notes=[])
    for i, arm in enumerate(design.arms):
        workflow = load_workflow(
            planner.write_workflow(framing, design, arm, seed=0), tmp_path, f"w{i}"
        )
        drawn = list(itertools.islice(workflow.tasks("train"), 5))
        assert {task["family"] for task in drawn} == {"mastermind"}
        held_out = next(iter(workflow.tasks("test")))
        assert held_out["id"] not in {task["id"] for task in drawn}
        secret = mastermind.MastermindGame(drawn[0]).secret
        reply = {"content": "[" + " ".join(map(str, secret)) + "]"}
        assert asyncio.run(workflow.rollout(drawn[0], ScriptedEpisode([reply]))) == 1.0

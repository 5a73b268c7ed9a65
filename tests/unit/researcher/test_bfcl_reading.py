"""Questions about function calling are read as the `bfcl` task (BFCL), and each arm of such a
study renders to a workflow that serves BFCL's tasks and scores tool calls with BFCL's checker."""

from __future__ import annotations

import asyncio
import importlib.util
import itertools

import pytest

from researcher.plan import Framing
from researcher.planner.reader import read_question
from researcher.planner.template import TemplatePlanner
from tests.unit.researcher.template_workflows import load_workflow
from tests.unit.swarm.test_bfcl_tasks import right_calls
from tests.unit.swarm.test_tasks import ScriptedEpisode

SERVED = ["m-135M"]


@pytest.mark.parametrize(
    ("question", "task", "factor", "levels"),
    [
        ("does a larger group help on function calling?", "bfcl", "group_size", [4, 8]),
        ("does a KL penalty of 0.1 slow learning on BFCL?", "bfcl", "kl_coef", [0.0, 0.1]),
        (
            "does lr 1e-4 help on the Berkeley function calling leaderboard?",
            "bfcl",
            "lr",
            [2e-5, 1e-4],
        ),  # fmt: skip
        ("does LoRA hurt on tool calling?", "bfcl", "lora", ["full", 16]),
        (
            "does a group size of 8 help on tool use?",
            "calculator",
            "group_size",
            [4, 8],
        ),  # unchanged
    ],
)
def test_questions_about_function_calling_are_read_as_bfcl(question, task, factor, levels):
    reading = read_question(question, served_models=SERVED)
    assert (reading.task, reading.factor, reading.levels) == (task, factor, levels)


@pytest.mark.skipif(importlib.util.find_spec("bfcl_eval") is None,
                    reason="bfcl-eval is not installed: pip install --no-deps 'bfcl-eval==2026.3.23'")  # fmt: skip
def test_each_arm_of_a_function_calling_study_renders_to_a_working_workflow(tmp_path):
    question = "does a larger group help on function calling?"
    planner = TemplatePlanner()
    reading = read_question(question, served_models=SERVED)
    framing = Framing(question=question, family=reading.factor, summary="s", model=SERVED[0],
                      planner="template", served_models=SERVED, reading=reading)  # fmt: skip
    hypothesis = planner.hypotheses(framing, notes=[])[0]
    design = planner.design(framing, hypothesis, budget_s=1200, seeds=1, step_seconds=12, notes=[])
    assert len(design.arms) >= 2
    for i, arm in enumerate(design.arms):
        workflow = load_workflow(
            planner.write_workflow(framing, design, arm, seed=0), tmp_path, f"w{i}"
        )
        drawn = list(itertools.islice(workflow.tasks("train"), 20))
        assert {task["family"] for task in drawn} == {"bfcl"}
        task = next(t for t in drawn if t["bfcl_id"] not in ("simple_python_200",))
        calls = right_calls(task)
        right = ScriptedEpisode([{"content": None, "tool_calls": calls}])
        assert asyncio.run(workflow.rollout(task, right)) == 1.0
        assert asyncio.run(workflow.rollout(task, ScriptedEpisode([{"content": "hm"}]))) == 0.0

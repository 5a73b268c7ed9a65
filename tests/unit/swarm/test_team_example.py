"""The shipped two-policy workflow (`examples/team.py`): against the fake gateway of a run
with a planner and an executor it calls each policy by its own model, hands the plan to
the executor, and finishes every episode with a reward per policy; the planner's reward
is the team's unless its plan gives the answer away."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from swarm.tasks import arithmetic
from swarm.workflow import TaskCycle, load_workflow
from tests.unit.swarm.conftest import run_inline
from tests.unit.swarm.fake_gateway import FakeGateway, Reply

TEAM = Path(__file__).resolve().parents[3] / "examples" / "team.py"
team = load_workflow(TEAM).module
TASKS = list(itertools.islice(arithmetic.tasks("train", seed=0), 4))


@dataclass
class TeamGateway(FakeGateway):
    """The fake, remembering each chat request (model and messages)."""

    chats: list[dict[str, Any]] = field(default_factory=list)

    def _chat(self, body: dict[str, Any], token: str | None) -> Reply:
        self.chats.append(body)
        return super()._chat(body, token)


def scripted_team(plan: str):
    """A fake model: the planner answers `plan`, the executor the right answer."""
    answers = {task["question"]: task["answer"] for task in TASKS}

    def reply(messages: list[dict[str, Any]]) -> str:
        if messages[0]["content"] == team.PLANNER_PROMPT:
            return plan
        question = messages[-1]["content"].split("\nPlan: ")[0]
        return f"The answer is {answers[question]}."

    return reply


def run_team(fake: TeamGateway, captured) -> None:
    with fake.serve():  # the episode's openai client speaks real HTTP to the fake
        summary = asyncio.run(
            run_inline(fake, captured, team.rollout, lambda split="train": TASKS, max_episodes=4)
        )
    assert summary.finished == 4, captured.text


def test_the_team_example_calls_each_policy_and_rewards_each(captured):
    fake = TeamGateway(policies=("planner", "executor"), group_size=2, reply=scripted_team("Add."))
    run_team(fake, captured)
    finished = fake.with_status("finished")
    assert len(finished) == 4
    assert all(e.calls == 2 and e.reward == {"executor": 1.0, "planner": 1.0} for e in finished)
    planner_calls = [c for c in fake.chats if c["messages"][0]["content"] == team.PLANNER_PROMPT]
    executor_calls = [c for c in fake.chats if c not in planner_calls]
    assert len(planner_calls) == len(executor_calls) == 4
    assert {c["model"] for c in planner_calls} == {"r/planner"}
    assert {c["model"] for c in executor_calls} == {"r/executor"}
    assert all(c["messages"][-1]["content"].endswith("\nPlan: Add.") for c in executor_calls)


def test_a_plan_that_gives_the_answer_away_earns_the_planner_nothing():
    task = {"id": "x", "question": "What is 3 plus 4?", "answer": 7}
    assert team.rewards("Add 3 and 4.", "It is 7", task) == {"executor": 1.0, "planner": 1.0}
    assert team.rewards("3 + 4 = 7", "It is 7", task) == {"executor": 1.0, "planner": 0.0}
    assert team.rewards("Add 3 and 4.", "It is 8", task) == {"executor": 0.0, "planner": 0.0}


def test_naming_an_operand_that_equals_the_answer_is_not_giving_it_away():
    task = {"id": "x", "question": "What is 10 minus 5?", "answer": 5}
    assert team.rewards("Subtract 5 from 10.", "5", task) == {"executor": 1.0, "planner": 1.0}


@pytest.mark.slow
def test_the_team_example_is_a_loadable_workflow_over_arithmetic():
    first = next(TaskCycle(load_workflow(TEAM).tasks))
    assert first == next(arithmetic.tasks("train", seed=0))

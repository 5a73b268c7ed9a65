"""Every arm of every family renders to a workflow that parses, imports, and serves its
task families in the arm's shares, each task tagged with its family."""

from __future__ import annotations

import ast
import asyncio
import itertools
from collections import Counter

import pytest

from researcher.plan import Framing, Reading
from researcher.planner.template import TemplatePlanner
from tests.unit.researcher.template_workflows import load_workflow

SERVED = ["m-135M", "m-360M"]  # two, so base_model designs too
MIX = [{"arithmetic": 1.0}, {"arithmetic": 0.5, "calculator": 0.5}]
READINGS = {  # one per kind of factor: a run setting, LoRA, sampling, turns, mix, model
    "kl_coef": Reading(factor="kl_coef", levels=[0.0, 0.5], control=0.0, task="learnable"),
    "group_size": Reading(factor="group_size", levels=[2, 8], control=2, task="arithmetic"),
    "lora": Reading(factor="lora", levels=["full", 16], control="full", task="calculator"),
    "temperature": Reading(factor="temperature", levels=[1.0, 1.2], control=1.0,
                           task="guess_number"),
    "max_turns": Reading(factor="max_turns", levels=[2, None], control=2, task="guess_number"),
    "task_mix": Reading(factor="task_mix", levels=MIX, control=MIX[0], task="arithmetic"),
    "base_model": Reading(factor="base_model", levels=SERVED, control=SERVED[0],
                          task="arithmetic"),
}  # fmt: skip


def _designs():
    planner = TemplatePlanner()
    for key, reading in READINGS.items():
        framing = Framing(question=f"a question on {key}", family=key, summary="s",
                          model=SERVED[0], planner="template", served_models=SERVED,
                          reading=reading)  # fmt: skip
        hypothesis = planner.hypotheses(framing, notes=[])[0]
        design = planner.design(
            framing, hypothesis, budget_s=1200, seeds=2, step_seconds=12, notes=[]
        )
        for arm in design.arms:
            yield pytest.param(framing, design, arm, id=f"{key}-{arm.name}")


@pytest.mark.parametrize(("framing", "design", "arm"), list(_designs()))
def test_each_arm_renders_to_a_workflow_serving_its_shares(tmp_path, framing, design, arm):
    source = TemplatePlanner().write_workflow(framing, design, arm, seed=1)
    tree = ast.parse(source)
    defined = {node.name: type(node) for node in tree.body if hasattr(node, "name")}
    assert defined["tasks"] is ast.FunctionDef
    assert defined["rollout"] is ast.AsyncFunctionDef
    imports = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    for node in imports:
        root = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
        assert root.split(".")[0] in {"swarm", "itertools"}
    assert f"arm {arm.name} ({arm.role}), seed 1" in source and "planner: template" in source

    workflow = load_workflow(source, tmp_path, "workflow_under_test")
    drawn = list(itertools.islice(workflow.tasks("train"), 200))
    assert len(drawn) == 200 and all("id" in task for task in drawn)
    shares = Counter(task["family"] for task in drawn)
    total = sum(arm.tasks.values())
    for family, weight in arm.tasks.items():
        assert abs(shares[family] / 200 - weight / total) <= 0.05
    assert set(shares) <= set(arm.tasks)
    again = list(itertools.islice(load_workflow(source, tmp_path, "again").tasks("train"), 200))
    assert [task["id"] for task in again] == [task["id"] for task in drawn]
    test_ids = {task["id"] for task in itertools.islice(workflow.tasks("test"), 50)}
    assert not test_ids & {task["id"] for task in drawn}


def test_seeds_give_different_task_orders(tmp_path):
    [(framing, design, arm)] = [
        p.values for p in _designs() if p.id == "task_mix-arithmetic+calculator"
    ]
    planner = TemplatePlanner()
    first, second = (
        [
            t["id"]
            for t in itertools.islice(
                load_workflow(
                    planner.write_workflow(framing, design, arm, seed=s), tmp_path, f"s{s}"
                ).tasks(),
                20,
            )
        ]
        for s in (0, 1)
    )
    assert first != second


def test_feedback_is_recorded_and_the_code_is_the_same(tmp_path):
    [(framing, design, arm)] = [p.values for p in _designs() if p.id == "task_mix-arithmetic-only"]
    planner = TemplatePlanner()
    plain = planner.write_workflow(framing, design, arm, seed=0)
    fixed = planner.write_workflow(
        framing, design, arm, seed=0, feedback='Traceback (most recent call last):\n  KeyError: "x"'
    )
    assert '#     KeyError: "x"' in fixed
    assert ast.dump(ast.parse(plain)) == ast.dump(ast.parse(fixed))


class _FakeEpisode:
    """Answers every chat call with a fixed reply, as an Episode's AsyncOpenAI would."""

    model = "run/policy"

    def __init__(self, reply: str):
        self.calls = 0
        self.reply = reply
        self.requests = []

    def openai(self):
        episode = self

        class _Completions:
            async def create(self, **kwargs):
                from types import SimpleNamespace

                episode.calls += 1
                episode.requests.append(kwargs)
                message = SimpleNamespace(content=episode.reply, tool_calls=None)
                return SimpleNamespace(choices=[SimpleNamespace(message=message)])

        class _Chat:
            completions = _Completions()

        class _Client:
            chat = _Chat()

        return _Client()


def test_the_turn_limit_of_an_arm_reaches_the_game(tmp_path):
    [(framing, design, arm)] = [p.values for p in _designs() if p.id == "max_turns-max_turns-2"]
    workflow = load_workflow(
        TemplatePlanner().write_workflow(framing, design, arm, seed=0), tmp_path, "t2"
    )
    task = next(t for t in workflow.tasks() if t["target"] != 0)
    episode = _FakeEpisode("0")  # never right: plays every allowed turn
    reward = asyncio.run(workflow.rollout(task, episode))
    assert episode.calls == 2 and 0.0 <= reward < 1.0


def test_the_sampling_settings_of_an_arm_reach_every_chat_call(tmp_path):
    arms = {p.id: p.values for p in _designs()}
    framing, design, arm = arms["temperature-temperature-1.2"]
    workflow = load_workflow(
        TemplatePlanner().write_workflow(framing, design, arm, seed=0), tmp_path, "t"
    )
    task = next(t for t in workflow.tasks() if t["target"] != 0)
    episode = _FakeEpisode("0")
    asyncio.run(workflow.rollout(task, episode))
    assert episode.calls >= 2
    assert all(request["temperature"] == 1.2 for request in episode.requests)
    assert all(request["model"] == "run/policy" for request in episode.requests)

    framing, design, arm = arms["kl_coef-kl_coef-0"]  # no sampling settings: sent as the task asks
    workflow = load_workflow(
        TemplatePlanner().write_workflow(framing, design, arm, seed=0), tmp_path, "k"
    )
    episode = _FakeEpisode("banana")
    asyncio.run(workflow.rollout(next(iter(workflow.tasks())), episode))
    assert "temperature" not in episode.requests[0]


def test_max_tokens_as_the_factor_overrides_the_tasks_own(tmp_path):
    reading = Reading(factor="max_tokens", levels=[16, 256], control=16, task="arithmetic")
    framing = Framing(question="q", family="max_tokens", summary="s", model="m", planner="template",
                      reading=reading)  # fmt: skip
    planner = TemplatePlanner()
    design = planner.design(framing, planner.hypotheses(framing, notes=[])[0], budget_s=600,
                            seeds=1, step_seconds=12, notes=[])  # fmt: skip
    workflow = load_workflow(
        planner.write_workflow(framing, design, design.arms[0], seed=0), tmp_path, "m"
    )
    episode = _FakeEpisode("42")
    asyncio.run(workflow.rollout(next(iter(workflow.tasks())), episode))
    assert episode.requests[0]["max_tokens"] == 16


def test_a_user_workflow_is_wrapped_not_templated(tmp_path):
    from researcher import user_workflow

    source = tmp_path / "agent.py"
    source.write_text(
        "PARAMS = {'system_prompt': ''}\n"
        "def tasks(split='train'):\n    return [{'id': f'{split}-{i}'} for i in range(4)]\n"
        "async def rollout(task, episode):\n    return 1.0\n"
    )
    reading = Reading(factor="workflow:system_prompt", levels=["", "Think."], control="",
                      task="workflow")  # fmt: skip
    framing = Framing(question="q", family=reading.factor, summary="s", model="m",
                      planner="template", reading=reading, workflow=str(source),
                      workflow_params={"system_prompt": ""})  # fmt: skip
    planner = TemplatePlanner()
    design = planner.design(framing, planner.hypotheses(framing, notes=[])[0], budget_s=600,
                            seeds=1, step_seconds=12, notes=[])  # fmt: skip
    arm = design.arms[1]
    assert planner.write_workflow(framing, design, arm, seed=0) == user_workflow.render_wrapper(
        framing, arm, seed=0
    )

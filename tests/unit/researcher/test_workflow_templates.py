"""Every arm of every family renders to a workflow that parses, imports, and serves its
task families in the arm's shares, each task tagged with its family."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import itertools
from collections import Counter

import pytest

from researcher.planner.families import FAMILIES, FAMILY_EXAMPLES
from researcher.planner.template import TemplatePlanner

SERVED = ["m-135M", "m-360M"]  # two, so model_size designs too


def _designs():
    planner = TemplatePlanner()
    for key in FAMILY_EXAMPLES:
        framing = planner.frame(FAMILY_EXAMPLES[key], served_models=SERVED)
        hypothesis = planner.hypotheses(framing, notes=[])[0]
        design = planner.design(
            framing, hypothesis, budget_s=1200, seeds=2, step_seconds=12, notes=[]
        )
        for arm in design.arms:
            yield pytest.param(framing, design, arm, id=f"{key}-{arm.name}")


def _load(source: str, tmp_path, name: str):
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_family_has_an_example_that_renders():
    assert {family.key for family in FAMILIES} == set(FAMILY_EXAMPLES)


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

    workflow = _load(source, tmp_path, "workflow_under_test")
    drawn = list(itertools.islice(workflow.tasks("train"), 200))
    assert len(drawn) == 200 and all("id" in task for task in drawn)
    shares = Counter(task["family"] for task in drawn)
    total = sum(arm.tasks.values())
    for family, weight in arm.tasks.items():
        assert abs(shares[family] / 200 - weight / total) <= 0.05
    assert set(shares) <= set(arm.tasks)
    again = list(itertools.islice(_load(source, tmp_path, "again").tasks("train"), 200))
    assert [task["id"] for task in again] == [task["id"] for task in drawn]
    test_ids = {task["id"] for task in itertools.islice(workflow.tasks("test"), 50)}
    assert not test_ids & {task["id"] for task in drawn}


def test_seeds_give_different_task_orders(tmp_path):
    [(framing, design, arm)] = [
        p.values for p in _designs() if p.id == "task_mixing-arithmetic+calculator"
    ]
    planner = TemplatePlanner()
    first, second = (
        [
            t["id"]
            for t in itertools.islice(
                _load(
                    planner.write_workflow(framing, design, arm, seed=s), tmp_path, f"s{s}"
                ).tasks(),
                20,
            )
        ]
        for s in (0, 1)
    )
    assert first != second


def test_feedback_is_recorded_and_the_code_is_the_same(tmp_path):
    [(framing, design, arm)] = [
        p.values for p in _designs() if p.id == "task_mixing-arithmetic-only"
    ]
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

    def openai(self):
        episode = self

        class _Completions:
            async def create(self, **kwargs):
                from types import SimpleNamespace

                episode.calls += 1
                message = SimpleNamespace(content=episode.reply, tool_calls=None)
                return SimpleNamespace(choices=[SimpleNamespace(message=message)])

        class _Chat:
            completions = _Completions()

        class _Client:
            chat = _Chat()

        return _Client()


def test_the_turn_limit_of_an_arm_reaches_the_game(tmp_path):
    [(framing, design, arm)] = [p.values for p in _designs() if p.id == "num_turns-turns-2"]
    workflow = _load(TemplatePlanner().write_workflow(framing, design, arm, seed=0), tmp_path, "t2")
    task = next(t for t in workflow.tasks() if t["target"] != 0)
    episode = _FakeEpisode("0")  # never right: plays every allowed turn
    reward = asyncio.run(workflow.rollout(task, episode))
    assert episode.calls == 2 and 0.0 <= reward < 1.0

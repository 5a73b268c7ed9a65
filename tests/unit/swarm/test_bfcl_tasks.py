"""The BFCL family: BFCL's own entries split by id (deterministic, disjoint), the functions
offered as OpenAI tools, a reward that is BFCL's own AST checker on the reply's tool calls
(the ground truth scores 1, a wrong call 0, a malformed one 0 without raising), the reference
rollout and the example workflow, and no network at run time.

Needs bfcl-eval (`pip install --no-deps 'bfcl-eval==2026.3.23'`, which `make install` does);
without it these tests skip, except the ones that check what happens without it."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from openai.types.chat import ChatCompletionMessageToolCall

from swarm.tasks import CATALOGUE, bfcl
from swarm.workflow import TaskCycle, load_workflow
from tests.unit.swarm.test_tasks import ScriptedEpisode

REPO = Path(__file__).resolve().parents[3]
needs_bfcl = pytest.mark.skipif(
    importlib.util.find_spec("bfcl_eval") is None,
    reason=f"bfcl-eval is not installed: pip install --no-deps '{bfcl.REQUIREMENT}'",
)
SIZES = {"simple": 400, "multiple": 200, "parallel": 200, "parallel_multiple": 200}  # single-turn


def first_choice(value: Any) -> Any:
    """A value BFCL's ground truth accepts: the first of each list of possible values."""
    if isinstance(value, dict):
        return {k: first_choice(v[0]) for k, v in value.items() if v and v[0] != ""}
    if isinstance(value, list):
        return [first_choice(v) for v in value]
    return value


def right_calls(task: dict) -> list[dict]:
    """The ground truth as OpenAI tool calls (dots in names as "_", like the tools)."""
    return [
        {"id": f"call_{i}", "type": "function", "function": {
            "name": name.replace(".", "_"),
            "arguments": json.dumps({k: first_choice(v[0]) for k, v in args.items() if v[0] != ""}),
        }}
        for i, call in enumerate(task["ground_truth"]) for name, args in call.items()
    ]  # fmt: skip


def by_bfcl_id(bfcl_id: str, category: str = "simple") -> dict:
    split = "train" if any(t["bfcl_id"] == bfcl_id for t in bfcl.tasks("train", category=category)) else "test"  # fmt: skip
    return next(t for t in bfcl.tasks(split, category=category) if t["bfcl_id"] == bfcl_id)


def test_the_family_is_in_the_catalogue_and_its_pin_is_the_makefiles():
    assert "bfcl" in CATALOGUE
    spec = re.search(r"^BFCL_SPEC\s*:=\s*(\S+)", (REPO / "Makefile").read_text(), re.M)
    assert spec and spec.group(1) == bfcl.REQUIREMENT


WITHOUT_BFCL = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "bfcl_eval":
            raise ModuleNotFoundError(f"No module named {name!r}", name="bfcl_eval")
sys.meta_path.insert(0, Block())
from swarm.tasks import bfcl  # importing the family needs no bfcl-eval
try:
    list(bfcl.tasks("train"))
except ModuleNotFoundError as error:
    print(error)
"""


def test_without_bfcl_eval_the_family_imports_and_drawing_names_the_install():
    result = subprocess.run([sys.executable, "-c", WITHOUT_BFCL], cwd=REPO, capture_output=True,
                            text=True, timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"pip install --no-deps '{bfcl.REQUIREMENT}'" in result.stdout


# -- tasks -------------------------------------------------------------------------------------


@needs_bfcl
@pytest.mark.parametrize("category", sorted(SIZES))
def test_splits_are_disjoint_cover_the_category_and_are_deterministic(category):
    train = list(bfcl.tasks("train", category=category))
    test = list(bfcl.tasks("test", category=category))
    assert {t["bfcl_id"] for t in train}.isdisjoint(t["bfcl_id"] for t in test)
    assert len({t["bfcl_id"] for t in train + test}) == len(train) + len(test) == SIZES[category]
    assert 0.1 < len(test) / SIZES[category] < 0.3
    for seed in (1, 2):  # a seed orders a split, never moves a task across it
        assert {t["id"] for t in bfcl.tasks("test", seed=seed, category=category)} == {t["id"] for t in test}  # fmt: skip
    assert list(bfcl.tasks("train", seed=1, category=category)) == list(bfcl.tasks("train", seed=1, category=category))  # fmt: skip
    assert [t["id"] for t in bfcl.tasks("train", seed=1, category=category)] != [t["id"] for t in bfcl.tasks("train", seed=2, category=category)]  # fmt: skip


@needs_bfcl
def test_tasks_carry_the_family_the_entry_and_its_tools_and_survive_json():
    tasks = list(bfcl.tasks("train", n=30))
    assert len({t["id"] for t in tasks}) == 30 and {t["family"] for t in tasks} == {"bfcl"}
    assert json.loads(json.dumps(tasks)) == tasks
    task = by_bfcl_id("simple_python_1")  # math.factorial(number: integer)
    assert task["messages"] == [{"role": "user", "content": "Calculate the factorial of 5 using math functions."}]  # fmt: skip
    (tool,) = task["tools"]
    assert tool["type"] == "function" and tool["function"]["name"] == "math_factorial"
    assert tool["function"]["parameters"]["type"] == "object"  # BFCL's "dict"
    assert tool["function"]["parameters"]["properties"]["number"]["type"] == "integer"
    assert task["functions"][0]["name"] == "math.factorial"  # the checker reads BFCL's own


@needs_bfcl
def test_float_and_nested_types_become_json_schema_types():
    for task in bfcl.tasks("train", category="parallel_multiple"):
        for tool in task["tools"]:
            assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", tool["function"]["name"])
            text = json.dumps(tool["function"]["parameters"])
            for gorilla_only in ('"type": "dict"', '"type": "float"', '"type": "tuple"', '"type": "any"'):  # fmt: skip
                assert gorilla_only not in text


@needs_bfcl
def test_unknown_categories_and_oversized_requests_are_refused():
    with pytest.raises(ValueError, match="unknown category 'live_weather'"):
        list(bfcl.tasks(category="live_weather"))
    with pytest.raises(ValueError, match="only"):
        list(bfcl.tasks("test", n=1000))
    assert len(list(bfcl.tasks("test", category="simple_python"))) == len(list(bfcl.tasks("test")))  # fmt: skip


# -- the reward: BFCL's own AST checker --------------------------------------------------------


@needs_bfcl
def test_the_reward_is_bfcls_checker_and_loading_it_leaves_no_stand_in_behind():
    checker = bfcl._ast_checker()
    assert checker.__module__ == "bfcl_eval.eval_checker.ast_eval.ast_checker"
    assert "bfcl_eval.constants.model_config" not in sys.modules


@needs_bfcl
def test_the_ground_truth_scores_1_in_every_category():
    scored = [bfcl.reward(right_calls(t), t) for c in SIZES for s in ("train", "test")
              for t in bfcl.tasks(s, category=c)]  # fmt: skip
    # 2 of BFCL's 1,000 entries have a ground truth whose first choice its own checker refuses
    # (simple_python_200 lists "" first for a required argument; parallel_multiple_26 an
    # argument its function does not declare)
    assert len(scored) == 1000 and sum(scored) >= 998


@needs_bfcl
def test_a_known_right_call_scores_1_and_wrong_ones_0():
    task = by_bfcl_id("simple_python_0")  # calculate_triangle_area(base=10, height=5)

    def call(name: str, arguments: dict) -> list[dict]:
        return [{"function": {"name": name, "arguments": json.dumps(arguments)}}]

    assert bfcl.reward(call("calculate_triangle_area", {"base": 10, "height": 5}), task) == 1.0
    assert bfcl.reward(call("calculate_triangle_area", {"base": 10, "height": 5, "unit": "units"}), task) == 1.0  # fmt: skip
    assert bfcl.reward(call("calculate_triangle_area", {"base": 10, "height": 6}), task) == 0.0
    assert bfcl.reward(call("calculate_triangle_area", {"base": 10}), task) == 0.0  # missing
    assert (
        bfcl.reward(call("calculate_triangle_area", {"base": "10", "height": 5}), task) == 0.0
    )  # type
    assert bfcl.reward(call("triangle_area", {"base": 10, "height": 5}), task) == 0.0  # name
    assert bfcl.reward(call("calculate_triangle_area", {"base": 10, "height": 5}) * 2, task) == 0.0  # fmt: skip
    verdict = bfcl.check(call("calculate_triangle_area", {"base": 10, "height": 6}), task)
    assert verdict["valid"] is False and "height" in json.dumps(verdict["error"])
    dotted = by_bfcl_id("simple_python_1")  # math.factorial: called by its tool name
    assert bfcl.reward(call("math_factorial", {"number": 5}), dotted) == 1.0
    assert bfcl.reward(call("math_factorial", {"number": 6}), dotted) == 0.0


@needs_bfcl
def test_a_parallel_task_needs_every_call_in_any_order():
    task = by_bfcl_id("parallel_0", "parallel")  # spotify.play for two artists
    calls = right_calls(task)
    assert len(calls) == 2
    assert bfcl.reward(calls, task) == 1.0 and bfcl.reward(calls[::-1], task) == 1.0
    assert bfcl.reward(calls[:1], task) == 0.0


@needs_bfcl
@pytest.mark.parametrize(
    "tool_calls",
    [
        None,
        [],
        [{"function": {"name": "calculate_triangle_area", "arguments": "{base: 10"}}],
        [{"function": {"name": "calculate_triangle_area", "arguments": "[10, 5]"}}],
        [{"function": {"name": None, "arguments": "{}"}}],
        [{"function": None}],
        [{"no_function": 1}],
        ["calculate_triangle_area(base=10, height=5)"],
        [
            {
                "function": {
                    "name": "calculate_triangle_area",
                    "arguments": '{"base": {"x": [1]}, "height": null}',
                }
            }
        ],  # fmt: skip
    ],
)
def test_no_call_or_a_malformed_one_scores_0_without_raising(tool_calls):
    assert bfcl.reward(tool_calls, by_bfcl_id("simple_python_0")) == 0.0


@needs_bfcl
def test_sdk_tool_call_objects_score_like_their_dicts():
    task = by_bfcl_id("simple_python_1")
    (call,) = right_calls(task)
    assert bfcl.reward([ChatCompletionMessageToolCall.model_validate(call)], task) == 1.0


# -- the reference rollout and the example workflow ---------------------------------------------


@needs_bfcl
def test_the_reference_rollout_offers_the_tools_and_scores_the_tool_calls():
    task = by_bfcl_id("simple_python_1")
    episode = ScriptedEpisode([{"content": None, "tool_calls": right_calls(task)}])
    assert asyncio.run(bfcl.rollout(task, episode)) == 1.0
    (request,) = episode.llm.requests
    assert request["messages"] == task["messages"] and request["tools"] == task["tools"]
    assert request["max_tokens"] == bfcl.MAX_TOKENS and request["model"] == "r/policy"
    assert request["tool_choice"] == "required"  # simple: one constrained call
    assert asyncio.run(bfcl.rollout(task, ScriptedEpisode([{"content": "math.factorial(5)"}]))) == 0.0  # fmt: skip


@needs_bfcl
@pytest.mark.parametrize(
    ("category", "choice"),
    [("simple", "required"), ("multiple", "required"), ("parallel", "auto"),
     ("parallel_multiple", "auto"), ("multi_turn_base", "auto")],
)  # fmt: skip
def test_one_call_categories_require_a_call_and_the_others_leave_it_to_the_model(category, choice):
    assert {t["tool_choice"] for t in bfcl.tasks("test", category=category, n=20)} == {choice}


@needs_bfcl
def test_the_example_is_a_loadable_workflow_that_scores_like_the_reference_rollout():
    workflow = load_workflow(REPO / "examples" / "bfcl.py")
    task = next(TaskCycle(workflow.tasks))
    assert task == next(bfcl.tasks("train", seed=0))
    for reply in ({"content": None, "tool_calls": right_calls(task)}, {"content": "no idea"}):
        ours = asyncio.run(workflow.rollout(task, ScriptedEpisode([reply])))
        reference = asyncio.run(bfcl.rollout(task, ScriptedEpisode([reply])))
        assert ours == reference
    assert ours == 0.0 and reference == 0.0


OFFLINE = """
import json, socket

def refuse(*args, **kwargs):
    raise OSError("network blocked in this test")

socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
from swarm.tasks import bfcl
for category in bfcl.CATEGORIES:
    task = next(bfcl.tasks("test", category=category))
    if "turns" in task:  # BFCL's executable backends run the ground truth, offline too
        played = [[turn] if turn else [] for turn in task["ground_truth"]]
        assert bfcl.multi_turn_reward(played, task) == 1.0
        continue
    assert bfcl.reward(None, task) == 0.0
    name, args = next(iter(task["ground_truth"][0].items()))
    bfcl.reward([{"function": {"name": name, "arguments": "{}"}}], task)
print("ok")
"""


@needs_bfcl
def test_drawing_and_scoring_need_no_network():
    result = subprocess.run([sys.executable, "-c", OFFLINE], cwd=REPO, capture_output=True,
                            text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"

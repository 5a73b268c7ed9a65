"""BFCL's multi_turn_base through the `bfcl` family: the rollout runs the model's calls on
BFCL's executable backends turn by turn, and the reward is BFCL's own multi-turn checker —
the ground truth played back scores 1, a wrong or missing call 0, a call that names no
offered function (or would inject code into BFCL's `eval`) is never run, and concurrent
episodes of one task never share a backend."""

from __future__ import annotations

import ast
import asyncio
import json
import sys
from pathlib import Path

import pytest

from swarm.tasks import bfcl, bfcl_multi_turn
from tests.unit.swarm.test_bfcl_tasks import needs_bfcl
from tests.unit.swarm.test_tasks import ScriptedEpisode

pytestmark = needs_bfcl
UTILS = "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils"


def tool_call(name: str, arguments: dict, call_id: str = "c0") -> dict:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}  # fmt: skip


def as_tool_calls(calls: list[str], task: dict) -> list[dict]:
    """BFCL ground-truth call strings as OpenAI tool calls (positional arguments named from
    the function's documented parameters, in order)."""
    params = {f["name"]: list(f["parameters"]["properties"]) for f in task["functions"]}
    out = []
    for i, call in enumerate(calls):
        node = ast.parse(call, mode="eval").body
        positional = [ast.literal_eval(a) for a in node.args]
        arguments = dict(zip(params[node.func.id][: len(positional)], positional, strict=True))
        arguments |= {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords}
        out.append(tool_call(node.func.id, arguments, f"c{i}"))
    return out


def ground_truth_replies(task: dict) -> list[dict]:
    """Each turn: one step with all of its ground-truth calls, then a plain reply."""
    replies = []
    for turn in task["ground_truth"]:
        if turn:
            replies.append({"content": None, "tool_calls": as_tool_calls(turn, task)})
        replies.append({"content": "Done."})
    return replies


def all_tasks() -> list[dict]:
    return [t for s in ("train", "test") for t in bfcl.tasks(s, category="multi_turn_base")]


def test_multi_turn_tasks_carry_turns_backends_and_their_functions_as_tools():
    train = list(bfcl.tasks("train", category="multi_turn_base"))
    test = list(bfcl.tasks("test", category="multi_turn_base"))
    assert len(train) + len(test) == 200
    assert {t["bfcl_id"] for t in train}.isdisjoint(t["bfcl_id"] for t in test)
    task = next(t for t in train + test if t["bfcl_id"] == "multi_turn_base_0")
    assert len(task["turns"]) == 4 and task["turns"][0][0]["role"] == "user"
    assert set(task["involved_classes"]) == {"TwitterAPI", "GorillaFileSystem"}
    names = {tool["function"]["name"] for tool in task["tools"]}
    assert {"cd", "mv", "grep", "post_tweet"} <= names
    assert json.loads(json.dumps(task)) == task


@pytest.mark.slow
def test_the_ground_truth_played_back_scores_1_and_leaves_no_backend_behind():
    scored = [asyncio.run(bfcl.rollout(t, ScriptedEpisode(ground_truth_replies(t)))) for t in all_tasks()]  # fmt: skip
    assert len(scored) == 200 and sum(scored) == 200, sum(scored)
    assert not [k for k in vars(sys.modules[UTILS]) if k.startswith("swarmrl_")]


def test_the_rollout_sends_tool_results_back_and_each_turn_in_order():
    task = next(t for t in all_tasks() if t["bfcl_id"] == "multi_turn_base_0")
    episode = ScriptedEpisode(ground_truth_replies(task))
    assert asyncio.run(bfcl.rollout(task, episode)) == 1.0
    first, second = episode.llm.requests[0], episode.llm.requests[1]
    assert first["messages"] == task["turns"][0] and first["tools"] == task["tools"]
    tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 3 and "Error" not in json.dumps(tool_messages)  # cd, mkdir, mv
    last = episode.llm.requests[-1]["messages"]
    assert [m["content"] for m in last if m["role"] == "user"] == [t[0]["content"] for t in task["turns"]]  # fmt: skip


def test_a_wrong_or_missing_call_scores_0():
    task = next(t for t in all_tasks() if t["bfcl_id"] == "multi_turn_base_0")
    silent = [{"content": "I cannot."} for _ in task["turns"]]
    assert asyncio.run(bfcl.rollout(task, ScriptedEpisode(silent))) == 0.0
    replies = ground_truth_replies(task)
    replies[0] = {"content": None, "tool_calls": [tool_call("mkdir", {"dir_name": "elsewhere"})]}
    assert asyncio.run(bfcl.rollout(task, ScriptedEpisode(replies))) == 0.0
    assert bfcl.multi_turn_reward([], task) == 0.0  # fewer turns than the task: force-terminated


@pytest.mark.slow
def test_calls_past_the_step_limit_are_force_terminated():
    task = next(t for t in all_tasks() if t["bfcl_id"] == "multi_turn_base_0")
    looping = [{"content": None, "tool_calls": [tool_call("pwd", {})]}] * bfcl_multi_turn.MAX_STEPS_PER_TURN  # fmt: skip
    episode = ScriptedEpisode(looping)
    assert asyncio.run(bfcl.rollout(task, episode)) == 0.0
    assert len(episode.llm.requests) == bfcl_multi_turn.MAX_STEPS_PER_TURN


@pytest.mark.slow
@pytest.mark.parametrize(
    "call",
    [
        tool_call("__import__('os').system", {}),
        tool_call("cd", {"folder='x'),__import__('os').system('touch PWNED'),cd(folder": "y"}),
        tool_call("exec", {"source": "import os"}),
        {"id": "c0", "type": "function", "function": {"name": "cd", "arguments": "{not json"}},
    ],
)
def test_a_call_that_could_inject_code_or_is_malformed_is_never_run(call, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    task = next(t for t in all_tasks() if t["bfcl_id"] == "multi_turn_base_0")
    replies = [{"content": None, "tool_calls": [call]}] + [{"content": "ok"}] * 8
    assert asyncio.run(bfcl.rollout(task, ScriptedEpisode(replies))) == 0.0
    assert not list(Path(tmp_path).iterdir())


class InterleavedEpisode(ScriptedEpisode):
    """A scripted episode whose model calls yield to the event loop, so that concurrent
    episodes interleave call by call as they do against a real gateway."""

    def __init__(self, replies: list[dict]):
        super().__init__(replies)
        scripted = self.llm.create

        async def create(**request):
            await asyncio.sleep(0)
            return await scripted(**request)

        self.llm.create = create


def test_concurrent_episodes_of_one_task_keep_their_own_backends():
    task = next(t for t in all_tasks() if t["bfcl_id"] == "multi_turn_base_0")
    wrong = ground_truth_replies(task)
    wrong[0] = {"content": None, "tool_calls": [tool_call("cd", {"folder": "document"}),
                                                tool_call("rm", {"file_name": "final_report.pdf"}, "c1")]}  # fmt: skip

    episodes = [InterleavedEpisode(ground_truth_replies(task)), InterleavedEpisode(wrong),
                InterleavedEpisode(ground_truth_replies(task))]  # fmt: skip

    async def together():
        return await asyncio.gather(*(bfcl.rollout(task, episode) for episode in episodes))

    assert asyncio.run(together()) == [1.0, 0.0, 1.0]
    for right in (episodes[0], episodes[2]):  # the other episodes' calls changed nothing here
        results = [m["content"] for m in right.llm.requests[-1]["messages"] if m["role"] == "tool"]
        assert results and not [r for r in results if "rror" in r], results


@pytest.mark.slow
def test_the_single_turn_reward_refuses_a_multi_turn_task():
    task = all_tasks()[0]
    with pytest.raises(ValueError, match="multi_turn_reward"):
        bfcl.reward([], task)


def test_the_example_workflow_runs_a_multi_turn_task_like_the_reference_rollout():
    from swarm.workflow import load_workflow

    workflow = load_workflow(Path(__file__).resolve().parents[3] / "examples" / "bfcl.py")
    task = next(t for t in all_tasks() if t["bfcl_id"] == "multi_turn_base_0")
    for replies in (ground_truth_replies(task), [{"content": "no"}] * len(task["turns"])):
        ours = asyncio.run(workflow.rollout(task, ScriptedEpisode(replies)))
        assert ours == asyncio.run(bfcl.rollout(task, ScriptedEpisode(replies)))
    assert ours == 0.0


@pytest.mark.slow
def test_the_checker_never_evals_a_call_string_that_is_not_a_literal_call(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    task = next(t for t in all_tasks() if t["bfcl_id"] == "multi_turn_base_0")
    injected = [
        "__import__('os').system('touch PWNED')",
        "cd(folder=__import__('os').system('touch PWNED'))",
        "cd(folder='document'); __import__('os').system('touch PWNED')",
        "cd(**{'folder': 'document'})",
    ]
    assert not [call for call in injected if bfcl_multi_turn.is_safe_call(call, {"cd"})]
    assert bfcl_multi_turn.is_safe_call("sort('final_report.pdf')", {"sort"})
    played = [[injected] for _ in task["turns"]]
    assert bfcl.multi_turn_reward(played, task) == 0.0
    assert not list(Path(tmp_path).iterdir())

"""`swarm eval` and `swarm.evaluate`: a workflow's own rollout on its held-out split as plain
inference — greedy unless the rollout says otherwise, failures counted, not fatal, dict
rewards scored for the evaluated policy, intervals right — against the fake gateway served
over real HTTP (the real gateway: tests/integration/test_swarm_eval.py)."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarm.errors import WorkflowError
from swarm.evaluate import (
    EvalEpisode,
    GreedyOpenAI,
    bootstrap_interval,
    first_tasks,
    run_evaluation,
    run_models,
    score,
    summarize,
    wilson_interval,
)
from tests.unit.swarm.fake_gateway import FakeGateway

REPO = Path(__file__).resolve().parents[3]

# the fake gateway echoes the last user message: the reward is whether the reply says "yes"
ECHO_WORKFLOW = """
def tasks(split="train"):
    if split != "test":
        return [{"id": "train-0", "say": "yes"}]
    return [{"id": f"t{i}", "say": "yes" if i % 2 == 0 else "no"} for i in range(6)]

async def rollout(task, episode):
    llm = episode.openai()
    reply = await llm.chat.completions.create(
        model=episode.model, messages=[{"role": "user", "content": task["say"]}]
    )
    if task["id"] == "t5":
        raise ValueError("reward code is broken on t5")
    return 1.0 if reply.choices[0].message.content == "yes" else 0.0
"""


class RecordingCreate:
    def __init__(self) -> None:
        self.calls: list[dict] = []

    async def create(self, **kwargs):
        self.calls.append(kwargs)
        return kwargs


class FakeOpenAI:
    def __init__(self) -> None:
        self.completions = RecordingCreate()
        self.chat = type("Chat", (), {"completions": RecordingCreate()})()
        self.closed = False

    async def close(self) -> None:
        self.closed = True


def test_calls_sample_at_temperature_zero_unless_the_rollout_sets_one():
    raw = FakeOpenAI()
    llm = GreedyOpenAI(raw)

    async def calls():
        await llm.chat.completions.create(model="m", messages=[])
        await llm.chat.completions.create(model="m", messages=[], temperature=0.7)
        await llm.completions.create(model="m", prompt="x")
        async with llm:
            pass

    asyncio.run(calls())
    assert [c["temperature"] for c in raw.chat.completions.calls] == [0.0, 0.7]
    assert raw.completions.calls[0]["temperature"] == 0.0
    assert raw.closed


def test_a_dict_reward_scores_the_evaluated_policy_or_the_mean():
    assert score({"coder": 1.0, "critic": 0.0}, "critic") == 0.0
    assert score({"coder": 1.0, "critic": 0.0}, "policy") == 0.5
    assert score(0.25, "policy") == 0.25
    assert run_models("r1/coder", ["tiny", "r1/coder", "r1/critic", "r2/coder"]) == {
        "coder": "r1/coder",
        "critic": "r1/critic",
    }


def test_the_interval_is_wilson_for_zero_one_rewards_and_a_bootstrap_otherwise():
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-3) and high == pytest.approx(0.9433, abs=1e-3)
    assert summarize([1.0] * 8 + [0.0] * 2).interval == "wilson"
    graded = [0.1, 0.5, 0.9, 0.3, 0.7]
    summary = summarize(graded)
    assert summary.interval == "bootstrap" and summary.mean == pytest.approx(0.5)
    assert summary.ci_low < 0.5 < summary.ci_high
    assert bootstrap_interval(graded) == bootstrap_interval(graded)  # deterministic
    assert summarize([]).mean is None


def test_failures_are_counted_per_task_and_finish_inside_the_rollout_counts():
    async def rollout(task, episode: EvalEpisode):
        if task["id"] == "raises":
            raise RuntimeError("boom")
        if task["id"] == "finishes":
            await episode.finish({"policy": 0.5, "other": 1.0})
            return None
        if task["id"] == "aborts":
            await episode.abort("gave up")
            return 1.0
        if task["id"] == "slow":
            await asyncio.sleep(30)
        if task["id"] == "bad":
            return "not a reward"
        return 1.0

    ids = ["ok", "raises", "finishes", "aborts", "slow", "bad"]
    evaluation = asyncio.run(
        run_evaluation([{"id": i} for i in ids], rollout, gateway_url="http://127.0.0.1:9",
                       model="run/policy", timeout_s=0.5)
    )  # fmt: skip
    assert evaluation.rewards == [1.0, None, 0.5, None, None, None]
    assert set(evaluation.errors) == {"raises", "aborts", "slow", "bad"}
    assert "boom" in evaluation.errors["raises"]
    assert "gave up" in evaluation.errors["aborts"]
    assert "0.5 s" in evaluation.errors["slow"]


def test_a_workflow_without_the_split_is_refused_with_the_reason():
    def tasks(split="train"):
        if split == "test":
            raise KeyError("no held-out data")
        return [{"id": "a"}]

    with pytest.raises(WorkflowError, match="(?s)no 'test' split.*KeyError"):
        first_tasks(tasks, "test", 5)
    with pytest.raises(WorkflowError, match="no 'dev' split: tasks\\('dev'\\) yielded no tasks"):
        first_tasks(lambda split: iter(()), "dev", 5)
    # ids that repeat count once: an endless generator over a pool of 3
    endless = lambda s: ({"id": i % 3} for i in itertools.count())  # noqa: E731
    assert [t["id"] for t in first_tasks(endless, "x", 5)] == [0, 1, 2]
    assert [t["id"] for t in first_tasks(lambda s: ({"id": i} for i in range(10)), "x", 3)] == [
        0,
        1,
        2,
    ]


@pytest.fixture
def served() -> Iterator[str]:
    fake = FakeGateway()
    with fake.serve() as url:
        yield url


def swarm_eval(workflow: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("SWARMRL_API_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "swarm.cli", "eval", str(workflow), *args],
        cwd=REPO, capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip


@pytest.mark.slow
def test_swarm_eval_prints_one_json_object_with_each_reward_and_the_failures(served, tmp_path):
    workflow = tmp_path / "echo.py"
    workflow.write_text(ECHO_WORKFLOW)
    done = swarm_eval(workflow, "--gateway", served, "--model", "fake-model", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result) >= {"workflow", "model", "split", "episodes", "mean_reward", "ci_low",
                           "ci_high", "rewards", "errors"}  # fmt: skip
    assert result["rewards"] == [1.0, 0.0, 1.0, 0.0, 1.0]  # t5 raised: left out, counted
    assert result["errors"] == 1 and result["episodes"] == 6 and result["split"] == "test"
    assert result["mean_reward"] == pytest.approx(0.6)
    assert 0 <= result["ci_low"] < 0.6 < result["ci_high"] <= 1
    assert "reward code is broken on t5" in done.stderr

    text = swarm_eval(workflow, "--gateway", served, "--model", "fake-model", "--episodes", "2")
    assert text.returncode == 0, text.stderr
    assert "mean reward 0.500" in text.stdout and "2 tasks" in text.stdout


@pytest.mark.slow
def test_swarm_eval_refuses_a_missing_split_and_a_model_the_gateway_does_not_serve(
    served, tmp_path
):
    workflow = tmp_path / "echo.py"
    workflow.write_text(ECHO_WORKFLOW)
    no_split = tmp_path / "train_only.py"
    no_split.write_text('def tasks(split="train"):\n    return [] if split == "test" else '
                        '[{"id": "a"}]\n\nasync def rollout(task, episode):\n    return 1.0\n')  # fmt: skip
    refused = swarm_eval(no_split, "--gateway", served, "--model", "fake-model")
    assert refused.returncode == 2
    assert "no 'test' split" in refused.stderr and "yielded no tasks" in refused.stderr

    unknown = swarm_eval(workflow, "--gateway", served, "--model", "nope/policy")
    assert unknown.returncode == 2
    assert "does not serve 'nope/policy'" in unknown.stderr and "fake-model" in unknown.stderr

    away = swarm_eval(workflow, "--gateway", "http://127.0.0.1:9", "--model", "fake-model")
    assert away.returncode == 1 and "cannot reach the gateway" in away.stderr


def test_swarm_eval_imports_with_torch_blocked():
    blocked = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('torch', 'numpy'):\n"
        "            raise ImportError(name + ' is blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import swarm.evaluate, swarm.cli\n"
        "leaked = [m for m in sys.modules if m.split('.')[0] in ('researcher', 'gateway', 'trainer')]\n"
        "assert not leaked, leaked\n"
    )
    done = subprocess.run([sys.executable, "-c", blocked], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr

"""`swarm eval` against a real `gateway serve` (tiny model) and a run it trained: the
trained policy is scored with the workflow's own reward on its test split as plain inference
(nothing recorded), with the JSON contract's keys; a missing split and a model the gateway
does not serve are refused (exit 2) saying why; the researcher's `evaluate_policy` with a
user's workflow gives the same per-task rewards.

    .venv/bin/python -m pytest -q -m slow tests/integration/test_swarm_eval.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from researcher.evaluate import evaluate_policy
from tests.integration.conftest import shared_tiny, wait_for

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
RUN = "evalme"
# the shipped `learnable` task with a graded reward of its own: 1.0 for the word, else a
# tenth per character of reply (so rewards are not all 0/1 and the interval is a bootstrap)
MY_AGENT = """
from swarm.tasks import learnable

PARAMS = {"max_tokens": 8}

def tasks(split="train"):
    return learnable.tasks(split, seed=0)

async def rollout(task, episode):
    reply = await episode.openai().chat.completions.create(
        model=episode.model, max_tokens=PARAMS["max_tokens"],
        messages=[{"role": "user", "content": task["prompt"]}],
    )
    text = reply.choices[0].message.content or ""
    return 1.0 if learnable.reward(text, task) else min(0.9, len(text) / 10)
"""


@pytest.fixture(scope="module")
def trained(tmp_path_factory, shared_tiny_gateway):
    """A tiny gateway (the session's shared one) with run `evalme` trained 2 steps on
    `examples/learnable.py`."""
    tmp = tmp_path_factory.mktemp("swarm-eval")
    gw = shared_tiny(shared_tiny_gateway)
    created = httpx.post(f"{gw.url}/runs", timeout=120, json={
        "name": RUN, "policies": {"policy": {"base_model": "tiny"}}, "lr": 1e-3,
        "group_size": 2, "batch_groups": 2, "max_steps": 2, "zero_variance_groups": "keep",
    })  # fmt: skip
    assert created.status_code in (200, 201), created.text
    done = subprocess.run(
        [sys.executable, "-m", "swarm.cli", "run", "examples/learnable.py", "--gateway",
         gw.url, "--run", RUN, "--max-episodes", "16", "--concurrency", "4"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    wait_for(lambda: httpx.get(f"{gw.url}/runs/{RUN}").json()["status"] == "finished")
    return gw, tmp


def swarm_eval(workflow: Path | str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("SWARMRL_API_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "swarm.cli", "eval", str(workflow), *args],
        cwd=REPO, capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip


def test_swarm_eval_scores_a_trained_policy_with_the_workflows_own_reward(trained):
    gw, tmp = trained
    agent = tmp / "my_agent.py"
    agent.write_text(MY_AGENT)
    before = httpx.get(f"{gw.url}/runs/{RUN}").json()
    assert before["step"] == 2

    done = swarm_eval(agent, "--gateway", gw.url, "--model", f"{RUN}/policy", "--episodes", "6",
                      "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert {"workflow", "model", "split", "episodes", "mean_reward", "ci_low", "ci_high",
            "rewards", "errors"} <= set(result)  # fmt: skip
    assert result["model"] == f"{RUN}/policy" and result["split"] == "test"
    assert result["workflow"] == str(agent) and result["episodes"] == 6
    assert len(result["rewards"]) == 6 and result["errors"] == 0
    assert all(0.0 <= r <= 1.0 for r in result["rewards"])
    assert result["mean_reward"] == pytest.approx(sum(result["rewards"]) / 6)
    assert result["ci_low"] <= result["mean_reward"] <= result["ci_high"]

    # greedy and unrecorded: the same rewards again, and the run saw no new episode
    again = json.loads(swarm_eval(agent, "--gateway", gw.url, "--model", f"{RUN}/policy",
                                  "--episodes", "6", "--json").stdout)  # fmt: skip
    assert again["rewards"] == result["rewards"]
    after = httpx.get(f"{gw.url}/runs/{RUN}").json()
    assert after["episodes_finished"] == before["episodes_finished"]
    assert after["episodes_aborted"] == before["episodes_aborted"]

    # the researcher's evaluation of a user's workflow: its raw rewards, task by task
    outcomes = evaluate_policy(gw.url, f"{RUN}/policy", family="workflow", n=6,
                               workflow=str(agent))  # fmt: skip
    assert outcomes == result["rewards"]
    # a shipped family: its reference rollout, each task 1.0 or 0.0 (thresholded at 1.0)
    shipped = evaluate_policy(gw.url, f"{RUN}/policy", family="learnable", n=4)
    assert len(shipped) == 4 and set(shipped) <= {0.0, 1.0}

    text = swarm_eval("examples/learnable.py", "--gateway", gw.url, "--model", "tiny",
                      "--episodes", "4")  # fmt: skip
    assert text.returncode == 0, text.stderr
    assert "learnable.py on tiny (test, 4 tasks): mean reward" in text.stdout
    assert "95% interval" in text.stdout and "0 failed" in text.stdout


def test_swarm_eval_refuses_a_missing_split_and_an_unserved_model_naming_the_served(trained):
    gw, _ = trained
    no_split = swarm_eval("examples/learnable.py", "--gateway", gw.url, "--model", "tiny",
                          "--split", "holdout")  # fmt: skip
    assert no_split.returncode == 2, no_split.stderr
    assert "no 'holdout' split" in no_split.stderr

    unknown = swarm_eval("examples/learnable.py", "--gateway", gw.url, "--model", "other/policy")
    assert unknown.returncode == 2
    assert "does not serve 'other/policy'" in unknown.stderr
    assert "tiny" in unknown.stderr and f"{RUN}/policy" in unknown.stderr

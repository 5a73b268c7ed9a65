"""`gateway serve --model tiny --optimizer deepspeed --zero 1` for real: `swarm run` clients
train a run through DeepSpeed ZeRO-1 (gloo, one process, CPU); the engine serves the new
weights; the checkpoint holds DeepSpeed's optimizer state in `optimizer.pt`, and a
restarted gateway resumes the run from it — weights, version, step and AdamW moments
(the next checkpoint's optimizer counts every step, before and after the restart).

    .venv/bin/python -m pytest -q -m slow tests/integration/test_deepspeed_gateway.py
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import torch

from tests.integration.conftest import start_gateway, stop_gateway, wait_for
from tests.integration.test_training_stack import WORKFLOWS, swarm_run

pytest.importorskip(
    "deepspeed", reason="DeepSpeed is not installed: pip install --no-build-isolation deepspeed"
)
pytestmark = pytest.mark.slow
DEEPSPEED = ("--optimizer", "deepspeed", "--zero", "1")
PROMPT = [{"role": "user", "content": "Count to 3."}]


def greedy_logprobs(gw) -> list[float]:
    reply = httpx.post(
        f"{gw.v1}/chat/completions",
        timeout=60,
        json={
            "model": "ds/policy",
            "messages": PROMPT,
            "max_tokens": 4,
            "temperature": 0,
            "logprobs": True,
        },
    ).json()
    return [t["logprob"] for t in reply["choices"][0]["logprobs"]["content"]]


def train(gw, episodes: int) -> None:
    done = swarm_run(
        gw,
        "ds",
        WORKFLOWS / "first_finisher_reward.py",  # every group has a gradient
        "--max-episodes",
        str(episodes),
        "--concurrency",
        "4",
    )
    assert done.returncode == 0, done.stdout + done.stderr


def optimizer_steps(gw, step: int) -> set[float]:
    """The AdamW step counts in the `optimizer.pt` of the run's checkpoint at `step`, which
    a ZeRO-1 DeepSpeed engine wrote."""
    checkpoints = {c["step"]: c for c in httpx.get(f"{gw.url}/runs/ds/checkpoints").json()}
    directory = Path(checkpoints[step]["path"]) / "policy"
    written_by = json.loads((directory / "trainer_state.json").read_text())
    assert (written_by["optimizer"], written_by["zero_stage"]) == ("deepspeed", 1)
    state = torch.load(directory / "optimizer.pt", weights_only=True)
    assert state["state"], "the checkpoint holds no optimizer state"
    return {float(entry["step"]) for entry in state["state"].values()}


def test_a_deepspeed_zero1_gateway_trains_checkpoints_and_resumes(tmp_path):
    gw = start_gateway(tmp_path, *DEEPSPEED, model="tiny")
    try:
        r = httpx.post(
            f"{gw.url}/runs",
            timeout=120,
            json={
                "name": "ds",
                "policies": {"policy": {"base_model": "tiny"}},
                "lr": 1e-3,
                "group_size": 2,
                "batch_groups": 2,
                "max_steps": 4,
                "checkpoint_every": 2,
                "keep_checkpoints": 0,  # all whole: the optimizer states are read below
                "max_staleness": 8,
                "zero_variance_groups": "keep",  # every step updates: versions count steps
            },
        )
        assert r.status_code == 201, r.text
        before = greedy_logprobs(gw)

        train(gw, episodes=8)  # 2 steps of 2 groups of 2
        run = wait_for(
            lambda: (info := httpx.get(f"{gw.url}/runs/ds").json())["step"] >= 2 and info
        )
        assert run["step"] == 2 and run["policies"]["policy"]["version"] == 2
        assert greedy_logprobs(gw) != before  # the engine serves DeepSpeed's new weights
        wait_for(lambda: httpx.get(f"{gw.url}/runs/ds/checkpoints").json())
        assert optimizer_steps(gw, 2) == {2.0}
        losses = httpx.get(f"{gw.url}/runs/ds/metrics", params={"name": "grad_norm"}).json()
        assert losses and all(0 < m["value"] < float("inf") for m in losses)
    finally:
        stop_gateway(gw)

    gw = start_gateway(tmp_path, *DEEPSPEED, model="tiny")
    try:
        run = wait_for(
            lambda: (info := httpx.get(f"{gw.url}/runs/ds").json())["status"] == "running" and info
        )
        assert run["step"] == 2 and run["policies"]["policy"]["version"] == 2
        train(gw, episodes=8)
        run = wait_for(
            lambda: (info := httpx.get(f"{gw.url}/runs/ds").json())["status"] == "finished" and info
        )
        assert run["step"] == 4 and run["policies"]["policy"]["version"] == 4
        # a fresh optimizer would count 2 here: the moments came back with the checkpoint
        assert optimizer_steps(gw, 4) == {4.0}
    finally:
        stop_gateway(gw)

"""The reasoning-gym example workflows against a real `gateway serve` (tiny model): `swarm
run` trains a run on `examples/countdown.py` and on `examples/reasoning_gym_any.py` (the
family's reference rollout) for two training steps, and `swarm eval`
scores the trained policy on countdown's held-out split with the library's scorer.

    .venv/bin/python -m pytest -q -m slow tests/integration/test_reasoning_gym_workflows.py
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import shared_tiny, wait_for

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gateway(shared_tiny_gateway):
    return shared_tiny(shared_tiny_gateway)  # its runs: "countdown", "reasoning_gym_any"


def swarm(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "swarm.cli", *args],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize("example", ["countdown", "reasoning_gym_any"])
def test_swarm_run_trains_on_the_example(gateway, example):
    created = httpx.post(f"{gateway.url}/runs", timeout=120, json={
        "name": example, "policies": {"policy": {"base_model": "tiny"}}, "lr": 1e-3,
        "group_size": 2, "batch_groups": 2, "max_steps": 2, "zero_variance_groups": "keep",
    })  # fmt: skip
    assert created.status_code in (200, 201), created.text
    done = swarm("run", f"examples/{example}.py", "--gateway", gateway.url, "--run", example,
                 "--max-episodes", "8", "--concurrency", "4")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    wait_for(lambda: httpx.get(f"{gateway.url}/runs/{example}").json()["status"] == "finished")
    run = httpx.get(f"{gateway.url}/runs/{example}").json()
    # 8 episodes are exactly 2 steps of 2 groups of 2: every one is trained, none aborted
    assert run["episodes_finished"] == 8 and run["episodes_aborted"] == 0, done.stdout

    if example == "countdown":
        scored = swarm("eval", "examples/countdown.py", "--gateway", gateway.url,
                       "--model", "countdown/policy", "--episodes", "4", "--json")  # fmt: skip
        assert scored.returncode == 0, scored.stdout + scored.stderr
        result = json.loads(scored.stdout)
        assert result["episodes"] == 4 and result["split"] == "test"
        assert 0.0 <= result["mean_reward"] <= 1.0

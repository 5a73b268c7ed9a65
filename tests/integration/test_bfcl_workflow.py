"""The BFCL example workflow against a real `gateway serve` (tiny model): `swarm run` trains a
run on `examples/bfcl.py` (BFCL's functions offered as OpenAI tools through the gateway, the
reply's tool calls scored by BFCL's own checker) for two steps, and `swarm eval` scores the
trained policy on the held-out split.

    .venv/bin/python -m pytest -q -m slow tests/integration/test_bfcl_workflow.py
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import shared_tiny, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("bfcl_eval") is None,
                       reason="bfcl-eval is not installed: pip install --no-deps 'bfcl-eval==2026.3.23'"),
]  # fmt: skip
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gateway(shared_tiny_gateway):
    return shared_tiny(shared_tiny_gateway)  # its run: "bfcl"


def swarm(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "swarm.cli", *args],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_swarm_run_trains_on_the_bfcl_example_and_swarm_eval_scores_it(gateway):
    created = httpx.post(f"{gateway.url}/runs", timeout=120, json={
        "name": "bfcl", "policies": {"policy": {"base_model": "tiny"}}, "lr": 1e-3,
        "group_size": 2, "batch_groups": 2, "max_steps": 2, "zero_variance_groups": "keep",
    })  # fmt: skip
    assert created.status_code in (200, 201), created.text
    done = swarm("run", "examples/bfcl.py", "--gateway", gateway.url, "--run", "bfcl",
                 "--max-episodes", "8", "--concurrency", "4")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    wait_for(lambda: httpx.get(f"{gateway.url}/runs/bfcl").json()["status"] == "finished")
    run = httpx.get(f"{gateway.url}/runs/bfcl").json()
    # 8 episodes are exactly 2 steps of 2 groups of 2: every one is trained, none aborted
    assert run["episodes_finished"] == 8 and run["episodes_aborted"] == 0, done.stdout

    scored = swarm("eval", "examples/bfcl.py", "--gateway", gateway.url,
                   "--model", "bfcl/policy", "--episodes", "4", "--json")  # fmt: skip
    assert scored.returncode == 0, scored.stdout + scored.stderr
    result = json.loads(scored.stdout)
    assert result["episodes"] == 4 and result["split"] == "test"
    assert result["mean_reward"] in (0.0, 0.25, 0.5, 0.75, 1.0)  # BFCL's verdicts: 0 or 1 each

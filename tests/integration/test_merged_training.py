"""Merged training through the whole stack: `gateway serve` (tiny model) + `swarm run` on
the shipped multi-turn game (`examples/guess_number.py`, several calls per episode) with a
run created with `merge: "tree"`. The episodes' calls merge into fewer timelines than
calls, the run steps, the weights version goes up, and nothing fails — on the gateway's
SQLite file and on PostgreSQL (`--database-url`), which records each step and from which
the step metrics below are read."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import shared_tiny
from tests.integration.test_training_stack import swarm_run

pytestmark = pytest.mark.slow
GUESS_NUMBER = Path(__file__).parents[2] / "examples" / "guess_number.py"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def tiny_gateway(request):
    """The session's shared tiny gateway on its SQLite file, then the shared one on
    PostgreSQL (`--database-url`): the module runs once on each (its run: "merged")."""
    name = {"sqlite": "shared_tiny_gateway", "postgresql": "shared_tiny_pg_gateway"}
    return shared_tiny(request.getfixturevalue(name[request.param]))


def per_step(metrics: list[dict], name: str) -> dict[int, float]:
    return {m["step"]: m["value"] for m in metrics if m["name"] == name}


def test_a_tree_merged_run_trains_a_multi_turn_task_with_fewer_timelines_than_calls(
    tiny_gateway,
):
    gw = tiny_gateway
    r = httpx.post(
        f"{gw.url}/runs",
        timeout=120,
        json={
            "name": "merged",
            "policies": {"policy": {"base_model": "tiny"}},
            "lr": 1e-3,
            "group_size": 2,
            "batch_groups": 1,
            "max_steps": 2,
            "max_staleness": 4,
            # a random model rarely wins: keep equal-reward groups so every step trains
            "zero_variance_groups": "keep",
            "merge": "tree",
        },
    )
    assert r.status_code == 201, r.text
    assert r.json()["settings"]["merge"] == "tree"

    done = swarm_run(gw, "merged", GUESS_NUMBER, "--concurrency", "2", timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr  # exits once the run finishes

    run = httpx.get(f"{gw.url}/runs/merged").json()
    assert run["error"] is None and run["status"] == "finished", run
    assert run["step"] == 2 and run["policies"]["policy"]["version"] >= 2
    assert run["samples_trained"] > 0

    metrics = httpx.get(f"{gw.url}/runs/merged/metrics", params={"since": 0}).json()
    calls = per_step(metrics, "context/calls")
    timelines = per_step(metrics, "context/timelines")
    assert sorted(calls) == sorted(timelines) == [1, 2]
    for step in (1, 2):
        # 2 episodes of several guesses each, every guess extending its episode's chat
        # (drift repair keeps the prompts token-exact): one timeline per episode
        assert timelines[step] == 2 < calls[step], (step, timelines, calls)
    tokens = per_step(metrics, "tokens")
    assert all(tokens[step] > 0 for step in (1, 2))
    assert not any(m["name"] == "skipped_nonfinite" and m["value"] for m in metrics)

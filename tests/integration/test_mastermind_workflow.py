"""The multi-turn game from TextArena (`mastermind`) against a real `gateway serve` (tiny
model): the family's reference rollout, driven through a real `Episode`, makes one chat
call per turn on a growing conversation that the gateway merges into one timeline, and
`swarm run examples/mastermind.py` trains a run for two steps with one timeline per episode.
Skips, saying so, without TextArena (the `games` extra).

    PYTHONPATH=$PWD .venv/bin/python -m pytest -q -m slow tests/integration/test_mastermind_workflow.py
"""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
from pathlib import Path

import httpx
import pytest

from swarm.client import SwarmClient
from tests.integration.conftest import shared_tiny
from tests.integration.test_merged_training import per_step
from tests.integration.test_training_stack import swarm_run

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("textarena") is None,
        reason="TextArena is not installed (the `games` extra: pip install 'swarmrl[games]')",
    ),
]
GAMES = 6  # all 6 won at the first guess: under 1 in 10,000 whatever the first guess favours
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mastermind.py"


@pytest.fixture(scope="module")
def gateway(shared_tiny_gateway):
    return shared_tiny(shared_tiny_gateway)  # its runs: "one-game", "mastermind"


def create_run(gw, name: str, **settings) -> None:
    created = httpx.post(f"{gw.url}/runs", timeout=120, json={
        "name": name, "policies": {"policy": {"base_model": "tiny"}}, "lr": 1e-3,
        "group_size": 2, "batch_groups": 1, "zero_variance_groups": "keep", **settings,
    })  # fmt: skip
    assert created.status_code in (200, 201), created.text


async def play_one(url: str, run: str, task: dict) -> tuple[float, str]:
    from swarm.tasks import mastermind

    async with SwarmClient(url, name="mastermind-test") as client:
        await client.register()
        async with client.episode(run, task["id"], task["family"]) as episode:
            reward = await mastermind.rollout(task, episode)
            await episode.finish(reward)
            return reward, episode.episode_id


def test_the_reference_rollout_makes_one_timeline_of_its_turns(gateway):
    from swarm.tasks import mastermind

    create_run(gateway, "one-game", max_steps=50)
    # every reply is a well-formed guess (constrained), so the random model cracks a tiny
    # code (2 of 1..4) at its first guess about one game in 16 (its first guesses are near
    # uniform, measured): such a one-call game shows no merging, so games are played until
    # one takes several turns
    for task in itertools.islice(mastermind.tasks("test", level="tiny"), GAMES):
        reward, episode_id = asyncio.run(play_one(gateway.url, "one-game", task))
        assert 0.0 <= reward <= 1.0
        trace = httpx.get(f"{gateway.url}/swarm/episodes/{episode_id}", timeout=30).json()
        calls = trace["calls"]
        assert 1 <= len(calls) <= mastermind.max_calls(task)
        assert len(calls) > 1 or reward == 1.0, calls  # a game ends at once only when won
        if len(calls) > 1:
            break
    assert len(calls) > 1, f"all {GAMES} games were won at the first guess"
    assert all(call["prompt_token_ids"] for call in calls)
    (timelines,) = trace["timelines"].values()
    assert len(timelines) == 1, [call["continues"] for call in calls]
    assert [span["call_index"] for span in timelines[0]["calls"]] == list(range(len(calls)))
    httpx.post(f"{gateway.url}/runs/one-game/stop", timeout=30)


def test_swarm_run_trains_the_example_with_one_timeline_per_episode(gateway):
    create_run(gateway, "mastermind", max_steps=2, max_staleness=4)
    done = swarm_run(gateway, "mastermind", EXAMPLE, "--concurrency", "2", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr  # exits once the run finishes

    run = httpx.get(f"{gateway.url}/runs/mastermind", timeout=30).json()
    assert run["error"] is None and run["status"] == "finished", run
    assert run["step"] == 2 and run["samples_trained"] > 0
    metrics = httpx.get(f"{gateway.url}/runs/mastermind/metrics", params={"since": 0}).json()
    calls, timelines = per_step(metrics, "context/calls"), per_step(metrics, "context/timelines")
    for step in (1, 2):
        # a group of 2 games, every turn extending its game's chat: one timeline per game
        assert timelines[step] == 2 <= calls[step], (step, timelines, calls)
    # a game won at the first guess has one call (about 1 in 16: the random model's guesses
    # are near uniform over the 16), so merging is asked of the 4 games together (all 4 won
    # at once: about 1 in 65,000), not of each group (both at once: 1 in 256 a step)
    assert calls[1] + calls[2] > timelines[1] + timelines[2], (timelines, calls)

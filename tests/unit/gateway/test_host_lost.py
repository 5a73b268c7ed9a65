"""A policy whose host process dies (a Ray actor, `trainer.errors.PolicyHostLost`) is
handled like a gateway restart, inside the living gateway: the run's episodes left open
are aborted ("policy host lost"), the run rewinds to its last checkpoint, its policies are
created again from it, and the steps after it train again. Runs on `FakePolicyFactory`
trainers given a `host_lost()` (what `gateway.serve.ray_hosting.RayTrainer` has); the real
thing, with a SIGKILLed actor on a local Ray cluster, is in
tests/integration/test_ray_policies.py."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from fastapi.testclient import TestClient

from gateway.settings import GatewaySettings
from tests.fakes import FakePolicyFactory, FakePolicyTrainer
from tests.unit.gateway.conftest import (
    Start,
    assert_openai_error,
    bearer,
    chat_as,
    chat_body,
    create_run,
    eventually,
    open_episode,
    run_state,
)
from tests.unit.gateway.test_restart import (
    STEP_BY_STEP,
    play,
    trained_episode_ids,
)
from trainer.errors import PolicyHostLost
from trainer.types import Policy


class LosableTrainer(FakePolicyTrainer):
    """A fake trainer whose host can die: `die()` (from the test's thread)."""

    def __init__(self, engine: Any):
        super().__init__(engine)
        self.dead = threading.Event()

    def die(self) -> None:
        self.dead.set()

    async def host_lost(self) -> str:
        while not self.dead.is_set():
            await asyncio.sleep(0.01)
        return "the fake host of this policy is gone"

    async def train_step(self, groups, settings):
        if self.dead.is_set():
            raise PolicyHostLost("the fake host of this policy is gone")
        return await super().train_step(groups, settings)


class LosableFactory(FakePolicyFactory):
    """Every trainer it makes is a `LosableTrainer`; `made` keeps them in order."""

    def __init__(self) -> None:
        super().__init__()
        self.made: list[LosableTrainer] = []

    async def create(self, **kwargs: Any) -> Policy:
        policy = await super().create(**kwargs)
        trainer = LosableTrainer(policy.served.engine)
        trainer.engine.weights_version = policy.trainer.version
        self.trainers[kwargs["served_name"]] = trainer
        self.made.append(trainer)
        return Policy(served=policy.served, trainer=trainer)


@pytest.mark.slow
def test_a_lost_policy_host_restores_the_run_from_its_checkpoint_in_the_same_gateway(
    start: Start, settings: GatewaySettings
):
    client: TestClient = start(factory := LosableFactory())
    create_run(client, **STEP_BY_STEP)
    played = [play(client) for _ in range(3)]
    eventually(lambda: run_state(client)["step"] == 3)
    left_open = open_episode(client)
    chat_as(client, left_open)
    first = factory.made[0]

    first.die()

    eventually(lambda: len(factory.made) == 2 and run_state(client)["step"] == 3)
    checkpoint = settings.runs_dir / "r" / "checkpoints" / "step-2" / "policy"
    assert [call["resume_from"] for call in factory.calls] == [None, str(checkpoint)]
    assert first.closed
    second = factory.made[1]
    assert [[e.episode_id for g in groups for e in g.episodes] for groups, _ in second.steps] == [
        [played[2]["episode_id"]]
    ]  # step 3 trained again, from the persisted sample
    state = run_state(client)
    assert (state["status"], state["samples_trained"], state["episodes_aborted"]) == (
        "running",
        3,
        1,
    )
    response = client.post(
        "/v1/chat/completions",
        json=chat_body() | {"model": "r/policy"},
        headers=bearer(left_open["api_key"]),
    )
    error = assert_openai_error(response, 409, "episode_not_open")
    assert "policy host lost" in error["message"]
    play(client)
    eventually(lambda: run_state(client)["step"] == 4)
    assert trained_episode_ids(factory)[-1] != [played[2]["episode_id"]]


@pytest.mark.slow
def test_a_lost_host_of_a_stopped_run_frees_its_policies_and_trains_nothing(start: Start):
    client: TestClient = start(factory := LosableFactory())
    create_run(client, **STEP_BY_STEP)
    play(client)
    eventually(lambda: run_state(client)["step"] == 1)
    assert client.post("/runs/r/stop").status_code == 200

    factory.made[0].die()

    eventually(lambda: factory.made[0].closed)
    assert len(factory.made) == 1
    assert run_state(client)["status"] == "stopped"

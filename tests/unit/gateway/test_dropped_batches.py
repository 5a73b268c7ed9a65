"""A run's steps are updates: a batch from which no policy trained a sample is no step, is
counted in `batches_dropped` (persisted), and `max_dropped_batches` of them in a row stop
the run with the reason."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.fakes import FakePolicyFactory
from tests.unit.gateway.conftest import (
    Start,
    assert_openai_error,
    bearer,
    chat_as,
    create_run,
    eventually,
    finish,
    open_episode,
    run_state,
)


def play_group(client: TestClient, group_id: str, rewards: list, model: str | None = None) -> None:
    """One group: an episode per reward, each with one call to `model` (the run's default)."""
    for reward in rewards:
        episode = open_episode(client, group_id=group_id)
        chat_as(client, episode, model=model, content=group_id)
        response = finish(client, episode, reward)
        assert response.status_code == 200, response.text


def dropped_is(client: TestClient, expected: dict[str, int]):
    return lambda: run_state(client)["batches_dropped"] == expected


def test_batches_with_equal_rewards_are_not_steps_and_stop_the_run_after_max_dropped_batches(
    trainer_client, factory
):
    create_run(
        trainer_client, group_size=2, batch_groups=1, max_dropped_batches=3, checkpoint_every=1
    )
    play_group(trainer_client, "g1", [1.0, 1.0])
    play_group(trainer_client, "g2", [0.0, 0.0])
    eventually(dropped_is(trainer_client, {"zero_variance": 2}))
    state = run_state(trainer_client)
    assert (state["status"], state["step"], state["batches_dropped_in_a_row"]) == ("running", 0, 2)
    assert state["policies"]["policy"]["version"] == 0
    assert (state["samples_dropped"], state["samples_trained"]) == (4, 0)
    assert trainer_client.get("/runs/r/checkpoints").json() == []  # step 0 is no checkpoint
    points = trainer_client.get("/runs/r/metrics").json()
    assert [(p["step"], p["name"], p["value"]) for p in points] == [
        (0, "batches/dropped", 1.0),
        (0, "batches/dropped/zero_variance", 1.0),
        (0, "batches/dropped", 2.0),
        (0, "batches/dropped/zero_variance", 2.0),
    ]

    play_group(trainer_client, "g3", [0.5, 0.5])
    eventually(lambda: run_state(trainer_client)["status"] == "stopped")
    state = run_state(trainer_client)
    assert state["error"] == (
        "no learning signal: 3 consecutive batches trained nothing (zero_variance 3)"
    )
    assert (state["step"], state["batches_dropped"]) == (0, {"zero_variance": 3})
    assert len(factory.trainers["r/policy"].steps) == 3
    listed = {run["name"]: run for run in trainer_client.get("/runs").json()}
    assert listed["r"]["batches_dropped"] == {"zero_variance": 3}
    prometheus = trainer_client.get("/metrics").text
    assert 'swarmrl_run_batches_dropped_total{reason="zero_variance",run="r"} 3.0' in prometheus


def test_only_real_updates_count_toward_max_steps_and_an_update_ends_the_streak(
    trainer_client, factory
):
    create_run(
        trainer_client,
        group_size=2,
        batch_groups=1,
        max_steps=2,
        max_dropped_batches=2,
        checkpoint_every=1,
    )
    play_group(trainer_client, "flat-1", [1.0, 1.0])
    eventually(dropped_is(trainer_client, {"zero_variance": 1}))
    play_group(trainer_client, "varied-1", [1.0, 0.0])
    eventually(lambda: run_state(trainer_client)["step"] == 1)
    assert run_state(trainer_client)["batches_dropped_in_a_row"] == 0
    play_group(trainer_client, "flat-2", [0.0, 0.0])
    eventually(dropped_is(trainer_client, {"zero_variance": 2}))
    state = run_state(trainer_client)
    assert (state["status"], state["step"], state["batches_dropped_in_a_row"]) == ("running", 1, 1)
    play_group(trainer_client, "varied-2", [0.0, 1.0])
    eventually(lambda: run_state(trainer_client)["status"] == "finished")
    state = run_state(trainer_client)
    assert (state["step"], state["error"]) == (2, None)
    assert state["policies"]["policy"]["version"] == 2
    assert len(factory.trainers["r/policy"].steps) == 4
    assert [c["step"] for c in trainer_client.get("/runs/r/checkpoints").json()] == [1, 2]
    dropped_at = trainer_client.get("/runs/r/metrics", params={"name": "batches/dropped"}).json()
    assert [(p["step"], p["value"]) for p in dropped_at] == [(0, 1.0), (1, 2.0)]


def test_a_batch_where_one_of_two_policies_trained_is_a_step(trainer_client, factory):
    create_run(trainer_client, policies={"a": {}, "b": {}}, group_size=2, batch_groups=1)
    for reward in ({"a": 1.0, "b": 0.0}, {"a": 1.0, "b": 1.0}):  # a: equal rewards; b: not
        episode = open_episode(trainer_client, group_id="g")
        chat_as(trainer_client, episode, model="r/a")
        chat_as(trainer_client, episode, model="r/b")
        assert finish(trainer_client, episode, reward).status_code == 200
    eventually(lambda: run_state(trainer_client)["step"] == 1)
    state = run_state(trainer_client)
    versions = {name: p["version"] for name, p in state["policies"].items()}
    assert versions == {"a": 0, "b": 1}
    assert (state["batches_dropped"], state["samples_trained"], state["samples_dropped"]) == (
        {},
        2,
        2,
    )


def test_a_batch_neither_policy_trained_is_counted_once_by_its_main_reason(trainer_client):
    create_run(trainer_client, policies={"a": {}, "b": {}}, group_size=2, batch_groups=1)
    for _ in range(2):
        episode = open_episode(trainer_client, group_id="g")
        chat_as(trainer_client, episode, model="r/a")
        assert finish(trainer_client, episode, {"a": 1.0, "b": 0.0}).status_code == 200
    eventually(dropped_is(trainer_client, {"zero_variance": 1}))
    assert run_state(trainer_client)["step"] == 0


@pytest.mark.slow
def test_dropped_batch_counters_and_the_streak_survive_a_restart(start: Start):
    before = start(FakePolicyFactory())
    create_run(before, group_size=2, batch_groups=1, max_dropped_batches=3)
    play_group(before, "flat-1", [1.0, 1.0])
    play_group(before, "flat-2", [1.0, 1.0])
    eventually(dropped_is(before, {"zero_variance": 2}))

    after = start(FakePolicyFactory())

    state = run_state(after)
    assert (state["status"], state["step"]) == ("running", 0)
    assert (state["batches_dropped"], state["batches_dropped_in_a_row"]) == (
        {"zero_variance": 2},
        2,
    )
    play_group(after, "flat-3", [0.0, 0.0])  # the third in a row, across the restart
    eventually(lambda: run_state(after)["status"] == "stopped")
    assert run_state(after)["error"].startswith("no learning signal: 3 consecutive batches")


def test_max_dropped_batches_defaults_to_50_and_is_bounded_on_create_and_patch(trainer_client):
    assert create_run(trainer_client)["settings"]["max_dropped_batches"] == 50
    for bad in (0, -1, 2.5, "many"):
        response = trainer_client.post("/runs", json={"name": "bad", "max_dropped_batches": bad})
        assert_openai_error(response, 422)
        response = trainer_client.patch("/runs/r", json={"max_dropped_batches": bad})
        assert_openai_error(response, 422)
    response = trainer_client.patch("/runs/r", json={"max_dropped_batches": 7})
    assert response.json()["settings"]["max_dropped_batches"] == 7
    response = trainer_client.patch("/runs/r", json={"max_dropped_batches": None})
    assert response.json()["settings"]["max_dropped_batches"] is None  # never stops for it


@pytest.mark.slow
def test_a_patched_max_dropped_batches_applies_at_the_next_batch(trainer_client):
    create_run(trainer_client, group_size=2, batch_groups=1)
    play_group(trainer_client, "flat-1", [1.0, 1.0])
    eventually(dropped_is(trainer_client, {"zero_variance": 1}))
    assert run_state(trainer_client)["status"] == "running"
    assert trainer_client.patch("/runs/r", json={"max_dropped_batches": 2}).status_code == 200
    play_group(trainer_client, "flat-2", [1.0, 1.0])
    eventually(lambda: run_state(trainer_client)["status"] == "stopped")
    assert "2 consecutive batches" in run_state(trainer_client)["error"]


# -- the real trainer on a tiny random model ----------------------------------------------------


@pytest.mark.slow
def test_a_two_policy_tiny_run_with_equal_rewards_stays_at_step_0_and_stops(
    make_client, tiny_factory
):
    """The bug this fixes: such a run used to end "finished" at max_steps with both
    policies at version 0."""
    client = make_client(policy_factory=tiny_factory)
    create_run(client, policies={"a": {"base_model": "tiny"}, "b": {"base_model": "tiny"}},
               group_size=2, batch_groups=1, max_steps=1, max_dropped_batches=2)  # fmt: skip
    for group in ("g1", "g2"):
        for _ in range(2):
            episode = open_episode(client, group_id=group)
            for model in ("r/a", "r/b"):
                reply = client.post(
                    "/v1/chat/completions",
                    headers=bearer(episode["api_key"]),
                    json={
                        "model": model,
                        "messages": [{"role": "user", "content": "hi"}],
                        "max_tokens": 4,
                    },  # fmt: skip
                )
                assert reply.status_code == 200, reply.text
            assert finish(client, episode, {"a": 0.0, "b": 0.0}).status_code == 200
    eventually(lambda: run_state(client)["status"] == "stopped", 120)
    state = run_state(client)
    assert state["step"] == 0
    assert {name: p["version"] for name, p in state["policies"].items()} == {"a": 0, "b": 0}
    assert state["batches_dropped"] == {"zero_variance": 2}
    assert state["error"] == (
        "no learning signal: 2 consecutive batches trained nothing (zero_variance 2)"
    )
    assert (state["samples_trained"], state["samples_dropped"]) == (0, 8)

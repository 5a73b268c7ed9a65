"""The training loop: complete groups → one step per policy, its record, checkpoints,
max_steps, failures, and dropped samples."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from experiments_db import crud
from experiments_db.db import session_scope
from tests.unit.gateway.conftest import (
    assert_openai_error,
    chat_as,
    create_run,
    eventually,
    finish,
    open_episode,
    run_state,
)


def play(client, group_id: str | None, reward, model: str | None = None, calls: int = 1):
    episode = open_episode(client, **({"group_id": group_id} if group_id else {}))
    for i in range(calls):
        chat_as(client, episode, model=model, content=f"{group_id}-{i}")
    response = finish(client, episode, reward)
    assert response.status_code == 200, response.text
    return episode


def step_reached(client, step: int, name: str = "r"):
    return lambda: run_state(client, name)["step"] >= step


def test_a_step_is_taken_after_two_complete_groups_of_two(trainer_client, factory):
    create_run(trainer_client, policies={"a": {}, "b": {}}, group_size=2, batch_groups=2)
    e1 = play(trainer_client, "g1", {"a": 1.0, "b": 0.0}, model="r/a")
    e2 = play(trainer_client, "g2", {"a": 0.0, "b": 1.0}, model="r/b")
    e3 = play(trainer_client, "g1", {"a": 0.5, "b": 0.5}, model="r/a")
    assert run_state(trainer_client)["step"] == 0  # g2 is not complete yet
    e4 = play(trainer_client, "g2", {"a": 0.25, "b": 0.75}, model="r/b")
    eventually(step_reached(trainer_client, 1))

    for policy, rewards in [("a", [[1.0, 0.5], [0.0, 0.25]]), ("b", [[0.0, 0.5], [1.0, 0.75]])]:
        ((groups, settings),) = factory.trainers[f"r/{policy}"].steps
        assert [g.group_id for g in groups] == ["g1", "g2"]
        assert [[e.episode_id for e in g.episodes] for g in groups] == [
            [e1["episode_id"], e3["episode_id"]],
            [e2["episode_id"], e4["episode_id"]],
        ]
        assert [[e.reward for e in g.episodes] for g in groups] == rewards
        assert settings.lr == 1e-5 and settings.algorithm == "grpo"
    ((a_groups, _),) = factory.trainers["r/a"].steps
    assert [len(e.samples) for g in a_groups for e in g.episodes] == [1, 1, 0, 0]
    sample = a_groups[0].episodes[0].samples[0]
    assert sample.policy == "a" and sample.version == 0 and sample.call_index == 0
    assert len(sample.behaviour_logprobs) == len(sample.completion_token_ids)

    state = run_state(trainer_client)
    assert {p["version"] for p in state["policies"].values()} == {1}
    assert (state["samples_buffered"], state["samples_trained"]) == (0, 4)
    assert state["episodes_finished"] == 4


def test_no_step_until_batch_groups_groups_are_complete(trainer_client, factory):
    create_run(trainer_client, group_size=3, batch_groups=1)
    play(trainer_client, "g", 1.0)
    play(trainer_client, "g", 0.0)
    assert factory.trainers["r/policy"].steps == []
    play(trainer_client, "g", 0.5)
    eventually(step_reached(trainer_client, 1))


def test_episodes_without_a_group_are_groups_of_one(trainer_client, factory):
    create_run(trainer_client, group_size=8, batch_groups=2, algorithm="reinforce")
    play(trainer_client, None, 1.0)
    play(trainer_client, None, 0.0)
    eventually(step_reached(trainer_client, 1))
    ((groups, settings),) = factory.trainers["r/policy"].steps
    assert [len(g.episodes) for g in groups] == [1, 1] and settings.algorithm == "reinforce"


def test_step_metrics_are_recorded_and_read_since_a_step(trainer_client):
    create_run(trainer_client, group_size=2, batch_groups=1)
    for step in (1, 2):
        play(trainer_client, f"g{step}", 1.0)
        episode = open_episode(trainer_client, group_id=f"g{step}")
        chat_as(trainer_client, episode)
        finish(trainer_client, episode, 0.0, metrics={"turns": 2})
        eventually(step_reached(trainer_client, step))

    points = trainer_client.get("/runs/r/metrics").json()
    assert {p["step"] for p in points} == {1, 2}
    first = {(p["policy"], p["name"]): p["value"] for p in points if p["step"] == 1}
    assert first[("policy", "loss")] == 0.5 and first[("policy", "grad_norm")] == 1.0
    assert first[("policy", "reward/mean")] == 0.5 and first[("policy", "reward/std")] == 0.5
    assert first[("policy", "samples/trained")] == 2.0
    assert first[(None, "episodes")] == 2.0 and first[(None, "episode/turns")] == 2.0
    later = trainer_client.get("/runs/r/metrics", params={"since": 1}).json()
    assert later and {p["step"] for p in later} == {2}
    assert trainer_client.get("/runs/r/metrics", params={"since": 2}).json() == []
    only = trainer_client.get("/runs/r/metrics", params={"name": "loss"}).json()
    assert [(p["step"], p["value"]) for p in only] == [(1, 0.5), (2, 0.25)]
    assert_openai_error(trainer_client.get("/runs/r/metrics", params={"since": "x"}), 422)


def test_a_paused_run_buffers_finished_episodes_and_steps_when_resumed(trainer_client, factory):
    create_run(trainer_client, group_size=1, zero_variance_groups="keep", batch_groups=1)
    opened = open_episode(trainer_client)
    chat_as(trainer_client, opened)
    trainer_client.post("/runs/r/pause")
    assert finish(trainer_client, opened, 1.0).status_code == 200  # opened before the pause
    time.sleep(0.2)
    state = run_state(trainer_client)
    assert (state["step"], state["samples_buffered"]) == (0, 1)
    assert factory.trainers["r/policy"].steps == []
    trainer_client.post("/runs/r/resume")
    eventually(step_reached(trainer_client, 1))


def test_a_patch_applies_from_the_next_step(trainer_client, factory):
    create_run(trainer_client, group_size=1, zero_variance_groups="keep", batch_groups=1, lr=1e-5)
    play(trainer_client, None, 1.0)
    eventually(step_reached(trainer_client, 1))
    trainer_client.patch("/runs/r", json={"lr": 5e-5, "batch_groups": 2})
    play(trainer_client, None, 1.0)
    assert run_state(trainer_client)["step"] == 1  # now two groups per step
    play(trainer_client, None, 0.0)
    eventually(step_reached(trainer_client, 2))
    (_, first), (groups, second) = factory.trainers["r/policy"].steps
    assert (first.lr, second.lr, len(groups)) == (1e-5, 5e-5, 2)


@pytest.mark.slow
def test_max_steps_finishes_the_run_with_a_final_checkpoint(trainer_client, factory, settings):
    create_run(
        trainer_client, group_size=1, zero_variance_groups="keep", batch_groups=1, max_steps=2
    )
    play(trainer_client, None, 1.0)
    keep_open = open_episode(trainer_client)
    play(trainer_client, None, 1.0)
    eventually(lambda: run_state(trainer_client)["status"] == "finished")
    assert run_state(trainer_client)["step"] == 2
    (checkpoint,) = trainer_client.get("/runs/r/checkpoints").json()
    assert checkpoint["step"] == 2
    assert checkpoint["path"] == str(settings.runs_dir / "r" / "checkpoints" / "step-2")
    assert factory.trainers["r/policy"].checkpoints == [checkpoint["path"] + "/policy"]
    assert_openai_error(finish(trainer_client, keep_open), 409, "episode_not_open")
    response = trainer_client.post("/swarm/episodes", json={"run": "r", "task_id": "t"})
    assert_openai_error(response, 409)


def test_checkpoint_every_saves_periodically(trainer_client, factory):
    create_run(
        trainer_client,
        group_size=1,
        zero_variance_groups="keep",
        batch_groups=1,
        checkpoint_every=2,
    )
    for step in range(1, 5):
        play(trainer_client, None, 1.0)
        eventually(step_reached(trainer_client, step))
    eventually(lambda: len(trainer_client.get("/runs/r/checkpoints").json()) == 2)
    assert [c["step"] for c in trainer_client.get("/runs/r/checkpoints").json()] == [2, 4]


def test_the_checkpoint_endpoint_saves_every_policy_under_the_documented_path(
    trainer_client, factory, settings
):
    create_run(
        trainer_client,
        policies={"a": {}, "b": {}},
        group_size=1,
        zero_variance_groups="keep",
        batch_groups=1,
    )
    play(trainer_client, None, 1.0)
    eventually(step_reached(trainer_client, 1))
    response = trainer_client.post("/runs/r/checkpoints")
    assert response.status_code == 201, response.text
    checkpoint = response.json()
    directory = settings.runs_dir / "r" / "checkpoints" / "step-1"
    assert checkpoint["step"] == 1 and checkpoint["path"] == str(directory)
    assert factory.trainers["r/a"].checkpoints == [str(directory / "a")]
    assert factory.trainers["r/b"].checkpoints == [str(directory / "b")]
    assert (Path(checkpoint["path"]) / "a" / "trainer_state.json").exists()
    again = trainer_client.post("/runs/r/checkpoints").json()
    assert again == checkpoint and len(factory.trainers["r/a"].checkpoints) == 1
    assert trainer_client.get("/runs/r/checkpoints").json() == [checkpoint]


@pytest.mark.slow
def test_a_trainer_exception_fails_the_run_and_the_gateway_keeps_serving(trainer_client, factory):
    create_run(trainer_client, group_size=1, zero_variance_groups="keep", batch_groups=1)
    factory.trainers["r/policy"].explode = True
    still_open = open_episode(trainer_client)
    play(trainer_client, None, 1.0)
    eventually(lambda: run_state(trainer_client)["status"] == "failed")
    state = run_state(trainer_client)
    assert "TrainerExploded: optimizer blew up" in state["error"] and state["step"] == 0
    assert_openai_error(finish(trainer_client, still_open), 409)
    body = {"model": "r/policy", "messages": [{"role": "user", "content": "still here"}]}
    assert trainer_client.post("/v1/chat/completions", json=body).status_code == 200
    assert trainer_client.get("/healthz").status_code == 200
    create_run(trainer_client, "next")


def test_zero_variance_and_stale_drops_are_counted(trainer_client, factory):
    create_run(trainer_client, group_size=2, batch_groups=1, max_staleness=0)
    play(trainer_client, "flat", 1.0)  # equal rewards: zero variance
    play(trainer_client, "flat", 1.0)
    eventually(lambda: run_state(trainer_client)["batches_dropped"] == {"zero_variance": 1})
    state = run_state(trainer_client)
    assert (state["samples_trained"], state["samples_dropped"], state["step"]) == (0, 2, 0)

    stale = open_episode(trainer_client, group_id="mixed")
    chat_as(trainer_client, stale)  # sampled at version 0 ...
    factory.trainers["r/policy"].engine.weights_version = 1
    finish(trainer_client, stale, 0.0)  # ... trained against version 1 with max_staleness 0
    play(trainer_client, "mixed", 1.0)
    eventually(step_reached(trainer_client, 1))
    state = run_state(trainer_client)
    assert (state["samples_trained"], state["samples_dropped"], state["samples_buffered"]) == (
        1,
        3,
        0,
    )
    db = trainer_client.app.state.gateway.recorder.db
    with session_scope(db) as session:
        rows = crud.list_samples(session, run_id="r")
    assert [(r.status, r.drop_reason, r.step_trained) for r in rows] == [
        ("dropped", "zero_variance", 0),  # no step: recorded at the run's step then
        ("dropped", "zero_variance", 0),
        ("dropped", "stale", 1),
        ("trained", None, 1),
    ]
    points = trainer_client.get("/runs/r/metrics", params={"since": 0}).json()
    by_name = {p["name"]: p["value"] for p in points}
    assert by_name["samples/dropped/stale"] == 1.0 and by_name["samples/trained"] == 1.0


def test_consumed_episodes_record_their_step(trainer_client):
    create_run(trainer_client, group_size=1, zero_variance_groups="keep", batch_groups=1)
    episode = play(trainer_client, None, 1.0)
    eventually(step_reached(trainer_client, 1))
    db = trainer_client.app.state.gateway.recorder.db
    with session_scope(db) as session:
        assert crud.get_episode(session, episode_id=episode["episode_id"]).step == 1

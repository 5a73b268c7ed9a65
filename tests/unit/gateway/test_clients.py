"""Swarm clients: registration, heartbeats, deletion, and lease lapse."""

from __future__ import annotations

import time

import pytest

from tests.unit.gateway.conftest import (
    SHORT_LEASE_S,
    assert_openai_error,
    chat_as,
    create_run,
    eventually,
    finish,
    open_episode,
)


def register(client, **fields) -> dict:
    response = client.post("/swarm/clients", json={"name": "worker", **fields})
    assert response.status_code == 200, response.text
    return response.json()


def episode_status(client, episode: dict) -> str:
    return client.get(f"/swarm/episodes/{episode['episode_id']}").json()["status"]


def test_a_registered_client_gets_an_id_and_the_lease_and_is_listed(trainer_client):
    registered = register(trainer_client, code_version="abc123", labels={"host": "a"})
    assert registered["client_id"].startswith("cl-") and registered["lease_s"] == 30.0
    (listed,) = trainer_client.get("/swarm/clients").json()
    assert listed["client_id"] == registered["client_id"] and listed["status"] == "active"
    assert (listed["name"], listed["code_version"], listed["labels"]) == (
        "worker",
        "abc123",
        {"host": "a"},
    )


def test_the_lease_is_a_setting(short_lease_client):
    assert register(short_lease_client)["lease_s"] == SHORT_LEASE_S


def test_a_client_name_is_required(client):
    assert_openai_error(client.post("/swarm/clients", json={}), 422)


@pytest.mark.slow
def test_heartbeats_keep_a_client_alive_past_its_lease(short_lease_client):
    client = short_lease_client
    client_id = register(client)["client_id"]
    for _ in range(12):
        time.sleep(SHORT_LEASE_S / 8)
        assert client.post(f"/swarm/clients/{client_id}/heartbeat").status_code == 200
    assert [c["client_id"] for c in client.get("/swarm/clients").json()] == [client_id]


def test_deleting_a_client_aborts_its_open_episodes_and_keeps_finished_ones(trainer_client):
    create_run(trainer_client)
    client_id = register(trainer_client)["client_id"]
    done = open_episode(trainer_client, client_id=client_id)
    assert finish(trainer_client, done).status_code == 200
    running = open_episode(trainer_client, client_id=client_id)
    other = open_episode(trainer_client)
    listed = trainer_client.get("/swarm/clients").json()
    assert listed[0]["episodes_open"] == 1

    assert trainer_client.delete(f"/swarm/clients/{client_id}").status_code == 204
    assert episode_status(trainer_client, done) == "finished"
    assert episode_status(trainer_client, running) == "aborted"
    assert episode_status(trainer_client, other) == "open"
    assert trainer_client.get("/swarm/clients").json() == []
    gone = trainer_client.get("/swarm/clients", params={"include_gone": True}).json()
    assert gone[0]["status"] == "gone"
    assert run_counters(trainer_client) == (1, 1)


def run_counters(client) -> tuple[int, int]:
    run = client.get("/runs/r").json()
    return run["episodes_finished"], run["episodes_aborted"]


def test_a_deleted_clients_id_is_gone(trainer_client):
    create_run(trainer_client)
    client_id = register(trainer_client)["client_id"]
    trainer_client.delete(f"/swarm/clients/{client_id}")
    response = trainer_client.post(f"/swarm/clients/{client_id}/heartbeat")
    assert_openai_error(response, 404, "client_not_found")
    assert_openai_error(trainer_client.delete(f"/swarm/clients/{client_id}"), 404)
    body = {"run": "r", "task_id": "t", "client_id": client_id}
    assert_openai_error(trainer_client.post("/swarm/episodes", json=body), 404, "client_not_found")


def test_an_unknown_client_cannot_heartbeat_or_open_episodes(trainer_client):
    assert_openai_error(trainer_client.post("/swarm/clients/cl-nope/heartbeat"), 404)
    body = {"task_id": "t", "client_id": "cl-nope"}
    assert_openai_error(trainer_client.post("/swarm/episodes", json=body), 404)


@pytest.mark.slow
def test_a_client_whose_lease_lapses_is_deleted_with_its_open_episodes_aborted(
    short_lease_client,
):
    client = short_lease_client
    create_run(client)
    client_id = register(client)["client_id"]
    done = open_episode(client, client_id=client_id)
    chat_as(client, done)
    assert finish(client, done).status_code == 200
    client.post(f"/swarm/clients/{client_id}/heartbeat")
    running = open_episode(client, client_id=client_id)

    eventually(lambda: client.get("/swarm/clients").json() == [], timeout_s=SHORT_LEASE_S + 5)
    assert episode_status(client, running) == "aborted"
    assert episode_status(client, done) == "finished"
    assert len(client.get(f"/swarm/episodes/{done['episode_id']}").json()["calls"]) == 1
    response = client.post(f"/swarm/clients/{client_id}/heartbeat")
    assert_openai_error(response, 404, "client_not_found")
    assert_openai_error(finish(client, running), 409, "episode_not_open")
    error = assert_openai_error(finish(client, running), 409)
    assert "client lease lapsed" in error["message"]


def test_a_client_registering_under_a_live_clients_name_supersedes_it(trainer_client):
    create_run(trainer_client)
    old_id = register(trainer_client, code_version="v1")["client_id"]
    done = open_episode(trainer_client, client_id=old_id)
    assert finish(trainer_client, done).status_code == 200
    left_open = open_episode(trainer_client, client_id=old_id)
    other = register(trainer_client, name="someone-else")["client_id"]

    new_id = register(trainer_client, code_version="v2")["client_id"]
    assert new_id != old_id
    assert episode_status(trainer_client, left_open) == "aborted"  # cleaned at once
    assert episode_status(trainer_client, done) == "finished"  # what it finished stays
    active = {c["client_id"]: c for c in trainer_client.get("/swarm/clients").json()}
    assert set(active) == {new_id, other} and active[new_id]["code_version"] == "v2"
    error = assert_openai_error(
        trainer_client.post(f"/swarm/clients/{old_id}/heartbeat"), 404, "client_superseded"
    )
    assert new_id in error["message"] and "distinct names" in error["message"]
    assert trainer_client.post(f"/swarm/clients/{new_id}/heartbeat").status_code == 200


def test_a_deleted_clients_name_can_be_registered_again_without_superseding_anyone(
    trainer_client,
):
    old_id = register(trainer_client)["client_id"]
    assert trainer_client.delete(f"/swarm/clients/{old_id}").status_code == 204
    new_id = register(trainer_client)["client_id"]
    assert_openai_error(
        trainer_client.post(f"/swarm/clients/{old_id}/heartbeat"), 404, "client_not_found"
    )
    assert [c["client_id"] for c in trainer_client.get("/swarm/clients").json()] == [new_id]

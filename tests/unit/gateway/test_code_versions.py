"""Metrics per code version: each finished episode carries its client's `code_version`,
and every step reports `code/<version>/reward/mean` and `code/<version>/episodes`."""

from __future__ import annotations

from tests.unit.gateway.conftest import (
    chat_as,
    create_run,
    eventually,
    finish,
    open_episode,
    run_state,
)


def register(client, code_version: str | None) -> str:
    body = {"name": f"worker-{code_version}"}
    if code_version is not None:
        body["code_version"] = code_version
    response = client.post("/swarm/clients", json=body)
    assert response.status_code == 200, response.text
    return response.json()["client_id"]


def play(client, reward: float, client_id: str | None = None) -> None:
    episode = open_episode(client, **({"client_id": client_id} if client_id else {}))
    chat_as(client, episode)  # a sample to train: a batch that trains nothing is no step
    response = finish(client, episode, reward)
    assert response.status_code == 200, response.text


def test_each_step_reports_rewards_and_episodes_per_code_version(trainer_client):
    create_run(trainer_client, group_size=1, zero_variance_groups="keep", batch_groups=5)
    old, new = register(trainer_client, "v1"), register(trainer_client, "v2")
    play(trainer_client, 1.0, old)
    play(trainer_client, 0.5, old)
    play(trainer_client, 0.0, new)
    play(trainer_client, 0.25, register(trainer_client, None))
    play(trainer_client, 0.75)  # no client at all
    eventually(lambda: run_state(trainer_client)["step"] >= 1)

    points = trainer_client.get("/runs/r/metrics").json()
    values = {p["name"]: p["value"] for p in points if p["name"].startswith("code/")}
    assert {p["policy"] for p in points if p["name"].startswith("code/")} == {None}
    assert values == {
        "code/v1/reward/mean": 0.75,
        "code/v1/episodes": 2.0,
        "code/v2/reward/mean": 0.0,
        "code/v2/episodes": 1.0,
        "code/unversioned/reward/mean": 0.5,
        "code/unversioned/episodes": 2.0,
    }

"""`GET /runs/{id}/episodes`: a run's episodes without their calls, newest first, filtered
by status and paged; admin-guarded like the other run routes."""

from __future__ import annotations

import pytest

from tests.unit.gateway.conftest import (
    assert_openai_error,
    bearer,
    chat_as,
    create_run,
    eventually,
    finish,
    open_episode,
    run_state,
)

FIELDS = {
    "episode_id",
    "task_id",
    "task_family",
    "status",
    "reward",
    "created_at",
    "finished_at",
    "step",
    "client_id",
    "group_id",
}


def episodes(client, run: str = "r", headers=None, **params) -> list[dict]:
    response = client.get(f"/runs/{run}/episodes", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def test_episodes_are_listed_newest_first_with_their_outcome(trainer_client):
    create_run(trainer_client, group_size=4)
    first = open_episode(trainer_client, task_id="t-1", task_family="math", group_id="g1")
    second = open_episode(trainer_client, task_id="t-2")
    third = open_episode(trainer_client, task_id="t-3")
    assert finish(trainer_client, first, {"policy": 0.5}).status_code == 200
    abort = trainer_client.post(f"/swarm/episodes/{second['episode_id']}/abort", json={})
    assert abort.status_code == 200, abort.text

    listed = episodes(trainer_client)
    assert [e["episode_id"] for e in listed] == [
        third["episode_id"],
        second["episode_id"],
        first["episode_id"],
    ]
    assert all(set(e) == FIELDS for e in listed)
    newest, aborted, finished = listed
    assert (newest["status"], newest["reward"], newest["finished_at"]) == ("open", None, None)
    assert aborted["status"] == "aborted" and aborted["finished_at"] >= aborted["created_at"]
    assert (finished["status"], finished["reward"]) == ("finished", {"policy": 0.5})
    assert (finished["task_id"], finished["task_family"], finished["group_id"]) == (
        "t-1",
        "math",
        "g1",
    )
    assert finished["step"] is None and finished["client_id"] is None


def test_the_status_filter_keeps_one_status(trainer_client):
    create_run(trainer_client, group_size=4)
    done = open_episode(trainer_client)
    open_episode(trainer_client)
    assert finish(trainer_client, done, 1.0).status_code == 200
    (only,) = episodes(trainer_client, status="finished")
    assert (only["episode_id"], only["reward"]) == (done["episode_id"], 1.0)
    assert [e["status"] for e in episodes(trainer_client, status="open")] == ["open"]
    assert episodes(trainer_client, status="aborted") == []


def test_the_group_filter_keeps_one_groups_episodes(trainer_client):
    create_run(trainer_client, group_size=4)
    g1 = [open_episode(trainer_client, group_id="g1")["episode_id"] for _ in range(2)]
    open_episode(trainer_client, group_id="g2")
    open_episode(trainer_client)
    assert [e["episode_id"] for e in episodes(trainer_client, group_id="g1")] == g1[::-1]
    assert episodes(trainer_client, group_id="nobody") == []


def test_limit_and_offset_page_through_the_episodes(trainer_client):
    create_run(trainer_client, group_size=8)
    ids = [open_episode(trainer_client, task_id=f"t-{i}")["episode_id"] for i in range(5)]
    newest_first = ids[::-1]
    assert [e["episode_id"] for e in episodes(trainer_client, limit=2)] == newest_first[:2]
    assert [e["episode_id"] for e in episodes(trainer_client, limit=2, offset=2)] == (
        newest_first[2:4]
    )
    assert [e["episode_id"] for e in episodes(trainer_client, offset=4)] == newest_first[4:]
    assert episodes(trainer_client, offset=5) == []


def test_only_the_runs_own_episodes_are_listed(trainer_client):
    create_run(trainer_client, "a", group_size=4)
    create_run(trainer_client, "b", group_size=4)
    mine = open_episode(trainer_client, run="a")
    open_episode(trainer_client, run="b")
    assert [e["episode_id"] for e in episodes(trainer_client, "a")] == [mine["episode_id"]]


def test_a_consumed_episode_shows_the_training_step(trainer_client):
    create_run(trainer_client, group_size=2, batch_groups=1)
    for reward in (1.0, 0.0):
        episode = open_episode(trainer_client, group_id="g")
        chat_as(trainer_client, episode)
        assert finish(trainer_client, episode, reward).status_code == 200
    eventually(lambda: run_state(trainer_client)["step"] >= 1)
    assert [e["step"] for e in episodes(trainer_client)] == [1, 1]


def test_an_unknown_run_is_a_404(trainer_client):
    assert_openai_error(trainer_client.get("/runs/nope/episodes"), 404, "run_not_found")


@pytest.mark.parametrize(
    "params",
    [{"limit": 0}, {"limit": 1001}, {"limit": "x"}, {"offset": -1}, {"status": "done"}],
)
def test_a_bad_query_is_a_422(trainer_client, params):
    create_run(trainer_client)
    response = trainer_client.get("/runs/r/episodes", params=params)
    assert_openai_error(response, 422, "invalid_value")


def test_the_limit_may_be_1_to_1000(trainer_client):
    create_run(trainer_client)
    assert episodes(trainer_client, limit=1) == episodes(trainer_client, limit=1000) == []


def test_the_episode_list_needs_the_admin_key(make_client, factory):
    client = make_client(api_key="admin-key", policy_factory=factory)
    create_run(client, headers=bearer("admin-key"))
    assert_openai_error(client.get("/runs/r/episodes"), 401, "invalid_api_key")
    episode = open_episode(client, headers=bearer("admin-key"))
    response = client.get("/runs/r/episodes", headers=bearer(episode["api_key"]))
    assert_openai_error(response, 401, "invalid_api_key")
    listed = episodes(client, headers=bearer("admin-key"))
    assert [e["episode_id"] for e in listed] == [episode["episode_id"]]

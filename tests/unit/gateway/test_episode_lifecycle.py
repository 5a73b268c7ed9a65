"""Episodes of a run: creation rules, finishing (rewards → persisted samples), aborting."""

from __future__ import annotations

import pytest

from experiments_db import crud
from experiments_db.db import session_scope
from gateway.recording.recorder import EpisodeRecorder
from tests.unit.gateway.conftest import (
    MODEL,
    assert_openai_error,
    bearer,
    chat_as,
    chat_body,
    create_run,
    finish,
    open_episode,
)


def abort(client, episode: dict, reason: str = "gave up"):
    url = f"/swarm/episodes/{episode['episode_id']}/abort"
    return client.post(url, json={"reason": reason})


# -- creation -------------------------------------------------------------------------------


def test_an_episode_of_a_run_names_its_policies_models_and_versions(trainer_client):
    create_run(trainer_client, policies={"solver": {}, "critic": {}})
    episode = open_episode(trainer_client, group_id="g-7")
    assert episode["model"] == "r/solver"
    assert episode["models"] == {"solver": "r/solver", "critic": "r/critic"}
    assert episode["policy_versions"] == {"solver": 0, "critic": 0}
    assert episode["group_id"] == "g-7"
    assert episode["base_url"] == "http://testserver/v1"


def test_an_episode_of_an_unknown_run_is_a_404(trainer_client):
    response = trainer_client.post("/swarm/episodes", json={"run": "nope", "task_id": "t"})
    assert_openai_error(response, 404, "run_not_found")


@pytest.mark.slow
def test_an_episode_of_a_stopped_run_is_a_409(trainer_client):
    create_run(trainer_client)
    trainer_client.post("/runs/r/stop")
    response = trainer_client.post("/swarm/episodes", json={"run": "r", "task_id": "t"})
    assert_openai_error(response, 409, "run_not_accepting")


def test_an_episode_of_a_paused_run_is_a_429_with_retry_after(trainer_client):
    create_run(trainer_client)
    trainer_client.post("/runs/r/pause")
    response = trainer_client.post("/swarm/episodes", json={"run": "r", "task_id": "t"})
    assert response.status_code == 429
    assert response.json()["error"]["retry_after"] == 5.0
    assert response.json()["error"]["code"] == "run_paused"
    assert response.headers["Retry-After"] == "5"
    trainer_client.post("/runs/r/resume")
    open_episode(trainer_client)


def test_episode_creation_validation_errors_are_422(trainer_client):
    error = assert_openai_error(trainer_client.post("/swarm/episodes", json={"run": "r"}), 422)
    assert error["param"] == "task_id"


def test_the_recording_only_form_still_works(client):
    episode = client.post("/swarm/episodes", json={"task_id": "t"}).json()
    assert episode["model"] is None and episode["models"] == {}
    assert episode["policy_versions"] == {MODEL: 0}
    chat_as(client, episode, model=MODEL)
    result = finish(client, episode, reward=0.5, metrics={"turns": 1})
    assert result.status_code == 200, result.text
    assert result.json() == {
        "episode_id": episode["episode_id"],
        "status": "finished",
        "rewards": {MODEL: 0.5},
        "samples": 0,
    }
    recorder = client.app.state.gateway.recorder
    stored = recorder.get_episode(episode["episode_id"])
    assert (stored.status, stored.reward, stored.metrics) == ("finished", 0.5, {"turns": 1.0})


# -- finishing ------------------------------------------------------------------------------


def test_finish_makes_one_sample_per_call_to_a_policy_of_the_run(trainer_client):
    create_run(trainer_client, policies={"a": {}, "b": {}})
    episode = open_episode(trainer_client)
    chat_as(trainer_client, episode, model="r/a", content="one")
    chat_as(trainer_client, episode, model="r/b", content="two")
    chat_as(trainer_client, episode, model="r/a", content="three")
    chat_as(trainer_client, episode, model=MODEL, content="base model: not a sample")
    result = finish(trainer_client, episode, reward={"a": 1.0, "b": -1.0})
    assert result.status_code == 200, result.text
    assert result.json()["rewards"] == {"a": 1.0, "b": -1.0}
    assert result.json()["samples"] == 3

    calls = trainer_client.get(f"/swarm/episodes/{episode['episode_id']}").json()["calls"]
    db = trainer_client.app.state.gateway.recorder.db
    with session_scope(db) as session:
        rows = crud.list_samples(session, episode_id=episode["episode_id"])
    assert [(r.policy, r.call_index, r.reward, r.status) for r in rows] == [
        ("a", 0, 1.0, "buffered"),
        ("b", 1, -1.0, "buffered"),
        ("a", 2, 1.0, "buffered"),
    ]
    assert rows[0].prompt_token_ids == calls[0]["prompt_token_ids"]
    assert rows[0].completion_token_ids == calls[0]["completion_token_ids"]
    assert rows[0].behaviour_logprobs == calls[0]["logprobs"]
    assert rows[0].version == calls[0]["version"] == 0
    assert trainer_client.get("/runs/r").json()["samples_buffered"] == 3


def test_finish_is_durable_before_it_returns(trainer_client, settings):
    create_run(trainer_client)
    episode = open_episode(trainer_client, group_id="g")
    chat_as(trainer_client, episode)
    assert finish(trainer_client, episode, reward=2.0).status_code == 200

    fresh = EpisodeRecorder.from_settings(settings)  # a new engine on the same file
    stored = fresh.get_episode(episode["episode_id"])
    assert (stored.status, stored.reward, stored.group_id) == ("finished", 2.0, "g")
    with session_scope(fresh.db) as session:
        (sample,) = crud.list_samples(session, episode_id=episode["episode_id"])
        run = crud.get_run(session, run_id="r")
    assert (sample.policy, sample.reward, sample.status) == ("policy", 2.0, "buffered")
    assert (run.episodes_finished, run.samples_buffered) == (1, 1)


def test_a_float_reward_applies_to_every_policy(trainer_client):
    create_run(trainer_client, policies={"a": {}, "b": {}})
    result = finish(trainer_client, open_episode(trainer_client), reward=3)
    assert result.json()["rewards"] == {"a": 3.0, "b": 3.0}


def test_an_episode_without_calls_finishes_with_no_samples(trainer_client):
    create_run(trainer_client)
    result = finish(trainer_client, open_episode(trainer_client))
    assert result.status_code == 200 and result.json()["samples"] == 0


def test_a_nan_reward_is_a_422_naming_reward(trainer_client):
    create_run(trainer_client)
    episode = open_episode(trainer_client)
    url = f"/swarm/episodes/{episode['episode_id']}/finish"
    response = trainer_client.post(
        url, content=b'{"reward": NaN}', headers={"Content-Type": "application/json"}
    )
    error = assert_openai_error(response, 422)
    assert error["param"] == "reward" and error["message"].startswith("reward:")
    response = trainer_client.post(
        url,
        content=b'{"reward": {"policy": Infinity}}',
        headers={"Content-Type": "application/json"},
    )
    assert assert_openai_error(response, 422)["param"] == "reward.policy"
    assert finish(trainer_client, episode).status_code == 200  # still open


def test_a_string_reward_is_a_422(trainer_client):
    create_run(trainer_client)
    error = assert_openai_error(finish(trainer_client, open_episode(trainer_client), "good"), 422)
    assert error["param"] == "reward"


def test_a_nan_metric_is_a_422(trainer_client):
    create_run(trainer_client)
    episode = open_episode(trainer_client)
    url = f"/swarm/episodes/{episode['episode_id']}/finish"
    body = b'{"reward": 1, "metrics": {"turns": NaN}}'
    response = trainer_client.post(url, content=body, headers={"Content-Type": "application/json"})
    assert assert_openai_error(response, 422)["param"] == "metrics.turns"


def test_a_dict_reward_must_name_the_runs_policies(trainer_client):
    create_run(trainer_client, policies={"a": {}, "b": {}})
    episode = open_episode(trainer_client)
    error = assert_openai_error(finish(trainer_client, episode, {"a": 1, "b": 0, "z": 1}), 422)
    assert error["param"] == "reward" and "z" in error["message"]
    error = assert_openai_error(finish(trainer_client, episode, {"a": 1}), 422)
    assert "b" in error["message"]
    assert finish(trainer_client, episode, {"a": 1, "b": 0}).status_code == 200


def test_finishing_twice_is_a_409(trainer_client):
    create_run(trainer_client)
    episode = open_episode(trainer_client)
    assert finish(trainer_client, episode).status_code == 200
    assert_openai_error(finish(trainer_client, episode), 409, "episode_not_open")
    assert trainer_client.get("/runs/r").json()["episodes_finished"] == 1


def test_finishing_an_aborted_episode_is_a_409(trainer_client):
    create_run(trainer_client)
    episode = open_episode(trainer_client)
    assert abort(trainer_client, episode).json()["status"] == "aborted"
    error = assert_openai_error(finish(trainer_client, episode), 409, "episode_not_open")
    assert "gave up" in error["message"]


def test_finishing_an_unknown_episode_is_a_404(trainer_client):
    response = finish(trainer_client, {"episode_id": "ep-nope"})
    assert_openai_error(response, 404, "episode_not_found")


def test_calls_into_a_finished_episode_are_refused(trainer_client):
    create_run(trainer_client)
    episode = open_episode(trainer_client)
    finish(trainer_client, episode)
    body = {"model": "r/policy", "messages": [{"role": "user", "content": "late"}]}
    response = trainer_client.post(
        "/v1/chat/completions", json=body, headers=bearer(episode["api_key"])
    )
    assert_openai_error(response, 409, "episode_not_open")


# -- aborting -------------------------------------------------------------------------------


def test_abort_is_idempotent_and_counted_once(trainer_client):
    create_run(trainer_client)
    episode = open_episode(trainer_client)
    first, second = abort(trainer_client, episode), abort(trainer_client, episode, "again")
    assert first.status_code == second.status_code == 200
    assert second.json() == {
        "episode_id": episode["episode_id"],
        "status": "aborted",
        "rewards": {},
        "samples": 0,
    }
    stored = trainer_client.app.state.gateway.recorder.get_episode(episode["episode_id"])
    assert stored.abort_reason == "gave up"
    assert trainer_client.get("/runs/r").json()["episodes_aborted"] == 1


def test_aborting_a_finished_episode_is_a_409(trainer_client):
    create_run(trainer_client)
    episode = open_episode(trainer_client)
    finish(trainer_client, episode)
    assert_openai_error(abort(trainer_client, episode), 409, "episode_not_open")


def test_aborting_an_unknown_episode_is_a_404(trainer_client):
    assert_openai_error(abort(trainer_client, {"episode_id": "ep-nope"}), 404)


def test_calls_into_a_finished_episode_are_refused_before_anything_is_generated(trainer_client):
    create_run(trainer_client)
    episode = open_episode(trainer_client)
    assert finish(trainer_client, episode).status_code == 200
    engine = trainer_client.app.state.gateway.models.get(episode["model"]).engine
    generated_before = len(engine.requests)
    headers = bearer(episode["api_key"])
    for stream in (False, True):
        body = chat_body("hi") | {"model": episode["model"], "stream": stream}
        r = trainer_client.post("/v1/chat/completions", json=body, headers=headers)
        assert_openai_error(r, 409, "episode_not_open")
    path = f"/episodes/{episode['episode_id']}/v1/completions"
    r = trainer_client.post(path, json={"model": episode["model"], "prompt": "x", "stream": True})
    assert_openai_error(r, 409, "episode_not_open")
    assert len(engine.requests) == generated_before


# -- the end of a run racing finishes (issue 14: a finished run turned `failed`) ---------------


def _finish_between_listing_and_aborting(client, monkeypatch, episodes: list[dict]) -> None:
    """Make the run's end list `episodes` as open and have them finished right after (the
    window the CI run hit: a client's finish landing while the end aborts open episodes)."""
    recorder = client.app.state.gateway.recorder
    listed = recorder.open_episode_ids

    def open_ids_then_finish(**where):
        ids = listed(**where)
        for episode in episodes:
            recorder.finish_episode(
                episode["episode_id"], reward=1.0, metrics={}, make_samples=lambda r, c: []
            )
        return ids

    monkeypatch.setattr(recorder, "open_episode_ids", open_ids_then_finish)


@pytest.mark.slow
def test_an_episode_finished_while_the_run_finishes_leaves_the_run_finished(
    trainer_client, monkeypatch
):
    create_run(trainer_client)
    racing, idle = open_episode(trainer_client), open_episode(trainer_client)
    _finish_between_listing_and_aborting(trainer_client, monkeypatch, [racing])
    runs = trainer_client.app.state.gateway.runs
    trainer_client.portal.call(runs.finish, runs.get("r"))
    state = trainer_client.get("/runs/r").json()
    assert state["status"] == "finished", state
    recorder = trainer_client.app.state.gateway.recorder
    assert recorder.get_episode(racing["episode_id"]).status == "finished"
    assert recorder.get_episode(idle["episode_id"]).status == "aborted"
    assert (state["episodes_finished"], state["episodes_aborted"]) == (1, 1)


@pytest.mark.slow
def test_an_episode_finished_while_the_run_stops_leaves_the_stop_a_200(trainer_client, monkeypatch):
    create_run(trainer_client)
    racing = open_episode(trainer_client)
    _finish_between_listing_and_aborting(trainer_client, monkeypatch, [racing])
    response = trainer_client.post("/runs/r/stop")
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "stopped"


@pytest.mark.slow
def test_many_finishes_racing_the_end_of_a_run_each_land_or_get_a_409(trainer_client):
    race_finishes_against_the_end_of_a_run(trainer_client)  # and on PostgreSQL: test_postgres


def race_finishes_against_the_end_of_a_run(trainer_client) -> None:
    import threading

    create_run(trainer_client)
    episodes = [open_episode(trainer_client, group_id=f"g-{i % 8}") for i in range(24)]
    runs = trainer_client.app.state.gateway.runs
    start = threading.Barrier(len(episodes) + 1)
    answers: dict[str, int] = {}

    def finish_one(episode: dict) -> None:
        start.wait()
        answers[episode["episode_id"]] = finish(trainer_client, episode).status_code

    threads = [threading.Thread(target=finish_one, args=(e,)) for e in episodes]
    for thread in threads:
        thread.start()
    start.wait()
    trainer_client.portal.call(runs.finish, runs.get("r"))
    for thread in threads:
        thread.join(timeout=60)
    state = trainer_client.get("/runs/r").json()
    assert state["status"] == "finished", state
    recorder = trainer_client.app.state.gateway.recorder
    for episode in episodes:
        stored = recorder.get_episode(episode["episode_id"]).status
        assert (answers[episode["episode_id"]], stored) in {(200, "finished"), (409, "aborted")}
    assert state["episodes_finished"] + state["episodes_aborted"] == len(episodes)


def test_an_episode_finished_while_its_client_is_deleted_leaves_the_delete_a_204(
    trainer_client, monkeypatch
):
    create_run(trainer_client)
    client_id = trainer_client.post("/swarm/clients", json={"name": "c"}).json()["client_id"]
    racing = open_episode(trainer_client, client_id=client_id)
    idle = open_episode(trainer_client, client_id=client_id)
    _finish_between_listing_and_aborting(trainer_client, monkeypatch, [racing])
    assert trainer_client.delete(f"/swarm/clients/{client_id}").status_code == 204
    recorder = trainer_client.app.state.gateway.recorder
    assert recorder.get_episode(racing["episode_id"]).status == "finished"
    assert recorder.get_episode(idle["episode_id"]).status == "aborted"

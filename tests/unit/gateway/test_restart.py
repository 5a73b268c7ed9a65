"""Gateway restarts: a second app on the same database and state dir (what `gateway serve`
does after a kill -9) resumes every live run from its last checkpoint plus the samples
not trained since, aborts the episodes left open, and lists ended runs without loading
them. Runs on `FakePolicyFactory`; the first app is closed without telling the database
anything, as a killed process would."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from gateway.recording.recorder import EpisodeRecorder
from gateway.settings import GatewaySettings
from tests.fakes import FakePolicyFactory
from tests.unit.gateway.conftest import (
    Start,
    assert_openai_error,
    bearer,
    chat_as,
    chat_body,
    create_run,
    eventually,
    finish,
    open_episode,
    run_state,
)

STEP_BY_STEP = {
    "group_size": 1,
    "batch_groups": 1,
    "zero_variance_groups": "keep",
    "checkpoint_every": 2,
}


def play(client: TestClient, run: str = "r", reward: float = 1.0, **fields) -> dict:
    episode = open_episode(client, run=run, **fields)
    chat_as(client, episode)
    assert finish(client, episode, reward).status_code == 200
    return episode


def trained_episode_ids(factory: FakePolicyFactory, model: str = "r/policy") -> list[list[str]]:
    return [
        [episode.episode_id for group in groups for episode in group.episodes]
        for groups, _ in factory.trainers[model].steps
    ]


def test_a_restarted_gateway_resumes_a_run_from_its_checkpoint_and_trains_the_rest_again(
    start: Start, settings: GatewaySettings
):
    before = start(first := FakePolicyFactory())
    create_run(before, **STEP_BY_STEP)
    played = [play(before) for _ in range(3)]
    eventually(lambda: run_state(before)["step"] == 3)
    assert run_state(before)["samples_trained"] == 3
    left_open = open_episode(before)
    chat_as(before, left_open)
    late = open_episode(before)
    chat_as(before, late)
    assert before.post("/runs/r/pause").status_code == 200
    assert finish(before, late).status_code == 200  # finished while paused: never trained
    assert len(first.trainers["r/policy"].checkpoints) == 1  # at step 2

    after = start(second := FakePolicyFactory())

    checkpoint = settings.runs_dir / "r" / "checkpoints" / "step-2" / "policy"
    assert [call["resume_from"] for call in second.calls] == [str(checkpoint)]
    state = run_state(after)
    assert (state["status"], state["step"]) == ("paused", 2)
    assert state["samples_trained"] == 2  # step 3's sample trains again
    assert state["samples_buffered"] == 2
    assert state["episodes_aborted"] == 1
    metrics = after.get("/runs/r/metrics").json()
    assert max(point["step"] for point in metrics) == 2
    run = after.app.state.gateway.runs.get("r")
    assert run.buffer.complete_groups == 2
    assert "r/policy" in [m["id"] for m in after.get("/v1/models").json()["data"]]

    assert after.post("/runs/r/resume").status_code == 200
    eventually(lambda: run_state(after)["step"] == 4)
    assert trained_episode_ids(second) == [[played[2]["episode_id"]], [late["episode_id"]]]
    state = run_state(after)
    assert (state["samples_trained"], state["samples_buffered"]) == (4, 0)
    assert [point["step"] for point in after.get("/runs/r/metrics?name=loss").json()] == [
        1,
        2,
        3,
        4,
    ]


def test_episodes_left_open_by_a_killed_gateway_answer_that_it_restarted(start: Start):
    before = start(FakePolicyFactory())
    create_run(before, **STEP_BY_STEP)
    episode = open_episode(before)
    chat_as(before, episode)

    after = start(FakePolicyFactory())

    response = after.post(
        "/v1/chat/completions",
        json=chat_body() | {"model": "r/policy"},
        headers=bearer(episode["api_key"]),
    )
    error = assert_openai_error(response, 409, "episode_not_open")
    assert "gateway restarted" in error["message"]
    error = assert_openai_error(finish(after, episode), 409, "episode_not_open")
    assert "gateway restarted" in error["message"]
    trace = after.get(f"/swarm/episodes/{episode['episode_id']}").json()
    assert trace["status"] == "aborted"
    play(after)  # the run takes new episodes and trains them
    eventually(lambda: run_state(after)["step"] == 1)


def test_a_run_without_a_checkpoint_restarts_from_its_base_model_and_trains_everything_again(
    start: Start,
):
    before = start(FakePolicyFactory())
    create_run(before, **(STEP_BY_STEP | {"checkpoint_every": None}))
    played = [play(before) for _ in range(2)]
    eventually(lambda: run_state(before)["step"] == 2)

    after = start(second := FakePolicyFactory())

    assert [call["resume_from"] for call in second.calls] == [None]
    eventually(lambda: run_state(after)["step"] == 2)  # running: it trains at once
    assert trained_episode_ids(second) == [[e["episode_id"]] for e in played]
    assert run_state(after)["status"] == "running"


def test_each_policy_of_a_team_resumes_from_its_own_checkpoint_directory(
    start: Start, settings: GatewaySettings
):
    before = start(FakePolicyFactory())
    create_run(before, policies={"planner": {}, "executor": {}}, **STEP_BY_STEP)
    play(before)
    eventually(lambda: run_state(before)["step"] == 1)
    assert before.post("/runs/r/checkpoints").status_code == 201

    after = start(second := FakePolicyFactory())

    directory = settings.runs_dir / "r" / "checkpoints" / "step-1"
    assert {call["served_name"]: call["resume_from"] for call in second.calls} == {
        "r/planner": str(directory / "planner"),
        "r/executor": str(directory / "executor"),
    }
    state = run_state(after)
    assert (state["status"], state["step"]) == ("running", 1)


@pytest.mark.slow
def test_ended_runs_are_listed_but_not_loaded(start: Start):
    before = start(FakePolicyFactory())
    create_run(before, "stopped-run", **STEP_BY_STEP)
    play(before, run="stopped-run")
    eventually(lambda: run_state(before, "stopped-run")["step"] == 1)
    assert before.post("/runs/stopped-run/stop").status_code == 200
    create_run(before, "done", **(STEP_BY_STEP | {"max_steps": 1}))
    play(before, run="done")
    eventually(lambda: run_state(before, "done")["status"] == "finished")

    after = start(second := FakePolicyFactory())

    assert second.calls == []
    listed = {run["name"]: run for run in after.get("/runs").json()}
    assert listed["stopped-run"]["status"] == "stopped"
    assert listed["stopped-run"]["step"] == 1
    assert listed["stopped-run"]["policies"]["policy"]["version"] == 1
    assert listed["done"]["status"] == "finished"
    models = [m["id"] for m in after.get("/v1/models").json()["data"]]
    assert "done/policy" not in models and "stopped-run/policy" not in models
    response = after.post("/swarm/episodes", json={"run": "done", "task_id": "t"})
    assert_openai_error(response, 409)


def test_a_half_full_group_is_buffered_again_as_an_open_group(start: Start):
    before = start(FakePolicyFactory())
    create_run(before, group_size=2, batch_groups=1)
    first = play(before, group_id="g", reward=1.0)

    after = start(second := FakePolicyFactory())

    run = after.app.state.gateway.runs.get("r")
    assert (run.buffer.open_groups, run.buffer.complete_groups) == (1, 0)
    last = play(after, group_id="g", reward=0.0)
    eventually(lambda: run_state(after)["step"] == 1)
    assert trained_episode_ids(second) == [[first["episode_id"], last["episode_id"]]]


def test_a_gateway_without_a_policy_factory_lists_live_runs_as_not_restored(
    start: Start, settings: GatewaySettings
):
    before = start(FakePolicyFactory())
    create_run(before, **STEP_BY_STEP)

    after = start(None)

    state = run_state(after)
    assert state["status"] == "failed" and "no policy factory" in state["error"]
    with EpisodeRecorder.from_settings(settings).db.connect() as connection:
        status = connection.exec_driver_sql("SELECT status FROM run").scalar_one()
    assert status == "running"  # kept for a gateway that can train


def test_buffered_episodes_keep_their_task_family_and_code_version(start: Start):
    before = start(FakePolicyFactory())
    create_run(before, **(STEP_BY_STEP | {"batch_groups": 2}))
    client_id = before.post("/swarm/clients", json={"name": "w", "code_version": "v7"}).json()[
        "client_id"
    ]
    play(before, task_family="math", client_id=client_id)

    after = start(FakePolicyFactory())

    run = after.app.state.gateway.runs.get("r")
    [group] = run.buffer.take(1)
    [episode] = group.episodes
    assert (episode.task_family, episode.code_version) == ("math", "v7")

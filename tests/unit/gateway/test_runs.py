"""Run control: create, list, read, patch, pause/resume/stop, and policies served as models."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from gateway.http.app import make_app
from tests.fakes import FakePolicyFactory, fake_served_model
from tests.unit.gateway.conftest import (
    MODEL,
    assert_openai_error,
    chat_as,
    create_run,
    finish,
    open_episode,
    run_state,
)


def test_a_created_run_is_running_with_its_settings_and_policies(trainer_client, factory, settings):
    run = create_run(
        trainer_client,
        "math-1",
        policies={"solver": {"lora": {"r": 8}}},
        lr=3e-5,
        group_size=4,
        seed=7,
    )
    assert (run["id"], run["name"], run["status"], run["step"]) == (
        "math-1",
        "math-1",
        "running",
        0,
    )
    assert run["settings"]["lr"] == 3e-5 and run["settings"]["group_size"] == 4
    policy = run["policies"]["solver"]
    assert (policy["model"], policy["base_model"], policy["version"]) == ("math-1/solver", MODEL, 0)
    assert policy["lora"]["r"] == 8
    assert run["episodes_finished"] == run["samples_buffered"] == 0 and run["error"] is None
    (call,) = factory.calls
    assert call == {
        "served_name": "math-1/solver",
        "base_model": MODEL,
        "lora": {"r": 8, "alpha": 32, "dropout": 0.0, "target_modules": None},
        "seed": 7,
        "resume_from": None,
    }
    saved = json.loads((settings.runs_dir / "math-1" / "run.json").read_text())
    assert saved["settings"]["lr"] == 3e-5 and saved["policies"]["solver"]["base_model"] == MODEL


def test_runs_are_listed_and_read_by_name(trainer_client):
    create_run(trainer_client, "a")
    create_run(trainer_client, "b", policies={"x": {"base_model": "other"}})
    assert [r["name"] for r in trainer_client.get("/runs").json()] == ["a", "b"]
    assert run_state(trainer_client, "b")["policies"]["x"]["base_model"] == "other"


def test_a_duplicate_run_name_is_a_409(trainer_client):
    create_run(trainer_client)
    assert_openai_error(trainer_client.post("/runs", json={"name": "r"}), 409, "run_exists")


def test_an_unknown_run_is_a_404_everywhere(trainer_client):
    for method, path in [
        ("GET", "/runs/nope"),
        ("PATCH", "/runs/nope"),
        ("POST", "/runs/nope/pause"),
        ("POST", "/runs/nope/resume"),
        ("POST", "/runs/nope/stop"),
        ("POST", "/runs/nope/checkpoints"),
        ("GET", "/runs/nope/checkpoints"),
        ("DELETE", "/runs/nope/checkpoints/1"),
        ("GET", "/runs/nope/metrics"),
    ]:
        response = trainer_client.request(method, path, json={} if method == "PATCH" else None)
        assert_openai_error(response, 404, "run_not_found")


def test_invalid_run_bodies_are_422s_naming_the_field(trainer_client):
    error = assert_openai_error(trainer_client.post("/runs", json={"name": "a b"}), 422)
    assert error["param"] == "name"
    error = assert_openai_error(trainer_client.post("/runs", json={"name": "r", "lr": -1}), 422)
    assert error["param"] == "lr"
    create_run(trainer_client)
    error = assert_openai_error(trainer_client.patch("/runs/r", json={"batch_groups": 0}), 422)
    assert error["param"] == "batch_groups"
    response = trainer_client.post("/runs", json={"name": "q", "policies": {}})
    assert_openai_error(response, 422)


def test_patch_changes_only_the_given_settings(trainer_client):
    create_run(trainer_client, lr=1e-5, kl_coef=0.1)
    patched = trainer_client.patch("/runs/r", json={"lr": 2e-5}).json()
    assert patched["settings"]["lr"] == 2e-5 and patched["settings"]["kl_coef"] == 0.1
    assert run_state(trainer_client)["settings"]["lr"] == 2e-5


def test_patch_with_null_clears_optional_settings_and_refuses_required_ones(trainer_client):
    create_run(trainer_client, max_steps=10)
    assert (
        trainer_client.patch("/runs/r", json={"max_steps": None}).json()["settings"]["max_steps"]
        is None
    )
    error = assert_openai_error(trainer_client.patch("/runs/r", json={"lr": None}), 422)
    assert error["param"] == "lr"
    assert run_state(trainer_client)["settings"]["lr"] == 1e-5


def test_pause_resume_and_stop(trainer_client):
    create_run(trainer_client)
    assert trainer_client.post("/runs/r/pause").json()["status"] == "paused"
    assert trainer_client.post("/runs/r/pause").json()["status"] == "paused"
    assert trainer_client.post("/runs/r/resume").json()["status"] == "running"
    assert trainer_client.post("/runs/r/stop").json()["status"] == "stopped"
    assert trainer_client.post("/runs/r/stop").json()["status"] == "stopped"
    assert_openai_error(trainer_client.post("/runs/r/resume"), 409, "run_not_live")
    assert_openai_error(trainer_client.post("/runs/r/pause"), 409)
    assert_openai_error(trainer_client.patch("/runs/r", json={"lr": 1e-4}), 409)


def test_stop_aborts_open_episodes_and_the_policies_keep_serving(trainer_client):
    create_run(trainer_client)
    done, running = open_episode(trainer_client), open_episode(trainer_client)
    finish(trainer_client, done)
    trainer_client.post("/runs/r/stop")
    trace = trainer_client.get(f"/swarm/episodes/{running['episode_id']}").json()
    assert trace["status"] == "aborted"
    assert_openai_error(finish(trainer_client, running), 409, "episode_not_open")
    body = {"model": "r/policy", "messages": [{"role": "user", "content": "eval"}]}
    assert trainer_client.post("/v1/chat/completions", json=body).status_code == 200
    state = run_state(trainer_client)
    assert (state["episodes_finished"], state["episodes_aborted"]) == (1, 1)


def test_run_policies_are_listed_in_v1_models_and_chat_with_them_is_recorded(trainer_client):
    create_run(trainer_client, policies={"a": {}, "b": {}})
    ids = [model["id"] for model in trainer_client.get("/v1/models").json()["data"]]
    assert ids == [MODEL, "r/a", "r/b"]
    assert trainer_client.get("/v1/models/r/b").json()["id"] == "r/b"
    episode = open_episode(trainer_client)
    reply = chat_as(trainer_client, episode, model="r/b", content="to b")
    assert reply["model"] == "r/b"
    (call,) = trainer_client.get(f"/swarm/episodes/{episode['episode_id']}").json()["calls"]
    assert call["model"] == "r/b"
    result = finish(trainer_client, episode, {"a": 0.0, "b": 1.0}).json()
    assert result["samples"] == 1
    assert trainer_client.get("/healthz").json()["policy_versions"]["r/a"] == 0


def test_without_a_policy_factory_creating_runs_is_a_501(client):
    error = assert_openai_error(client.post("/runs", json={"name": "r"}), 501, "not_implemented")
    assert "policy factory" in error["message"]


def test_a_factory_error_leaves_the_run_failed_with_the_error(make_client):
    factory = FakePolicyFactory(fail_with=RuntimeError("no such model: huge-70b"))
    client = make_client(policy_factory=factory)
    run = create_run(client, policies={"p": {"base_model": "huge-70b"}})
    assert run["status"] == "failed" and "no such model: huge-70b" in run["error"]
    assert [m["id"] for m in client.get("/v1/models").json()["data"]] == [MODEL]
    response = client.post("/swarm/episodes", json={"run": "r", "task_id": "t"})
    assert_openai_error(response, 409, "run_not_accepting")
    assert_openai_error(client.post("/runs/r/checkpoints"), 409)


def test_a_partly_created_run_frees_the_policies_it_made(make_client):
    class FailsSecond(FakePolicyFactory):
        async def create(self, **kwargs):
            if self.calls:
                self.fail_with = RuntimeError("out of memory")
            return await super().create(**kwargs)

    factory = FailsSecond()
    client = make_client(policy_factory=factory)
    assert create_run(client, policies={"a": {}, "b": {}})["status"] == "failed"
    assert factory.trainers["r/a"].closed
    assert [m["id"] for m in client.get("/v1/models").json()["data"]] == [MODEL]


def test_resume_from_is_passed_to_the_factory_for_single_policy_runs(trainer_client, factory):
    create_run(trainer_client, resume_from="/ckpt/step-3/policy")
    assert factory.calls[0]["resume_from"] == "/ckpt/step-3/policy"
    response = trainer_client.post(
        "/runs", json={"name": "two", "policies": {"a": {}, "b": {}}, "resume_from": "/x"}
    )
    assert assert_openai_error(response, 422)["param"] == "resume_from"


def test_shutdown_closes_the_policies(recorder, settings):
    factory = FakePolicyFactory()
    app = make_app([fake_served_model(MODEL)], recorder, settings, policy_factory=factory)
    with TestClient(app) as client:
        create_run(client)
    assert factory.trainers["r/policy"].closed
